"""Fault injection for `LocalCluster` jobs: kill -9 a task at a step or after a delay.

A `Fault` says which task dies and when: once the job's progress (the largest
step its task processes have printed) reaches `at_step`, or `after_secs` after
the injector starts; the seeded constructors draw that step or delay from a
`random.Random(seed)`, so a failing case runs again the same way. A restarted
task comes back on the same port after `restart_after_secs`, as an
orchestrator (Kubernetes, `tensorweave launch --restart`) would restart it.

Example:
    >>> fault = Fault.at_random_step("ps", 0, seed=7, low=10, high=20)
    >>> with LocalCluster(spec=spec, programs=programs) as lc:
    ...     with FaultInjector(lc, [fault]) as injector:
    ...         codes = lc.wait(120)
    ...     injector.records[0].killed_at_step
    14
"""
from __future__ import annotations

import os
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tensorweave.testing.cluster import LocalCluster

STEP_PATTERN = r"^step (\d+)"
# Lines giving the job's step after a kill: steps, and sessions (re)created at a step.
RESUME_PATTERN = r"^(?:session at )?step (\d+)"


def _read_from(path: str, offset: int) -> str:
    with open(path, errors="replace") as f:
        f.seek(offset)
        return f.read()


@dataclass(frozen=True)
class Fault:
    """One kill -9 of task (job, index), and whether it is restarted.

    Attributes:
        job, index: the task to kill.
        at_step: kill once the job's progress reaches this step, or
        after_secs: kill this long after the injector starts.
        restart_after_secs: start the task again (same port) this long after the
            kill; None leaves it dead.
    """

    job: str
    index: int
    at_step: int | None = None
    after_secs: float | None = None
    restart_after_secs: float | None = 0.2

    def __post_init__(self) -> None:
        if (self.at_step is None) == (self.after_secs is None):
            raise ValueError(f"Fault for /job:{self.job}/task:{self.index} needs exactly one "
                             f"of at_step and after_secs, got {self.at_step!r} and "
                             f"{self.after_secs!r}.")

    @classmethod
    def at_random_step(cls, job: str, index: int, seed: int, low: int, high: int,
                       restart_after_secs: float | None = 0.2) -> "Fault":
        """Kill at a step drawn uniformly from [low, high] by random.Random(seed)."""
        return cls(job, index, at_step=random.Random(seed).randint(low, high),
                   restart_after_secs=restart_after_secs)

    @classmethod
    def after_random_delay(cls, job: str, index: int, seed: int, low_secs: float,
                           high_secs: float, restart_after_secs: float | None = 0.2
                           ) -> "Fault":
        """Kill after a delay drawn uniformly from [low_secs, high_secs] (seeded)."""
        return cls(job, index, after_secs=random.Random(seed).uniform(low_secs, high_secs),
                   restart_after_secs=restart_after_secs)


@dataclass
class FaultRecord:
    """What the injector did for one fault (times are time.monotonic())."""

    fault: Fault
    killed_at_step: int | None = None  # the job's progress when the kill was sent
    killed_at: float | None = None
    restarted_at: float | None = None
    error: BaseException | None = None
    log_offsets: dict[str, int] = field(default_factory=dict)  # how far each log was

    def steps_lost(self, cluster: LocalCluster, pattern: str = RESUME_PATTERN) -> int | None:
        """How far the job's step went back after this kill: the step at the kill minus
        the smallest step any task printed after it (0 when it never went back)."""
        if self.killed_at_step is None:
            return None
        after = [int(m) for paths in cluster.logs.values() for path in paths
                 for m in re.findall(pattern, _read_from(path, self.log_offsets.get(path, 0)),
                                     re.MULTILINE)]
        return max(0, self.killed_at_step - min(after)) if after else None


class StepWatch:
    """The largest step printed by any process of a cluster, read incrementally."""

    def __init__(self, cluster: LocalCluster, pattern: str = STEP_PATTERN) -> None:
        self._cluster = cluster
        self._re = re.compile(pattern.encode(), re.MULTILINE)
        self._offsets: dict[str, int] = {}
        self.step = -1

    def poll(self) -> int:
        """Reads what the logs gained since the last poll; returns the largest step."""
        for paths in list(self._cluster.logs.values()):
            for path in list(paths):
                self._read(path)
        return self.step

    def _read(self, path: str) -> None:
        start = self._offsets.get(path, 0)
        try:
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1  # only whole lines; the rest is read next time
        for m in self._re.finditer(data[:end]):
            self.step = max(self.step, int(m.group(1)))
        self._offsets[path] = start + end


class FaultInjector:
    """Runs `faults` against a cluster's task processes from a background thread.

    Args:
        cluster: a LocalCluster, started or about to be (start the injector first
            to watch the job from its first step; `after_secs` counts from here).
        faults: what to kill, when, and whether to restart it.
        step_pattern: a regex whose group 1 is a step, matched against each line
            the task processes print (the job's progress).
        deadline_secs: a fault not triggered by then is recorded with an error.
    """

    def __init__(self, cluster: LocalCluster, faults: list[Fault],
                 step_pattern: str = STEP_PATTERN, deadline_secs: float = 120.0) -> None:
        self.cluster = cluster
        self.records = [FaultRecord(f) for f in faults]
        self.watch = StepWatch(cluster, step_pattern)
        self._deadline_secs = deadline_secs
        self._stop = threading.Event()
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-injector", daemon=True)

    def start(self) -> "FaultInjector":
        self._start = time.monotonic()
        self._thread.start()
        return self

    def wait_injected(self, timeout: float | None = None) -> bool:
        """Waits until every fault was injected (and restarted) or given up on."""
        return self._finished.wait(timeout)

    def join(self, timeout: float | None = None) -> list[FaultRecord]:
        """Stops watching (faults not yet due get an error) and returns the records."""
        self._stop.set()
        self._thread.join(timeout)
        return self.records

    def __enter__(self) -> "FaultInjector":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.join(30)

    def _run(self) -> None:
        try:
            self._inject_all()
        finally:
            self._finished.set()

    def _inject_all(self) -> None:
        pending = list(self.records)
        while pending:
            now = time.monotonic()
            step = self.watch.poll()
            for rec in [r for r in pending if self._due(r.fault, step, now)]:
                pending.remove(rec)
                self._inject(rec, step)
            if now - self._start > self._deadline_secs or self._stop.is_set():
                for rec in pending:
                    rec.error = TimeoutError(
                        f"Fault {rec.fault} never came due: the job reached step {step} in "
                        f"{now - self._start:.0f}s.")
                return
            self._stop.wait(0.05)  # the next step to check; join() stops it at once

    def _due(self, fault: Fault, step: int, now: float) -> bool:
        if fault.at_step is not None:
            return step >= fault.at_step
        return now - self._start >= (fault.after_secs or 0.0)

    def _inject(self, rec: FaultRecord, step: int) -> None:
        f = rec.fault
        try:
            proc = self.cluster.procs.get((f.job, f.index))
            if proc is None or proc.poll() is not None:
                raise RuntimeError(f"/job:{f.job}/task:{f.index} was not running at step "
                                   f"{step}: nothing to kill.")
            self.cluster.kill(f.job, f.index)
            rec.killed_at, rec.killed_at_step = time.monotonic(), step
            rec.log_offsets = {path: os.path.getsize(path)
                               for paths in list(self.cluster.logs.values()) for path in paths}
            if f.restart_after_secs is not None:
                time.sleep(f.restart_after_secs)
                self.cluster.start_task(f.job, f.index)
                rec.restarted_at = time.monotonic()
        except Exception as e:  # recorded for the test to assert on, never lost
            rec.error = e


def run_job(cluster: LocalCluster, faults: list[Fault], timeout: float = 150.0,
            step_pattern: str = STEP_PATTERN) -> tuple[dict[tuple[str, int], int | None],
                                                       list[FaultRecord]]:
    """Starts `cluster`'s job with `faults` watched from its first step, waits for every
    task to exit (`LocalCluster.wait(timeout)`), stops the cluster; returns the exit
    codes and the injector's records (a fault never injected has its `error` set).

    Example:
        >>> codes, records = run_job(lc, [Fault("ps", 0, at_step=20)])
        >>> codes[("ps", 0)], records[0].steps_lost(lc)
        (0, 3)
    """
    injector = FaultInjector(cluster, faults, step_pattern=step_pattern).start()
    try:
        cluster.start()
        injector.wait_injected(120)
        codes = cluster.wait(timeout)
    finally:
        injector.join(10)
        cluster.stop()
    return codes, injector.records


__all__ = ["Fault", "FaultInjector", "FaultRecord", "RESUME_PATTERN", "STEP_PATTERN",
           "StepWatch", "run_job"]
