"""Sparse arithmetic stanzas: SparseTensorDenseMatMul, SparseAdd (+SparseAddGrad) and
SparseTensorDenseAdd.

Their public wrappers follow them (`tf.sparse_tensor_dense_matmul`, `tf.sparse_add`,
`tf.sparse_reduce_sum`).

Example:
    >>> y = tf.sparse_tensor_dense_matmul(sp_x, w)          # sp_x [batch, n], w [n, k]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.core_ops import shape_from_tensor
from tensorweave.ops.array.gather_nd_ops import gather_nd
from tensorweave.ops.math import math_ops
from tensorweave.ops.op_author import define_op
from tensorweave.ops.sparse.conversion_ops import (
    _sparse, _with_hint, as_indices, check_in_bounds, create, sparse_shapes)


# ---- SparseTensorDenseMatMul -----------------------------------------------------------
matmul_op = define_op("SparseTensorDenseMatMul", inputs=("a_indices", "a_values", "a_shape",
                                                         "b"),
                      attrs={"adjoint_a": False, "adjoint_b": False})


@matmul_op.shape
def _(a_indices: Tensor, a_values: Tensor, a_shape: Tensor, b: Tensor, *, adjoint_a: bool,
      adjoint_b: bool) -> Any:
    rank = sparse_shapes(a_indices, a_values, a_shape, "SparseTensorDenseMatMul")
    if rank not in (None, 2) or b.shape.ndims not in (None, 2):
        raise ValueError(f"SparseTensorDenseMatMul needs a rank-2 sparse a and dense b, got "
                         f"rank {rank} and {b.name} of shape {b.shape}")
    if a_values.dtype.base_dtype != b.dtype.base_dtype:
        raise TypeError(f"SparseTensorDenseMatMul: a's values are {a_values.dtype.name} but "
                        f"b ({b.name}) is {b.dtype.name}")
    a = shape_from_tensor(a_shape) if a_shape.shape.ndims == 1 else TensorShape([None, None])
    a = TensorShape([None, None]).merge_with(a)
    bs = TensorShape([None, None]).merge_with(b.shape)
    a_rows, a_cols = a.as_list()
    b_rows, b_cols = bs.as_list()
    m, k_a = (a_cols, a_rows) if adjoint_a else (a_rows, a_cols)
    k_b, n = (b_cols, b_rows) if adjoint_b else (b_rows, b_cols)
    if k_a is not None and k_b is not None and k_a != k_b:
        raise ValueError(f"Dimensions must be equal, but are {k_a} and {k_b} for "
                         f"SparseTensorDenseMatMul with shapes {a}, {b.shape} "
                         f"(adjoint_a={adjoint_a}, adjoint_b={adjoint_b})")
    return b.dtype.base_dtype, TensorShape([m, n])


@matmul_op.kernel("CPU")
def _(a_indices: Any, a_values: Any, a_shape: Any, b: Any, *, adjoint_a: bool,
      adjoint_b: bool) -> Any:
    shape = np.asarray(a_shape).astype(np.int64).reshape(-1)
    idx = as_indices(a_indices, 2)
    b = np.asarray(b)
    b = b.conj().T if adjoint_b else b
    rows, cols = (idx[:, 1], idx[:, 0]) if adjoint_a else (idx[:, 0], idx[:, 1])
    m, k = (shape[1], shape[0]) if adjoint_a else (shape[0], shape[1])
    if b.shape[0] != k:
        raise errors.InvalidArgumentError(
            None, None, f"SparseTensorDenseMatMul: cannot multiply A {shape.tolist()} "
            f"(adjoint_a={adjoint_a}) with B of {b.shape[0]} rows (adjoint_b={adjoint_b})")
    check_in_bounds(idx, shape, "SparseTensorDenseMatMul")
    vals = np.asarray(a_values)
    vals = vals.conj() if adjoint_a else vals
    out = np.zeros((int(m), b.shape[1]), dtype=b.dtype)
    np.add.at(out, rows, vals[:, None] * b[cols])
    return out


@matmul_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    a_indices, a_values, a_shape, b = op.inputs
    adj_a, adj_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    # d b: op(A)^T @ grad, transposed back when b was used transposed.
    b_grad = create("SparseTensorDenseMatMul", [a_indices, a_values, a_shape, grad],
                    {"adjoint_a": not adj_a, "adjoint_b": False}).outputs[0]
    if adj_b:
        b_grad = array_ops.transpose(b_grad)
    # d a_values[e] = sum_j grad[out_row(e), j] * op(B)[inner(e), j].
    rows = array_ops.gather(a_indices, 1 if adj_a else 0, axis=1)
    cols = array_ops.gather(a_indices, 0 if adj_a else 1, axis=1)
    b_op = array_ops.transpose(b) if adj_b else b
    parts = array_ops.gather(grad, rows) * array_ops.gather(b_op, cols)
    return [None, math_ops.reduce_sum(parts, axis=1), None, b_grad]


# ---- SparseAdd -------------------------------------------------------------------------
add_op = define_op("SparseAdd", inputs=("a_indices", "a_values", "a_shape", "b_indices",
                                        "b_values", "b_shape", "thresh"))


@add_op.shape
def _(a_i: Tensor, a_v: Tensor, a_s: Tensor, b_i: Tensor, b_v: Tensor, b_s: Tensor,
      thresh: Tensor) -> Any:
    ra = sparse_shapes(a_i, a_v, a_s, "SparseAdd")
    rb = sparse_shapes(b_i, b_v, b_s, "SparseAdd")
    if ra is not None and rb is not None and ra != rb:
        raise ValueError(f"SparseAdd: operands have ranks {ra} and {rb}")
    if a_v.dtype.base_dtype != b_v.dtype.base_dtype:
        raise TypeError(f"SparseAdd: values are {a_v.dtype.name} ({a_v.name}) and "
                        f"{b_v.dtype.name} ({b_v.name})")
    rank = ra if ra is not None else rb
    return [(_dt.int64, TensorShape([None, rank])), (a_v.dtype.base_dtype, TensorShape([None])),
            (_dt.int64, TensorShape([rank]))]


def _merge(a_idx: np.ndarray, b_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merges two index lists in standard order: (union, a's slot, b's slot in it)."""
    both = np.concatenate([a_idx, b_idx])
    if both.shape[0] == 0:
        return both, np.zeros(0, np.int64), np.zeros(0, np.int64)
    union, inverse = np.unique(both, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    return union, inverse[:a_idx.shape[0]], inverse[a_idx.shape[0]:]


@add_op.kernel("CPU")
def _(a_i: Any, a_v: Any, a_s: Any, b_i: Any, b_v: Any, b_s: Any, thresh: Any) -> Any:
    a_s, b_s = (np.asarray(s).astype(np.int64).reshape(-1) for s in (a_s, b_s))
    if not np.array_equal(a_s, b_s):
        raise errors.InvalidArgumentError(None, None, f"SparseAdd: operands' shapes do not "
                                          f"match: {a_s.tolist()} vs. {b_s.tolist()}")
    a_idx, b_idx = as_indices(a_i, a_s.size), as_indices(b_i, b_s.size)
    a_v, b_v = np.asarray(a_v), np.asarray(b_v)
    union, slot_a, slot_b = _merge(a_idx, b_idx)
    sums = np.zeros(union.shape[0], dtype=a_v.dtype)
    np.add.at(sums, slot_a, a_v)
    np.add.at(sums, slot_b, b_v)
    # As TF: only entries present in both operands are dropped when |sum| < thresh.
    in_both = np.zeros(union.shape[0], bool)
    in_both[np.intersect1d(slot_a, slot_b)] = True
    keep = ~in_both | (np.abs(sums) >= np.asarray(thresh))
    return union[keep], sums[keep], a_s


@add_op.gradient
def _(op: Operation, _gi: Any, grad_values: Tensor, _gs: Any) -> list[Any]:
    a_g, b_g = create("SparseAddGrad", [grad_values, op.inputs[0], op.inputs[3],
                                        op.outputs[0]]).outputs
    return [None, a_g, None, None, b_g, None, None]


add_grad_op = define_op("SparseAddGrad", inputs=("backprop_val_grad", "a_indices",
                                                 "b_indices", "sum_indices"))


@add_grad_op.shape
def _(grad: Tensor, a_i: Tensor, b_i: Tensor, sum_i: Tensor) -> Any:
    dt = grad.dtype.base_dtype
    return [(dt, TensorShape([a_i.shape[0] if a_i.shape.ndims == 2 else None])),
            (dt, TensorShape([b_i.shape[0] if b_i.shape.ndims == 2 else None]))]


@add_grad_op.kernel("CPU")
def _(grad: Any, a_i: Any, b_i: Any, sum_i: Any) -> Any:
    grad, sum_idx = np.asarray(grad), as_indices(sum_i)
    outs = []
    for idx in (as_indices(a_i), as_indices(b_i)):
        pos = _positions_in(idx, sum_idx)
        g = np.zeros(idx.shape[0], grad.dtype)  # entries thresholded away get 0
        g[pos >= 0] = grad[pos[pos >= 0]]
        outs.append(g)
    return outs[0], outs[1]


def _positions_in(idx: np.ndarray, table: np.ndarray) -> np.ndarray:
    """For each row of `idx`, its row number in `table`, or -1 when absent."""
    if idx.shape[0] == 0 or table.shape[0] == 0:
        return np.full(idx.shape[0], -1, np.int64)
    _, inverse = np.unique(np.concatenate([table, idx]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    slot = np.full(int(inverse.max()) + 1, -1, np.int64)
    slot[inverse[:table.shape[0]]] = np.arange(table.shape[0])
    return slot[inverse[table.shape[0]:]]


add_grad_op.no_gradient()


# ---- SparseTensorDenseAdd --------------------------------------------------------------
dense_add_op = define_op("SparseTensorDenseAdd", inputs=("a_indices", "a_values", "a_shape",
                                                         "b"))


@dense_add_op.shape
def _(a_i: Tensor, a_v: Tensor, a_s: Tensor, b: Tensor) -> Any:
    sparse_shapes(a_i, a_v, a_s, "SparseTensorDenseAdd")
    if a_v.dtype.base_dtype != b.dtype.base_dtype:
        raise TypeError(f"SparseTensorDenseAdd: sparse values are {a_v.dtype.name} but dense "
                        f"{b.name} is {b.dtype.name}")
    known = constant_value(a_s)
    if known is not None and not b.shape.is_compatible_with(TensorShape(known.tolist())):
        raise ValueError(f"SparseTensorDenseAdd: sparse shape {known.tolist()} and dense "
                         f"shape {b.shape} ({b.name}) differ")
    return b.dtype.base_dtype, b.shape


@dense_add_op.kernel("CPU")
def _(a_i: Any, a_v: Any, a_s: Any, b: Any) -> Any:
    shape = np.asarray(a_s).astype(np.int64).reshape(-1)
    b = np.asarray(b)
    if tuple(shape) != b.shape:
        raise errors.InvalidArgumentError(None, None, f"SparseTensorDenseAdd: sparse shape "
                                          f"{shape.tolist()} and dense shape "
                                          f"{list(b.shape)} differ")
    idx = as_indices(a_i, shape.size)
    check_in_bounds(idx, shape, "SparseTensorDenseAdd")
    out = b.copy()
    np.add.at(out, tuple(idx.T), np.asarray(a_v))
    return out


@dense_add_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [None, gather_nd(grad, op.inputs[0]), None, grad]


# ---- SparseReduceSum -------------------------------------------------------------------
reduce_sum_op = define_op("SparseReduceSum", inputs=("input_indices", "input_values",
                                                     "input_shape", "reduction_axes"),
                          attrs={"keep_dims": False})


def _reduced_axes(axes: Any, rank: int) -> list[int]:
    flat = [int(a) for a in np.asarray(axes).reshape(-1)]
    bad = [a for a in flat if not -rank <= a < rank]
    if bad:
        raise errors.InvalidArgumentError(None, None, f"SparseReduceSum: axis {bad[0]} is out "
                                          f"of range for rank {rank}")
    return sorted({a % rank for a in flat}) if flat else list(range(rank))


@reduce_sum_op.shape
def _(indices: Tensor, values: Tensor, shape: Tensor, axes: Tensor, *, keep_dims: bool) -> Any:
    rank = sparse_shapes(indices, values, shape, "SparseReduceSum")
    dims, known_axes = shape_from_tensor(shape), constant_value(axes)
    if rank is None or known_axes is None or dims.ndims is None:
        return values.dtype.base_dtype, TensorShape(None)
    reduced = set(_reduced_axes(known_axes, rank))
    out = [1 if i in reduced else d for i, d in enumerate(dims.as_list()) if keep_dims or
           i not in reduced]
    return values.dtype.base_dtype, TensorShape(out)


@reduce_sum_op.kernel("CPU")
def _(indices: Any, values: Any, shape: Any, axes: Any, *, keep_dims: bool) -> Any:
    shape = np.asarray(shape).astype(np.int64).reshape(-1)
    idx = as_indices(indices, shape.size)
    check_in_bounds(idx, shape, "SparseReduceSum")
    reduced = _reduced_axes(axes, shape.size)
    values = np.asarray(values)
    # Sum straight into the (dense) output: the input's dense form may be huge.
    kept = [i for i in range(shape.size) if i not in reduced]
    if kept:
        out = np.zeros(tuple(int(shape[i]) for i in kept), dtype=values.dtype)
        np.add.at(out, tuple(idx[:, kept].T), values)
    else:
        out = np.asarray(values.sum(), dtype=values.dtype)
    if keep_dims:
        out = out.reshape([1 if i in reduced else int(d) for i, d in enumerate(shape)])
    return out


@reduce_sum_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # Each value's gradient is the output gradient at its coordinates with the reduced
    # dimensions dropped: read the keep-dims gradient at the index with those set to 0.
    indices, _, shape, axes = op.inputs
    rank = array_ops.size(shape)
    axes64 = math_ops.cast(array_ops.reshape(axes, [-1]), _dt.int64)
    axes64 = math_ops.floormod(axes64, math_ops.cast(rank, _dt.int64))
    positions = array_ops.range(math_ops.cast(rank, _dt.int64))
    is_reduced = math_ops.reduce_any(math_ops.equal(
        array_ops.expand_dims(positions, 1), array_ops.expand_dims(axes64, 0)), axis=1)
    is_reduced = math_ops.logical_or(is_reduced, math_ops.equal(array_ops.size(axes64), 0))
    kept_shape = math_ops.where(is_reduced, array_ops.ones_like(shape), shape)
    kept_index = indices * math_ops.cast(math_ops.logical_not(is_reduced), _dt.int64)
    return [None, gather_nd(array_ops.reshape(grad, kept_shape), kept_index), None, None]


# ---- public wrappers (tf.sparse_tensor_dense_matmul, tf.sparse_add, tf.sparse_reduce_sum)
def sparse_tensor_dense_matmul(sp_a: Any, b: Any, adjoint_a: bool = False,
                               adjoint_b: bool = False, name: str | None = None) -> Tensor:
    """`tf.sparse_tensor_dense_matmul`: op(sp_a) @ op(b) for a rank-2 SparseTensor sp_a.

    Differentiable w.r.t. sp_a's values and b (the wide part of wide & deep).

    Example:
        >>> tf.sparse_tensor_dense_matmul(sp_x, w, adjoint_b=True)
    """
    sp = _sparse(sp_a, "sparse_tensor_dense_matmul")
    b_t = convert_to_tensor(b, dtype=sp.dtype.base_dtype, name="b")
    with name_scope(name, "SparseTensorDenseMatMul", [sp.indices, sp.values, b_t]):
        return create("SparseTensorDenseMatMul", [sp.indices, sp.values, sp.dense_shape, b_t],
                      {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)}
                      ).outputs[0]

def sparse_add(a: Any, b: Any, threshold: Any = None, thresh: Any = None) -> Any:
    """`tf.sparse_add`: sparse + sparse -> SparseTensor; sparse + dense -> dense Tensor.

    Entries present in both operands whose sum has magnitude below `threshold` (TF's
    deprecated name: `thresh`; default 0) are dropped (sparse + sparse only).

    Raises:
        TypeError: neither operand is sparse.

    Example:
        >>> tf.sparse_add(sp_a, sp_b)
    """
    thresh = threshold if threshold is not None else thresh if thresh is not None else 0
    a_sp, b_sp = isinstance(a, (SparseTensor, SparseTensorValue)), \
        isinstance(b, (SparseTensor, SparseTensorValue))
    if not a_sp and not b_sp:
        raise TypeError("sparse_add: at least one operand must be a tf.SparseTensor; use "
                        "tf.add for two dense tensors.")
    if a_sp and b_sp:
        sa, sb = _sparse(a, "sparse_add"), _sparse(b, "sparse_add")
        t = convert_to_tensor(thresh, dtype=sa.dtype.base_dtype, name="thresh")
        out = create("SparseAdd", [sa.indices, sa.values, sa.dense_shape, sb.indices,
                                   sb.values, sb.dense_shape, t], None, "SparseAdd").outputs
        return _with_hint(SparseTensor(out[0], out[1], out[2]), sa.get_shape())
    sp, dense = (_sparse(a, "sparse_add"), b) if a_sp else (_sparse(b, "sparse_add"), a)
    dense_t = convert_to_tensor(dense, dtype=sp.dtype.base_dtype, name="b")
    return create("SparseTensorDenseAdd", [sp.indices, sp.values, sp.dense_shape, dense_t],
                  None, "SparseTensorDenseAdd").outputs[0]

def sparse_reduce_sum(sp_input: Any, axis: Any = None, keepdims: bool | None = None,
                      reduction_axes: Any = None, keep_dims: bool | None = None,
                      name: str | None = None) -> Tensor:
    """`tf.sparse_reduce_sum` / `tf.sparse.reduce_sum`: the dense sum over `axis` (all
    axes when None); missing entries count as zero.

    Example:
        >>> tf.sparse_reduce_sum(tf.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [2, 3]), 1)
    """
    sp = _sparse(sp_input, "sparse_reduce_sum")
    axes = reduction_axes if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    axes_t = convert_to_tensor([] if axes is None else axes, dtype=_dt.int32,
                               name="reduction_axes")
    return create("SparseReduceSum", [sp.indices, sp.values, sp.dense_shape, axes_t],
                  {"keep_dims": keep}, name or "SparseReduceSum").outputs[0]
