"""ShardIds: a sharded embedding lookup's split of its ids by shard, as one op.

`embedding_lookup` over p shards assigns each id a shard and a row within it ("mod":
id % p and id // p; "div": contiguous ranges, the first total % p shards one row
longer), then partitions the ids' rows and positions by shard (two DynamicPartitions).
Built from single ops that is ~18 nodes a lookup (the "div" arithmetic alone is
FloorDiv x3, FloorMod x3, AddV2 x2, Sub x2, Maximum, Less, Select, Cast), each a
kernel call of microseconds a step; ShardIds computes the same outputs in one. Not a
TF op: `embedding_lookup` uses it where the shard sizes are known when the graph is
built (TF 1.x builds the single ops; the values are the same, and an id outside every
shard fails with DynamicPartition's error).

Example:
    >>> ids_0, ids_1, pos_0, pos_1 = shard_ids(flat_ids, 2, "div", total_rows=10)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape

shard_ids_op = define_op("ShardIds", inputs=("ids",),
                         attrs={"num_shards": REQUIRED, "strategy": REQUIRED,
                                "total_rows": 0})


@shard_ids_op.shape
def _(ids: Tensor, *, num_shards: int, strategy: str, total_rows: int) -> Any:
    if ids.shape.ndims not in (None, 1) or not ids.dtype.base_dtype.is_integer:
        raise ValueError(f"ShardIds: ids must be a vector of integers, got {ids.name} of "
                         f"shape {ids.shape} and dtype {ids.dtype.name}")
    n = int(num_shards)
    if strategy not in ("mod", "div") or n < 1 or strategy == "div" and total_rows < n:
        raise ValueError(f"ShardIds: needs strategy mod or div, num_shards >= 1 and (div) "
                         f"total_rows >= num_shards; got {strategy!r}, {n}, {total_rows}")
    return [(ids.dtype.base_dtype, TensorShape([None]))] * n + \
        [(_dt.int32, TensorShape([None]))] * n


@shard_ids_op.kernel("CPU")
def _(ids: Any, *, num_shards: int, strategy: str, total_rows: int) -> Any:
    ids = np.asarray(ids).reshape(-1)
    n = int(num_shards)
    in_range = False  # whether every id is already known to be in some shard
    if strategy == "mod":
        shard, row = ids % n, ids // n
    elif ids.size and 0 <= ids.min() and ids.max() < total_rows:
        # Every id in some shard: the shard whose range holds it (the arithmetic
        # below gives the same for these ids, in more passes).
        starts, in_range = _starts(n, total_rows), True
        shard = starts[1:].searchsorted(ids, side="right")
        row = (ids - starts[shard]).astype(ids.dtype, copy=False)
    else:  # the single ops' arithmetic, in the ids' dtype (and their errors)
        per, extras = total_rows // n, total_rows % n
        shard = np.maximum(ids // (per + 1), (ids - extras) // per)
        row = np.where(shard < extras, ids % (per + 1), (ids - extras) % per)
    shard = shard.astype(np.int32)  # as the Cast before DynamicPartition
    if not in_range and shard.size and (shard.min() < 0 or shard.max() >= n):
        bad = shard[(shard < 0) | (shard >= n)][0]
        raise errors.InvalidArgumentError(None, None, f"dynamic_partition: partitions "
                                          f"contains {bad}, which is not in [0, {n})")
    positions = np.arange(ids.size, dtype=np.int32)
    masks = [shard == p for p in range(n)]
    return [row[m] for m in masks] + [positions[m] for m in masks]


_STARTS: dict[tuple[int, int], np.ndarray] = {}


def _starts(n: int, total_rows: int) -> np.ndarray:
    """The first id of each shard under "div" (the first total % n shards one longer)."""
    starts = _STARTS.get((n, total_rows))
    if starts is None:
        per, extras = divmod(total_rows, n)
        sizes = [per + 1] * extras + [per] * (n - extras)
        starts = np.cumsum([0] + sizes[:-1]).astype(np.int64)
        if len(_STARTS) > 1024:
            _STARTS.clear()
        _STARTS[(n, total_rows)] = starts
    return starts


shard_ids_op.no_gradient()  # integer ids and positions


def shard_ids(flat_ids: Tensor, num_shards: int, strategy: str, total_rows: int = 0,
              name: str | None = None) -> tuple[list[Tensor], list[Tensor]]:
    """Each shard's rows of `flat_ids` and their positions in it (see the module).

    Example:
        >>> rows, positions = shard_ids(tf.constant([0, 7, 3]), 2, "mod")
        >>> # rows = [[0], [3, 1]], positions = [[0], [1, 2]]
    """
    op = create_op(
        "ShardIds", [flat_ids], {"num_shards": int(num_shards), "strategy": strategy,
             "total_rows": int(total_rows)}, name=name or "ShardIds")
    return op.outputs[:num_shards], op.outputs[num_shards:]
