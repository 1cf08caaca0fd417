"""`tf.nn.embedding_lookup_sparse` and `safe_embedding_lookup_sparse`: one combined
embedding per row of a SparseTensor of ids (bag-of-ids features).

The distinct ids of the batch are looked up once with `embedding_lookup` (which,
over a PartitionedVariable, sends each shard only its ids and gathers where the
shard lives), then combined per row with SparseSegmentSum/Mean/SqrtN (or, with
weights, a weighted SegmentSum). The gradient w.r.t. each shard is an
IndexedSlices of the rows the batch touched, so a sparse optimizer updates only
those rows on the ps.

Example:
    >>> emb = tf.get_variable("emb", [100000, 16], partitioner=tf.fixed_size_partitioner(2))
    >>> ids = tf.sparse_placeholder(tf.int64, shape=[None, None])
    >>> vecs = tf.nn.embedding_lookup_sparse(emb, ids, None, combiner="sqrtn")  # [batch, 16]
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value
from tensorweave.framework.graph import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops import array as array_ops
from tensorweave.ops.array import core_ops
from tensorweave.ops.array.unique_ops import unique
from tensorweave.ops.math import math_ops
from tensorweave.ops.math.div_no_nan_ops import div_no_nan
from tensorweave.ops.nn.embedding_ops import embedding_lookup
from tensorweave.ops.sparse.conversion_ops import sparse_reshape, sparse_retain
from tensorweave.ops.sparse.structure_ops import sparse_fill_empty_rows
from tensorweave.ops.sparse.segment_ops import (
    segment_sum, sparse_segment_mean, sparse_segment_sqrt_n, sparse_segment_sum)
from tensorweave.state.partitioned_variables import PartitionedVariable

__all__ = ["embedding_lookup_sparse", "safe_embedding_lookup_sparse"]

_COMBINERS = ("mean", "sqrtn", "sum")


def _params_list(params: Any, fn: str) -> list[Any]:
    if params is None:
        raise ValueError(f"{fn}: params (the embedding weights) must not be None.")
    if isinstance(params, PartitionedVariable):
        params = list(params)
    if not isinstance(params, (list, tuple)):
        params = [params]
    if not params:
        raise ValueError(f"{fn}: params must not be an empty list.")
    return list(params)


def _as_sparse(x: Any, what: str, fn: str) -> SparseTensor:
    if isinstance(x, SparseTensorValue):
        return SparseTensor.from_value(x)
    if not isinstance(x, SparseTensor):
        raise TypeError(f"{fn}: {what} must be a tf.SparseTensor, got {type(x).__name__}.")
    return x


def embedding_lookup_sparse(params: Any, sp_ids: Any, sp_weights: Any,
                            partition_strategy: str = "mod", name: str | None = None,
                            combiner: str | None = None,
                            max_norm: float | None = None) -> Tensor:
    """`tf.nn.embedding_lookup_sparse`: row i of the result combines the embeddings of
    the ids in row i of `sp_ids` (weighted by `sp_weights` if given).

    As in TF, the result has `max(row with an id) + 1` rows (rows after the last
    non-empty one are absent; empty rows in between are zeros) and `sp_ids` must be
    in standard order (rows non-decreasing), as `tf.parse_example` makes them.

    Args:
        params: a Variable/Tensor, a list of shards, or a PartitionedVariable.
        sp_ids: SparseTensor [batch, k] of int ids.
        sp_weights: None (all weights 1) or a SparseTensor with sp_ids' indices.
        partition_strategy: "mod" or "div", for several shards.
        name: name scope.
        combiner: "mean" (default), "sqrtn" or "sum".
        max_norm: if set, embeddings are clipped to this l2 norm before combining.

    Raises:
        ValueError: an unknown combiner, or weights whose shape differs from the ids'.
        TypeError: sp_ids or sp_weights not a SparseTensor.

    Example:
        >>> tf.nn.embedding_lookup_sparse(emb, sp_ids, sp_weights, combiner="sum")
    """
    fn = "embedding_lookup_sparse"
    combiner = "mean" if combiner is None else combiner
    if combiner not in _COMBINERS:
        raise ValueError(f"{fn}: combiner must be one of 'mean', 'sqrtn' or 'sum', got "
                         f"{combiner!r}.")
    params = _params_list(params, fn)
    sp_ids = _as_sparse(sp_ids, "sp_ids", fn)
    weights_sp = None if sp_weights is None else _as_sparse(sp_weights, "sp_weights", fn)
    if weights_sp is not None:
        for a, b, what in ((sp_ids.values, weights_sp.values, "values"),
                           (sp_ids.indices, weights_sp.indices, "indices")):
            if not a.shape.is_compatible_with(b.shape):
                raise ValueError(f"{fn}: sp_weights' {what} have shape {b.shape} but sp_ids' "
                                 f"have {a.shape}.")
    with name_scope(name, "embedding_lookup_sparse", params + [sp_ids.values]):
        segment_ids = math_ops.cast(array_ops.gather(sp_ids.indices, 0, axis=1), _dt.int32)
        ids, idx = unique(sp_ids.values)
        embeddings = embedding_lookup(params, ids, partition_strategy=partition_strategy,
                                      max_norm=max_norm)
        if weights_sp is None:
            combine = {"sum": sparse_segment_sum, "mean": sparse_segment_mean,
                       "sqrtn": sparse_segment_sqrt_n}[combiner]
            return combine(embeddings, idx, segment_ids)
        return _weighted(embeddings, idx, segment_ids, weights_sp.values, combiner)


def _weighted(embeddings: Tensor, idx: Tensor, segment_ids: Tensor, weights: Tensor,
              combiner: str) -> Tensor:
    if weights.dtype.base_dtype != embeddings.dtype.base_dtype:
        weights = math_ops.cast(weights, embeddings.dtype.base_dtype)
    rows = array_ops.gather(embeddings, idx)
    # Weights [n] -> [n, 1, ...] to scale whole embedding rows.
    ones = array_ops.fill(array_ops.expand_dims(array_ops.rank(rows) - 1, 0), 1)
    bcast = array_ops.reshape(weights, array_ops.concat([array_ops.shape(weights), ones], 0))
    if rows.shape.ndims is not None:
        bcast.set_shape(weights.shape.concatenate([1] * (rows.shape.ndims - 1)))
    total = segment_sum(rows * bcast, segment_ids)
    if combiner == "sum":
        return total
    denom = segment_sum(bcast if combiner == "mean" else bcast * bcast, segment_ids)
    if combiner == "sqrtn":
        # A zero sum of squares means all-zero weights, hence a zero total: taking the
        # root of 1 there instead keeps sqrt's gradient at 0 finite.
        empty = math_ops.equal(denom, array_ops.zeros_like(denom))
        denom = math_ops.sqrt(math_ops.where(empty, array_ops.ones_like(denom), denom))
    # Rows with no ids (or zero weights) give 0, not 0/0: TF 2's DivNoNan.
    return div_no_nan(total, denom)


def _prune(sp_ids: SparseTensor, sp_weights: SparseTensor | None,
           keep: Tensor) -> tuple[SparseTensor, SparseTensor | None]:
    ids = sparse_retain(sp_ids, keep)
    return ids, None if sp_weights is None else sparse_retain(sp_weights, keep)


def safe_embedding_lookup_sparse(embedding_weights: Any, sparse_ids: Any,
                                 sparse_weights: Any = None, combiner: str = "mean",
                                 default_id: int | None = None, name: str | None = None,
                                 partition_strategy: str = "div",
                                 max_norm: float | None = None) -> Tensor:
    """`tf.nn.safe_embedding_lookup_sparse` (also `tf.contrib.layers.`): a lookup that
    copes with missing and invalid ids, and with ids of rank > 2.

    Ids < 0 are dropped (and, unless combiner is "sum", entries with weight <= 0);
    rows left empty get the embedding of `default_id`, or zeros when it is None.
    `sparse_ids` of shape [d0, ..., dn-1, k] gives a result [d0, ..., dn-1, dim].

    Raises:
        ValueError: embedding_weights is None or empty, or an unknown combiner.

    Example:
        >>> tf.nn.safe_embedding_lookup_sparse(emb, sp_ids, None, combiner="sum",
        ...                                    default_id=0)
    """
    fn = "safe_embedding_lookup_sparse"
    params = _params_list(embedding_weights, fn)
    sp_ids = _as_sparse(sparse_ids, "sparse_ids", fn)
    weights_sp = None if sparse_weights is None else _as_sparse(sparse_weights,
                                                                "sparse_weights", fn)
    with name_scope(name, "embedding_lookup", params + [sp_ids.values]):
        original_shape = sp_ids.dense_shape
        rank_dim = (dimension_value(original_shape.shape[0])
                    if original_shape.shape.ndims == 1 else None)
        rank: Any = rank_dim if rank_dim is not None else array_ops.size(original_shape)
        lead = array_ops.slice(original_shape, [0], [rank - 1])
        flat_ids = sparse_reshape(sp_ids, array_ops.stack(
            [math_ops.reduce_prod(lead), array_ops.gather(original_shape, rank - 1)]))
        if weights_sp is not None:
            weights_sp = SparseTensor(flat_ids.indices, weights_sp.values, flat_ids.dense_shape)
        # String ids (an EmbeddingVariable's) have no invalid values to prune; an empty
        # row looks up "" (its result is zeroed below, as for id 0).
        strings = flat_ids.values.dtype.base_dtype == _dt.string
        if not strings:
            flat_ids, weights_sp = _prune(flat_ids, weights_sp,
                                          math_ops.greater_equal(flat_ids.values, 0))
        if combiner != "sum" and weights_sp is not None:
            flat_ids, weights_sp = _prune(flat_ids, weights_sp,
                                          math_ops.greater(weights_sp.values, 0))
        flat_ids, is_row_empty = sparse_fill_empty_rows(
            flat_ids, default_id or (b"" if strings else 0))
        if weights_sp is not None:
            weights_sp, _ = sparse_fill_empty_rows(weights_sp, 1.0)
        result = embedding_lookup_sparse(params, flat_ids, weights_sp, combiner=combiner,
                                         partition_strategy=partition_strategy,
                                         max_norm=max_norm)
        if default_id is None:
            result = math_ops.where(is_row_empty, array_ops.zeros_like(result), result)
        out_lead = math_ops.cast(lead, _dt.int32)
        final = array_ops.reshape(result, array_ops.concat(
            [out_lead, array_ops.slice(array_ops.shape(result), [1], [-1])], 0))
        lead_static = _lead_shape(original_shape, rank_dim)
        final.set_shape(lead_static.concatenate(result.shape[1:]))
        return core_ops.identity(final)


def _lead_shape(original_shape: Tensor, rank_dim: int | None) -> TensorShape:
    value = constant_value(original_shape)
    if value is not None:
        return TensorShape([int(d) for d in value[:-1]])
    return TensorShape(None) if rank_dim is None else TensorShape([None] * (rank_dim - 1))
