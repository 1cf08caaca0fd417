"""Health checks of a step's remote parts: a silent task is named, then given up on.

While a step waits on another task's part, the master asks that task's worker for
its status every `interval` seconds (`get_status`: a task answers it from its I/O
threads even while its part of the step runs or blocks). A task that has answered
none for a sixth of `TENSORWEAVE_PEER_SILENCE_SECS` is named in WARNING lines (how
long it has been silent), and one silent for the whole of it fails its part with
UnavailableError naming it, which aborts the step: UnavailableError is what
MonitoredTrainingSession recovers from. A frozen process (SIGSTOP, a GC pause, a
stalled VM) or a partition that sends no reset is noticed this way on every
transport, without waiting for TCP's retransmission back-off, and without a deadline.

A task that answers its health checks is never given up on: a step blocked for long
on a queue or a sync-replicas barrier of a live task waits as TF's does.

Example (what `master_step.run_parts` does):
    >>> watch = StepWatch(step_id, remote_parts, fail=lambda part, error: ...)
    >>> ...  # each part's answer:
    >>> watch.done(part.task)
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from tensorweave.base import knobs
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.framework import errors
from tensorweave.runtime.threads import TIMERS

log = logging.getLogger("tensorweave.master")

# Health checks go out at most this often per silent task (a step shorter than this
# sends none).
MAX_INTERVAL_S = 1.0


def silence_secs() -> float:
    """How long a step waits on a task that answers no health check
    (TENSORWEAVE_PEER_SILENCE_SECS, default 30)."""
    return knobs.PEER_SILENCE_SECS.get()


class StepWatch:
    """Health checks of the remote parts (`Part`s) of one step until each has answered.

    Args:
        step_id: the step, for the messages.
        parts: the remote parts to watch (their `task` and `worker` peer).
        fail: `fail(part, error)` ends a part that stayed silent too long (called at
            most once per part, on the timer thread).
        silence_s: the bound (default: `silence_secs()`).
    """

    def __init__(self, step_id: int, parts: list[Any],
                 fail: Callable[[Any, BaseException], None],
                 silence_s: float | None = None) -> None:
        self.step_id = step_id
        self.silence_s = silence_secs() if silence_s is None else silence_s
        self.interval = min(MAX_INTERVAL_S, self.silence_s / 10)
        self.warn_after = self.silence_s / 6
        self._fail = fail
        self._lock = threading.Lock()
        now = time.monotonic()
        self._pending = {p.task: p for p in parts}
        self._heard = {p.task: now for p in parts}  # last answer (or the step's start)
        self._warned = {p.task: now for p in parts}
        self._asking: set[str] = set()
        if self._pending:
            TIMERS.add(self.interval, self._tick)

    def done(self, task: str) -> None:
        """`task`'s part answered (or failed): it is no longer watched."""
        with self._lock:
            self._pending.pop(task, None)

    def stop(self) -> None:
        """The step ended: no more health checks."""
        with self._lock:
            self._pending.clear()

    def _tick(self) -> None:
        now = time.monotonic()
        silent: list[Any] = []
        ask: list[Any] = []
        with self._lock:
            if not self._pending:
                return
            for task, p in list(self._pending.items()):
                quiet = now - self._heard[task]
                if quiet >= self.silence_s:
                    del self._pending[task]
                    silent.append((p, quiet))
                    continue
                if quiet >= self.warn_after and now - self._warned[task] >= self.warn_after:
                    self._warned[task] = now
                    log.warning("Step %x is waiting for task %s, which has answered no health "
                                "check for %.0fs; the step fails with UnavailableError after "
                                "%gs of silence (%s).", self.step_id, task, quiet,
                                self.silence_s, knobs.PEER_SILENCE_SECS.name)
                if task not in self._asking:
                    self._asking.add(task)
                    ask.append(p)
            more = bool(self._pending)
        for p, quiet in silent:
            self._fail(p, errors.UnavailableError(None, None, (
                f"Task {p.task} answered no health check for {quiet:.0f}s while step "
                f"{self.step_id:x} waited for its part: it is frozen, overloaded or cut off "
                f"from this task. Gave up after {self.silence_s:g}s of silence "
                f"({knobs.PEER_SILENCE_SECS.name}).")))
        for p in ask:
            self._ask(p)
        if more:
            TIMERS.add(self.interval, self._tick)

    def _ask(self, p: Any) -> None:
        def answered(resp: Any, tensors: Any, error: BaseException | None) -> None:
            with self._lock:
                self._asking.discard(p.task)
                if error is None:
                    self._heard[p.task] = time.monotonic()
        try:
            p.worker.call_async("get_status", pb.GetStatusRequest(), [], answered,
                                self.silence_s)
        except Exception as e:  # noqa: BLE001 - a check that cannot go out is unanswered
            answered(None, [], e)
