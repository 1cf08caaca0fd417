"""A synchronous chief that waits on a missing replica says who, and gives up in time.

TF 1.x's SyncReplicasOptimizer chief, without backup workers, waited forever
and silently when a worker died: its queue runner needs `replicas_to_aggregate`
fresh gradients per step. Here each replica's hook times its own train steps.
When one has waited `warn_secs` (TENSORWEAVE_SYNC_REPLICA_WARN_SECS, 10 s), it
asks the accumulators which replicas (worker tasks) have sent no gradient for
the current global step and logs at WARNING, every `warn_secs`, e.g.

    Sync training is waiting at global step 18 (22 s): no gradient for it from
    /job:worker/replica:0/task:1 (its last was for step 17, 22 s ago)...

A worker restarted meanwhile (by Kubernetes or `tensorweave launch --restart`)
rejoins and training goes on. After `give_up_secs`
(TENSORWEAVE_SYNC_REPLICA_TIMEOUT_SECS, 300 s; 0 waits forever, logging) the chief
stops with `DeadlineExceededError` naming the missing replicas, instead of
hanging: it closes the token queue (the waiting workers end) and does not tell
the ps tasks the job is done, so a restarted chief finds them serving. With
backup workers (total_num_replicas > replicas_to_aggregate) a dead worker does
not stall the steps, so nothing is reported. Under a Supervisor
(no hooks) the chief's watch starts with its queue runner, reads the global step
instead of timing steps, and only logs.

Example:
    >>> os.environ["TENSORWEAVE_SYNC_REPLICA_TIMEOUT_SECS"] = "60"
    >>> hook = opt.make_session_run_hook(is_chief=True)   # watches; the chief gives up
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from tensorweave.base import knobs
from tensorweave.framework import errors

log = logging.getLogger("tensorweave.sync_replicas")

WARN_ENV = knobs.SYNC_REPLICA_WARN_SECS.name
TIMEOUT_ENV = knobs.SYNC_REPLICA_TIMEOUT_SECS.name
DEFAULT_WARN_SECS = knobs.SYNC_REPLICA_WARN_SECS.default
DEFAULT_TIMEOUT_SECS = knobs.SYNC_REPLICA_TIMEOUT_SECS.default


def missing_replicas(step: int, names: Any, last_steps: Any, idle: Any, departed: Any,
                     total: int) -> tuple[list[str], int]:
    """The replicas that have sent no gradient for global step `step`, described, and
    how many of `total` replicas never sent any."""
    missing = [f"{_text(n)} (its last was for step {int(s)}, {float(t):.0f} s ago)"
               for n, s, t, d in zip(names, last_steps, idle, departed)
               if not d and int(s) < step]
    return missing, max(0, total - len(list(names)))


def _text(name: Any) -> str:
    text = name.decode() if isinstance(name, bytes) else str(name)
    return text or "a replica whose ops name no task (see tf.device)"


class ReplicaWatch:
    """A replica's watch over its own sync train steps (see the module docstring).

    Args:
        status: the tensors of one accumulator's `replica_status()`.
        global_step: the global step tensor.
        replicas_to_aggregate, total_num_replicas: as given to the optimizer.
        may_give_up: stop training after give_up_secs (the chief); other replicas
            only log (they end when the chief closes the token queue).
    """

    def __init__(self, status: tuple[Any, ...], global_step: Any, replicas_to_aggregate: int,
                 total_num_replicas: int, may_give_up: bool = True) -> None:
        self._fetches = [global_step, *status]
        self._need, self._total = replicas_to_aggregate, total_num_replicas
        self.warn_secs = knobs.SYNC_REPLICA_WARN_SECS.get()
        self._chief_give_up = knobs.SYNC_REPLICA_TIMEOUT_SECS.get()
        self.give_up_secs = self._chief_give_up if may_give_up else 0.0
        self._tail = (f"the chief gives up after {self._chief_give_up:g} s ({TIMEOUT_ENV})"
                      if self._chief_give_up else f"the chief never gives up ({TIMEOUT_ENV}=0)")
        self._run_started: float | None = None
        self.gave_up: errors.DeadlineExceededError | None = None  # set when it gave up
        self._lock = threading.Lock()

    def step_started(self) -> None:
        with self._lock:
            self._run_started = time.monotonic()

    def step_ended(self) -> None:
        with self._lock:
            self._run_started = None

    def start(self, session: Any, coord: Any, poll_global_step: bool = False
              ) -> threading.Thread:
        """Starts the watching thread (registered with `coord`, stops with it).

        With `poll_global_step` (the Supervisor, which runs no hooks) a wait is the
        time since the global step last moved, read every warn_secs / 2, and the
        watch only logs: the program's own loop may pause on purpose."""
        if poll_global_step:
            self.give_up_secs = 0.0
            self._tail = "the Supervisor's chief does not give up"
        t = threading.Thread(target=self._loop, args=(session, coord, poll_global_step),
                             daemon=True, name="SyncReplicasWatch")
        coord.register_thread(t)
        t.start()
        return t

    def _waiting_since(self, session: Any, polled: list[Any]) -> float | None:
        if not polled:
            with self._lock:
                return self._run_started
        try:
            step = session.run(self._fetches[0])
        except (errors.OpError, RuntimeError):  # the ps is gone: recovery is elsewhere
            return None
        if step != polled[0]:
            polled[:] = [step, time.monotonic()]
        return polled[1]

    def _loop(self, session: Any, coord: Any, poll_global_step: bool) -> None:
        poll = self.warn_secs / 2 if poll_global_step else min(1.0, self.warn_secs / 2)
        polled: list[Any] = [None, time.monotonic()] if poll_global_step else []
        next_warn = self.warn_secs
        while not coord.wait_for_stop(poll):
            started = self._waiting_since(session, polled)
            waited = 0.0 if started is None else time.monotonic() - started
            if waited < next_warn:
                if waited < self.warn_secs:
                    next_warn = self.warn_secs
                continue
            next_warn = waited + self.warn_secs
            message = self._describe(session, waited)
            if message is None:
                continue
            if self.give_up_secs and waited >= self.give_up_secs:
                self.gave_up = errors.DeadlineExceededError(None, None, message + (
                    f" Gave up after {self.give_up_secs:g} s. Restart the missing worker "
                    "(it rejoins), give the optimizer backup workers (total_num_replicas > "
                    f"replicas_to_aggregate), or set {TIMEOUT_ENV} to wait longer (0: "
                    "forever)."))
                # Stopping closes the token queue: the waiting steps end everywhere.
                coord.request_stop(self.gave_up)
                return
            log.warning("%s Still waiting (a restarted worker rejoins); %s.", message,
                        self._tail)

    def _describe(self, session: Any, waited: float) -> str | None:
        try:
            step, names, last_steps, idle, departed = session.run(self._fetches)
        except (errors.OpError, RuntimeError) as e:  # the ps itself is gone: not ours
            log.debug("sync replica watch: status unavailable: %s", e)
            return None
        missing, never = missing_replicas(int(step), names, last_steps, idle, departed,
                                          self._total)
        if never:
            missing.append(f"{never} replica{'s' if never > 1 else ''} that never sent a "
                           "gradient")
        if not missing:
            return None
        return (f"Sync training is waiting at global step {int(step)} ({waited:.0f} s): no "
                f"gradient for it from {', '.join(missing)}; it needs "
                f"{self._need} of {self._total} replicas.")
