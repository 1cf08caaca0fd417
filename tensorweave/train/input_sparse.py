"""What the TF1 batchers queue in place of a SparseTensor, and which examples they keep.

A queue holds dense tensors, so each SparseTensor component is parked in a
SparseTensorsMap (`ops/sparse/sparse_map_ops.py`) and its int64 handle, shaped
[1] per example, is queued instead; after the dequeue the handles are taken out
of the map and concatenated back into one SparseTensor of rank + 1. The join
batchers store the components of every input list in the map the first list
created, because one TakeMany op reads them all back.

`keep_input` (the `maybe_*` batchers) picks examples without a conditional: the
kept examples are selected as a batch (a dynamic partition of the dense
components, the kept rows of the sparse ones, renumbered) and enqueued with
`enqueue_many`, so a dropped example never reaches the queue or the map.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph import control_dependencies
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.math import math_ops
from tensorweave.ops.math.scan_ops import cumsum
from tensorweave.ops.nn.embedding_ops import dynamic_partition
from tensorweave.ops.sparse.sparse_map_ops import (
    add_many_sparse_to_tensors_map, add_sparse_to_tensors_map,
    take_many_sparse_from_tensors_map)


class SparseInfo:
    """Whether a batcher component is sparse, the op whose map holds it, and its rank
    per example (None when unknown)."""

    def __init__(self, sparse: bool, map_op: Operation | None = None,
                 rank: int | None = None) -> None:
        self.sparse = sparse
        self.map_op = map_op
        self.rank = rank

    def merge_with(self, other: "SparseInfo", where: str) -> "SparseInfo":
        """The info of one component across the join's input lists.

        Raises:
            ValueError: the component is sparse in one list and dense in another, or
                its ranks differ.
        """
        compatible = self.sparse == other.sparse and (
            not self.sparse or self.rank is None or other.rank is None
            or self.rank == other.rank)
        if not compatible:
            raise ValueError(f"Inconsistent SparseTensors list: {where}: {self} vs. {other}. "
                             "Every input list must have a SparseTensor (of one rank) in the "
                             "same positions.")
        if self.sparse and self.rank is None:
            self.rank = other.rank
        return self

    def __repr__(self) -> str:
        if not self.sparse:
            return "[dense]"
        return f"[SparseTensor rank {self.rank} in map {self.map_op.name if self.map_op else None}]"


def static_keep(keep_input: Tensor) -> bool:
    """True when `keep_input` is a scalar known to be True at graph-build time."""
    value = constant_value(keep_input)
    return value is not None and np.ndim(value) == 0 and bool(value)


def _rank(sp: SparseTensor, enqueue_many: bool) -> int | None:
    n = sp.dense_shape.shape.as_list()[0] if sp.dense_shape.shape.ndims == 1 else None
    if n is None:
        return None
    return n - 1 if enqueue_many else n


def store_sparse(tensors: Sequence[Any], enqueue_many: bool,
                 shared: Sequence[SparseInfo] | None = None
                 ) -> tuple[list[Tensor], list[SparseInfo]]:
    """Parks the SparseTensors of `tensors` in maps; dense tensors pass through.

    Each SparseTensor becomes its handles, [1] per example ([N, 1] with
    `enqueue_many`). With `shared` (the infos of the first list of a join), each
    one goes into the map the first list's component went into.
    """
    stored: list[Tensor] = []
    infos: list[SparseInfo] = []
    for i, t in enumerate(tensors):
        if not isinstance(t, SparseTensor):
            stored.append(t)
            infos.append(SparseInfo(False))
            continue
        map_op = shared[i].map_op if shared is not None and shared[i].sparse else None
        shared_name = map_op.name if map_op is not None else None
        if enqueue_many:
            handles = add_many_sparse_to_tensors_map(t, shared_name=shared_name)
            handles.set_shape([None])
            handles = array_ops.expand_dims(handles, -1)
        else:
            handles = array_ops.expand_dims(add_sparse_to_tensors_map(t, shared_name=shared_name),
                                            -1)
        stored.append(handles)
        infos.append(SparseInfo(True, map_op or handles.op.inputs[0].op, _rank(t, enqueue_many)))
    return stored, infos


def _as_batch_of_one(t: Any) -> Any:
    if isinstance(t, SparseTensor):
        nnz = array_ops.shape(t.indices, out_type=_dt.int64)[0:1]
        zeros = array_ops.zeros(array_ops.concat([nnz, [1]], 0), dtype=_dt.int64)
        return SparseTensor(array_ops.concat([zeros, t.indices], 1), t.values,
                            array_ops.concat([np.array([1], np.int64), t.dense_shape], 0))
    return array_ops.expand_dims(t, 0)


def _kept_rows(sp: SparseTensor, keep: Tensor) -> SparseTensor:
    """The rows (dimension 0) of `sp` where `keep` is True, renumbered 0..kept-1."""
    keep64 = math_ops.cast(keep, _dt.int64)
    new_row = cumsum(keep64) - 1
    rows = sp.indices[:, 0]
    kept_entries = array_ops.reshape(math_ops.where(array_ops.gather(keep, rows)), [-1])
    indices = array_ops.gather(sp.indices, kept_entries)
    values = array_ops.gather(sp.values, kept_entries)
    renumbered = array_ops.expand_dims(array_ops.gather(new_row, indices[:, 0]), 1)
    indices = array_ops.concat([renumbered, indices[:, 1:]], 1)
    shape = array_ops.concat([array_ops.reshape(math_ops.reduce_sum(keep64), [1]),
                              sp.dense_shape[1:]], 0)
    return SparseTensor(indices, values, shape)


def select_kept(tensors: Sequence[Any], keep_input: Tensor, enqueue_many: bool,
                shared: Sequence[SparseInfo] | None = None
                ) -> tuple[list[Tensor], list[SparseInfo]]:
    """The kept examples of `tensors` as one batch for `enqueue_many` (sparse ones
    parked in maps, like `store_sparse`), and the components' infos.

    `keep_input` is a scalar (keep the example, or the whole batch with
    `enqueue_many`) or, with `enqueue_many`, a vector with one flag per example.
    """
    infos = _infos(tensors, enqueue_many, shared)
    batch = list(tensors) if enqueue_many else [_as_batch_of_one(t) for t in tensors]
    if keep_input.shape.ndims == 1:
        keep = keep_input
    else:
        first = batch[0]
        n = first.dense_shape[0:1] if isinstance(first, SparseTensor) else \
            array_ops.shape(first)[0:1]
        keep = array_ops.fill(math_ops.cast(n, _dt.int32), keep_input)
    which = math_ops.cast(keep, _dt.int32)
    out: list[Tensor] = []
    for t, info in zip(batch, infos):
        if isinstance(t, SparseTensor):
            shared_name = info.map_op.name if info.map_op is not None else None
            handles = add_many_sparse_to_tensors_map(_kept_rows(t, keep),
                                                     shared_name=shared_name)
            if info.map_op is None:
                info.map_op = handles.op
            handles.set_shape([None])
            out.append(array_ops.expand_dims(handles, -1))
        else:
            out.append(dynamic_partition(t, which, 2)[1])
    return out, infos


def _infos(tensors: Sequence[Any], enqueue_many: bool,
           shared: Sequence[SparseInfo] | None) -> list[SparseInfo]:
    infos = []
    for i, t in enumerate(tensors):
        if isinstance(t, SparseTensor):
            map_op = shared[i].map_op if shared is not None and shared[i].sparse else None
            infos.append(SparseInfo(True, map_op, _rank(t, enqueue_many)))
        else:
            infos.append(SparseInfo(False))
    return infos


def restore_sparse(dequeued: list[Tensor], infos: Sequence[SparseInfo]) -> list[Any]:
    """The dequeued components with each sparse one taken back out of its map.

    Every output depends on every sparse component's values, so fetching any part
    of the batch takes all its SparseTensors out of their maps (none is left behind).
    """
    def take(t: Tensor, info: SparseInfo) -> SparseTensor:
        assert info.map_op is not None  # every sparse component was stored by an op
        return take_many_sparse_from_tensors_map(
            info.map_op, array_ops.squeeze(t, [1]),
            rank=None if info.rank is None else info.rank + 1)
    out: list[Any] = [take(t, info) if info.sparse else t for t, info in zip(dequeued, infos)]
    if not any(isinstance(x, SparseTensor) for x in out):
        return out
    deps = [x.values if isinstance(x, SparseTensor) else x for x in out]

    def with_deps(t: Tensor) -> Tensor:
        with control_dependencies(deps):
            return identity(t)
    return [SparseTensor(with_deps(x.indices), with_deps(x.values), with_deps(x.dense_shape))
            if isinstance(x, SparseTensor) else with_deps(x) for x in out]


def validate_keep_input(keep_input: Any, enqueue_many: bool) -> Tensor:
    """`keep_input` as a bool tensor of rank 0 (or 1 with `enqueue_many`).

    Raises:
        ValueError: its rank is unknown, above 1, or 1 without `enqueue_many`.
    """
    keep = convert_to_tensor(keep_input, dtype=_dt.bool, name="keep_input")
    if keep.shape.ndims is None:
        raise ValueError(f"`keep_input` dimensions must be known at graph construction "
                         f"(got {keep.name} of unknown rank); give it a static shape.")
    if not enqueue_many and keep.shape.ndims == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`: one "
                         f"flag decides one example (got {keep.name} of shape {keep.shape}).")
    if keep.shape.ndims > 1:
        raise ValueError(f"`keep_input` must be 0 or 1 dimensions, got {keep.name} of shape "
                         f"{keep.shape}.")
    return keep


__all__ = ["SparseInfo", "static_keep", "store_sparse", "select_kept", "restore_sparse",
           "validate_keep_input"]
