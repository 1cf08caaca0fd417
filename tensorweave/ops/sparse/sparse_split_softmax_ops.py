"""SparseSplit, SparseSoftmax (+ its gradient), SparseSparseMaximum/Minimum: one stanza
each, TF's op names and attrs, and their public wrappers (`tf.sparse_split`,
`tf.sparse_softmax`, `tf.sparse_maximum`, `tf.sparse_minimum`, and the `tf.sparse.*`
names); also `tf.sparse_merge`, built from sparse ops.

Example:
    >>> left, right = tf.sparse_split(sp_input=sp, num_split=2, axis=1)
    >>> probs = tf.sparse_softmax(scores)     # softmax over each row's entries
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import control_dependencies, name_scope
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops import array as array_ops
from tensorweave.ops.control_flow.assert_ops import Assert
from tensorweave.ops.math import math_ops
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.ops.sparse.conversion_ops import (
    as_indices, check_in_bounds, create, nnz_shape, sparse_shapes, standard_order)
from tensorweave.ops.sparse.conversion_ops import _sparse as _sparse_input
from tensorweave.ops.sparse.conversion_ops import sparse_reorder


def _sparse(value: Any, what: str) -> SparseTensor:
    if isinstance(value, SparseTensor):
        return value
    if hasattr(value, "indices") and hasattr(value, "dense_shape"):  # SparseTensorValue
        return SparseTensor(value.indices, value.values, value.dense_shape)
    raise TypeError(f"{what}: expected a SparseTensor, got {value!r}")


# ---- SparseSplit -----------------------------------------------------------------------
split_op = define_op("SparseSplit", inputs=("split_dim", "indices", "values", "shape"),
                     attrs={"num_split": REQUIRED})


@split_op.shape
def _(split_dim: Tensor, indices: Tensor, values: Tensor, shape: Tensor, *,
      num_split: int) -> Any:
    if int(num_split) < 1:
        raise ValueError(f"SparseSplit: num_split must be >= 1, got {num_split}")
    rank = sparse_shapes(indices, values, shape, "SparseSplit")
    n = int(num_split)
    return ([(_dt.int64, TensorShape([None, rank]))] * n
            + [(values.dtype.base_dtype, TensorShape([None]))] * n
            + [(_dt.int64, TensorShape([rank]))] * n)


@split_op.kernel("CPU")
def _(split_dim: Any, indices: Any, values: Any, shape: Any, *, num_split: int) -> Any:
    shape = np.asarray(shape, dtype=np.int64).reshape(-1)
    idx = as_indices(indices, shape.size)
    vals = np.asarray(values)
    dim = int(np.asarray(split_dim))
    dim = dim + shape.size if dim < 0 else dim
    if not 0 <= dim < shape.size:
        raise errors.InvalidArgumentError(None, None, f"SparseSplit: split_dim "
                                          f"{int(np.asarray(split_dim))} is out of range for "
                                          f"rank {shape.size}")
    n = int(num_split)
    size = int(shape[dim])
    if n > size:
        raise errors.InvalidArgumentError(None, None, f"SparseSplit: num_split {n} is larger "
                                          f"than dimension {dim}'s size {size}")
    check_in_bounds(idx, shape, "SparseSplit")
    # The first size % n pieces are one longer, as TF splits.
    lengths = [size // n + (1 if i < size % n else 0) for i in range(n)]
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    piece = np.searchsorted(starts, idx[:, dim], side="right") - 1
    out_i, out_v, out_s = [], [], []
    for i in range(n):
        keep = piece == i
        sub = idx[keep].copy()
        sub[:, dim] -= starts[i]
        piece_shape = shape.copy()
        piece_shape[dim] = lengths[i]
        out_i.append(sub)
        out_v.append(vals[keep])
        out_s.append(piece_shape)
    return out_i + out_v + out_s


split_op.no_gradient()


def sparse_split(keyword_required: Any = None, sp_input: Any = None,
                 num_split: int | None = None, axis: Any = None, name: str | None = None,
                 split_dim: Any = None) -> list[SparseTensor]:
    """`tf.sparse_split` / `tf.sparse.split`: `num_split` SparseTensors along `axis`
    (the first `size % num_split` one longer). Keyword arguments only, as in TF 1.x
    (its first parameter, `keyword_required`, catches positional calls).

    Example:
        >>> a, b = tf.sparse_split(sp_input=sp, num_split=2, axis=1)
    """
    if keyword_required is not None:
        raise ValueError("Keyword arguments are required for this function: "
                         "tf.sparse.split(sp_input=..., num_split=..., axis=...).")
    if (axis is None) == (split_dim is None):
        raise ValueError("sparse_split: give exactly one of axis and split_dim.")
    if num_split is None:
        raise ValueError("sparse_split: num_split is required.")
    sp = _sparse(sp_input, "sparse_split")
    dim = convert_to_tensor(axis if axis is not None else split_dim, dtype=_dt.int64)
    out = create("SparseSplit", [dim, sp.indices, sp.values, sp.dense_shape],
                 {"num_split": int(num_split)}, name or "SparseSplit").outputs
    n = int(num_split)
    return [SparseTensor(out[i], out[n + i], out[2 * n + i]) for i in range(n)]


# ---- SparseSoftmax ---------------------------------------------------------------------
softmax_op = define_op("SparseSoftmax", inputs=("sp_indices", "sp_values", "sp_shape"))


@softmax_op.shape
def _(indices: Tensor, values: Tensor, shape: Tensor) -> Any:
    rank = sparse_shapes(indices, values, shape, "SparseSoftmax")
    if rank is not None and rank < 2:
        raise ValueError(f"SparseSoftmax: the input must have rank >= 2 (softmax runs over "
                         f"the last dimension of each row), got rank {rank}")
    if not values.dtype.base_dtype.is_floating:
        raise TypeError(f"SparseSoftmax: values {values.name} must be floating point, got "
                        f"{values.dtype.name}")
    return values.dtype.base_dtype, nnz_shape(indices)


def _groups(idx: np.ndarray) -> tuple[np.ndarray, int]:
    """Each entry's group (its index without the last dimension), numbered densely."""
    if idx.shape[0] == 0:
        return np.zeros(0, np.int64), 0
    _, group = np.unique(idx[:, :-1], axis=0, return_inverse=True)
    group = group.reshape(-1)
    return group, int(group.max()) + 1


@softmax_op.kernel("CPU")
def _(indices: Any, values: Any, shape: Any) -> Any:
    shape = np.asarray(shape, dtype=np.int64).reshape(-1)
    idx = as_indices(indices, shape.size)
    vals = np.asarray(values)
    if shape.size < 2:
        raise errors.InvalidArgumentError(None, None, f"SparseSoftmax: the input must have "
                                          f"rank >= 2, got shape {shape.tolist()}")
    group, n = _groups(idx)
    top = np.full(n, -np.inf, dtype=vals.dtype)
    np.maximum.at(top, group, vals)
    e = np.exp(vals - top[group])
    total = np.zeros(n, dtype=vals.dtype)
    np.add.at(total, group, e)
    return (e / total[group]).astype(vals.dtype)


@softmax_op.gradient
def _(op: Operation, grad: Any) -> Any:
    # d softmax: (g - sum_row(g * y)) * y, the sum over each row's entries
    from tensorweave.ops import array as array_ops
    from tensorweave.ops.array.gather_nd_ops import gather_nd
    from tensorweave.ops.math import math_ops
    from tensorweave.ops.sparse.sparse_math_ops import sparse_reduce_sum
    y = op.outputs[0]
    indices, _, shape = op.inputs
    row_sums = sparse_reduce_sum(SparseTensor(indices, math_ops.multiply(grad, y), shape),
                                 axis=-1, keepdims=True)
    at = array_ops.concat([indices[:, :-1], array_ops.zeros_like(indices[:, -1:])], 1)
    return [None, math_ops.multiply(math_ops.subtract(grad, gather_nd(row_sums, at)), y),
            None]


def sparse_softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse_softmax` / `tf.sparse.softmax`: softmax over the entries of each row
    (the last dimension); missing entries take no part (they are not zeros).

    Example:
        >>> tf.sparse_softmax(tf.SparseTensor([[0, 0], [0, 2]], [1.0, 2.0], [1, 3]))
    """
    sp = _sparse(sp_input, "sparse_softmax")
    with name_scope(name, "SparseSoftmax", [sp.indices, sp.values]):
        out = create("SparseSoftmax", [sp.indices, sp.values, sp.dense_shape], None,
                     "SparseSoftmax").outputs[0]
    return SparseTensor(sp.indices, out, sp.dense_shape)


# ---- SparseSparseMaximum / Minimum ---------------------------------------------------
def _define_elementwise(op_type: str, combine: Any) -> Any:
    d = define_op(op_type, inputs=("a_indices", "a_values", "a_shape", "b_indices",
                                   "b_values", "b_shape"))

    @d.shape
    def _(ai: Tensor, av: Tensor, ash: Tensor, bi: Tensor, bv: Tensor, bsh: Tensor) -> Any:
        ra = sparse_shapes(ai, av, ash, op_type)
        rb = sparse_shapes(bi, bv, bsh, op_type)
        if ra is not None and rb is not None and ra != rb:
            raise ValueError(f"{op_type}: operands have ranks {ra} and {rb}")
        if av.dtype.base_dtype != bv.dtype.base_dtype:
            raise TypeError(f"{op_type}: values {av.name} ({av.dtype.name}) and {bv.name} "
                            f"({bv.dtype.name}) must have one dtype")
        return [(_dt.int64, TensorShape([None, ra if ra is not None else rb])),
                (av.dtype.base_dtype, TensorShape([None]))]

    @d.kernel("CPU")
    def _(ai: Any, av: Any, ash: Any, bi: Any, bv: Any, bsh: Any) -> Any:
        ash = np.asarray(ash, dtype=np.int64).reshape(-1)
        bsh = np.asarray(bsh, dtype=np.int64).reshape(-1)
        if not np.array_equal(ash, bsh):
            raise errors.InvalidArgumentError(
                None, None, f"{op_type}: operands' shapes do not match: {ash.tolist()} and "
                f"{bsh.tolist()}")
        a_idx, b_idx = as_indices(ai, ash.size), as_indices(bi, bsh.size)
        check_in_bounds(a_idx, ash, op_type)
        check_in_bounds(b_idx, bsh, op_type)
        both = np.concatenate([a_idx, b_idx])
        union, where = np.unique(both, axis=0, return_inverse=True)
        where = where.reshape(-1)
        dtype = np.asarray(av).dtype
        a_full = np.zeros(len(union), dtype)  # an entry missing on one side is a zero
        b_full = np.zeros(len(union), dtype)
        a_full[where[:len(a_idx)]] = np.asarray(av)
        b_full[where[len(a_idx):]] = np.asarray(bv)
        order = standard_order(union)
        return [union[order].astype(np.int64), combine(a_full, b_full)[order]]

    d.no_gradient()
    return d


_define_elementwise("SparseSparseMaximum", np.maximum)
_define_elementwise("SparseSparseMinimum", np.minimum)


def _elementwise(op_type: str, sp_a: Any, sp_b: Any, name: str | None) -> SparseTensor:
    a, b = _sparse(sp_a, op_type), _sparse(sp_b, op_type)
    out = create(op_type, [a.indices, a.values, a.dense_shape, b.indices, b.values,
                           b.dense_shape], None, name or op_type).outputs
    return SparseTensor(out[0], out[1], a.dense_shape)


def sparse_maximum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse_maximum` / `tf.sparse.maximum`: element-wise max over the union of the
    entries (a missing entry counts as 0).

    Example:
        >>> tf.sparse_maximum(sp_a, sp_b)
    """
    return _elementwise("SparseSparseMaximum", sp_a, sp_b, name)


def sparse_minimum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse_minimum` / `tf.sparse.minimum`: element-wise min over the union of the
    entries (a missing entry counts as 0).

    Example:
        >>> tf.sparse_minimum(sp_a, sp_b)
    """
    return _elementwise("SparseSparseMinimum", sp_a, sp_b, name)


# ---- sparse_merge (tf.sparse_merge: built from the sparse ops) -----------------------
def sparse_merge(sp_ids: Any, sp_values: Any, vocab_size: Any, name: str | None = None,
                 already_sorted: bool = False) -> SparseTensor:
    """Re-indexes `sp_values` by `sp_ids`: the last index column becomes the ids.

    Args:
        sp_ids: a SparseTensor of integer ids, or a list of them (one per new
            dimension), each with the same indices as `sp_values`.
        sp_values: the SparseTensor of values.
        vocab_size: the size of each new dimension (an int, or a list matching
            `sp_ids`); ids must lie in [0, vocab_size).
        name: a name scope for the ops.
        already_sorted: the ids are already in order within each row (no reorder).

    Returns:
        A SparseTensor with indices [the leading index columns of sp_ids..., ids...],
        sp_values' values and dense shape [sp_ids' leading dims..., vocab_size...].

    Raises:
        TypeError: ids that are not integers, or vocab sizes not matching sp_ids.
        InvalidArgumentError (at run time): ids and values with different indices, or
            an id outside [0, vocab_size), named with the offending counts or id.

    Example:
        >>> tf.sparse_merge(ids, values, 5)
    """
    ids_list = list(sp_ids) if isinstance(sp_ids, (list, tuple)) else [sp_ids]
    sizes = list(vocab_size) if isinstance(vocab_size, (list, tuple)) else [vocab_size]
    if len(ids_list) != len(sizes) or not ids_list:
        raise TypeError(f"sparse_merge: vocab_size must have one size per ids tensor: got "
                        f"{len(ids_list)} ids tensors and vocab_size {vocab_size!r}")
    with name_scope(name or "SparseMerge"):
        ids = [_sparse_input(s, "sparse_merge sp_ids") for s in ids_list]
        values = _sparse_input(sp_values, "sparse_merge sp_values")
        for s in ids:
            if not s.values.dtype.base_dtype.is_integer:
                raise TypeError(f"sparse_merge: sp_ids values must be integers, got "
                                f"{s.values.dtype.name} ({s.values.name})")
        limits = [math_ops.cast(convert_to_tensor(v), _dt.int64) for v in sizes]
        checks = [_same_indices(s, values) for s in ids]
        with control_dependencies(checks):  # only once the indices are known to match
            columns = []
            for s, limit in zip(ids, limits):
                col = math_ops.cast(s.values, _dt.int64)
                checks.append(Assert(
                    math_ops.reduce_all(math_ops.logical_and(col >= 0, col < limit)),
                    ["sparse_merge: an id is outside [0, vocab_size): ids", col,
                     "vocab_size", limit], summarize=10))
                columns.append(array_ops.expand_dims(col, 1))
        with control_dependencies(checks):
            indices = array_ops.concat([ids[0].indices[:, :-1]] + columns, 1)
            shape = array_ops.concat([ids[0].dense_shape[:-1], array_ops.stack(limits)], 0)
        merged = SparseTensor(indices, values.values, shape)
        if already_sorted:
            return merged
        ordered = sparse_reorder(merged)
        return SparseTensor(ordered.indices, ordered.values, shape)


def _same_indices(ids: SparseTensor, values: SparseTensor) -> Any:
    """An Assert that ids and values have the same number of entries per row."""
    n_ids, n_values = array_ops.shape(ids.values)[0], array_ops.shape(values.values)[0]
    same_count = Assert(math_ops.equal(n_ids, n_values), [
        "sparse_merge: ids and values must have the same indices, but there are",
        n_ids, "ids and", n_values, "values"])
    with control_dependencies([same_count]):
        same_rows = math_ops.reduce_all(math_ops.equal(ids.indices, values.indices))
    return Assert(same_rows, ["sparse_merge: ids and values must have the same indices "
                              "(each row as many ids as values); ids indices", ids.indices,
                              "values indices", values.indices], summarize=20)
