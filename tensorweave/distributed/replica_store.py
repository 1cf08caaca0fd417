"""The holder's side of ps replication, and a starting ps loading its state from it.

A holder keeps, per primary ps task, the newest copy of its variables that the task's
`replica.ReplicaSender` put there (`ReplicaStore`: the worker service's ReplicaPut and
ReplicaGet); a ps that starts where one died asks its holder for that copy (`restore`)
and puts it into its resources (`load`) before it registers any graph. The module
docstring of `distributed/replica.py` says when replicas are sent and where they live.

Example:
    >>> level, what = restore(server.task, worker.device.resource_mgr, holder,
    ...                       server.peer, wait_secs=5.0)
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from tensorweave.base.waits import Backoff, Wait
from tensorweave.distributed import replica_embeddings, replica_tables
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.tensor_shape import as_shape
from tensorweave.runtime.resource_mgr import ResourceMgr, VariableResource

__all__ = ["CALL_TIMEOUT_S", "Key", "ReplicaStore", "load", "restore"]

log = logging.getLogger("tensorweave.replica")

CALL_TIMEOUT_S = 30.0  # a put or a get that takes longer failed
Key = tuple[str, str]  # (container, name) in the task's ResourceMgr


def load(resources: ResourceMgr, entries: Sequence[pb.ReplicaEntry],
         tensors: Sequence[np.ndarray]) -> tuple[int, int, int]:
    """Puts a replica's variables (whole values), tables and EmbeddingVariables (with
    their slots) into `resources`; returns how many of each.

    A variable or table the task already has keeps its value (a starting ps has none
    yet; a replica never overwrites live state).
    """
    loaded = tables = embeddings = 0
    it = iter(tensors)
    for e in entries:
        if e.HasField("embedding"):
            group = [next(it) for _ in range(replica_embeddings.tensor_count(e))]
            embeddings += replica_embeddings.load(resources, e, group)
            continue
        if e.table_key_dtype:
            contents = tuple(next(it) for _ in range(replica_tables.tensor_count(e)))
            tables += replica_tables.load(resources, e, contents)
            continue
        value = next(it)
        shape = [None if d < 0 else d for d in e.shape] if e.shape_known else None
        res = VariableResource(e.name, _dt.as_dtype(e.dtype), as_shape(shape))
        res.value = np.array(value, copy=True)  # ours to update in place
        if resources.lookup_or_create(e.container, e.name, _made(res)) is res:
            loaded += 1
    return loaded, tables, embeddings


def _made(res: VariableResource) -> Callable[[], VariableResource]:
    return lambda: res


# ---- the holder's side -------------------------------------------------------------
class _Replica:
    __slots__ = ("incarnation", "seq", "values", "meta", "received", "uncovered")

    def __init__(self, incarnation: int, seq: int) -> None:
        self.incarnation, self.seq = incarnation, seq
        # an array; a table's (keys, values); an EmbeddingVariable's replica_embeddings.Group
        self.values: dict[Key, Any] = {}
        self.uncovered: list[str] = []
        self.meta: dict[Key, pb.ReplicaEntry] = {}
        self.received = time.monotonic()


class ReplicaStore:
    """The replicas this task holds, by primary task (the worker service's ReplicaPut
    and ReplicaGet)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replicas: dict[str, _Replica] = {}

    def put(self, req: pb.ReplicaPutRequest, tensors: Sequence[np.ndarray]) -> None:
        """Applies one put; FailedPreconditionError for a delta on another base."""
        with self._lock:
            r = self._replicas.get(req.task)
            if req.full:
                if r is None or r.incarnation != req.incarnation:
                    log.info("holding the replica of %s (incarnation %x): %d variables",
                             req.task, req.incarnation, len(req.entry))
                r = _Replica(req.incarnation, req.seq)
            elif r is None or (r.incarnation, r.seq) != (req.incarnation, req.seq - 1):
                raise errors.FailedPreconditionError(
                    None, None, f"This task holds no replica of {req.task} to apply put "
                    f"#{req.seq} of incarnation {req.incarnation:x} to (it restarted, or a "
                    "put was lost): send the whole state.")
            it = iter(tensors)
            for e in req.entry:
                key = (e.container, e.name)
                if e.HasField("embedding"):
                    r.values[key] = replica_embeddings.apply(r.values.get(key), e, it)
                elif e.table_key_dtype:
                    r.values[key] = tuple(np.array(next(it), copy=True)
                                          for _ in range(replica_tables.tensor_count(e)))
                elif e.rows:
                    index, rows = next(it), next(it)
                    r.values[key][np.asarray(index, np.int64)] = rows
                else:
                    r.values[key] = np.array(next(it), copy=True)
                r.meta[key] = e
            for removed in req.removed:
                container, _, name = removed.partition("/")
                r.values.pop((container, name), None)
                r.meta.pop((container, name), None)
            r.seq, r.received = req.seq, time.monotonic()
            r.uncovered = list(req.uncovered)
            self._replicas[req.task] = r

    def get(self, task: str) -> tuple[pb.ReplicaGetResponse, list[np.ndarray]]:
        """Everything held for `task`, whole values (found=False when nothing is)."""
        with self._lock:
            r = self._replicas.get(task)
            if r is None:
                return pb.ReplicaGetResponse(found=False), []
            keys = sorted(r.values)
            resp = pb.ReplicaGetResponse(found=True, incarnation=r.incarnation, seq=r.seq,
                                         age_secs=time.monotonic() - r.received,
                                         uncovered=r.uncovered)
            tensors: list[np.ndarray] = []
            for key in keys:
                value = r.values[key]
                e = resp.entry.add()
                if replica_embeddings.is_group(value):   # the rows that hold ids
                    entry, group = replica_embeddings.whole(key, value)
                    e.CopyFrom(entry)
                    tensors += group
                    continue
                e.CopyFrom(r.meta[key])
                e.rows = False
                tensors += [v.copy() for v in value] if isinstance(value, tuple) \
                    else [value.copy()]
            return resp, tensors


# ---- a starting ps -------------------------------------------------------------------
def restore(task: str, resources: ResourceMgr, holder: str, peer: Callable[[str], Any],
            wait_secs: float) -> tuple[int, str]:
    """Loads `task`'s replica from `holder` into `resources`; returns what happened, for
    the log: (logging level, message). A replica loaded, or none to be had from an
    unreachable holder, is a WARNING (the job lost a ps); none held (a job's first
    start) is INFO. Waits up to `wait_secs` for an unreachable holder (it may be starting
    too).

    Example:
        >>> restore(server.task, worker.device.resource_mgr, holder, server.peer, 5.0)
        (30, 'loaded 6 variables from its replica on /job:worker/replica:0/task:0 ...')
    """
    wait = Wait(f"for {holder}, which holds this ps's replica", wait_secs,
                backoff=Backoff(0.1, 2.0, 1.0))
    while True:
        try:
            resp, tensors = peer(holder).call("replica_get", pb.ReplicaGetRequest(task=task),
                                              timeout=CALL_TIMEOUT_S)
            break
        except (errors.UnavailableError, errors.DeadlineExceededError) as e:
            if wait.expired():
                return logging.WARNING, (
                    f"{holder}, which holds its replica, did not answer within {wait_secs:g}s "
                    f"({e.message.splitlines()[0]}): starting empty; the chief restores the "
                    "newest checkpoint")
            wait.sleep()
    if not resp.found:
        return logging.INFO, (
            f"no replica on {holder} (the job's first start, or the holder restarted): "
            "starting empty; the chief restores the newest checkpoint if there is one")
    if resp.uncovered:
        return logging.WARNING, (
            f"its replica on {holder} does not carry {', '.join(resp.uncovered)}: starting "
            "empty (a model without that state would be wrong); the chief restores the "
            "newest checkpoint")
    n, tables, embeddings = load(resources, resp.entry, tensors)
    also = f" and {tables} tables" if tables else ""
    also += f" and {embeddings} EmbeddingVariables" if embeddings else ""
    return logging.WARNING, (
        f"loaded {n} variables{also} from its replica "
        f"on {holder} (put #{resp.seq} of incarnation "
        f"{resp.incarnation:x}, received {resp.age_secs:.2f}s ago): training goes on from "
        "there, no checkpoint is restored")
