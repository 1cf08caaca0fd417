"""Value-making array ops: Transpose, Fill (zeros/ones), ZerosLike, OnesLike, Range,
StopGradient.

Public functions are re-exported by the package, `tensorweave.ops.array`.

Example:
    >>> tf.transpose(tf.zeros([2, 3])).shape.as_list()
    [3, 2]
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import (constant, constant_value, contains_tensor,
                                           convert_to_tensor,
                                           register_constant_folder)
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import (
    TensorShape, dimension_value, known_values, unknown_shape)
from tensorweave.ops.array.core_ops import _fold_if_known, _int_tensor, shape_from_tensor
from tensorweave.ops.array.shape_ops import rank, shape
from tensorweave.ops.math import math_ops
from tensorweave.ops.array.slice_ops import strided_slice
from tensorweave.runtime.inline import FORWARD, inline_kernel

_pyrange = builtins.range  # this module defines tf's `range`


# ---- Transpose ---------------------------------------------------------------------
invert_perm_op = define_op("InvertPermutation", inputs=("x",))


@invert_perm_op.shape
def _(x: Tensor) -> Any:
    return x.dtype, x.shape


@invert_perm_op.kernel("CPU")
def _(x: Any) -> Any:
    x = np.asarray(x)
    if x.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"InvertPermutation: x must be a "
                                          f"vector, got shape {list(x.shape)}")
    n = x.size
    seen = np.zeros(n, bool)
    valid = bool((np.sort(x) == np.arange(n)).all())
    for i, v in enumerate([] if valid else x.tolist()):  # name the first that breaks it
        if not 0 <= v < n or seen[v]:
            why = "duplicated" if 0 <= v < n else f"out of range [0, {n})"
            raise errors.InvalidArgumentError(None, None, f"InvertPermutation: x[{i}] = {v} "
                                              f"is {why}; x must be a permutation of "
                                              f"0..{n - 1}")
        seen[v] = True
    out = np.empty_like(x)
    out[x] = np.arange(x.size, dtype=x.dtype)
    return out


invert_perm_op.no_gradient()
_fold_if_known("InvertPermutation")

transpose_op = define_op("Transpose", inputs=("x", "perm"))


@transpose_op.shape
def _(x: Tensor, perm: Tensor) -> Any:
    p: Any = constant_value(perm)
    r = x.shape.ndims
    if p is None:
        n = dimension_value(perm.shape[0]) if perm.shape.ndims == 1 else None
        return x.dtype.base_dtype, unknown_shape(r if r is not None else n)
    p = [int(i) for i in np.asarray(p).reshape(-1)]
    if r is not None and sorted(p) != list(_pyrange(r)):
        raise ValueError(f"transpose: perm {p} is not a permutation of the {r} dimensions of "
                         f"input shape {x.shape}")
    if r is None:
        return x.dtype.base_dtype, unknown_shape(len(p))
    dims = x.shape.as_list()
    return x.dtype.base_dtype, TensorShape([dims[i] for i in p])


@transpose_op.kernel("CPU")
def _(x: Any, perm: Any) -> Any:
    return np.transpose(x, [int(i) for i in np.asarray(perm).reshape(-1)])


@transpose_op.gradient
def _(op: Operation, grad: Any) -> Any:
    perm = op.inputs[1]
    p = constant_value(perm)
    if p is not None:
        inv = np.argsort(np.asarray(p).reshape(-1)).astype(np.int32)
        return [transpose(grad, inv), None]
    inv_t = create_op("InvertPermutation", [perm], None, "InvertPermutation").outputs[0]
    return [transpose(grad, inv_t), None]


_fold_if_known("Transpose")


def transpose(a: Any, perm: Any = None, name: str | None = "transpose",
              conjugate: bool = False) -> Tensor:
    """`tf.transpose`: permutes dimensions (reverses them when `perm` is None).

    Example:
        >>> tf.transpose(tf.zeros([2, 3, 4]), [2, 0, 1]).shape.as_list()
        [4, 2, 3]
    """
    with name_scope(name, "transpose", [a]) as scope:  # TF's transpose/perm
        x = convert_to_tensor(a, name="a")
        if perm is None:
            r = x.shape.ndims
            if r is not None:
                perm = np.arange(r - 1, -1, -1, dtype=np.int32)
            else:
                # unknown rank: range(rank(x))[::-1]
                fwd = range(0, rank(x))
                perm = strided_slice(fwd, [0], [0], [-1], begin_mask=1, end_mask=1)
        out = create_op("Transpose", [x, _int_tensor(perm, name="perm")], None, scope).outputs[0]
    if conjugate and x.dtype.is_complex:
        out = math_ops.conj(out)
    return out


# ---- Fill, zeros, ones, zeros_like, ones_like ----------------------------------------
fill_op = define_op("Fill", inputs=("dims", "value"))


@fill_op.shape
def _(dims: Tensor, value: Tensor) -> Any:
    if value.shape.ndims not in (None, 0):
        raise ValueError(f"fill: value must be a scalar, got shape {value.shape}")
    return value.dtype.base_dtype, shape_from_tensor(dims)


@fill_op.kernel("CPU")
def _(dims: Any, value: Any) -> Any:
    dims = [int(d) for d in np.asarray(dims).reshape(-1)]
    if any(d < 0 for d in dims):
        raise errors.InvalidArgumentError(None, None, f"fill: dims {dims} must be >= 0")
    return np.full(dims, value, dtype=np.asarray(value).dtype)


@fill_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [None, math_ops.reduce_sum(grad)]


_fold_if_known("Fill")


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """`tf.fill`: a tensor of shape `dims` with every element `value`.

    Example:
        >>> tf.fill([2, 2], 7)  # evaluates to [[7, 7], [7, 7]]
    """
    if isinstance(dims, Tensor) and isinstance(value, Tensor):
        return create_op("Fill", [_int_tensor(dims), value], None, name).outputs[0]
    # As TF's op wrappers: plain arguments become "Fill/dims" and "Fill/value".
    with name_scope(name, "Fill", [dims, value]) as scope:
        return create_op("Fill", [_int_tensor(dims, name="dims"),
                                convert_to_tensor(value, name="value")], None, scope).outputs[0]


# TF builds a small constant-shaped tf.zeros/tf.ones as one Const (below this many
# elements) and a Fill otherwise, so that GraphDefs stay small.
_SMALL_CONSTANT = 1000


def _filled(value: int, shape: Any, dtype: Any, name: str | None, default_name: str) -> Tensor:
    """`tf.zeros`/`tf.ones` as TF 1.x builds them: a Const named `<scope>` when the shape
    is static and small, else `<scope>/shape_as_tensor`, `<scope>/Const` and the Fill."""
    dt = _dt.as_dtype(dtype).base_dtype
    with name_scope(name, default_name, [shape]) as scope:
        if not isinstance(shape, Tensor) and not contains_tensor(shape):
            dims = np.asarray(known_values(shape))
            if dims.size == 0 and dims.ndim == 1:  # a scalar's shape [] (NumPy: float64)
                dims = dims.astype(np.int64)
            if dims.ndim == 1 and dims.dtype.kind in "iu" and (dims >= 0).all() and \
                    int(np.prod(dims, dtype=np.float64)) < _SMALL_CONSTANT:
                return constant(_full(value, [int(d) for d in dims], dt), dtype=dt,
                                name=scope)
            shape = _int_tensor(shape, name="shape_as_tensor")
        return fill(shape, _scalar(value, dt), name=scope)


def _scalar(value: Any, dtype: _dt.DType) -> Tensor:
    if dtype == _dt.string:
        return constant(b"" if not value else value, dtype=dtype)
    return constant(np.asarray(value).astype(dtype.as_numpy_dtype), dtype=dtype)


def _full(value: int, dims: list[int], dtype: _dt.DType) -> Any:
    if dtype == _dt.string:
        return np.full(dims, b"" if not value else value, dtype=object)
    return np.full(dims, value, dtype=dtype.as_numpy_dtype)


def zeros(shape: Any, dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """`tf.zeros`: a tensor of `shape` filled with zeros.

    Example:
        >>> tf.zeros([2, 3], tf.int32).shape.as_list()
        [2, 3]
    """
    return _filled(0, shape, dtype, name, "zeros")


def ones(shape: Any, dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """`tf.ones`: a tensor of `shape` filled with ones.

    Example:
        >>> tf.ones([3])  # evaluates to [1., 1., 1.]
    """
    return _filled(1, shape, dtype, name, "ones")


def _like_op(op_name: str, fill_value: int) -> Any:
    d = define_op(op_name, inputs=("x",))

    @d.shape
    def _(x: Tensor) -> Any:
        return x.dtype.base_dtype, x.shape

    @d.kernel("CPU")
    def _(x: Any) -> Any:
        x = np.asarray(x)
        return np.full(x.shape, fill_value if x.dtype != object else b"", dtype=x.dtype)

    d.no_gradient()
    register_constant_folder(op_name, lambda op, i: np.full(
        op.inputs[0].shape.as_list(), fill_value,
        op.outputs[0].dtype.as_numpy_dtype) if op.inputs[0].shape.is_fully_defined() and
        op.outputs[0].dtype != _dt.string else None)
    return d


zeros_like_op = _like_op("ZerosLike", 0)
ones_like_op = _like_op("OnesLike", 1)


def zeros_like(tensor: Any, dtype: Any = None, name: str | None = None,
               optimize: bool = True) -> Tensor:
    """`tf.zeros_like`: zeros with the shape (and, unless `dtype`, dtype) of `tensor`.

    Example:
        >>> tf.zeros_like(tf.ones([2]))  # evaluates to [0., 0.]
    """
    # As TF 1.x: a statically shaped input gives tf.zeros of that shape (one Const for a
    # small one) named "zeros_like"; otherwise a ZerosLike op (or a Fill for a new dtype).
    with name_scope(name, "zeros_like", [tensor]) as scope:
        t = convert_to_tensor(tensor, name="tensor")
        out_dtype = t.dtype.base_dtype if dtype is None else _dt.as_dtype(dtype).base_dtype
        if optimize and t.shape.is_fully_defined() and out_dtype != _dt.variant:
            return zeros(t.shape.as_list(), out_dtype, name=scope)
        if out_dtype != t.dtype.base_dtype:
            return zeros(shape(t), out_dtype, name=scope)
        return create_op("ZerosLike", [t], None, scope).outputs[0]


def ones_like(tensor: Any, dtype: Any = None, name: str | None = None,
              optimize: bool = True) -> Tensor:
    """`tf.ones_like`: ones with the shape (and, unless `dtype`, dtype) of `tensor`.

    Example:
        >>> tf.ones_like(tf.zeros([2], tf.int32))  # evaluates to [1, 1]
    """
    # As TF 1.x: tf.ones of the input's shape ("ones_like/Shape", a Const when the shape
    # is static), "ones_like/Const" and the Fill named "ones_like", shaped as the input.
    with name_scope(name, "ones_like", [tensor]) as scope:
        t = convert_to_tensor(tensor, name="tensor")
        out_dtype = t.dtype.base_dtype if dtype is None else _dt.as_dtype(dtype).base_dtype
        if optimize and t.shape.is_fully_defined():
            dims = constant(t.shape.as_list(), dtype=_dt.int32, name="Shape")
        else:
            dims = shape(t, name="Shape")
        out = fill(dims, _scalar(1, out_dtype), name=scope)
        out.set_shape(t.shape)
        return out


# ---- Range -------------------------------------------------------------------------
range_op = define_op("Range", inputs=("start", "limit", "delta"))


@range_op.shape
def _(start: Tensor, limit: Tensor, delta: Tensor) -> Any:
    for nm, t in (("start", start), ("limit", limit), ("delta", delta)):
        if t.shape.ndims not in (None, 0):
            raise ValueError(f"range: {nm} must be a scalar, got shape {t.shape}")
    vals = [constant_value(t) for t in (start, limit, delta)]
    if any(v is None for v in vals):
        return start.dtype.base_dtype, TensorShape([None])
    s, lim, d = (np.asarray(v).item() for v in vals)
    if d == 0:
        raise ValueError("range: delta must not be 0")
    return start.dtype.base_dtype, TensorShape([max(0, int(np.ceil((lim - s) / d)))])


@range_op.kernel("CPU")
def _(start: Any, limit: Any, delta: Any) -> Any:
    s, lim, d = (np.asarray(v).item() for v in (start, limit, delta))
    if d == 0:
        raise errors.InvalidArgumentError(None, None, "range: requires delta != 0")
    if (d > 0 and s > lim) or (d < 0 and s < lim):
        raise errors.InvalidArgumentError(
            None, None, f"range: requires start <= limit when delta > 0 (and start >= limit "
            f"when delta < 0); got start={s}, limit={lim}, delta={d}")
    return np.arange(s, lim, d).astype(np.asarray(start).dtype)


range_op.no_gradient()
_fold_if_known("Range")

_RANGE_ORDER = [_dt.int32, _dt.int64, _dt.float32, _dt.float64]


def range(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,  # noqa: A001
          name: str = "range") -> Tensor:
    """`tf.range`: `[start, start + delta, ...]` up to but excluding `limit`.

    With one argument it counts from 0 to `start`. The dtype is inferred as the
    widest of the arguments (int32 < int64 < float32 < float64) unless given.

    Example:
        >>> tf.range(3, 18, 3)  # evaluates to [3, 6, 9, 12, 15]
    """
    if limit is None:
        start, limit = 0, start
    if dtype is not None:
        dt = _dt.as_dtype(dtype).base_dtype
    else:
        dts = [a.dtype.base_dtype if isinstance(a, Tensor) else
               convert_to_tensor(a).dtype.base_dtype if not isinstance(a, (int, float))
               else (_dt.float32 if isinstance(a, float) else _dt.int32)
               for a in (start, limit, delta)]
        dt = max(dts, key=lambda d: _RANGE_ORDER.index(d) if d in _RANGE_ORDER else 0)
    # As TF: the "range" scope holds range/start, /limit, /delta and names the op.
    with name_scope(name, "Range", [start, limit, delta]) as scope:
        args = []
        for a, nm in ((start, "start"), (limit, "limit"), (delta, "delta")):
            if isinstance(a, Tensor):
                if a.dtype.base_dtype != dt:
                    a = math_ops.cast(a, dt)
                args.append(a)
            else:
                args.append(constant(np.asarray(a).astype(dt.as_numpy_dtype), dtype=dt,
                                     name=nm))
        return create_op("Range", args, None, scope).outputs[0]


# ---- StopGradient ------------------------------------------------------------------
stop_gradient_op = define_op("StopGradient", inputs=("input",))


@stop_gradient_op.shape
def _(x: Tensor) -> Any:
    return x.dtype.base_dtype, x.shape


@stop_gradient_op.kernel("CPU")
@inline_kernel(FORWARD)  # compiled plans write it as an expression
def _(x: Any) -> Any:
    return x


stop_gradient_op.no_gradient()
register_constant_folder("StopGradient", lambda op, i: constant_value(op.inputs[0]))


def stop_gradient(input: Any, name: str | None = None) -> Tensor:
    """`tf.stop_gradient`: the same value, but no gradient flows back through it.

    Example:
        >>> y = tf.stop_gradient(x) * x  # d(y)/dx == x, not 2 * x
    """
    with name_scope(name, "StopGradient", [input]) as scope:  # TF's StopGradient/input
        return create_op("StopGradient", [convert_to_tensor(input, name="input")], None,
                       scope).outputs[0]


__all__: Sequence[str] = [
    "transpose", "fill", "zeros", "ones", "zeros_like", "ones_like", "range", "stop_gradient"]
