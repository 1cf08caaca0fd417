"""`tf.train.Coordinator`: stop a set of threads together and surface their errors.

Example:
    >>> coord = tf.train.Coordinator()
    >>> threads = tf.train.start_queue_runners(sess, coord=coord)
    >>> try:
    ...     while not coord.should_stop():
    ...         sess.run(train_op)
    ... except tf.errors.OutOfRangeError:
    ...     pass                       # end of input
    ... finally:
    ...     coord.request_stop()
    >>> coord.join(threads)
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from types import TracebackType
from typing import Any, Callable, Iterable, Iterator

from tensorweave.base.waits import Wait
from tensorweave.framework import errors

log = logging.getLogger("tensorweave.coordinator")
ExcInfo = tuple[type, BaseException, TracebackType | None]


class Coordinator:
    """Lets threads ask each other to stop, and re-raises the first real error at join.

    Args:
        clean_stop_exception_types: exceptions that stop the threads without being
            re-raised by `join` (default: OutOfRangeError, the normal end of input).
    """

    def __init__(self, clean_stop_exception_types: Iterable[type] | None = None) -> None:
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise: ExcInfo | None = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _as_exc_info(self, ex: Any) -> ExcInfo:
        if isinstance(ex, tuple):
            return ex
        current = sys.exc_info()
        if current[1] is ex:
            return current  # type: ignore[return-value]
        return (type(ex), ex, ex.__traceback__)

    def request_stop(self, ex: Any = None) -> None:
        """Asks every thread to stop; `ex` (an exception or exc_info) is kept for join.

        Exceptions of the clean-stop types stop the threads but are not re-raised.
        After `join`, a real exception given here is raised at once.
        """
        with self._lock:
            info = None if ex is None else self._as_exc_info(ex)
            if info is not None and issubclass(info[0], self._clean_stop_exception_types):
                info = None
            if self._joined and info is not None:
                raise info[1].with_traceback(info[2])
            if not self._stop_event.is_set():
                if info is not None and self._exc_info_to_raise is None:
                    log.info("Error reported to Coordinator: %s", info[1])
                    self._exc_info_to_raise = info
                self._stop_event.set()

    def clear_stop(self) -> None:
        """Forgets a stop request and its exception, so threads can be started again."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        """True once a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """A context in which any exception requests a stop (and is swallowed).

        Example:
            >>> with coord.stop_on_exception():
            ...     while not coord.should_stop():
            ...         work()
        """
        try:
            yield
        except BaseException:  # noqa: BLE001 - reported to the coordinator, as in TF
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Waits up to `timeout` seconds (forever if None); True if stop was requested."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        """Adds `thread` to the threads `join` waits for."""
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads: Iterable[threading.Thread] | None = None,
             stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:
        """Waits for the threads to finish after a stop request; re-raises the first error.

        Waits until all threads are done or a stop is requested, then gives the
        threads `stop_grace_period_secs` to finish.

        Raises:
            The exception passed to request_stop, if any (not clean-stop types).
            RuntimeError: naming the threads still alive after the grace period
                (unless ignore_live_threads).
        """
        with self._lock:
            all_threads = set(self._registered_threads) | set(threads or ())
        while any(t.is_alive() for t in all_threads) and not self.wait_for_stop(0.05):
            pass
        grace = Wait("for the threads to stop", stop_grace_period_secs)
        for t in all_threads:  # each join returns as soon as its thread ends
            if t.is_alive() and t is not threading.current_thread():
                t.join(grace.remaining())
        stragglers = sorted(t.name for t in all_threads if t.is_alive())
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            info = self._exc_info_to_raise
        if info is not None:
            raise info[1].with_traceback(info[2])
        if stragglers:
            if ignore_live_threads:
                log.info("Coordinator stopped with threads still running: %s",
                         " ".join(stragglers))
            else:
                raise RuntimeError("Coordinator stopped with threads still running: "
                                   f"{' '.join(stragglers)}. Make their loops check "
                                   "coord.should_stop(), or pass ignore_live_threads=True.")

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raises the exception given to request_stop, if any."""
        with self._lock:
            info = self._exc_info_to_raise
        if info is not None:
            raise info[1].with_traceback(info[2])

    def __repr__(self) -> str:
        return f"<Coordinator stop_requested={self.should_stop()}>"


class LooperThread(threading.Thread):
    """A thread that calls `target(*args, **kwargs)` every `timer_interval_secs`
    (or `run_loop()` repeatedly when no interval) until the coordinator stops.

    Args:
        coord: the Coordinator.
        timer_interval_secs: seconds between calls, or None for back-to-back calls.
        target, args, kwargs: what to call (or override `run_loop`).

    Example:
        >>> LooperThread.loop(coord, 10, save_summary, args=(sess,))
    """

    def __init__(self, coord: Coordinator, timer_interval_secs: float | None,
                 target: Callable[..., Any] | None = None, args: Any = None,
                 kwargs: Any = None) -> None:
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' must be a Coordinator, got {coord!r}")
        super().__init__(daemon=True)
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        self._args = args or ()
        self._kwargs = kwargs or {}
        self._coord.register_thread(self)

    @staticmethod
    def loop(coord: Coordinator, timer_interval_secs: float | None,
             target: Callable[..., Any], args: Any = None, kwargs: Any = None
             ) -> "LooperThread":
        """Starts a LooperThread calling `target` and returns it."""
        looper = LooperThread(coord, timer_interval_secs, target, args, kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_at = time.monotonic()
                while not self._coord.wait_for_stop(max(0.0, next_at - time.monotonic())):
                    next_at += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Called once before the loop."""

    def stop_loop(self) -> None:
        """Called once after the loop."""

    def run_loop(self) -> None:
        if self._target is not None:
            self._target(*self._args, **self._kwargs)
