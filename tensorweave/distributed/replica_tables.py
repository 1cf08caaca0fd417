"""Lookup tables in ps replicas: a MutableHashTable's keys and values travel with the
variables (distributed/replica.py), whole whenever they changed, and a restarted ps
gets the table back before any graph runs (its MutableHashTable op then finds it).

State that replicas do not carry yet (a MutableDenseHashTable) is named in every put;
a ps restarted from such a replica would serve variables without that state, so it
starts empty instead and the chief restores the newest checkpoint (the log says why).
Immutable tables (HashTable) need no copy: the session's `tables_initializer` fills
them again.

Example:
    >>> snapshot(resources)   # under the task's paused update gate
    {('', 'ids'): (<MutableHashTableResource ...>, (keys, values))}
"""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.framework import dtypes as _dt
from tensorweave.ops.lookup.mutable_table_ops import MutableHashTableResource
from tensorweave.runtime.resource_mgr import ResourceMgr

__all__ = ["entry", "load", "same", "snapshot", "uncovered"]

Key = tuple[str, str]
Table = tuple[np.ndarray, np.ndarray]  # keys, values
# Resource types holding training state that replicas do not carry.
_UNCOVERED = ("MutableDenseHashTable",)


def _tables(resources: ResourceMgr) -> Iterator[tuple[Key, MutableHashTableResource]]:
    for container, name, res in resources.resources():
        if type(res) is MutableHashTableResource:  # not a subclass (a dense table)
            yield (container, name), res


def snapshot(resources: ResourceMgr) -> dict[Key, tuple[MutableHashTableResource, Table]]:
    """Every MutableHashTable's keys and values (take it with the update gate paused)."""
    return {key: (res, res.export()) for key, res in _tables(resources)}


def uncovered(resources: ResourceMgr) -> list[str]:
    """The resources with state replicas do not carry, as "Type name"."""
    return sorted(f"{res.type_name} {f'{container}/{name}' if container else name}"
                  for container, name, res in resources.resources()
                  if getattr(res, "type_name", "") in _UNCOVERED)


def same(before: Any, now: Table) -> bool:
    """Whether a table's contents are what the holder has (`before`: its last copy)."""
    return isinstance(before, tuple) and all(
        b.shape == n.shape and b.dtype == n.dtype and np.array_equal(b, n)
        for b, n in zip(before, now))


def entry(key: Key, res: MutableHashTableResource) -> pb.ReplicaEntry:
    """The put's entry for a table (its two tensors: keys, values)."""
    return pb.ReplicaEntry(container=key[0], name=key[1], dtype=res.value_dtype.name,
                           table_key_dtype=res.key_dtype.name,
                           table_value_shape=list(res.value_shape))


def load(resources: ResourceMgr, e: pb.ReplicaEntry, keys: np.ndarray,
         values: np.ndarray) -> bool:
    """Creates the table of entry `e` with these contents; False if the task has one."""
    res = MutableHashTableResource(e.name, _dt.as_dtype(e.table_key_dtype),
                                   _dt.as_dtype(e.dtype), tuple(e.table_value_shape))
    res.import_(keys, values)
    return resources.lookup_or_create(e.container, e.name, lambda: res) is res
