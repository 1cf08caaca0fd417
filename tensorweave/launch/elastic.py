"""`tensorweave launch --max-workers M`: workers that join and leave a running job.

The job's ClusterSpec has M worker slots from the start, each on a port claimed for it
(and kept claimed while the slot is empty), so every task, the ps tasks included, knows
every address a worker may ever have: a worker that joins is one more slot started with
the TF_CONFIG every task got, and nothing that runs has to change its ClusterSpec. Only
`--workers N` slots start; `tensorweave scale JOB --workers N` (launch/control.py)
starts the lowest empty slots or stops (SIGTERM, SIGKILL after --kill-grace) the
highest running ones. Worker 0 stays: it is the seed programs' chief (with `--chief`,
every worker may go).

Which slots are members now is written to a file named to every task by
TENSORWEAVE_MEMBERS_FILE (distributed/membership.py): a ps closes the sessions of a
worker that left at once and does not wait, at the job's end, for slots never started.

A worker other than the chief that ends has left the job, however it ends (stopped by
`scale`, killed, failed, or finished): training goes on, the launcher says which worker
left and how, and the job's exit code is the chief's (launch/verdict.py). A --restart
policy still applies first: a worker it restarts has not left.

Example:
    $ tensorweave launch --ps 1 --workers 1 --max-workers 3 --logdir /tmp/run -- \\
          python examples/trainer.py
    $ tensorweave scale /tmp/run --workers 3
"""
from __future__ import annotations

import queue
import signal
import time
from typing import Any, Protocol

from tensorweave.base import knobs
from tensorweave.distributed.membership import ELASTIC_JOB, write_members
from tensorweave.distributed.topology import Task, Topology, hold_ports
from tensorweave.launch.control import ControlServer
from tensorweave.launch.options import LaunchOptions
from tensorweave.launch.process import TaskProcess, describe_exit
from tensorweave.launch.restart import RestartBook
from tensorweave.launch.verdict import JobVerdict

__all__ = ["ElasticWorkers"]

_HOLD_EVERY_SECS = 30.0  # well inside the port claims' 120 s


class Launcher(Protocol):
    """What of `launch.launcher.Launcher` this uses (the launcher imports this module)."""

    options: LaunchOptions
    topology: Topology
    tasks: list[TaskProcess]
    restarts: RestartBook
    verdict: JobVerdict

    def _start_task(self, task: Task, append: bool = False) -> TaskProcess: ...

    def _decided(self) -> bool: ...

    def _say(self, message: str) -> None: ...

    def _report_failure(self, tp: TaskProcess) -> None: ...


class ElasticWorkers:
    """The worker slots of an elastic launch: which run, scale requests, who left.

    Args:
        launcher: the launcher whose tasks these are (its start and its verdict).
        initial: the workers started with the job (--workers).
        max_workers: the worker slots of the ClusterSpec (--max-workers).
    """

    def __init__(self, launcher: Launcher, initial: int, max_workers: int) -> None:
        self.launcher = launcher
        self.max_workers = max_workers
        self.leader_fixed = "chief" not in launcher.topology.cluster  # worker 0 is chief
        self.control = ControlServer(launcher.options.logdir)
        self.members_path = self.control.file("members.json")
        self.members = set(range(initial))
        self._removing: dict[str, float] = {}  # task name -> when SIGTERM was sent
        self._held_at = 0.0
        write_members(self.members_path, self.members)

    @property
    def job(self) -> str:
        """How `tensorweave scale` names this job: its --logdir, else its id."""
        return self.launcher.options.logdir or self.control.job_id

    def env(self) -> dict[str, str]:
        """What every task's environment gets: where the members file is."""
        return knobs.MEMBERS_FILE.setting(self.members_path)

    def reserved(self, task: Task) -> bool:
        """Whether `task` is a worker slot that is not running (not started yet)."""
        return task.job == ELASTIC_JOB and task.index not in self.members

    def is_member_worker(self, task: Task) -> bool:
        """Whether `task` is a worker that may leave without ending the job."""
        return task.job == ELASTIC_JOB and not (self.leader_fixed and task.index == 0)

    def close(self) -> None:
        self.control.close()

    # ----- the supervising loop's round ----------------------------------------------

    def tick(self, now: float) -> None:
        """Answers control requests, escalates stops, keeps empty slots' ports claimed."""
        while True:
            try:
                req = self.control.requests.get_nowait()
            except queue.Empty:
                break
            try:
                reply = self._handle(req.payload)
            except ValueError as e:
                reply = {"ok": False, "error": str(e)}
            req.answer(reply)
        for tp in self.launcher.tasks:
            sent = self._removing.get(tp.task.name)
            if sent is not None and tp.running and now - sent > self.launcher.options.kill_grace:
                self.launcher._say(f"{tp.task.name} did not stop after SIGTERM; sending SIGKILL")
                tp.signal_group(signal.SIGKILL)
                self._removing[tp.task.name] = float("inf")
        if now - self._held_at > _HOLD_EVERY_SECS:
            self._held_at = now
            hold_ports([int(self.launcher.topology.address(t).rsplit(":", 1)[1])
                        for t in self.launcher.topology.tasks if self.reserved(t)])

    def on_exit(self, tp: TaskProcess) -> bool:
        """Records the end of a worker that may leave (True: handled, no failure)."""
        if not self.is_member_worker(tp.task):
            return False
        assert tp.returncode is not None
        name, how = tp.task.name, describe_exit(tp.returncode)
        self.members.discard(tp.task.index)
        write_members(self.members_path, self.members)
        live = len(self.members)
        if self._removing.pop(name, None) is not None:
            how = f"stopped by tensorweave scale: {how}"
        elif tp.returncode == 0:
            self.launcher._say(f"{name} finished")
            return True
        else:
            self.launcher._report_failure(tp)
        self.launcher.verdict.left[name] = f"left the job ({how})"
        self.launcher._say(f"{name} left the job ({how}); training goes on with {live} "
                           f"worker(s) (not counted as a failure: --max-workers)")
        return True

    # ----- requests -----------------------------------------------------------------

    def _handle(self, payload: dict[str, Any]) -> dict[str, Any]:
        op = payload.get("op")
        if op == "status":
            return self._status(f"{len(self._active())} of {self.max_workers} worker slots "
                                "in use")
        if op != "scale":
            raise ValueError(f"unknown control request {op!r}; expected 'scale' or 'status'")
        return self._scale(payload.get("workers"))

    def _status(self, message: str) -> dict[str, Any]:
        pids = {tp.task.index: tp.proc.pid for tp in self.launcher.tasks
                if tp.task.job == ELASTIC_JOB and tp.running and tp.proc is not None}
        return {"ok": True, "message": message, "workers": sorted(self._active()),
                "max_workers": self.max_workers, "pids": {str(i): p for i, p in pids.items()},
                "job": self.job}

    def _scale(self, n: Any) -> dict[str, Any]:
        lowest = 1 if self.leader_fixed else 0
        if isinstance(n, bool) or not isinstance(n, int) or not lowest <= n <= self.max_workers:
            raise ValueError(f"--workers {n!r} is out of range: this job takes {lowest} to "
                             f"{self.max_workers} workers (its --max-workers)"
                             + ("; worker 0 is the chief and stays" if lowest else ""))
        if self.launcher._decided():
            raise ValueError("the job has ended (its chief finished); nothing to scale")
        now = len(self._active())
        if n > now:
            free = [i for i in range(self.max_workers) if i not in self.members][:n - now]
            for index in free:
                self._start(Task(ELASTIC_JOB, index))
            message = "started " + ", ".join(f"worker {i}" for i in free)
        elif n < now:
            gone = sorted(self._active(), reverse=True)[:now - n]
            for index in gone:
                self._stop(Task(ELASTIC_JOB, index))
            message = "stopping " + ", ".join(f"worker {i}" for i in gone)
        else:
            message = "nothing to do"
        self.launcher._say(f"scale to {n} worker(s): {message}")
        return self._status(f"{message}; {n} of {self.max_workers} worker slots in use")

    def _active(self) -> set[int]:
        """The members not being stopped."""
        return {i for i in self.members if f"{ELASTIC_JOB} {i}" not in self._removing}

    def _start(self, task: Task) -> None:
        """Starts an empty slot (a member before it runs, so a ps never takes it for
        gone); its log, with --logdir, continues an earlier one's."""
        self.members.add(task.index)
        write_members(self.members_path, self.members)
        left = self.launcher.verdict.left
        if task.name in left and not left[task.name].endswith("then rejoined"):
            left[task.name] += ", then rejoined"
        tasks = self.launcher.tasks
        try:
            started = self.launcher._start_task(task, append=True)
        except OSError as e:
            self.members.discard(task.index)
            write_members(self.members_path, self.members)
            raise ValueError(f"cannot start {task.name}: {e.strerror or e}") from None
        old = [i for i, tp in enumerate(tasks) if tp.task == task]
        if old:
            tasks[old[0]] = started
        else:
            tasks.append(started)
        proc = started.proc
        self.launcher._say(f"{task.name} joined the job at "
                           f"{self.launcher.topology.address(task)} (pid "
                           f"{proc.pid if proc else '?'})")

    def _stop(self, task: Task) -> None:
        """SIGTERM to a running slot (SIGKILL after --kill-grace: `tick`); a pending
        restart of it is dropped. It stays a member until its process has ended."""
        self.launcher.restarts.pending.pop(task.name, None)
        for tp in self.launcher.tasks:
            if tp.task == task and tp.running:
                tp.stopped_by_launcher = True
                self._removing[task.name] = time.monotonic()
                tp.signal_group(signal.SIGTERM)
                return
        self.members.discard(task.index)  # waiting for a restart: nothing runs
        write_members(self.members_path, self.members)
