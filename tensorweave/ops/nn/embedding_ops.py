"""`tf.nn.embedding_lookup` over sharded params, and the DynamicPartition and
DynamicStitch ops it is built from.

With several shards (a list of variables or a PartitionedVariable) the ids are
split by shard on the caller's device, each shard's rows are gathered where the
shard lives (the gather is colocated with it, so only the looked-up rows cross
the network), and the rows are stitched back in id order. The gradient w.r.t.
each shard is an IndexedSlices holding only the rows that shard served, so
sparse optimizer updates touch only those rows on the ps.

Example:
    >>> emb = tf.get_variable("emb", [1000, 16], partitioner=tf.fixed_size_partitioner(4))
    >>> vecs = tf.nn.embedding_lookup(emb, word_ids)       # "mod": id % 4 picks the shard
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import get_default_graph, name_scope
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.ops.op_author import REQUIRED, create_op, create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops import array as array_ops
from tensorweave.ops.array import core_ops
from tensorweave.ops.lookup.hash_ops import string_to_hash_bucket_fast
from tensorweave.ops.math import clip_ops, math_ops
from tensorweave.ops.nn import shard_ids_ops

__all__ = ["embedding_lookup", "dynamic_partition", "dynamic_stitch"]


# ---- DynamicPartition ------------------------------------------------------------------
dynamic_partition_op = define_op("DynamicPartition", inputs=("data", "partitions"),
                                 attrs={"num_partitions": REQUIRED})


@dynamic_partition_op.shape
def _(data: Tensor, partitions: Tensor, *, num_partitions: int) -> Any:
    if partitions.dtype.base_dtype != _dt.int32:
        raise TypeError(f"dynamic_partition: partitions must be int32, got "
                        f"{partitions.dtype.name} ({partitions.name}); cast it first.")
    if data.shape.ndims is None or partitions.shape.ndims is None:
        out = TensorShape(None)
    else:
        prefix = data.shape[:partitions.shape.ndims]
        if not prefix.is_compatible_with(partitions.shape):
            raise ValueError(f"dynamic_partition: partitions shape {partitions.shape} must be "
                             f"a prefix of data shape {data.shape}.")
        out = TensorShape([None]).concatenate(data.shape[partitions.shape.ndims:])
    return [(data.dtype.base_dtype, out)] * int(num_partitions)


@dynamic_partition_op.kernel("CPU")
def _(data: Any, partitions: Any, *, num_partitions: int) -> Any:
    data, part = np.asarray(data), np.asarray(partitions)
    if data.shape[:part.ndim] != part.shape:
        raise errors.InvalidArgumentError(None, None, f"dynamic_partition: partitions shape "
                                          f"{list(part.shape)} must be a prefix of data "
                                          f"shape {list(data.shape)}")
    flat = part.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= num_partitions):
        bad = flat[(flat < 0) | (flat >= num_partitions)][0]
        raise errors.InvalidArgumentError(None, None, f"dynamic_partition: partitions "
                                          f"contains {bad}, which is not in "
                                          f"[0, {num_partitions})")
    rows = data.reshape((flat.size,) + data.shape[part.ndim:])
    outs = [rows[flat == i] for i in range(num_partitions)]
    return outs[0] if num_partitions == 1 else outs


@dynamic_partition_op.gradient
def _(op: Operation, *grads: Any) -> Any:
    # Partition the positions the same way, then stitch the gradients back there.
    data, partitions = op.inputs
    positions = array_ops.reshape(array_ops.range(array_ops.size(partitions)),
                                  array_ops.shape(partitions))
    parted = dynamic_partition(positions, partitions, op.get_attr("num_partitions"))
    stitched = dynamic_stitch(parted, [convert_to_tensor(g) for g in grads])
    return [array_ops.reshape(stitched, array_ops.shape(data)), None]


def dynamic_partition(data: Any, partitions: Any, num_partitions: int,
                      name: str | None = None) -> list[Tensor]:
    """`tf.dynamic_partition`: `outputs[i]` = the slices of `data` where partitions == i.

    Example:
        >>> tf.dynamic_partition([10, 20, 30, 40], [0, 1, 0, 1], 2)  # [10, 30], [20, 40]
    """
    data = convert_to_tensor(data, name="data")
    partitions = convert_to_tensor(partitions, dtype=_dt.int32, name="partitions")
    return create_op(
        "DynamicPartition", [data, partitions], {"num_partitions": int(num_partitions)},
        name=name or "DynamicPartition").outputs


# ---- DynamicStitch ---------------------------------------------------------------------
dynamic_stitch_op = define_op("DynamicStitch", inputs=("indices*", "data*"))


@dynamic_stitch_op.shape
def _(indices: list[Tensor], data: list[Tensor]) -> Any:
    if len(indices) != len(data) or not data:
        raise ValueError(f"dynamic_stitch needs as many indices as data tensors (at least "
                         f"one), got {len(indices)} and {len(data)}.")
    dtype = data[0].dtype.base_dtype
    for d in data:
        if d.dtype.base_dtype != dtype:
            raise TypeError(f"dynamic_stitch: all data must have one dtype, got {dtype.name} "
                            f"and {d.dtype.base_dtype.name} ({d.name}).")
    i0, d0 = indices[0].shape, data[0].shape
    if i0.ndims is None or d0.ndims is None:
        return dtype, TensorShape(None)
    return dtype, TensorShape([None]).concatenate(d0[i0.ndims:])


@dynamic_stitch_op.kernel("CPU")
def _(indices: list[Any], data: list[Any]) -> Any:
    indices = [np.asarray(i) for i in indices]
    data = [np.asarray(d) for d in data]
    elem = data[0].shape[indices[0].ndim:]
    for i, d in zip(indices, data):
        if d.shape != i.shape + elem:
            raise errors.InvalidArgumentError(None, None, f"dynamic_stitch: data shape "
                                              f"{list(d.shape)} must be indices shape "
                                              f"{list(i.shape)} + {list(elem)}")
    rows = 1 + max((int(i.max()) for i in indices if i.size), default=-1)
    out = np.zeros((rows,) + elem, dtype=data[0].dtype)
    for i, d in zip(indices, data):  # later inputs win on repeated indices, as in TF
        if i.size and i.min() < 0:
            raise errors.InvalidArgumentError(None, None, f"dynamic_stitch: indices "
                                              f"contain {int(i.min())}, which is negative")
        out[i.reshape(-1)] = d.reshape((-1,) + elem)
    return out


@dynamic_stitch_op.gradient
def _(op: Operation, grad: Any) -> Any:
    n = len(op.inputs) // 2
    if isinstance(grad, IndexedSlices):
        rows = array_ops.shape(op.outputs[0])[0]
        grad = math_ops.unsorted_segment_sum(grad.values, grad.indices, rows)
    idx = [math_ops.cast(i, _dt.int32) for i in op.inputs[:n]]
    return [None] * n + [array_ops.gather(grad, i) for i in idx]


def dynamic_stitch(indices: list[Any], data: list[Any], name: str | None = None) -> Tensor:
    """`tf.dynamic_stitch`: `merged[indices[m][i]] = data[m][i]` (later m wins on ties).

    Example:
        >>> tf.dynamic_stitch([[0, 2], [1]], [[10, 30], [20]])  # [10, 20, 30]
    """
    indices = [convert_to_tensor(i, dtype=_dt.int32) for i in indices]
    data = [convert_to_tensor(d) for d in data]
    return create_tensor("DynamicStitch", [indices, data],
                         name=name or "DynamicStitch")


# ---- embedding_lookup ------------------------------------------------------------------
def embedding_lookup(params: Any, ids: Any, partition_strategy: str = "mod",
                     name: str | None = None, validate_indices: bool = True,
                     max_norm: float | None = None) -> Tensor:
    """`tf.nn.embedding_lookup`: the rows `ids` of params, which may be sharded.

    With p shards, "mod" puts id i in shard i % p at row i // p; "div" splits the
    ids into contiguous ranges, the first (n % p) shards holding one extra row
    (the layout `tf.fixed_size_partitioner` makes). Each shard's gather runs
    where the shard lives; the result has shape ids.shape + row shape.

    Args:
        params: a Tensor or Variable, a list of them (shards along axis 0), or a
            PartitionedVariable.
        ids: int32/int64 ids of any shape.
        partition_strategy: "mod" or "div" (matters only with several shards).
        name: the name scope.
        validate_indices: ignored (ids are always checked), as in TF.
        max_norm: if set, rows with a larger l2 norm are scaled down to it.

    Raises:
        ValueError: no params, or an unknown partition_strategy.

    Example:
        >>> shards = [tf.Variable(tf.zeros([5, 8])), tf.Variable(tf.zeros([5, 8]))]
        >>> tf.nn.embedding_lookup(shards, [[1, 7]]).shape.as_list()
        [1, 2, 8]
    """
    if hasattr(params, "_get_variable_list"):  # a PartitionedVariable: its shards
        params = list(params)
    if not isinstance(params, (list, tuple)):
        params = [params]
    params = list(params)
    if not params:
        raise ValueError("embedding_lookup needs at least one param (got an empty list).")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy {partition_strategy!r}: use "
                         "\"mod\" or \"div\".")
    g = get_default_graph()
    with name_scope(name, "embedding_lookup", params + [ids]) as scope:
        ids = convert_to_tensor(ids, name="ids")
        if not ids.dtype.base_dtype.is_integer and not (
                ids.dtype.base_dtype == _dt.string and hasattr(params[0], "_lookup")):
            raise TypeError(f"embedding_lookup: ids must be int32/int64, got "
                            f"{ids.dtype.name} ({ids.name}).")
        if len(params) == 1:
            with g.colocate_with(params[0]):  # TF names the gather after the scope
                rows = _clip(gather_rows(params[0], ids, name=scope), ids, max_norm)
            return core_ops.identity(rows)
        return _sharded_lookup(g, params, ids, partition_strategy, max_norm)


def gather_partitioned(params: Any, ids: Any, name: str | None = None) -> Tensor:
    """`tf.gather(partitioned_variable, ids)`: each shard's rows where the shard lives.

    The state layer registers it for PartitionedVariable
    (`index_ops.register_row_gather`). Shards are contiguous slices: the "div" layout.

    Example:
        >>> rows = gather_partitioned(partitioned_var, [0, 7])
    """
    if params._partition_axes() != [0]:
        return array_ops.gather(params.as_tensor(), ids, name=name)
    return embedding_lookup(params, ids, partition_strategy="div", name=name or "Gather")


def _sharded_lookup(g: Any, params: list[Any], ids: Tensor, strategy: str,
                    max_norm: float | None) -> Tensor:
    n = len(params)
    flat_ids = array_ops.reshape(ids, [-1])
    total = _static_rows(params)
    if getattr(params[0], "_lookup", None) is not None:
        # EmbeddingVariable parts: keyed by the ids themselves, spread by id % n (a
        # string by its hash), whatever the strategy: they have no rows to divide.
        positions = array_ops.range(array_ops.size(flat_ids))
        if flat_ids.dtype.base_dtype == _dt.string:
            shard = string_to_hash_bucket_fast(flat_ids, n)
        else:
            shard = flat_ids % _const(n, flat_ids.dtype.base_dtype)
        shard = math_ops.cast(shard, _dt.int32)
        shard_ids = dynamic_partition(flat_ids, shard, n)
        shard_positions = dynamic_partition(positions, shard, n)
    elif strategy == "mod" or total is not None and total >= n:  # one op (shard_ids_ops)
        shard_ids, shard_positions = shard_ids_ops.shard_ids(flat_ids, n, strategy,
                                                             total or 0)
    else:
        positions = array_ops.range(array_ops.size(flat_ids))
        shard, new_ids = _assign_shards(g, params, flat_ids, strategy)
        shard = math_ops.cast(shard, _dt.int32)
        shard_ids = dynamic_partition(new_ids, shard, n)
        shard_positions = dynamic_partition(positions, shard, n)
    row_shape = _row_shape(params)  # checks the shards agree before building anything
    results = []
    for p in range(n):
        with g.colocate_with(params[p]):  # runs on the shard's task
            results.append(_clip(gather_rows(params[p], shard_ids[p]), shard_ids[p], max_norm))
    stitched = dynamic_stitch(shard_positions, results)
    if row_shape.is_fully_defined():
        row_dims: Any = row_shape.as_list()
    else:
        with g.colocate_with(params[0]):
            row_dims = array_ops.shape(params[0])[1:]
    out = array_ops.reshape(stitched, array_ops.concat([array_ops.shape(ids), row_dims], 0))
    out.set_shape(ids.shape.concatenate(row_shape))
    return out


def gather_rows(param: Any, ids: Any, name: str | None = None) -> Tensor:
    """GatherV2 straight from a variable's reference: the kernel borrows the buffer and
    copies only the rows (TF 1.x's reads alias too), where reading the variable first
    would copy the whole shard every step. Anything without a reference is gathered
    as a tensor. The state layer registers it for `tf.gather(variable, ids)`.

    Example:
        >>> rows = gather_rows(tf.Variable(tf.zeros([10, 4])), [1, 3])
    """
    lookup = getattr(param, "_lookup", None)
    if lookup is not None:   # an EmbeddingVariable: its rows by id, admitting new ids
        return lookup(ids, name=name)
    if not hasattr(param, "_ref"):
        return array_ops.gather(param, ids, name=name)
    ids = convert_to_tensor(ids, name="indices")
    axis = convert_to_tensor(0, dtype=_dt.int32, name="axis")
    return create_tensor("GatherV2", [param._ref(), ids, axis],
                         name=name or "GatherV2")



def _assign_shards(g: Any, params: list[Any], flat_ids: Tensor,
                   strategy: str) -> tuple[Tensor, Tensor]:
    """(shard of each id, row of each id within its shard)."""
    n = len(params)
    dt = flat_ids.dtype.base_dtype
    if strategy == "mod":
        return flat_ids % _const(n, dt), flat_ids // _const(n, dt)
    total = _total_rows(g, params, dt)
    per, extras = total // _const(n, dt), total % _const(n, dt)
    one = _const(1, dt)
    # The first `extras` shards hold per + 1 rows, the rest `per` rows.
    shard = math_ops.maximum(flat_ids // (per + one), (flat_ids - extras) // per)
    in_big = math_ops.less(shard, extras)
    row = math_ops.where(in_big, flat_ids % (per + one), (flat_ids - extras) % per)
    return shard, row


def _static_rows(params: list[Any]) -> int | None:
    """The shards' rows in all, when every shard's is known statically."""
    dims = [dimension_value(p.get_shape()[0]) if p.get_shape().ndims else None for p in params]
    known = [int(d) for d in (getattr(d, "value", d) for d in dims) if d is not None]
    return sum(known) if len(known) == len(dims) else None


def _total_rows(g: Any, params: list[Any], dt: _dt.DType) -> Tensor:
    known = _static_rows(params)
    if known is not None:
        return _const(known, dt)
    sizes = []
    for p in params:
        with g.colocate_with(p):
            sizes.append(math_ops.cast(array_ops.shape(p)[0], dt))
    return math_ops.add_n(sizes)


def _row_shape(params: list[Any]) -> TensorShape:
    shape = params[0].get_shape()[1:]
    for p in params[1:]:
        if p.dtype.base_dtype != params[0].dtype.base_dtype:
            raise TypeError(f"embedding_lookup: all shards must have one dtype, but "
                            f"{params[0].name} is {params[0].dtype.base_dtype.name} and "
                            f"{p.name} is {p.dtype.base_dtype.name}.")
        if not shape.is_compatible_with(p.get_shape()[1:]):
            raise ValueError(f"embedding_lookup: all shards must have one row shape, but "
                             f"{params[0].name} has rows {shape} and {p.name} has rows "
                             f"{p.get_shape()[1:]}.")
        shape = shape.merge_with(p.get_shape()[1:])
    return shape


def _clip(rows: Tensor, ids: Tensor, max_norm: float | None) -> Tensor:
    """Scales each looked-up row (the dims after ids') to l2 norm <= max_norm."""
    if max_norm is None:
        return rows
    ids_rank, rows_rank = ids.shape.ndims, rows.shape.ndims
    if ids_rank is None or rows_rank is None:
        raise ValueError(f"embedding_lookup(max_norm=...) needs static ranks, got ids "
                         f"{ids.shape} and rows {rows.shape}; set their shapes.")
    return clip_ops.clip_by_norm(rows, max_norm, axes=list(range(ids_rank, rows_rank)))


def _const(value: int, dtype: _dt.DType) -> Tensor:
    return convert_to_tensor(value, dtype=dtype)
