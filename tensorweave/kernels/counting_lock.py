"""A reentrant lock that counts how often it was taken: a cheap "did anything touch the
state it guards?" test for copies taken under it.

An EmbeddingVariable's id index (ops/state/kv_variable_ops.py) guards its ids, counts,
versions and the rows of the variable and its slots with one lock that every change
takes: lookups that admit or count, KvStamp, KvImport, eviction, and the optimizers'
updates (an EmbeddingVariable's rows always lock). A copy taken under the lock records
`holds`; while `holds` reads the same, nothing has changed since (ps replicas use it
to skip a table no step touched: distributed/replica_embeddings.py).

Example:
    >>> lock = CountingRLock()
    >>> with lock:
    ...     seen = lock.holds     # the state as of hold number `seen`
    >>> lock.holds == seen        # True: nobody took it since
"""
from __future__ import annotations

import threading
from typing import Any

__all__ = ["CountingRLock"]


class CountingRLock:
    """`threading.RLock` that counts its acquisitions in `holds` (nested ones too).

    `holds` only grows, and changes only while the lock is held, so a value read under
    the lock and read again later without it (one int read) tells whether anyone took
    the lock in between.
    """

    __slots__ = ("_lock", "holds")

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.holds = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self.holds += 1   # under the lock: no increment is lost
        return got

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self._lock.release()
