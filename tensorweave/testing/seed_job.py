"""Runs a seed-style trainer as a real job: one process per task on loopback.

Each task gets the seed flags (--ps_hosts --worker_hosts --job_name
--task_index) plus any extra arguments. Used by the tests and benchmarks of
the seed programs; tasks can be killed and restarted to test recovery.

Example:
    >>> result = run_seed_job("examples/trainer.py", ps=1, workers=2,
    ...                       extra=["--train_steps=200"], timeout=120)
    >>> result.returncodes
    {'ps0': 0, 'worker0': 0, 'worker1': 0}
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from tensorweave.distributed.topology import Task, Topology
from tensorweave.testing.cluster import wait_listening


@dataclass
class JobResult:
    returncodes: dict[str, int | None] = field(default_factory=dict)
    exit_times: dict[str, float] = field(default_factory=dict)  # seconds after start
    outputs: dict[str, str] = field(default_factory=dict)


def _task(name: str) -> Task:
    """The task a process name such as "worker1" stands for."""
    job = name.rstrip("0123456789")
    return Task(job, int(name[len(job):]))


class SeedJob:
    """The processes of one job; output goes to files so it can be read while running."""

    def __init__(self, script: str, ps: int = 1, workers: int = 2,
                 extra: list[str] | None = None, env: dict[str, str] | None = None,
                 python: list[str] | None = None, cwd: str | None = None) -> None:
        self.topology = Topology.local(ps=ps, workers=workers)
        self.script, self.extra = script, list(extra or [])
        self.python = list(python or [sys.executable])  # e.g. [TF python, -m, bench.tf_compat]
        self.cwd = cwd
        self.tasks = [("ps", i) for i in range(ps)] + [("worker", i) for i in range(workers)]
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, str] = {}
        self._dir = tempfile.mkdtemp(prefix="tw-job-")
        self.start_time = time.monotonic()

    def start(self, per_task: dict[str, list[str]] | None = None) -> "SeedJob":
        for job, i in self.tasks:
            self.start_task(f"{job}{i}", (per_task or {}).get(f"{job}{i}", []))
        return self

    def start_task(self, name: str, extra: list[str] | None = None) -> None:
        path = os.path.join(self._dir, f"{name}-{len(self.logs)}.log")
        self.logs[name] = path
        out = open(path, "w")
        cmd = [*self.python, self.script, *self.topology.seed_flags(_task(name)),
               *self.extra, *(extra or [])]
        self.procs[name] = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                            env=self.env, cwd=self.cwd)
        out.close()

    def wait_listening(self, name: str, timeout: float = 60) -> None:
        """Waits until task `name` (e.g. "ps0") listens on its port (RuntimeError if it exits
        first, TimeoutError after `timeout` s)."""
        wait_listening(self.topology.address(_task(name)), self.procs[name], timeout,
                       self.logs[name])

    def output(self, name: str) -> str:
        with open(self.logs[name]) as f:
            return f.read()

    def kill(self, name: str) -> None:
        p = self.procs[name]
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait(10)

    def wait(self, timeout: float) -> JobResult:
        """Waits for every task to exit by itself; stragglers are killed (code None)."""
        result = JobResult()
        deadline = time.monotonic() + timeout
        for name, p in self.procs.items():
            try:
                p.wait(timeout=max(deadline - time.monotonic(), 0.1))
                result.returncodes[name] = p.returncode
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                result.returncodes[name] = None
            result.exit_times[name] = time.monotonic() - self.start_time
            result.outputs[name] = self.output(name)
        return result

    def stop(self) -> None:
        for name in self.procs:
            self.kill(name)


def run_seed_job(script: str, ps: int = 1, workers: int = 2, extra: list[str] | None = None,
                 per_task: dict[str, list[str]] | None = None, timeout: float = 300,
                 env: dict[str, str] | None = None) -> JobResult:
    """Starts every task, waits for all to exit by themselves, returns codes and outputs."""
    job = SeedJob(script, ps, workers, extra, env).start(per_task)
    try:
        return job.wait(timeout)
    finally:
        job.stop()
