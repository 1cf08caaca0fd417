"""Indexing array ops: GatherV2 (gradient: IndexedSlices on axis 0), OneHot,
BooleanMask, with their gradient ops GatherV2Grad and BooleanMaskGrad.

Public functions are re-exported by the package, `tensorweave.ops.array`.

Example:
    >>> tf.gather(tf.zeros([5, 3]), [[0, 4]]).shape.as_list()
    [1, 2, 3]
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.array.join_ops import concat
from tensorweave.ops.array.core_ops import (
    _const_int, _fold_if_known, _int_tensor, _normalize_axis, kernel_int)
from tensorweave.ops.array.shape_ops import expand_dims, reshape, shape, size
from tensorweave.ops.array.slice_ops import _pyslice, strided_slice
from tensorweave.ops.array.core_ops import shape_from_tensor


# ---- GatherV2 ----------------------------------------------------------------------
gather_op = define_op("GatherV2", inputs=("params", "indices", "axis"))


@gather_op.shape
def _(params: Tensor, indices: Tensor, axis_t: Tensor) -> Any:
    if not indices.dtype.base_dtype.is_integer:
        raise TypeError(f"gather: indices must be int32/int64, got {indices.dtype.name}")
    axis = _const_int(axis_t)
    p = params.shape
    if p.ndims is None or axis is None or indices.shape.ndims is None:
        return params.dtype.base_dtype, TensorShape(None)
    a = _normalize_axis(axis, p.ndims, "gather")
    d = p.as_list()
    return params.dtype.base_dtype, TensorShape(d[:a] + indices.shape.as_list() + d[a + 1:])


@gather_op.kernel("CPU")
def _(params: Any, indices: Any, axis: Any) -> Any:
    params, indices = np.asarray(params), np.asarray(indices)
    a = kernel_int(axis)
    if not indices.size or indices.min() >= 0:
        try:  # np.take checks the upper bound itself (one reduction fewer)
            return params.take(indices, axis=a)  # the method: np.take's wrapper costs ~0.6 us
        except IndexError:
            if not -params.ndim <= a < params.ndim:
                raise
    n = params.shape[a]
    bad = indices[(indices < 0) | (indices >= n)].reshape(-1)[0]
    raise errors.InvalidArgumentError(None, None, f"gather: indices contain {bad}, which "
                                      f"is not in [0, {n}) (params shape "
                                      f"{list(params.shape)}, axis {a})")


gather_op.borrow_refs()  # np.take copies the rows: gathering from a variable copies no more


gather_grad_op = define_op("GatherV2Grad", inputs=("params_shape", "indices", "grad", "axis"))


@gather_grad_op.shape
def _(pshape: Tensor, indices: Tensor, g: Tensor, axis: Tensor) -> Any:
    return g.dtype.base_dtype, shape_from_tensor(pshape)


@gather_grad_op.kernel("CPU")
def _(pshape: Any, indices: Any, g: Any, axis: Any) -> Any:
    g, indices = np.asarray(g), np.asarray(indices)
    out = np.zeros([int(d) for d in np.ravel(pshape)], dtype=g.dtype)
    a = int(np.asarray(axis).reshape(()))
    a = a % out.ndim
    # g has dims [pre..., idx..., post...]; scatter-add each idx position into out's axis a
    gm = g.reshape(out.shape[:a] + (indices.size,) + out.shape[a + 1:])
    np.add.at(np.moveaxis(out, a, 0), indices.reshape(-1), np.moveaxis(gm, a, 0))
    return out


@gather_grad_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [None, None, gather(grad, op.inputs[1], axis=op.inputs[3]), None]


@gather_op.gradient
def _(op: Operation, grad: Any) -> Any:
    params, indices, axis_t = op.inputs
    axis = _const_int(axis_t)
    with op.graph.colocate_with(params.op):  # as TF: else a ps's whole shard travels
        # Shape borrows a variable reference (no snapshot copy of the variable).
        pshape = create_op("Shape", [params], {"out_type": _dt.int32}, "Shape").outputs[0]
    if axis is not None and (axis == 0 or (params.shape.ndims is not None and
                                           axis == -params.shape.ndims)):
        # Sparse gradient: one row of `values` per gathered index.
        if indices.shape.ndims == 1 and isinstance(grad, Tensor):
            # A vector of ids (every sharded lookup's): grad already holds one row
            # per id, so neither needs a reshape (7 ops a shard of a lookup).
            return [IndexedSlices(grad, indices, pshape), None, None]
        rest = _row_shape(grad, indices, pshape)
        values_shape = concat([expand_dims(size(indices), 0), rest], 0)
        values = reshape(grad, values_shape)
        return [IndexedSlices(values, reshape(indices, [-1]), pshape), None, None]
    g = create_op("GatherV2Grad", [pshape, indices, grad, axis_t], None,
                "GatherV2Grad").outputs[0]
    return [g, None, None]


def _row_shape(grad: Any, indices: Tensor, pshape: Tensor) -> Tensor:
    """The shape of one gathered row, params' shape[1:]: read from grad (shaped
    indices.shape + rows' shape) when the rank of indices is known, so that a worker
    does not wait every step for the Shape of a ps's variable (only the IndexedSlices'
    dense_shape needs it, and a sparse update on the ps reads none)."""
    k = indices.shape.ndims
    if k is None or isinstance(grad, IndexedSlices):
        return strided_slice(pshape, [1], [0], [1], end_mask=1)
    return strided_slice(shape(grad), [k], [0], [1], end_mask=1)


_fold_if_known("GatherV2")


# Row gathers of sharded params (a PartitionedVariable): registered by ops.nn's
# embedding_lookup, a family above this one, so that each shard is read where it lives.
_ROW_GATHERS: list[tuple[type, Callable[..., Tensor]]] = []


def register_row_gather(cls: type, fn: Callable[..., Tensor]) -> None:
    """`tf.gather(params, ids)` (axis 0) on a `cls` calls `fn(params, ids, name)` instead."""
    _ROW_GATHERS.append((cls, fn))


def gather(params: Any, indices: Any, validate_indices: Any = None, name: str | None = None,
           axis: Any = 0) -> Tensor:
    """`tf.gather`: slices of `params` along `axis` at `indices` (any shape).

    The gradient w.r.t. `params` is an `IndexedSlices` when axis is 0. On a
    PartitionedVariable (axis 0) each shard gathers its own rows where it lives,
    instead of TF 1.x's concatenation of every shard.

    Example:
        >>> tf.gather([[1, 2], [3, 4], [5, 6]], [2, 0])  # [[5, 6], [1, 2]]
    """
    if isinstance(axis, int) and axis == 0:
        for cls, fn in _ROW_GATHERS:
            if isinstance(params, cls):
                return fn(params, indices, name)
    with name_scope(name, "GatherV2", [params, indices, axis]) as scope:  # GatherV2/indices
        p = convert_to_tensor(params, name="params")
        ind = convert_to_tensor(indices, name="indices")
        return create_op("GatherV2", [p, ind, _int_tensor(axis, name="axis")], None,
                       scope).outputs[0]


# ---- OneHot ------------------------------------------------------------------------
one_hot_op = define_op("OneHot", inputs=("indices", "depth", "on_value", "off_value"),
                       attrs={"axis": -1})


@one_hot_op.shape
def _(indices: Tensor, depth: Tensor, on: Tensor, off: Tensor, *, axis: int) -> Any:
    if on.dtype.base_dtype != off.dtype.base_dtype:
        raise TypeError(f"one_hot: on_value ({on.dtype.name}) and off_value "
                        f"({off.dtype.name}) must have the same dtype")
    d = _const_int(depth)
    if d is not None and d < 0:
        raise ValueError(f"one_hot: depth must be >= 0, got {d}")
    s = indices.shape
    if s.ndims is None:
        return on.dtype.base_dtype, TensorShape(None)
    if not -1 <= axis <= s.ndims:
        raise ValueError(f"one_hot: axis {axis} must be in [-1, {s.ndims}] for indices "
                         f"shape {s}")
    a = s.ndims if axis == -1 else axis
    dims = s.as_list()
    return on.dtype.base_dtype, TensorShape(dims[:a] + [d] + dims[a:])


@one_hot_op.kernel("CPU")
def _(indices: Any, depth: Any, on: Any, off: Any, *, axis: int) -> Any:
    indices = np.asarray(indices)
    d = int(np.asarray(depth).reshape(()))
    if d < 0:
        raise errors.InvalidArgumentError(None, None, f"one_hot: depth must be >= 0, got {d}")
    on, off = np.asarray(on), np.asarray(off)
    hot = indices[..., None] == np.arange(d)  # out-of-range indices give all-off rows
    out = np.where(hot, on, off).astype(on.dtype)
    return out if axis == -1 else np.moveaxis(out, -1, axis)


one_hot_op.no_gradient()


def one_hot(indices: Any, depth: Any, on_value: Any = None, off_value: Any = None,
            axis: int | None = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """`tf.one_hot`: `on_value` where `indices == i` along a new dimension of size `depth`.

    Indices outside [0, depth) give rows of `off_value`. The dtype comes from
    `dtype`, else `on_value`/`off_value`, else float32.

    Example:
        >>> tf.one_hot([0, 2], 3)  # [[1., 0., 0.], [0., 0., 1.]]
    """
    if dtype is not None:
        dt = _dt.as_dtype(dtype).base_dtype
    elif isinstance(on_value, Tensor):
        dt = on_value.dtype.base_dtype
    elif isinstance(off_value, Tensor):
        dt = off_value.dtype.base_dtype
    elif on_value is not None or off_value is not None:
        dt = convert_to_tensor(on_value if on_value is not None else off_value).dtype
    else:
        dt = _dt.float32
    # As TF: one_hot/on_value, /off_value, /indices, /depth, and the op named "one_hot".
    with name_scope(name, "one_hot", [indices, depth, on_value, off_value]) as scope:
        on = convert_to_tensor(1 if on_value is None else on_value, dtype=dt, name="on_value")
        off = convert_to_tensor(0 if off_value is None else off_value, dtype=dt,
                                name="off_value")
        ind = convert_to_tensor(indices, name="indices")
        if not ind.dtype.base_dtype.is_integer:
            raise TypeError(f"one_hot: indices must be integers, got {ind.dtype.name}")
        return create_op("OneHot", [ind, _int_tensor(depth, name="depth"), on, off],
                       {"axis": -1 if axis is None else int(axis)}, scope).outputs[0]


# ---- BooleanMask -------------------------------------------------------------------
bool_mask_op = define_op("BooleanMask", inputs=("tensor", "mask"), attrs={"axis": 0})


@bool_mask_op.shape
def _(x: Tensor, mask: Tensor, *, axis: int) -> Any:
    m = mask.shape
    if m.ndims is None:
        raise ValueError("boolean_mask: the mask's rank must be known statically")
    if m.ndims == 0:
        raise ValueError("boolean_mask: the mask must not be a scalar")
    if x.shape.ndims is None:
        return x.dtype.base_dtype, TensorShape(None)
    d = x.shape.as_list()
    part = TensorShape(d[axis:axis + m.ndims])
    if len(d) < axis + m.ndims or not part.is_compatible_with(m):
        raise ValueError(f"boolean_mask: mask shape {m} is not compatible with dimensions "
                         f"{axis}..{axis + m.ndims - 1} of tensor shape {x.shape}")
    n = None
    mv = constant_value(mask)
    if mv is not None:
        n = int(np.count_nonzero(mv))
    return x.dtype.base_dtype, TensorShape(d[:axis] + [n] + d[axis + m.ndims:])


def _mask_index(axis: int, mask: Any) -> tuple:
    return (_pyslice(None, None, None),) * axis + (np.asarray(mask, dtype=bool),)


@bool_mask_op.kernel("CPU")
def _(x: Any, mask: Any, *, axis: int) -> Any:
    x, mask = np.asarray(x), np.asarray(mask)
    if x.shape[axis:axis + mask.ndim] != mask.shape:
        raise errors.InvalidArgumentError(None, None, f"boolean_mask: mask shape "
                                          f"{list(mask.shape)} does not match tensor shape "
                                          f"{list(x.shape)} at axis {axis}")
    return x[_mask_index(axis, mask)]


bool_mask_grad_op = define_op("BooleanMaskGrad", inputs=("tensor_shape", "mask", "grad"),
                              attrs={"axis": 0})


@bool_mask_grad_op.shape
def _(shp: Tensor, mask: Tensor, g: Tensor, *, axis: int) -> Any:
    return g.dtype.base_dtype, shape_from_tensor(shp)


@bool_mask_grad_op.kernel("CPU")
def _(shp: Any, mask: Any, g: Any, *, axis: int) -> Any:
    g = np.asarray(g)
    out = np.zeros([int(d) for d in np.ravel(shp)], dtype=g.dtype)
    out[_mask_index(axis, mask)] = g
    return out


@bool_mask_grad_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [None, None, boolean_mask(grad, op.inputs[1], axis=op.get_attr("axis"))]


@bool_mask_op.gradient
def _(op: Operation, grad: Any) -> Any:
    g = create_op("BooleanMaskGrad", [shape(op.inputs[0]), op.inputs[1], grad],
                {"axis": op.get_attr("axis")}, "BooleanMaskGrad").outputs[0]
    return [g, None]


def boolean_mask(tensor: Any, mask: Any, name: str = "boolean_mask", axis: Any = None,
                 ) -> Tensor:
    """`tf.boolean_mask`: the entries of `tensor` where the boolean `mask` is True.

    The mask covers dimensions `axis .. axis + rank(mask) - 1`, which are flattened
    into one dimension of (dynamic) size `count_nonzero(mask)`.

    Example:
        >>> tf.boolean_mask([[1, 2], [3, 4]], [True, False])  # [[1, 2]]
    """
    t = convert_to_tensor(tensor)
    m = convert_to_tensor(mask, dtype=_dt.bool)
    a = 0 if axis is None else int(axis)
    if a < 0:
        if t.shape.ndims is None:
            raise ValueError("boolean_mask: a negative axis needs a tensor of known rank")
        a += t.shape.ndims
    return create_op("BooleanMask", [t, m], {"axis": a}, name).outputs[0]


__all__ = ["gather", "one_hot", "boolean_mask"]
