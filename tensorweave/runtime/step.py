"""Per-step state shared by every kernel of one `run`: id, deadline, cancellation."""
from __future__ import annotations

import itertools
import threading
import time
from typing import Any, Callable, NamedTuple

from tensorweave.framework import errors

_step_ids = itertools.count(1)


class SessionRef(NamedTuple):
    """The session whose step a task runs a part of, as the worker service knows it.

    Attributes:
        handle: the session's handle ("worker.1.s3.i9f2c").
        task: the task whose master opened it ("/job:worker/replica:0/task:1"), or None.
        incarnation: that task's process incarnation, or None when the handle does not
            say (a restarted task's sessions have another one).
    """

    handle: str
    task: str | None
    incarnation: int | None


class StepState:
    """One step's id, options, deadline and cancellation callbacks.

    Async kernels register a cancel callback so that a closed session or a
    failed sibling partition wakes them instead of leaving them blocked.
    """

    def __init__(self, step_id: int | None = None, timeout_s: float | None = None,
                 rendezvous: Any = None, options: Any = None, stats: Any = None) -> None:
        self.step_id = next(_step_ids) if step_id is None else step_id
        self.deadline = None if not timeout_s else time.monotonic() + timeout_s
        self.rendezvous = rendezvous
        self.options = options
        # A StepStatsCollector when the step is traced (RunOptions.FULL_TRACE), else None.
        self.stats = stats
        # A list the runtime appends each partition's GraphDef to when the client asked
        # for RunOptions.output_partition_graphs, else None.
        self.partition_graphs: list[Any] | None = None
        self._lock = threading.Lock()
        self._cancelled: BaseException | None = None
        self._callbacks: dict[int, Callable[[BaseException], None]] = {}
        self._next_token = itertools.count()
        self.function_runner: Any = None  # set by the executor for functional ops
        self._end_callbacks: list[Callable[[], None]] = []
        self.held_gates: set[Any] = set()  # update gates this step holds (update_gate.py)
        # Whose step this is, where a worker service runs a part of it (None in a local
        # session): kernels that serve several sessions tell them apart by it (a
        # WorkQueue's slices in flight, kernels/work_queue_resource.py).
        self.session: SessionRef | None = None

    @property
    def cancelled(self) -> BaseException | None:
        return self._cancelled

    def register_cancel(self, fn: Callable[[BaseException], None]) -> int | None:
        """Registers `fn(error)`; returns a token, or None (and calls fn) if already cancelled."""
        with self._lock:
            if self._cancelled is None:
                token = next(self._next_token)
                self._callbacks[token] = fn
                return token
            err = self._cancelled
        fn(err)
        return None

    def deregister_cancel(self, token: int | None) -> None:
        if token is not None:
            with self._lock:
                self._callbacks.pop(token, None)

    def cancel(self, error: BaseException | None = None) -> None:
        """Cancels the step; every registered callback gets `error` once."""
        with self._lock:
            if self._cancelled is not None:
                return
            self._cancelled = error or errors.CancelledError(None, None, "Step was cancelled")
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for fn in callbacks:
            fn(self._cancelled)

    def add_end_callback(self, fn: Callable[[], None]) -> None:
        """Runs `fn` once when this step's part on this task ends (see `end`)."""
        with self._lock:
            self._end_callbacks.append(fn)

    def end(self) -> None:
        """Marks the step finished here: releases what its kernels held (update gates)."""
        with self._lock:
            callbacks, self._end_callbacks = self._end_callbacks, []
        for fn in callbacks:
            fn()

    def flush(self) -> None:
        """Delivers the Sends this step's rendezvous holds (see StepRendezvous.flush)."""
        flush = getattr(self.rendezvous, "flush", None)
        if flush is not None:
            flush()

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()
