"""Cumulative scans: Cumsum and Cumprod (`tf.cumsum`, `tf.cumprod`, also `tf.math.*`).

Both take `x` and a scalar int32/int64 `axis` tensor and the attrs `exclusive`
(each output leaves out its own element) and `reverse` (scan from the end);
the output has `x`'s shape and dtype.

Example:
    >>> tf.cumsum([1, 2, 3], exclusive=True, reverse=True)   # [5, 3, 0]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.math.binary_ops import multiply
from tensorweave.ops.math.cwise_ops import _is_numeric, check_dtype


def _check_axis_static(op_type: str, x: Tensor, axis: Tensor) -> None:
    """Build-time checks of the scan axis: dtype, scalar-ness and (when known) range."""
    if axis.dtype.base_dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{op_type} of {x.name} needs an int32/int64 axis, but {axis.name} "
                        f"has dtype {axis.dtype.base_dtype.name}.")
    if axis.shape.ndims is not None and axis.shape.ndims != 0:
        raise ValueError(f"{op_type} of {x.name}: axis must be a scalar, but {axis.name} has "
                         f"shape {axis.shape}.")
    rank = x.shape.ndims
    value = constant_value(axis)
    if rank is None or value is None:
        return
    a = int(np.asarray(value).reshape(()))
    if not -rank <= a < rank:
        raise ValueError(f"{op_type} of {x.name}: expected scan axis in the range "
                         f"[{-rank}, {rank}) for a tensor of rank {rank} (shape {x.shape}), "
                         f"but got axis {a}.")


def _scan(op_type: str, ufunc: Any, identity: int, x: Any, axis: Any, exclusive: bool,
          reverse: bool) -> Any:
    x = np.asarray(x)
    axis = np.asarray(axis)
    if axis.ndim != 0:
        raise errors.InvalidArgumentError(None, None, f"{op_type}: axis must be a scalar, "
                                          f"got shape {axis.shape}.")
    rank = x.ndim
    a = int(axis)
    if not -rank <= a < rank:
        raise errors.InvalidArgumentError(
            None, None, f"{op_type}: expected scan axis in the range [{-rank}, {rank}) for "
            f"an input of rank {rank} (shape {x.shape}), but got axis {a}.")
    # Work on the last axis so the exclusive shift is a plain slice.
    v = np.moveaxis(x, a, -1)
    if reverse:
        v = v[..., ::-1]
    # Half precision accumulates in float32 (as TF's Eigen scan does for sums).
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    out = ufunc.accumulate(v, axis=-1, dtype=acc)
    if exclusive and out.shape[-1] > 0:
        shifted = np.empty_like(out)
        shifted[..., 0] = identity
        shifted[..., 1:] = out[..., :-1]
        out = shifted
    if reverse:
        out = out[..., ::-1]
    return np.ascontiguousarray(np.moveaxis(out, -1, a)).astype(x.dtype, copy=False)


def _define_scan(op_type: str, ufunc: Any, identity: int) -> Any:
    op = define_op(op_type, inputs=("x", "axis"), attrs={"exclusive": False, "reverse": False})

    @op.shape
    def _(x: Tensor, axis: Tensor, *, exclusive: bool, reverse: bool) -> Any:
        check_dtype(op_type, x, _is_numeric)
        _check_axis_static(op_type, x, axis)
        return x.dtype.base_dtype, x.shape

    @op.kernel("CPU")
    def _(x: Any, axis: Any, *, exclusive: bool, reverse: bool) -> Any:
        return _scan(op_type, ufunc, identity, x, axis, exclusive, reverse)

    return op


cumsum_op = _define_scan("Cumsum", np.add, 0)
cumprod_op = _define_scan("Cumprod", np.multiply, 1)


def _scan_attrs(op: Operation, flip: bool = False) -> dict[str, Any]:
    reverse = bool(op.get_attr("reverse"))
    return {"exclusive": bool(op.get_attr("exclusive")), "reverse": not reverse if flip
            else reverse}


@cumsum_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # Each input feeds every output on its scan side: the adjoint scans the other way.
    return [create_tensor("Cumsum", [grad, op.inputs[1]], _scan_attrs(op, flip=True)), None]


@cumprod_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # d y_j / d x_i = y_j / x_i for every output j that includes x_i, so the gradient is
    # (reverse-direction cumsum of y * grad) / x. As in TF, this divides by x, so it is
    # only valid where x is nonzero.
    x, axis = op.inputs
    summed = create_tensor("Cumsum", [multiply(op.outputs[0], grad), axis], _scan_attrs(op, True))
    return [create_tensor("RealDiv", [summed, x]), None]


def _axis_tensor(axis: Any) -> Tensor:
    if isinstance(axis, Tensor):
        return axis
    value = np.asarray(axis)
    if value.dtype.kind not in "iu":
        raise TypeError(f"scan axis must be an integer (or an int32/int64 tensor), got "
                        f"{axis!r}.")
    return convert_to_tensor(value.astype(np.int64 if value.dtype == np.int64 else np.int32),
                             name="axis")


def _scan_public(op_type: str, x: Any, axis: Any, exclusive: bool, reverse: bool,
                 name: str | None) -> Tensor:
    # As TF: the op's scope holds "<op>/x" and "<op>/axis"; the op takes its name.
    with name_scope(name, op_type, [x]) as scope:
        t = convert_to_tensor(x, name="x")
        return create_tensor(op_type, [t, _axis_tensor(axis)],
                       {"exclusive": bool(exclusive), "reverse": bool(reverse)}, name=scope)


def cumsum(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Tensor:
    """`tf.cumsum` / `tf.math.cumsum`: the cumulative sum of `x` along `axis`.

    Args:
        x: a numeric tensor (or value convertible to one).
        axis: a scalar int32/int64 (tensor or Python int) in [-rank(x), rank(x)).
        exclusive: if True, output i leaves out x[i] (the first output is 0).
        reverse: if True, sum from the last element towards the first.
        name: a name for the op.

    Returns:
        A tensor of `x`'s dtype and shape.

    Raises:
        ValueError: when a constant `axis` is out of range (InvalidArgumentError at run
            time for a fed one).

    Example:
        >>> tf.cumsum([1, 2, 3], exclusive=True)   # [0, 1, 3]
    """
    return _scan_public("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> Tensor:
    """`tf.cumprod` / `tf.math.cumprod`: the cumulative product of `x` along `axis`.

    Args:
        x: a numeric tensor (or value convertible to one).
        axis: a scalar int32/int64 (tensor or Python int) in [-rank(x), rank(x)).
        exclusive: if True, output i leaves out x[i] (the first output is 1).
        reverse: if True, multiply from the last element towards the first.
        name: a name for the op.

    Returns:
        A tensor of `x`'s dtype and shape. Its gradient, as TF's, divides by `x`
        and so needs nonzero inputs.

    Raises:
        ValueError: when a constant `axis` is out of range (InvalidArgumentError at run
            time for a fed one).

    Example:
        >>> tf.cumprod([2, 3, 4], reverse=True)   # [24, 12, 4]
    """
    return _scan_public("Cumprod", x, axis, exclusive, reverse, name)
