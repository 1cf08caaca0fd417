"""EmbeddingVariables in ps replicas: an EmbeddingVariable's id index and the rows of the
variable and of its optimizer slots travel with the variables (distributed/replica.py),
and a restarted ps gets them back before any graph runs (its KvVariable ops then find
them, a slot its variable's index).

An EmbeddingVariable and its slots share one `KvIndex` (ops/state/kv_variable_ops.py),
so they travel as one *group*, one entry named by the variable: the index once (each
buffer row's id, frequency and version; the free rows; the ids a filter has not
admitted yet, with their counts), then each member's rows, its default rows and
no-permission value, and the filter and eviction settings.

When: a group is copied only when its index's lock was taken since the last copy. Every
change of the group takes that lock (lookups that admit or count, KvStamp, KvImport,
eviction, and the optimizers' updates, which always lock an EmbeddingVariable's rows),
and the lock counts its holds (`kernels/counting_lock.py`), so an untouched group costs
a put one int compare, not a copy. A touched one is copied under the task's paused
update gate (as variables and tables are) and the index's lock (lookups do not hold the
gate), then compared row by row with the copy the holder has: a put sends the rows that
changed (any of id, frequency, version, or a member's row) and the rows added since,
the free rows and pending ids whole when they changed, and the whole group (its held
rows only) the first time or when its settings, members or default rows changed or it
shrank (re-initialized). Rows are buffer rows: an id keeps its row until evicted, so a
trained id's row is sent, not the table.

Example:
    >>> snapshot(resources, acked)   # under the task's paused update gate
    {('', 'emb'): (<EmbeddingResource emb ...>, <Group emb: 3 rows>)}
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import numpy as np

from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.state.kv_variable_ops import EmbeddingResource, KvIndex
from tensorweave.runtime.resource_mgr import ResourceMgr

__all__ = ["Group", "apply", "is_group", "load", "marks", "put", "snapshot",
           "tensor_count", "whole"]

Key = tuple[str, str]


class Group:
    """An EmbeddingVariable's state with its slots', by buffer row (rows [0, n)): what
    the primary copied or what the holder holds.

    Attributes:
        meta: settings and members (`size`, `whole` and `side` unset).
        index: the copied KvIndex (the primary's side only).
        holds: its lock's count of holds at the copy (-1 on the holder).
        n: rows in use; row 0 is the scratch row of ids not admitted.
        keys, held, freqs, versions: each row's id (0 or b"" where none), whether it
            holds one, its frequency and version.
        values: each member's rows [n, dim] (None: not initialized).
        defaults: each member's default rows (None: not initialized).
        free: the free rows, reused last first.
        pending: the ids not admitted yet and their lookup counts.
    """

    __slots__ = ("meta", "index", "holds", "n", "keys", "held", "freqs", "versions",
                 "values", "defaults", "free", "pending")

    def __init__(self, meta: pb.ReplicaEmbedding, n: int) -> None:
        self.meta, self.n = meta, n
        self.index: KvIndex | None = None
        self.holds = -1
        string = _dt.as_dtype(meta.key_dtype) == _dt.string
        self.keys = np.full(n, b"", object) if string else np.zeros(n, np.int64)
        self.held = np.zeros(n, bool)
        self.freqs = np.zeros(n, np.int64)
        self.versions = np.full(n, -1, np.int64)
        self.values: list[np.ndarray | None] = [
            np.zeros((n, m.dim), _dt.as_dtype(m.dtype).as_numpy_dtype) if m.initialized
            else None for m in meta.member]
        self.defaults: list[np.ndarray | None] = [None] * len(meta.member)
        self.free = np.zeros(0, np.int64)
        self.pending: tuple[np.ndarray, np.ndarray] = (self.keys[:0], np.zeros(0, np.int64))

    def grow(self, n: int) -> None:
        """Extends the rows to `n` (new ones hold no id)."""
        if n <= self.n:
            return
        more = Group(self.meta, n - self.n)
        for name in ("keys", "held", "freqs", "versions"):
            setattr(self, name, np.concatenate([getattr(self, name), getattr(more, name)]))
        self.values = [None if v is None else np.concatenate([v, w])
                       for v, w in zip(self.values, more.values)]
        self.n = n

    def __repr__(self) -> str:
        return f"<Group {self.meta.member[0].name}: {int(self.held.sum())} rows>"


def is_group(value: Any) -> bool:
    """Whether a replica's value is an EmbeddingVariable group."""
    return isinstance(value, Group)


def _primaries(resources: ResourceMgr) -> Iterator[tuple[Key, EmbeddingResource]]:
    # One per group: its variable (its slots are the index's other members).
    for container, name, res in resources.resources():
        if isinstance(res, EmbeddingResource) and res.index.members[0] is res:
            yield (container, name), res


def marks(resources: ResourceMgr) -> tuple[int, ...]:
    """Each group's count of holds now, in `snapshot`'s order: equal to those a copy
    recorded (`recorded`) when no group changed since (one int read per group)."""
    return tuple(res.index.lock.holds for _, res in _primaries(resources))


def recorded(copy: dict[Key, tuple[Any, Any]]) -> tuple[int, ...]:
    """The counts of holds of the groups in `copy` (a `snapshot` merged into the rest)."""
    return tuple(g.holds for _, g in copy.values() if isinstance(g, Group))


# ---- the primary's side: copies and puts ---------------------------------------------
def snapshot(resources: ResourceMgr, acked: dict[Key, Any] | None
             ) -> dict[Key, tuple[EmbeddingResource, Group]]:
    """Every group's state (take it with the update gate paused): the copy the holder
    has (in `acked`) for a group nobody touched since, else a new copy."""
    out: dict[Key, tuple[EmbeddingResource, Group]] = {}
    for key, res in _primaries(resources):
        index, before = res.index, (acked or {}).get(key)
        if isinstance(before, Group) and before.index is index and \
                before.holds == index.lock.holds and \
                len(before.meta.member) == len(index.members):
            out[key] = (res, before)   # nothing took its lock since: unchanged
        else:
            out[key] = (res, _copy(index))
    return out


def _copy(index: KvIndex) -> Group:
    with index.lock:   # lookups do not hold the gate: they wait here
        g = Group(_meta(index), index.n)
        g.index, g.holds = index, index.lock.holds
        keys, rows = index.rows.items()
        g.keys[rows], g.held[rows] = keys, True
        g.freqs[:], g.versions[:] = index.freqs[:g.n], index.versions[:g.n]
        g.values = [m.value[:g.n].copy() if m.value is not None and init.initialized
                    else None for m, init in zip(index.members, g.meta.member)]
        # KvInitialize replaces default rows, never changes them: a reference is a copy
        g.defaults = [m.defaults for m in index.members]
        g.free = index.free.copy()
        g.pending = index.pending.items()
    return g


def _meta(index: KvIndex) -> pb.ReplicaEmbedding:
    return pb.ReplicaEmbedding(
        key_dtype=index.key_dtype.name, filter_freq=index.filter_freq,
        steps_to_live=index.steps_to_live, l2_weight_threshold=index.l2_threshold,
        member=[pb.ReplicaEmbeddingMember(
            name=m.name, dtype=m.dtype.name, dim=m.dim, no_permission=m.no_permission,
            initialized=m.value is not None and m.defaults is not None)
            for m in index.members])


def put(key: Key, now: Group, before: Any) -> tuple[pb.ReplicaEntry, list[np.ndarray]] | None:
    """The put's entry and tensors for a group whose holder has `before` (None: nothing
    of it); None when it has `now` already."""
    if now is before:
        return None
    rows = _changed(before, now) if isinstance(before, Group) else None
    whole = rows is None
    if rows is None:
        rows = np.flatnonzero(now.held)
    side = whole or not _same_side(before, now)
    if not len(rows) and not side:
        return None
    return _entry(key, now, whole, side), _encode(now, rows, whole, side)


def _entry(key: Key, g: Group, whole: bool, side: bool) -> pb.ReplicaEntry:
    meta = pb.ReplicaEmbedding()
    meta.CopyFrom(g.meta)
    meta.size, meta.whole, meta.side = g.n, whole, side
    return pb.ReplicaEntry(container=key[0], name=key[1], dtype=g.meta.member[0].dtype,
                           embedding=meta)


def _changed(before: Group, now: Group) -> np.ndarray | None:
    """The rows of `now` that differ from `before` or were added since (row 0, where
    nothing is read, aside); None when it must travel whole."""
    if before.meta != now.meta or now.n < before.n or not all(
            _same_rows(a, b) for a, b in zip(before.defaults, now.defaults)):
        return None
    m = before.n
    diff = (before.held != now.held[:m]) | (before.freqs != now.freqs[:m]) | \
        (before.versions != now.versions[:m]) | (before.keys != now.keys[:m])
    for b, v in zip(before.values, now.values):
        if b is not None and v is not None:
            diff |= (b != v[:m]).reshape(m, -1).any(axis=1)
    diff[0] = False
    return np.concatenate([np.flatnonzero(diff), np.arange(max(m, 1), now.n)])


def _same_rows(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return a is b or (a is not None and b is not None and a.shape == b.shape
                      and np.array_equal(a, b))


def _same_side(before: Group, now: Group) -> bool:
    return all(_same_rows(a, b) for a, b in ((before.free, now.free),
                                             (before.pending[0], now.pending[0]),
                                             (before.pending[1], now.pending[1])))


def _encode(g: Group, rows: np.ndarray, whole: bool, side: bool) -> list[np.ndarray]:
    out = [rows.astype(np.int64), g.keys[rows], g.held[rows], g.freqs[rows], g.versions[rows]]
    out += [v[rows] for v in g.values if v is not None]
    if side:
        out += [g.free, *g.pending]
    if whole:
        out += [d for d, v in zip(g.defaults, g.values) if v is not None]
    return out


def tensor_count(e: pb.ReplicaEntry) -> int:
    """How many tensors a put or get carries for the group of entry `e`."""
    m = e.embedding
    members = sum(1 for x in m.member if x.initialized)
    return 5 + members + (3 if m.whole or m.side else 0) + (members if m.whole else 0)


# ---- the holder's side ---------------------------------------------------------------
def apply(before: Any, e: pb.ReplicaEntry, tensors: Iterator[np.ndarray]) -> Group:
    """The holder's group after put entry `e` (its `tensor_count` tensors from
    `tensors`): a new one for a whole entry, else `before` updated in place."""
    m = e.embedding
    meta = pb.ReplicaEmbedding()
    meta.CopyFrom(m)
    for field in ("size", "whole", "side"):   # what one put says, not the group
        meta.ClearField(field)
    if m.whole:
        g = Group(meta, int(m.size))
    elif not isinstance(before, Group) or before.meta != meta:
        raise errors.FailedPreconditionError(
            None, None, f"This task holds no copy of EmbeddingVariable {e.name} to apply "
            "its changed rows to (a put was lost): send the whole state.")
    else:
        g = before
        g.grow(int(m.size))
    rows = np.asarray(next(tensors), np.int64)
    for name in ("keys", "held", "freqs", "versions"):
        getattr(g, name)[rows] = next(tensors)
    for v in g.values:
        if v is not None:
            v[rows] = next(tensors)
    if m.whole or m.side:
        g.free = np.array(next(tensors), np.int64)
        g.pending = (np.array(next(tensors)), np.array(next(tensors), np.int64))
    if m.whole:
        g.defaults = [None if v is None else np.array(next(tensors)) for v in g.values]
    return g


def whole(key: Key, g: Group) -> tuple[pb.ReplicaEntry, list[np.ndarray]]:
    """A get's entry and tensors for a held group: its rows that hold ids."""
    return _entry(key, g, True, True), _encode(g, np.flatnonzero(g.held), True, True)


# ---- a starting ps -----------------------------------------------------------------
def load(resources: ResourceMgr, e: pb.ReplicaEntry, tensors: Sequence[np.ndarray]) -> bool:
    """Creates the EmbeddingVariable of whole entry `e` and its slots, with their index;
    False if the task has the variable already (a replica never overwrites live state)."""
    g = apply(None, e, iter(tensors))
    index = _index(g)
    members = [_member(index, m, g, i) for i, m in enumerate(g.meta.member)]
    if resources.lookup_or_create(e.container, e.name, _made(members[0])) is not members[0]:
        return False
    for res in members[1:]:
        resources.lookup_or_create(e.container, res.name, _made(res))
    return True


def _made(res: EmbeddingResource) -> Callable[[], EmbeddingResource]:
    return lambda: res


def _index(g: Group) -> KvIndex:
    """The KvIndex of `g`: the same rows, free rows, counts and versions as the
    primary's (the next id admitted takes the row it would have taken there)."""
    m = g.meta
    index = KvIndex(_dt.as_dtype(m.key_dtype), int(m.filter_freq), int(m.steps_to_live),
                    float(m.l2_weight_threshold))
    while index.capacity < g.n:
        index.capacity *= 2
    index.n = g.n
    index.freqs = np.zeros(index.capacity, np.int64)
    index.versions = np.full(index.capacity, -1, np.int64)
    index.freqs[:g.n], index.versions[:g.n] = g.freqs, g.versions
    rows = np.flatnonzero(g.held)
    index.rows.insert(g.keys[rows], rows)
    index.pending.insert(*g.pending)
    index.free = g.free.copy()
    return index


def _member(index: KvIndex, m: pb.ReplicaEmbeddingMember, g: Group, i: int
            ) -> EmbeddingResource:
    res = EmbeddingResource(m.name, _dt.as_dtype(m.dtype), int(m.dim), index)
    res.no_permission = m.no_permission
    value = g.values[i]
    if value is not None:
        res.defaults = g.defaults[i]
        res.value = np.zeros((index.capacity, res.dim), res.dtype.as_numpy_dtype)
        res.value[:g.n] = value
    return res
