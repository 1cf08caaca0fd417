"""A task's metrics: what `GET /metrics` on its port answers (docs/metrics.md).

Counted as they happen (hot paths keep their label's child):

- steps and step time per session, on the master that runs them (`MasterSession.run`);
- per peer task: tensor bytes sent and received, call latency per method
  (`metered_peer.MeteredPeer`; tensors pushed here: `delivered`).

Read at scrape time (`watch`), so they cost nothing between scrapes: open sessions,
the task port's and same-host socket's connections, queue sizes, accumulator depths,
the sync barrier (how long a take waits and for which replicas), per-variable update
counts and bytes (the update gate's, `runtime/update_gate.py`), and the process's CPU,
memory and threads (`runtime/process_metrics.py`).

Example:
    >>> m = TaskMetrics("/job:ps/replica:0/task:0")
    >>> m.sent.labels("/job:worker/replica:0/task:0").inc(4096)
    >>> "tensorweave_peer_sent_bytes_total" in m.render()
    True
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, TypeVar

from tensorweave.distributed.transport import reactor
from tensorweave.kernels.accumulator_resource import AccumulatorBase
from tensorweave.kernels.queue_resource import QueueResource
from tensorweave.runtime import process_metrics
from tensorweave.runtime.metrics import CounterChild, Family, HistogramChild, Registry
from tensorweave.runtime.rendezvous import send_task
from tensorweave.runtime.update_gate import update_gate

__all__ = ["SessionSteps", "TaskMetrics"]
R = TypeVar("R")


class TaskMetrics:
    """One task's registry, with the families its hot paths update.

    Args:
        task: the task's name ("/job:ps/replica:0/task:0"), in `tensorweave_task_info`.
    """

    def __init__(self, task: str) -> None:
        self.task = task
        r = self.registry = Registry()
        self.all_steps = r.counter("tensorweave_steps_total", "Steps this task's master "
                                   "ran, every session's (closed ones too).").labels()
        self.steps = r.counter("tensorweave_session_steps_total",
                               "Steps (Session.run calls) this task's master ran, per session.",
                               ("session",))
        self.step_seconds = r.histogram("tensorweave_session_step_seconds",
                                        "Time of a step on this task's master, per session.",
                                        ("session",))
        self.step_errors = r.counter("tensorweave_session_step_errors_total",
                                     "Steps that failed, per session.", ("session",))
        self.sent = r.counter("tensorweave_peer_sent_bytes_total",
                              "Tensor bytes this task sent to another task.", ("peer",))
        self.received = r.counter("tensorweave_peer_received_bytes_total",
                                  "Tensor bytes this task received from another task.",
                                  ("peer",))
        self.rpc_seconds = r.histogram("tensorweave_peer_rpc_seconds",
                                       "Latency of this task's calls to another task, per "
                                       "method.", ("peer", "method"))
        self._sessions: dict[str, SessionSteps] = {}

    def render(self) -> str:
        """Every family in Prometheus' text format."""
        return self.registry.render()

    def delivered(self, items: Iterable[tuple[str, Any]]) -> None:
        """Counts tensors another task pushed here, by the task their keys name."""
        per: dict[str, int] = {}
        for key, value in items:
            task = send_task(key)
            per[task] = per.get(task, 0) + getattr(value, "nbytes", 0)
        for task, n in per.items():
            self.received.labels(task).inc(n)

    def session(self, handle: str) -> "SessionSteps":
        """Session `handle`'s step counters (`steps.timed(run, ...)` runs a step)."""
        steps = self._sessions.get(handle)
        if steps is None:
            steps = self._sessions[handle] = SessionSteps(
                self.steps.labels(handle), self.step_seconds.labels(handle),
                self.step_errors.labels(handle), self.all_steps)
        return steps

    def session_closed(self, handle: str) -> None:
        """Drops a closed session's lines (sessions come and go; their labels must not
        pile up in every scrape)."""
        self._sessions.pop(handle, None)
        for family in (self.steps, self.step_seconds, self.step_errors):
            family.remove(handle)

    def watch(self, worker: Any, master: Any) -> None:
        """Adds the scrape-time families of this task's `worker` and `master` services."""
        self.registry.add_collector(lambda: _task_families(self.task, worker, master))
        self.registry.add_collector(lambda: _resource_families(worker))
        self.registry.add_collector(process_metrics.collect)


class SessionSteps:
    """One session's step count, step time and failed steps."""

    __slots__ = ("_steps", "_seconds", "_errors", "_all")

    def __init__(self, steps: CounterChild, seconds: HistogramChild,
                 errors: CounterChild, all_steps: CounterChild) -> None:
        self._steps, self._seconds, self._errors = steps, seconds, errors
        self._all = all_steps

    def timed(self, run: Callable[..., R], *args: Any) -> R:
        """`run(*args)` (a step), timed and counted (a failure as a failed step)."""
        start = time.perf_counter()
        try:
            out = run(*args)
        except BaseException:
            self._errors.inc()
            raise
        self._seconds.observe(time.perf_counter() - start)
        self._steps.inc()
        self._all.inc()
        return out


def _task_families(task: str, worker: Any, master: Any) -> list[Family]:
    job = task.split("/")[1].partition(":")[2] if task.startswith("/job:") else task
    info = Family("tensorweave_task_info", "gauge", "This task: its name, job and "
                  "incarnation (changes when the task restarts).").add(
        1, {"task": task, "job": job, "incarnation": str(worker.incarnation)})
    sessions = Family("tensorweave_open_sessions", "gauge", "Sessions open on this task: "
                      "its master's (client sessions) and its worker's (any master's).")
    sessions.add(len(master.session_handles()), {"service": "master"})
    sessions.add(len(worker.open_sessions()), {"service": "worker"})
    conns = Family("tensorweave_connections", "gauge", "Connections open on this task's "
                   "listeners (tcp: the task port; unix: the same-host socket); half_open: "
                   "not yet through their first bytes or handshake.")
    for counts in reactor.counts_of(task):
        conns.add(counts.open, {"listener": counts.kind, "state": "open"})
        conns.add(counts.half_open, {"listener": counts.kind, "state": "half_open"})
    return [info, sessions, conns]


def _resource_families(worker: Any) -> list[Family]:
    queues = Family("tensorweave_queue_size", "gauge", "Elements in a queue of this task.")
    depth = Family("tensorweave_accumulator_depth", "gauge", "Fresh gradients an accumulator "
                   "of this task holds for its current global step.")
    waited = Family("tensorweave_sync_barrier_wait_seconds", "summary", "How long each "
                    "take_grad of an accumulator (the sync barrier) waited for gradients.")
    waiting = Family("tensorweave_sync_barrier_waiting_seconds", "gauge", "How long the take "
                     "waiting on an accumulator has waited so far (0: none waits).")
    waits_for = Family("tensorweave_sync_barrier_waiting_for", "gauge", "1 for each replica "
                       "(worker task) a waiting take has no gradient from for this step.")
    for _container, name, res in worker.device.resource_mgr.resources():
        if isinstance(res, QueueResource):
            queues.add(res.size(), {"queue": res.name or name})
        elif isinstance(res, AccumulatorBase):
            label = {"accumulator": res.name or name}
            depth.add(res.num_accumulated(), label)
            served, seconds = res.barrier_waits
            waited.add(seconds, label, "_sum").add(served, label, "_count")
            secs, replicas = res.barrier()
            waiting.add(secs or 0.0, label)
            for replica in replicas:
                waits_for.add(1, {**label, "replica": replica})
    counts = sorted(update_gate(worker.device.resource_mgr).update_counts().items())
    updates = Family("tensorweave_variable_updates_total", "counter", "Updates (assign, "
                     "scatter, optimizer apply ops) of a variable or table of this task.")
    update_bytes = Family("tensorweave_variable_update_bytes_total", "counter", "Bytes of "
                          "the variables those updates changed (a dense update: the whole "
                          "variable).")
    for name, (n, nbytes) in counts:
        updates.add(n, {"variable": name})
        update_bytes.add(nbytes, {"variable": name})
    return [queues, depth, waited, waiting, waits_for, updates, update_bytes]
