"""Connections without a thread each: one event loop per process for every listener.

A task's listeners (the task port, tcp/shared_port.py; the same-host socket,
unix/listener.py) accept here, wait here for a new connection's first bytes, park
idle connections here and relay plain gRPC here. A thread is taken only while a
connection has something to do: a handshake that may block (TLS, the same-host
hello) runs on the small `blocking` pool, a frame or a bulk pull on the caller's own
workers. So 1,000 idle connections cost file descriptors and a few objects, not
1,000 threads (bench/connections.py measures it).

Everything that touches the selector runs on the loop's thread: other threads hand
work over with `call_soon` (or `run_sync`, which waits for it). Callbacks must not
block; a callback that raises is logged and the loop goes on.

Example:
    >>> loop = get()
    >>> a, b = socket.socketpair()
    >>> got = threading.Event()
    >>> loop.call_soon(lambda: loop.when_readable(a, lambda ready: got.set()))
    >>> b.send(b"x"); got.wait(5)
    1
    True
"""
from __future__ import annotations

import heapq
import itertools
import logging
import resource
import selectors
import socket
import threading
import time
import weakref
from typing import Any, Callable

from tensorweave.distributed.transport import limits, sidechannel
from tensorweave.runtime.threads import DaemonPool

__all__ = ["BLOCKING_THREADS", "Counts", "Reactor", "Ticket", "blocking", "counts_of", "get",
           "raise_fd_limit"]

log = logging.getLogger("tensorweave.transport.reactor")

# Threads per pool for the steps of a connection that may block: "handshake" (TLS,
# same-host hellos, bulk tokens: each bounded by TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS),
# "bulk" (a big tensor's pull) and "dial" (resolving and connecting to another task for
# gRPC, tcp/outbound.py): more queue, they never add threads.
BLOCKING_THREADS = {"handshake": 16, "bulk": 8, "dial": 8}
_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


class Reactor:
    """A selector loop on one daemon thread, with deadlines.

    `watch(sock, events, callback)` calls `callback(events)` on the loop's thread
    whenever `sock` is ready, until `unwatch(sock)`; `when_readable` does it once;
    `at(deadline, fn)` runs `fn` once the monotonic clock passes `deadline`.
    """

    def __init__(self, name: str = "tw-reactor") -> None:
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, _READ, None)
        self._soon: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=name)
        self._thread.start()

    # --- from any thread ---
    def call_soon(self, fn: Callable[[], None]) -> None:
        """Runs `fn` on the loop's thread, soon (in submission order)."""
        with self._lock:
            self._soon.append(fn)
            first = len(self._soon) == 1
        if first and threading.current_thread() is not self._thread:
            try:
                self._wake_w.send(b"\0")
            except BlockingIOError:
                pass  # a wake-up is pending already

    def run_sync(self, fn: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Runs `fn` on the loop's thread and returns its result (at once when called
        there); raises what it raised."""
        if threading.current_thread() is self._thread:
            return fn()
        done = threading.Event()
        out: list[Any] = [None, None]

        def run() -> None:
            try:
                out[0] = fn()
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                out[1] = e
            done.set()
        self.call_soon(run)
        if not done.wait(timeout):
            raise TimeoutError(f"the connection loop did not answer within {timeout} s")
        if out[1] is not None:
            raise out[1]
        return out[0]

    # --- on the loop's thread only ---
    def watch(self, sock: Any, events: int, callback: Callable[[int], None]) -> None:
        """Calls `callback(ready_events)` whenever `sock` is ready for `events`
        (EVENT_READ | EVENT_WRITE); 0 events unwatches."""
        if not events:
            self.unwatch(sock)
            return
        try:
            key = self._selector.get_key(sock)
        except KeyError:
            self._selector.register(sock, events, callback)
            return
        if key.events != events or key.data is not callback:
            self._selector.modify(sock, events, callback)

    def unwatch(self, sock: Any) -> None:
        """Stops watching `sock` (nothing when it is not watched or already closed)."""
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError):
            pass

    def when_readable(self, sock: Any, callback: Callable[[bool], None],
                      deadline: float | None = None) -> None:
        """Calls `callback(True)` once `sock` is readable (data or end of stream), or
        `callback(False)` once the monotonic clock passes `deadline`, whichever is
        first; `sock` is unwatched before either."""
        state = {"done": False}

        def fire(ready: bool) -> None:
            if state["done"]:
                return
            state["done"] = True
            self.unwatch(sock)
            callback(ready)
        self.watch(sock, _READ, lambda events: fire(True))
        if deadline is not None:
            self.at(deadline, lambda: fire(False))

    def at(self, deadline: float, fn: Callable[[], None]) -> None:
        """Runs `fn` on the loop's thread once `time.monotonic()` passes `deadline`."""
        heapq.heappush(self._timers, (deadline, next(self._seq), fn))

    def _loop(self) -> None:
        while True:
            timeout = None
            if self._timers:
                timeout = max(0.0, self._timers[0][0] - time.monotonic())
            if self._soon:  # a stale look is fine: a new item also wakes the selector
                timeout = 0.0
            for key, events in self._selector.select(timeout):
                if key.data is None:
                    try:
                        while self._wake_r.recv(4096):
                            pass
                    except BlockingIOError:
                        pass
                    continue
                self._run(key.data, events)
            now = time.monotonic()
            while self._timers and self._timers[0][0] <= now:
                self._run(heapq.heappop(self._timers)[2])
            if self._soon:
                with self._lock:
                    soon, self._soon = self._soon, []
                for fn in soon:
                    self._run(fn)

    @staticmethod
    def _run(fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - one connection's bug must not stop the others
            log.exception("connection loop callback failed")


class Ticket:
    """One admitted connection's place in its listener's counts."""

    def __init__(self, counts: Counts) -> None:
        self._counts = counts
        self.half_open = True
        self.open = True

    def identified(self) -> None:
        """The connection said who it is: no longer half-open."""
        with self._counts.lock:
            if self.half_open and self.open:
                self.half_open = False
                self._counts.half_open -= 1

    def release(self) -> None:
        """The connection closed (idempotent)."""
        with self._counts.lock:
            if self.open:
                self.open = False
                self._counts.open -= 1
                if self.half_open:
                    self._counts.half_open -= 1


class Counts:
    """A listener's connection counts: TENSORWEAVE_MAX_CONNECTIONS open ones, of which
    TENSORWEAVE_MAX_HALF_OPEN have not said who they are yet; a connection over
    either cap is refused (logged with the peer's address: sidechannel.log_refused).
    Who may connect at all is admission.py's; this counts those it let in.

    Example:
        >>> counts = Counts("/job:ps/task:0")
        >>> ticket = counts.admit("10.0.0.7:5123")
        >>> ticket.identified(); ticket.release()
    """

    def __init__(self, task: str, kind: str = "") -> None:
        self.task, self.kind = task, kind  # kind: "tcp" (the task port), "unix"
        self.lock = threading.Lock()
        self.open = self.half_open = 0
        with _init_lock:
            _all_counts.add(self)

    def admit(self, peer: str) -> Ticket | None:
        """A ticket for a new connection from `peer`, or None (logged) over a cap."""
        cap, half_cap = limits.max_connections(), limits.max_half_open()
        with self.lock:
            if self.open >= cap:
                why = f"{cap} connections are open already ({limits.ENV_MAX_CONNECTIONS})"
            elif self.half_open >= half_cap:
                why = (f"{half_cap} connections have not said who they are yet "
                       f"({limits.ENV_MAX_HALF_OPEN})")
            else:
                self.open += 1
                self.half_open += 1
                return Ticket(self)
        sidechannel.log_refused(self.task, peer, why)
        return None


_reactor: Reactor | None = None
# Every listener's counts while it lives, for the task's metrics (`counts_of`).
_all_counts: weakref.WeakSet[Counts] = weakref.WeakSet()
_pools: dict[str, DaemonPool] = {}
_init_lock = threading.Lock()


def get() -> Reactor:
    """This process's loop (started on first use; it serves every listener)."""
    global _reactor
    if _reactor is None:
        with _init_lock:
            if _reactor is None:
                raise_fd_limit()
                _reactor = Reactor()
    return _reactor


def counts_of(task: str) -> list[Counts]:
    """The connection counts of `task`'s listeners (a task's metrics read them)."""
    with _init_lock:
        return [c for c in _all_counts if c.task == task]


def blocking(kind: str = "handshake") -> DaemonPool:
    """This process's pool for connection steps of `kind` that may block
    ("handshake", "bulk" or "dial"; BLOCKING_THREADS threads at most each)."""
    pool = _pools.get(kind)
    if pool is None:
        with _init_lock:
            pool = _pools.get(kind)
            if pool is None:
                pool = _pools[kind] = DaemonPool(BLOCKING_THREADS[kind], f"tw-{kind}")
    return pool


def raise_fd_limit() -> None:
    """Raises this process's open-file limit to its hard limit: each connection is a
    descriptor (a relayed gRPC one three, with its pipes five), and the soft default
    of 1024 would refuse connections long before TENSORWEAVE_MAX_CONNECTIONS."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY:
            hard = max(soft, 1 << 20)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError):
        pass  # not allowed here: the soft limit stays
