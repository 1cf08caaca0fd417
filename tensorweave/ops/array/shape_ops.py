"""Shape-level array ops: Shape, Size, Rank, Reshape, ExpandDims, Squeeze (the helpers
shared by the array op files are in `core_ops`).

Public functions are re-exported by the package, `tensorweave.ops.array`.

Example:
    >>> x = tf.zeros([2, 3])
    >>> tf.reshape(x, [-1]).shape.as_list()
    [6]
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import (constant_value, convert_to_tensor,
                                           register_constant_folder)
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.op_def import get_op_def
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, unknown_shape
from tensorweave.ops.array.core_ops import (
    _const_int, _fold_if_known, _int_tensor, _normalize_axis, kernel_int, shape_from_tensor)


# ---- Shape, Size, Rank -------------------------------------------------------------
shape_op = define_op("Shape", inputs=("input",), attrs={"out_type": _dt.int32})


@shape_op.shape
def _(x: Tensor, *, out_type: _dt.DType) -> Any:
    return out_type, TensorShape([x.shape.ndims])


_INT32_MAX = 2 ** 31 - 1


def _fits_int32(values: Sequence[int]) -> bool:
    return all(v <= _INT32_MAX for v in values)


@shape_op.kernel("CPU")
def _(x: Any, *, out_type: _dt.DType) -> np.ndarray:
    dims = np.shape(x)
    if out_type == _dt.int32 and not _fits_int32(dims):
        i = next(i for i, d in enumerate(dims) if d > _INT32_MAX)
        raise errors.InvalidArgumentError(
            None, None, f"Shape output type is 32-bit but dim {i} is {dims[i]}: pass "
            "out_type=tf.int64 to tf.shape for dimensions past 2**31 - 1.")
    return np.asarray(dims, dtype=out_type.as_numpy_dtype)


def _fold_shape(op: Operation, i: int) -> np.ndarray | None:
    return _fold_shape_of(op.inputs[0], op)


def _fold_shape_of(x: Tensor, op: Operation) -> np.ndarray | None:
    """`x`'s fully known static shape as a constant, unless int32 cannot hold it (the
    kernel then reports it at run time)."""
    shape, out_type = x.shape, op.get_attr("out_type")
    if not shape.is_fully_defined():
        return None
    dims = [int(d) for d in shape.as_list()]  # type: ignore[arg-type]
    if out_type == _dt.int32 and not _fits_int32(dims):
        return None
    return np.asarray(dims, out_type.as_numpy_dtype)


shape_op.no_gradient().borrow_refs()  # reads only the shape
register_constant_folder("Shape", _fold_shape)

size_op = define_op("Size", inputs=("input",), attrs={"out_type": _dt.int32})


@size_op.shape
def _(x: Tensor, *, out_type: _dt.DType) -> Any:
    return out_type, TensorShape([])


@size_op.kernel("CPU")
def _(x: Any, *, out_type: _dt.DType) -> np.ndarray:
    n = int(np.size(x))
    if out_type == _dt.int32 and n > _INT32_MAX:
        raise errors.InvalidArgumentError(
            None, None, f"Number of elements was larger than representable by 32-bit output "
            f"type ({n} elements): pass out_type=tf.int64 to tf.size.")
    return np.asarray(n, dtype=out_type.as_numpy_dtype)


def _fold_size(op: Operation, i: int) -> np.ndarray | None:
    n, out_type = op.inputs[0].shape.num_elements(), op.get_attr("out_type")
    if n is None or (out_type == _dt.int32 and n > _INT32_MAX):
        return None
    return np.asarray(n, out_type.as_numpy_dtype)


size_op.no_gradient().borrow_refs()  # reads only the shape
register_constant_folder("Size", _fold_size)

shape_n_op = define_op("ShapeN", inputs=("input*",), attrs={"out_type": _dt.int32})


@shape_n_op.shape
def _(xs: list[Tensor], *, out_type: _dt.DType) -> Any:
    return [(out_type, TensorShape([x.shape.ndims])) for x in xs]


@shape_n_op.kernel("CPU")
def _(xs: list[Any], *, out_type: _dt.DType) -> Any:
    kernel = get_op_def("Shape").kernels["CPU"].fn
    outs = [kernel(x, out_type=out_type) for x in xs]
    return outs[0] if len(outs) == 1 else outs  # one output: the bare value


shape_n_op.no_gradient().borrow_refs()
register_constant_folder("ShapeN", lambda op, i: _fold_shape_of(op.inputs[i], op))

rank_op = define_op("Rank", inputs=("input",))


@rank_op.shape
def _(x: Tensor) -> Any:
    return _dt.int32, TensorShape([])


@rank_op.kernel("CPU")
def _(x: Any) -> np.ndarray:
    return np.asarray(np.ndim(x), dtype=np.int32)


rank_op.no_gradient()
register_constant_folder("Rank", lambda op, i: np.asarray(op.inputs[0].shape.ndims, np.int32)
                         if op.inputs[0].shape.ndims is not None else None)


def shape(input: Any, name: str | None = None, out_type: Any = _dt.int32) -> Tensor:
    """`tf.shape`: the dynamic shape of `input` as a 1-D integer tensor.

    Example:
        >>> tf.shape(tf.zeros([2, 3]))  # evaluates to [2, 3]
    """
    with name_scope(name, "Shape", [input]) as scope:  # TF: a plain input is "Shape/Const"
        return create_op("Shape", [convert_to_tensor(input)],
                       {"out_type": _dt.as_dtype(out_type)}, scope).outputs[0]


def size(input: Any, name: str | None = None, out_type: Any = _dt.int32) -> Tensor:
    """`tf.size`: the number of elements of `input` (a scalar).

    Example:
        >>> tf.size(tf.zeros([2, 3]))  # evaluates to 6
    """
    with name_scope(name, "Size", [input]) as scope:  # TF: a plain input is "Size/Const"
        return create_op("Size", [convert_to_tensor(input)],
                       {"out_type": _dt.as_dtype(out_type)}, scope).outputs[0]


def shape_n(input: Any, out_type: Any = _dt.int32, name: str | None = None) -> list[Tensor]:
    """`tf.shape_n`: the dynamic shapes of several tensors, from one op.

    Example:
        >>> a, b = tf.shape_n([tf.zeros([2, 3]), tf.zeros([4])])  # [2, 3] and [4]
    """
    tensors = [convert_to_tensor(t) for t in input]
    return create_op("ShapeN", [tensors], {"out_type": _dt.as_dtype(out_type)},
                   name or "ShapeN").outputs


def rank(input: Any, name: str | None = None) -> Tensor:
    """`tf.rank`: the number of dimensions of `input` (a scalar int32).

    Example:
        >>> tf.rank(tf.zeros([2, 3]))  # evaluates to 2
    """
    with name_scope(name, "Rank", [input]) as scope:  # TF: a plain input is "Rank/Const"
        return create_op("Rank", [convert_to_tensor(input)], None, scope).outputs[0]


# ---- Reshape -----------------------------------------------------------------------
reshape_op = define_op("Reshape", inputs=("tensor", "shape"))


@reshape_op.shape
def _(x: Tensor, shp: Tensor) -> Any:
    if shp.shape.ndims not in (None, 1):
        raise ValueError(f"Reshape's shape argument must be 1-D, got shape {shp.shape}")
    target = shape_from_tensor(shp)
    raw: Any = constant_value(shp)
    if raw is not None:
        raw = [int(d) for d in np.asarray(raw).reshape(-1)]
        if sum(d == -1 for d in raw) > 1:
            raise ValueError(f"Reshape: at most one dimension of the target shape may be -1, "
                             f"got {raw} (input shape {x.shape})")
        if any(d < -1 for d in raw):
            raise ValueError(f"Reshape: target shape {raw} has a negative size "
                             f"(input shape {x.shape})")
    if target.ndims is None:
        return x.dtype.base_dtype, target
    n_in = x.shape.num_elements()
    known = [d for d in target.as_list() if d is not None]
    n_known = math.prod(known)  # Python ints: no int64 overflow
    if target.is_fully_defined():
        if n_in is not None and n_in != n_known:
            raise ValueError(f"Cannot reshape a tensor with {n_in} elements to shape "
                             f"{target.as_list()} ({n_known} elements): input shape "
                             f"{x.shape}, requested shape {target}")
        return x.dtype.base_dtype, target
    if raw is not None and n_in is not None:
        # exactly one -1: infer it (must divide evenly)
        if n_known == 0 or n_in % n_known:
            raise ValueError(f"Cannot reshape a tensor with {n_in} elements to shape {raw}: "
                             f"{n_in} is not divisible by {n_known} (input shape {x.shape})")
        return x.dtype.base_dtype, TensorShape([n_in // n_known if d == -1 else d
                                                for d in raw])
    return x.dtype.base_dtype, target


@reshape_op.kernel("CPU")
def _(x: Any, shp: Any) -> Any:
    shp = np.asarray(shp).reshape(-1).tolist()  # ints, without a numpy scalar each
    x = np.asarray(x)
    try:
        return x.reshape(shp)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"Input to reshape is a tensor with {x.size} values (shape "
            f"{list(x.shape)}), but the requested shape is {shp}") from None


@reshape_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [reshape(grad, shape(op.inputs[0])), None]


_fold_if_known("Reshape")
register_constant_folder("Identity", lambda op, i: constant_value(op.inputs[0]))


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tf.reshape`: the same elements in a new shape; one dimension may be -1.

    Example:
        >>> tf.reshape(tf.zeros([2, 3]), [3, -1]).shape.as_list()
        [3, 2]
    """
    with name_scope(name, "Reshape", [tensor, shape]) as scope:  # TF's "Reshape/shape"
        return create_op("Reshape", [convert_to_tensor(tensor, name="tensor"),
                                   _int_tensor(shape, name="shape")], None, scope).outputs[0]


# ---- ExpandDims, Squeeze -----------------------------------------------------------
expand_dims_op = define_op("ExpandDims", inputs=("input", "dim"))


@expand_dims_op.shape
def _(x: Tensor, dim: Tensor) -> Any:
    axis = _const_int(dim)
    r = x.shape.ndims
    if axis is None or r is None:
        return x.dtype.base_dtype, unknown_shape(None if r is None else r + 1)
    if not -r - 1 <= axis <= r:
        raise ValueError(f"expand_dims: axis {axis} is out of range for input shape "
                         f"{x.shape}; it must be in [{-r - 1}, {r}]")
    axis = axis if axis >= 0 else axis + r + 1
    dims = x.shape.as_list()
    return x.dtype.base_dtype, TensorShape(dims[:axis] + [1] + dims[axis:])


@expand_dims_op.kernel("CPU")
def _(x: Any, dim: Any) -> Any:
    return np.expand_dims(x, kernel_int(dim))


@expand_dims_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [reshape(grad, shape(op.inputs[0])), None]


_fold_if_known("ExpandDims")


def expand_dims(input: Any, axis: Any = None, name: str | None = None, dim: Any = None,
                ) -> Tensor:
    """`tf.expand_dims`: inserts a size-1 dimension at `axis` (negative counts back).

    Example:
        >>> tf.expand_dims(tf.zeros([2, 3]), -1).shape.as_list()
        [2, 3, 1]
    """
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("expand_dims needs an axis (got axis=None and dim=None)")
    with name_scope(name, "ExpandDims", [input, axis]) as scope:  # TF's "ExpandDims/dim"
        return create_op("ExpandDims", [convert_to_tensor(input, name="input"),
                                      _int_tensor(axis, name="dim")], None, scope).outputs[0]


squeeze_op = define_op("Squeeze", inputs=("input",), attrs={"squeeze_dims": []})


@squeeze_op.shape
def _(x: Tensor, *, squeeze_dims: list[int]) -> Any:
    r = x.shape.ndims
    if r is None:
        return x.dtype.base_dtype, TensorShape(None)
    dims = x.shape.as_list()
    if not squeeze_dims:
        if any(d is None for d in dims):
            return x.dtype.base_dtype, TensorShape(None)  # which dims go is unknown
        return x.dtype.base_dtype, TensorShape([d for d in dims if d != 1])
    axes = {_normalize_axis(a, r, "squeeze") for a in squeeze_dims}
    for a in sorted(axes):
        if dims[a] not in (None, 1):
            raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got "
                             f"{dims[a]} (input shape {x.shape})")
    return x.dtype.base_dtype, TensorShape([d for i, d in enumerate(dims) if i not in axes])


@squeeze_op.kernel("CPU")
def _(x: Any, *, squeeze_dims: list[int]) -> Any:
    return np.squeeze(x, axis=tuple(squeeze_dims) if squeeze_dims else None)


@squeeze_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [reshape(grad, shape(op.inputs[0]))]


_fold_if_known("Squeeze")


def squeeze(input: Any, axis: Any = None, name: str | None = None,
            squeeze_dims: Any = None) -> Tensor:
    """`tf.squeeze`: removes size-1 dimensions (all, or those listed in `axis`).

    Example:
        >>> tf.squeeze(tf.zeros([1, 2, 1]), axis=[0]).shape.as_list()
        [2, 1]
    """
    axis = squeeze_dims if axis is None else axis
    axis = [] if axis is None else [int(axis)] if np.ndim(axis) == 0 else [int(a) for a in axis]
    with name_scope(name, "Squeeze", [input]) as scope:  # TF's "Squeeze/input"
        return create_op("Squeeze", [convert_to_tensor(input, name="input")],
                       {"squeeze_dims": axis}, scope).outputs[0]


__all__: Sequence[str] = [
    "shape", "size", "rank", "reshape", "expand_dims", "squeeze", "shape_from_tensor"]
