"""Lookup tables in ps replicas: a MutableHashTable's keys and values, a
MutableDenseHashTable's buckets (and its empty and deleted keys, its load factor) travel
with the variables (distributed/replica.py), whole whenever they changed, and a
restarted ps gets the table back before any graph runs (its table op then finds it).

EmbeddingVariables travel too, as their own kind (distributed/replica_embeddings.py).
State that replicas do not carry (a resource type named in `_UNCOVERED`: a WorkQueue)
is named in every put; a ps restarted from such a replica would serve variables without
that state, so it starts empty instead and the chief restores the newest checkpoint (the
log says why). Immutable tables (HashTable) need no copy: the session's
`tables_initializer` fills them again.

Example:
    >>> snapshot(resources)   # under the task's paused update gate
    {('', 'ids'): (<MutableHashTableResource ...>, (keys, values))}
"""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.framework import dtypes as _dt
from tensorweave.ops.lookup.dense_table_ops import DenseHashTableResource
from tensorweave.ops.lookup.mutable_table_ops import MutableHashTableResource
from tensorweave.runtime.resource_mgr import ResourceMgr

__all__ = ["carried", "entry", "load", "same", "snapshot", "tensor_count", "uncovered"]

Key = tuple[str, str]
Table = tuple[np.ndarray, ...]  # keys, values (a dense table's: then empty, deleted key)
# Resource types holding training state that replicas do not carry: a WorkQueue (what
# is left of its epochs must match the model's: the checkpoint has both).
_UNCOVERED: tuple[str, ...] = ("WorkQueue",)


def carried(res: Any) -> bool:
    """Whether replicas carry the state of resource `res`."""
    return getattr(res, "type_name", "") not in _UNCOVERED


def _tables(resources: ResourceMgr) -> Iterator[tuple[Key, MutableHashTableResource]]:
    for container, name, res in resources.resources():
        if isinstance(res, MutableHashTableResource):  # a dense table too
            yield (container, name), res


def _contents(res: MutableHashTableResource) -> Table:
    if isinstance(res, DenseHashTableResource):
        return (*res.export(), res.empty_key, res.deleted_key)
    return res.export()


def snapshot(resources: ResourceMgr) -> dict[Key, tuple[MutableHashTableResource, Table]]:
    """Every mutable table's contents (take it with the update gate paused)."""
    return {key: (res, _contents(res)) for key, res in _tables(resources)}


def tensor_count(e: pb.ReplicaEntry) -> int:
    """How many tensors a put or get carries for the table of entry `e`."""
    return 4 if e.dense_table else 2


def uncovered(resources: ResourceMgr) -> list[str]:
    """The resources with state replicas do not carry, as "Type name"."""
    return sorted(f"{res.type_name} {f'{container}/{name}' if container else name}"
                  for container, name, res in resources.resources()
                  if getattr(res, "type_name", "") in _UNCOVERED)


def same(before: Any, now: Table) -> bool:
    """Whether a table's contents are what the holder has (`before`: its last copy)."""
    return isinstance(before, tuple) and len(before) == len(now) and all(
        b.shape == n.shape and b.dtype == n.dtype and np.array_equal(b, n)
        for b, n in zip(before, now))


def entry(key: Key, res: MutableHashTableResource) -> pb.ReplicaEntry:
    """The put's entry for a table (its `tensor_count` tensors: `snapshot`'s)."""
    e = pb.ReplicaEntry(container=key[0], name=key[1], dtype=res.value_dtype.name,
                        table_key_dtype=res.key_dtype.name,
                        table_value_shape=list(res.value_shape))
    if isinstance(res, DenseHashTableResource):
        e.dense_table, e.max_load_factor = True, res.max_load_factor
    return e


def load(resources: ResourceMgr, e: pb.ReplicaEntry, contents: Table) -> bool:
    """Creates the table of entry `e` with these contents; False if the task has one."""
    key_dtype, value_dtype = _dt.as_dtype(e.table_key_dtype), _dt.as_dtype(e.dtype)
    shape = tuple(e.table_value_shape)
    res: MutableHashTableResource
    if e.dense_table:
        keys, values, empty, deleted = contents
        res = DenseHashTableResource(e.name, key_dtype, value_dtype, shape, empty, deleted,
                                     len(keys), e.max_load_factor)
    else:
        keys, values = contents
        res = MutableHashTableResource(e.name, key_dtype, value_dtype, shape)
    res.import_(keys, values)
    return resources.lookup_or_create(e.container, e.name, lambda: res) is res
