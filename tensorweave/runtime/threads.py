"""Daemon thread pools, the cleanup that must run when the program exits, and
`exit_process`, which ends the process with that cleanup done.

concurrent.futures' pools join their threads at interpreter exit, before any
`atexit` handler runs: one thread blocked in a step (a queue runner waiting on
a queue, a pull waiting for a peer) then hangs the exit forever. Our pools use
daemon threads, and `at_exit` callbacks run from threading's exit hook, early,
while sessions and servers can still be closed in an orderly way.
"""
from __future__ import annotations

import atexit
import concurrent.futures as futures
import heapq
import itertools
import logging
import os
import queue
import sys
import threading
import time
from typing import Any, Callable, NoReturn


class DaemonPool(futures.Executor):
    """A pool of daemon threads, started on demand up to `max_workers`."""

    def __init__(self, max_workers: int, name: str) -> None:
        self._max = max_workers
        self._name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0      # threads waiting for an item
        self._pending = 0   # items submitted and not yet taken
        self._lock = threading.Lock()
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> futures.Future:
        if self._shutdown:
            raise RuntimeError(f"Thread pool {self._name} is shut down")
        fut: futures.Future = futures.Future()
        with self._lock:
            self._pending += 1
            # Every pending item needs its own thread: items may block on each other
            # (a step's partitions wait for one another), so none may queue behind another.
            if self._pending > self._idle and len(self._threads) < self._max:
                t = threading.Thread(target=self._work, daemon=True,
                                     name=f"{self._name}-{len(self._threads)}")
                self._threads.append(t)
                self._idle += 1  # counted as idle until it takes its first item
                t.start()
        self._queue.put((fut, fn, args, kwargs))
        return fut

    def _work(self) -> None:
        first = True
        while True:
            if not first:
                with self._lock:
                    self._idle += 1
            first = False
            item = self._queue.get()
            with self._lock:
                self._idle -= 1
                if item is not None:
                    self._pending -= 1
            if item is None:
                return
            fut, fn, args, kwargs = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as e:  # noqa: BLE001 - handed to the future's owner
                fut.set_exception(e)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shutdown = True
        for _ in self._threads:
            self._queue.put(None)


_exit_callbacks: list[Callable[[], None]] = []
_registered = False
_exit_lock = threading.Lock()


def at_exit(fn: Callable[[], None]) -> None:
    """Runs `fn` when the program exits, before threads are joined (last added, first run)."""
    global _registered
    with _exit_lock:
        _exit_callbacks.append(fn)
        if not _registered:
            threading._register_atexit(_run_exit_callbacks)  # type: ignore[attr-defined]
            _registered = True


def _run_exit_callbacks() -> None:
    while _exit_callbacks:
        fn = _exit_callbacks.pop()
        try:
            fn()
        except Exception:  # noqa: BLE001 - exit must go on
            pass


def exit_process(code: int = 0) -> NoReturn:
    """Ends the process now with `code`, after the cleanup a normal exit would run.

    For calls that never return in TF (a ps's `server.join()`): the code after them
    must not run, and a thread still blocked somewhere must not hold the exit. First
    the `at_exit` callbacks (sessions, servers), then the program's `atexit` handlers
    (logging's among them, which flushes every handler), then stdout/stderr are
    flushed and the process ends without joining threads.

    Example:
        >>> exit_process(0)  # doctest: +SKIP
    """
    try:
        _run_exit_callbacks()
        atexit._run_exitfuncs()
        logging.shutdown()  # again, in case a handler was added by an atexit handler
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):  # closed or replaced streams
                pass
        os._exit(code)


class Timers:
    """One thread that runs callbacks at their times (call timeouts, health checks), not
    one thread per timer. A callback must be quick: it runs on that thread.

    Example:
        >>> TIMERS.add(0.5, lambda: print("half a second later"))
    """

    def __init__(self, name: str = "tw-timers") -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._ids = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._name = name

    def add(self, after_s: float, fn: Callable[[], None]) -> None:
        """Runs `fn()` on the timer thread `after_s` seconds from now."""
        with self._wake:
            heapq.heappush(self._heap, (time.monotonic() + after_s, next(self._ids), fn))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name=self._name)
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._wake.wait(self._heap[0][0] - time.monotonic() if self._heap
                                    else None)
                _, _, fn = heapq.heappop(self._heap)
            try:
                fn()
            except Exception:  # noqa: BLE001 - one failing callback must not stop the rest
                logging.getLogger("tensorweave.threads").exception("a timer's callback failed")


TIMERS = Timers()
"""The process's timers (call timeouts of the unix links, a step's health checks)."""
