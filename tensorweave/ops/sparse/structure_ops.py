"""Sparse structure stanzas: SparseConcat, SparseFillEmptyRows (+Grad), SparseSlice.

Their public wrappers follow them (`tf.sparse_concat`, `tf.sparse_fill_empty_rows`,
`tf.sparse_slice`).

Example:
    >>> sp, empty = tf.sparse_fill_empty_rows(ids, -1)   # every row has an entry
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops import array as array_ops
from tensorweave.ops.array import core_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.ops.sparse.conversion_ops import (
    _sparse, _with_hint, as_indices, check_in_bounds, create, nnz_shape, sparse_shapes,
    standard_order)


# ---- SparseConcat ----------------------------------------------------------------------
concat_op = define_op("SparseConcat", inputs=("indices*", "values*", "shapes*"),
                      attrs={"concat_dim": REQUIRED})


@concat_op.shape
def _(indices: list[Tensor], values: list[Tensor], shapes: list[Tensor], *,
      concat_dim: int) -> Any:
    if not (len(indices) == len(values) == len(shapes)) or len(indices) < 2:
        raise ValueError(f"SparseConcat needs at least 2 inputs with as many indices, values "
                         f"and shapes, got {len(indices)}, {len(values)}, {len(shapes)}")
    ranks = {r for i, v, s in zip(indices, values, shapes)
             if (r := sparse_shapes(i, v, s, "SparseConcat")) is not None}
    if len(ranks) > 1:
        raise ValueError(f"SparseConcat: inputs have different ranks {sorted(ranks)}")
    dtype = values[0].dtype.base_dtype
    for v in values[1:]:
        if v.dtype.base_dtype != dtype:
            raise TypeError(f"SparseConcat: values {v.name} are {v.dtype.name}, expected "
                            f"{dtype.name} like {values[0].name}")
    rank = ranks.pop() if ranks else None
    return [(_dt.int64, TensorShape([None, rank])), (dtype, TensorShape([None])),
            (_dt.int64, TensorShape([rank]))]


@concat_op.kernel("CPU")
def _(indices: list[Any], values: list[Any], shapes: list[Any], *, concat_dim: int) -> Any:
    shapes = [np.asarray(s).astype(np.int64).reshape(-1) for s in shapes]
    rank = shapes[0].size
    dim = concat_dim + rank if concat_dim < 0 else concat_dim
    if not 0 <= dim < rank:
        raise errors.InvalidArgumentError(None, None, f"SparseConcat: concat_dim {concat_dim} "
                                          f"is out of range for rank {rank}")
    for i, s in enumerate(shapes):
        if s.size != rank or np.any(np.delete(s, dim) != np.delete(shapes[0], dim)):
            raise errors.InvalidArgumentError(
                None, None, f"SparseConcat: input {i} has shape {s.tolist()}, which does not "
                f"match input 0's {shapes[0].tolist()} outside dimension {dim}")
    parts, offset = [], 0
    for idx, s in zip(indices, shapes):
        idx = as_indices(idx, rank).copy()
        idx[:, dim] += offset
        offset += int(s[dim])
        parts.append(idx)
    out_idx = np.concatenate(parts, axis=0)
    out_val = np.concatenate([np.asarray(v).reshape(-1) for v in values])
    order = standard_order(out_idx)  # TF sorts the result into standard order
    out_shape = shapes[0].copy()
    out_shape[dim] = offset
    return out_idx[order], out_val[order], out_shape


concat_op.no_gradient()  # as TF: SparseConcat is not differentiable


# ---- SparseFillEmptyRows ---------------------------------------------------------------
fill_op = define_op("SparseFillEmptyRows",
                    inputs=("indices", "values", "dense_shape", "default_value"))


@fill_op.shape
def _(indices: Tensor, values: Tensor, dense_shape: Tensor, default: Tensor) -> Any:
    rank = sparse_shapes(indices, values, dense_shape, "SparseFillEmptyRows")
    if default.shape.ndims not in (None, 0):
        raise ValueError(f"SparseFillEmptyRows: default_value must be a scalar, got "
                         f"{default.name} with shape {default.shape}")
    return [(_dt.int64, TensorShape([None, rank])), (values.dtype.base_dtype,
                                                     TensorShape([None])),
            (_dt.bool, TensorShape([None])), (_dt.int64, nnz_shape(indices))]


@fill_op.kernel("CPU")
def _(indices: Any, values: Any, dense_shape: Any, default: Any) -> Any:
    shape = np.asarray(dense_shape).astype(np.int64).reshape(-1)
    if shape.size < 1:
        raise errors.InvalidArgumentError(None, None, "SparseFillEmptyRows: dense_shape must "
                                          "have at least one dimension")
    idx = as_indices(indices, shape.size)
    values = np.asarray(values)
    rows = idx[:, 0]
    bad = (rows < 0) | (rows >= shape[0])
    if bad.any():
        i = int(np.argmax(bad))
        raise errors.InvalidArgumentError(None, None, f"SparseFillEmptyRows: indices({i}, 0) "
                                          f"= {int(rows[i])} is not in [0, {int(shape[0])})")
    counts = np.bincount(rows, minlength=int(shape[0]))
    if rows.size and counts.all() and (rows[1:] >= rows[:-1]).all():
        # No empty row and the rows in order (the usual batch): the input is the output,
        # as TF's kernel forwards it.
        return idx, values, np.zeros(counts.size, bool), np.arange(rows.size, dtype=np.int64)
    empty = counts == 0
    sizes = np.maximum(counts, 1)
    starts = np.cumsum(sizes) - sizes
    # Each row's entries keep their input order, at their row's start in the output.
    order = np.argsort(rows, kind="stable")
    first_sorted = np.cumsum(counts) - counts
    within = np.arange(rows.size) - first_sorted[rows[order]]
    reverse = np.empty(rows.size, np.int64)
    reverse[order] = starts[rows[order]] + within
    out_idx = np.zeros((int(sizes.sum()), shape.size), np.int64)
    out_val = np.full(int(sizes.sum()), np.asarray(default), dtype=values.dtype)
    out_idx[reverse] = idx
    out_val[reverse] = values
    out_idx[starts[empty], 0] = np.flatnonzero(empty)
    return out_idx, out_val, empty, reverse


@fill_op.gradient
def _(op: Operation, *grads: Any) -> list[Any]:
    op_out = create("SparseFillEmptyRowsGrad", [op.outputs[3], grads[1]]).outputs
    return [None, op_out[0], None, op_out[1]]


fill_grad_op = define_op("SparseFillEmptyRowsGrad", inputs=("reverse_index_map",
                                                            "grad_values"))


@fill_grad_op.shape
def _(reverse_index_map: Tensor, grad_values: Tensor) -> Any:
    dt = grad_values.dtype.base_dtype
    return [(dt, reverse_index_map.shape), (dt, TensorShape([]))]


@fill_grad_op.kernel("CPU")
def _(reverse_index_map: Any, grad_values: Any) -> Any:
    g = np.asarray(grad_values)
    d_values = g[np.asarray(reverse_index_map).astype(np.int64)]
    return d_values, np.asarray(g.sum() - d_values.sum(), dtype=g.dtype)


fill_grad_op.no_gradient()


# ---- SparseSlice -----------------------------------------------------------------------
slice_op = define_op("SparseSlice", inputs=("indices", "values", "shape", "start", "size"))


@slice_op.shape
def _(indices: Tensor, values: Tensor, shape: Tensor, start: Tensor, size: Tensor) -> Any:
    rank = sparse_shapes(indices, values, shape, "SparseSlice")
    return [(_dt.int64, TensorShape([None, rank])),
            (values.dtype.base_dtype, TensorShape([None])), (_dt.int64, TensorShape([rank]))]


@slice_op.kernel("CPU")
def _(indices: Any, values: Any, shape: Any, start: Any, size: Any) -> Any:
    shape = np.asarray(shape).astype(np.int64).reshape(-1)
    idx = as_indices(indices, shape.size)
    start = np.asarray(start).astype(np.int64).reshape(-1)
    size = np.asarray(size).astype(np.int64).reshape(-1)
    if start.size != shape.size or size.size != shape.size:
        raise errors.InvalidArgumentError(None, None, f"SparseSlice: start {start.tolist()} "
                                          f"and size {size.tolist()} must have the rank "
                                          f"{shape.size} of shape {shape.tolist()}")
    check_in_bounds(idx, shape, "SparseSlice")
    # As TF: the slice is clipped to the dense shape.
    end = np.minimum(start + size, shape)
    out_shape = np.maximum(end - start, 0)
    keep = np.all((idx >= start) & (idx < end), axis=1)
    return idx[keep] - start, np.asarray(values)[keep], out_shape


slice_op.no_gradient()


# ---- public wrappers (tf.sparse_fill_empty_rows, tf.sparse_concat, tf.sparse_slice) ----
def sparse_fill_empty_rows(sp_input: Any, default_value: Any,
                           name: str | None = None) -> tuple[SparseTensor, Tensor]:
    """`tf.sparse_fill_empty_rows`: puts `default_value` at [row, 0, ...] of every empty row.

    Returns (the filled SparseTensor, a bool vector marking the rows that were empty).
    Each row's entries keep their order; rows come out in row order.

    Example:
        >>> filled, was_empty = tf.sparse_fill_empty_rows(sp_ids, 0)
    """
    sp = _sparse(sp_input, "sparse_fill_empty_rows")
    default = convert_to_tensor(default_value, dtype=sp.dtype.base_dtype, name="default_value")
    with name_scope(name, "SparseFillEmptyRows", [sp.values]):
        out = create("SparseFillEmptyRows", [sp.indices, sp.values, sp.dense_shape, default],
                     None, "SparseFillEmptyRows").outputs
        filled = SparseTensor(out[0], out[1], core_ops.identity(sp.dense_shape))
    return _with_hint(filled, sp.get_shape()), out[2]

def sparse_concat(axis: int, sp_inputs: list[Any], name: str | None = None,
                  expand_nonconcat_dim: bool = False, concat_dim: int | None = None
                  ) -> SparseTensor:
    """`tf.sparse_concat`: joins SparseTensors along `axis`; the result is in standard order.

    With `expand_nonconcat_dim`, the other dimensions grow to the largest input's.

    Raises:
        ValueError: fewer than two inputs.

    Example:
        >>> tf.sparse_concat(1, [sp_a, sp_b])   # shapes [2, 3] and [2, 4] -> [2, 7]
    """
    axis = concat_dim if concat_dim is not None else axis
    sps = [_sparse(s, "sparse_concat") for s in sp_inputs]
    if len(sps) < 2:
        raise ValueError(f"sparse_concat needs at least 2 SparseTensors, got {len(sps)}")
    shapes = [s.dense_shape for s in sps]
    if expand_nonconcat_dim:
        if axis < 0:
            rank = sps[0].get_shape().ndims
            if rank is None:
                raise ValueError(f"sparse_concat: a negative axis ({axis}) with "
                                 "expand_nonconcat_dim needs inputs of known rank.")
            axis += rank
        biggest = math_ops.reduce_max(array_ops.stack(shapes), axis=0)
        mask = array_ops.one_hot(axis, array_ops.size(biggest), on_value=True,
                                 off_value=False)
        shapes = [math_ops.where(mask, s, biggest) for s in shapes]
    out = create("SparseConcat", [[s.indices for s in sps], [s.values for s in sps], shapes],
                 {"concat_dim": int(axis)}, name or "SparseConcat").outputs
    return SparseTensor(out[0], out[1], out[2])

def sparse_slice(sp_input: Any, start: Any, size: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse_slice` / `tf.sparse.slice`: the entries in [start, start + size), re-based.

    Example:
        >>> tf.sparse_slice(sp, [0, 1], [2, 2])
    """
    sp = _sparse(sp_input, "sparse_slice")
    start_t = convert_to_tensor(start, dtype=_dt.int64, name="start")
    size_t = convert_to_tensor(size, dtype=_dt.int64, name="size")
    out = create("SparseSlice", [sp.indices, sp.values, sp.dense_shape, start_t, size_t],
                 None, name or "SparseSlice").outputs
    return SparseTensor(out[0], out[1], out[2])
