"""`tensorweave launch`: a whole cluster as local processes, one per task.

Each task runs COMMAND in its own process group (so stopping a task stops
whatever it started) with TF_CONFIG set for it and, with `pass_flags`, the seed
flags appended. Its output is echoed line by line as "[worker 1] ...", kept in
DIR/<job>-<index>.log with `logdir`, and scanned for training progress.

When it ends, the exit code is judged as cluster managers (Kubeflow's TFJob)
judge a job (launch/verdict.py): by the tasks that decide it, the chief if there
is one, else every worker (and an evaluator, which the job waits for):
* every deciding task exited 0 -> 0, whatever the ps tasks (and, with a chief,
  the other workers) did after; a ps still running `ps_grace` seconds after the
  last training task ended is stopped, and each ps's fate (exited by itself,
  exited with code n, stopped after the grace) is reported, never turned into
  a failure;
* a task failed before the job was decided -> the others are stopped (unless
  `keep_going`), the failure is reported with the task's last lines, and the
  exit code is that task's (128 + signal number when a signal killed it); with
  `keep_going` the exit code is the first failed deciding task's, else 0;
* SIGINT -> every task is stopped (SIGTERM, SIGKILL after `kill_grace`) -> 130;
  SIGTERM -> 143; `timeout` passed -> 124.
With `restart` (see launch/restart.py), a task that ends while the job runs is
started again after a back-off instead (same TF_CONFIG and port); only when its
restarts are used up is its end judged as above.
With `max_workers` (see launch/elastic.py) the ClusterSpec has that many worker slots,
`workers` of them start, `tensorweave scale` starts and stops the others, and a worker
other than the chief that ends has left the job rather than failed it.
No task process is left running in any case.

Example:
    >>> code = Launcher(["python", "examples/trainer.py", "--train_steps=300"],
    ...                 LaunchOptions(ps=1, workers=2, pass_flags=True)).run()
"""
from __future__ import annotations

import os
import queue
import signal
import sys
import time
from typing import TextIO

from tensorweave.base import knobs
from tensorweave.launch.dashboard import Dashboard
from tensorweave.launch.elastic import ElasticWorkers
from tensorweave.launch.launcher_io import LauncherIO
from tensorweave.launch.options import LaunchOptions as LaunchOptions  # its home
from tensorweave.launch.process import TaskProcess, describe_exit
from tensorweave.launch.progress import (
    PROGRESS_PREFIX,
    ProgressDisplay,
    ProgressTracker,
)
from tensorweave.launch.restart import PendingRestart, RestartBook
from tensorweave.launch.verdict import JobVerdict
from tensorweave.distributed.topology import BARE_SERVER_ARGS, PS_STANDBY, Task, Topology

__all__ = ["LaunchOptions", "Launcher"]

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_TIMEOUT = 124
EXIT_NOT_FOUND = 127



class Launcher(LauncherIO):
    """Runs `command` once per task of a local cluster and supervises the tasks.

    Args:
        command: the program and its arguments, e.g. ["python", "trainer.py"].
        options: counts and behaviour.
        out: where the tasks' prefixed output goes (stdout by default).
        err: where the launcher's own messages and the progress line go (stderr).

    Raises:
        ValueError: If `command` is empty or the options are inconsistent.
    """

    def __init__(self, command: list[str], options: LaunchOptions,
                 out: TextIO | None = None, err: TextIO | None = None) -> None:
        if not command:
            raise ValueError("No command to launch; put it after '--', e.g. "
                             "tensorweave launch --workers 2 -- python train.py")
        if options.chief and options.pass_flags:
            raise ValueError("--chief and --pass-flags do not mix: the seed flags have no "
                             "chief job (worker 0 is the chief). Drop one of them.")
        self.command = list(command)
        self.options = options
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        if options.evaluator and options.pass_flags:
            raise ValueError("--evaluator and --pass-flags do not mix: the seed flags have no "
                             "evaluator task (it learns its role from TF_CONFIG). Drop one.")
        slots = options.workers if options.max_workers is None else options.max_workers
        elastic = options.max_workers is not None
        if not options.workers <= slots <= max(1024, options.workers):
            raise ValueError(f"--max-workers {slots} must be at least --workers "
                             f"{options.workers} (the workers started first), and at most "
                             "1024.")
        self.topology = Topology.local(options.ps, slots, chief=options.chief,
                                       evaluator=options.evaluator,
                                       ps_standby=options.ps_standby)
        options.restart.check_roles({t.job for t in self.topology.tasks})
        self.restarts = RestartBook(options.restart)
        self.tasks: list[TaskProcess] = []
        self.tracker = ProgressTracker()
        self.display = ProgressDisplay(self.tracker, self.err, options.progress_interval)
        self._events: queue.Queue = queue.Queue()
        self._signal: int | None = None
        self.verdict = JobVerdict(elastic=elastic)
        self.elastic: ElasticWorkers | None = None  # made when the job starts
        self.dashboard: Dashboard | None = None  # with --dashboard, made when the job starts
        self._color = self.out.isatty() and os.environ.get("NO_COLOR") is None

    # ----- public ---------------------------------------------------------------

    def run(self) -> int:
        """Starts every task, supervises them until the job ends, returns the exit code.

        Blocks until every task has exited or been stopped.
        """
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._open_dashboard()
            code = self._start_all()
            if code is None:
                code = self._supervise()
            return code
        finally:
            if self.elastic is not None:
                self.elastic.close()
            if self.dashboard is not None:
                self.dashboard.close()
            self._kill_everything()
            if self.options.progress:
                self.display.finish()
            for s, handler in previous.items():
                signal.signal(s, handler)

    # ----- starting -----------------------------------------------------------------

    def _open_dashboard(self) -> None:
        """--dashboard: serves the job's page (launch/dashboard/) before any task starts,
        so that every launcher message after this is an event on it."""
        if self.options.dashboard is None:
            return
        from tensorweave.launch.dashboard.entry import launch_dashboard
        self.dashboard = launch_dashboard(self, self.options.dashboard,
                                          self.options.dashboard_host)
        self._say(f"dashboard at {self.dashboard.url}")

    def _start_all(self) -> int | None:
        if self.options.logdir:
            os.makedirs(self.options.logdir, exist_ok=True)
        if self.options.max_workers is not None:
            self.elastic = ElasticWorkers(self, self.options.workers, self.options.max_workers)
        reserved = self.elastic.reserved if self.elastic else (lambda task: False)
        self._say("cluster " + ", ".join(
            f"{t.name} at {self.topology.address(t) or '(no server)'}"
            + (" (empty slot)" if reserved(t) else "") for t in self.topology.tasks))
        if self.elastic:
            self._say(f"elastic job {self.elastic.control.job_id}: {self.options.workers} of "
                      f"{self.options.max_workers} worker slots in use; change it with "
                      f"`tensorweave scale {self.elastic.job} --workers N`")
        for task in self.topology.tasks:
            if reserved(task):
                continue
            try:
                self.tasks.append(self._start_task(task))
            except OSError as e:
                self._say(f"cannot start {task.name}: {self.command[0]!r}: {e.strerror or e}. "
                          "Check that COMMAND (after '--') is a program on PATH or a path to "
                          "one.")
                return EXIT_NOT_FOUND
        return None

    def _start_task(self, task: Task, append: bool = False) -> TaskProcess:
        """Starts one task's process; OSError when COMMAND cannot be run."""
        log = None
        if self.options.logdir:
            # The TaskProcess owns and closes it when its output ends; a restart appends.
            path = os.path.join(self.options.logdir, f"{task.job}-{task.index}.log")
            log = open(path, "ab" if append else "wb")  # noqa: SIM115
        tp = TaskProcess(task, self.options.tail_lines, log)
        try:
            tp.start(self._argv(task), self._env(task), self._events)
        except OSError:
            if log is not None:
                log.close()
            raise
        return tp

    def _argv(self, task: Task) -> list[str]:
        if task.job == PS_STANDBY:  # serves replicas only: the bare server, TF_CONFIG's task
            return [sys.executable, *BARE_SERVER_ARGS]
        return self.command + (self.topology.seed_flags(task) if self.options.pass_flags
                               else [])

    def _env(self, task: Task) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"TF_CONFIG": self.topology.tf_config_json(task),
                    # Python tasks would otherwise buffer their output into late bursts.
                    "PYTHONUNBUFFERED": "1",
                    **knobs.PROGRESS_PREFIX.setting(PROGRESS_PREFIX)})
        env.update(self.topology.standby_env())
        if self.elastic is not None:
            env.update(self.elastic.env())
        if self.options.task_env is not None:
            env.update(self.options.task_env(task))
        return env

    # ----- supervising ---------------------------------------------------------------

    def _decided(self) -> bool:
        return self.verdict.decided(self.tasks)

    def _supervise(self) -> int:
        start = time.monotonic()
        training_done_at: float | None = None
        while True:
            self._pump(0.2)
            if self._signal is not None:
                return self._interrupted()
            if self.elastic is not None:
                self.elastic.tick(time.monotonic())
            if self.options.timeout and time.monotonic() - start > self.options.timeout:
                self._say(f"timed out after {self.options.timeout:g}s; stopping every task")
                self._stop(self.tasks)
                return EXIT_TIMEOUT
            self._reap()
            if self.verdict.first_failure is not None and not self.options.keep_going:
                return self._fail_fast()
            for pending in self.restarts.due(time.monotonic()):
                self._restart(pending)
            training = [tp for tp in self.tasks if tp.task.is_training]
            if any(tp.running for tp in training) or self.restarts.waiting(
                    {tp.task.name for tp in training}):
                self._set_status(training)
                continue
            training_done_at = training_done_at or time.monotonic()
            for pending in self.restarts.cancel():
                self._not_restarted(pending)
            self._stop_idle_standby()
            serving = [tp for tp in self.tasks if tp.running]
            if not serving:
                self._reap()  # those that ended since this round's reap are reported too
                return self._finished()
            if time.monotonic() - training_done_at > self.options.ps_grace:
                return self._ps_overstayed(serving)
            self.display.status = f"waiting for {len(serving)} ps to exit"

    def _stop_idle_standby(self) -> None:
        """Training over and no ps left: ps_standby tasks the chief could not tell (its
        ClusterSpec from --ps_hosts names none) are stopped, not left to --ps-grace."""
        standby = [tp for tp in self.tasks if tp.task.job == PS_STANDBY and tp.running]
        if not standby or any(tp.running for tp in self.tasks if tp.task.job == "ps"):
            return
        self._say(", ".join(tp.task.name for tp in standby) + ": the ps tasks have ended; "
                  "stopping it")
        self._stop(standby)
        for tp in standby:
            tp.reaped = True  # its end is this, not a fate for _reap to judge
            self.verdict.fates[tp.task.name] = "stopped once the ps tasks had ended"

    def _reap(self) -> None:
        """Notices tasks that have exited and reports them. A failure counts (stops the
        job, sets its exit code) only while the job is undecided; after every deciding
        task succeeded, what the others do is reported and nothing more."""
        # Poll every task first and look at the training tasks first, so that workers
        # which ended together with a ps decide the job before the ps is judged.
        # `reaped`, not the return code, says what is reported: `running` records the
        # code of a task that exits between two reaps, and it must be reported still.
        ended = [tp for tp in self.tasks if not tp.reaped and tp.poll() is not None]
        for tp in sorted(ended, key=lambda tp: not tp.task.is_training):
            tp.reaped = True
            tp.finish_reading()
            self._pump(0)  # print what it wrote before the report about it
            if self._schedule_restart(tp):
                continue
            if self.elastic is not None and self.elastic.on_exit(tp):
                continue
            decided = self._decided() and tp not in self.verdict.deciding(self.tasks)
            if tp.returncode == 0:
                self.verdict.fates[tp.task.name] = "exited by itself (exit code 0)"
                self._say(f"{tp.task.name} finished")
                continue
            self._report_failure(tp)
            self.verdict.fates[tp.task.name] = describe_exit(tp.returncode or 1)
            if tp.task.job == PS_STANDBY:  # a lost copy, not lost training
                self._say(f"{tp.task.name} failed: its ps tasks are not replicated now (a ps "
                          "lost now restarts from the last checkpoint); training goes on")
                continue
            if decided:
                self._say(f"{tp.task.name} ended after the job had succeeded; reported, not "
                          "counted as a failure")
                continue
            self.verdict.record_failure(tp, self.tasks)

    def _schedule_restart(self, tp: TaskProcess) -> bool:
        """Asks the restart policy about a task that ended while the job runs; True when
        a restart is scheduled (the exit is then reported, not judged)."""
        if (self._decided() or tp.stopped_by_launcher or tp.returncode is None
                or (self.verdict.first_failure is not None and not self.options.keep_going)):
            return False  # the job has ended (or is failing): nothing to restart for
        message = self.restarts.on_exit(tp.task.name, tp.task.job, tp.returncode,
                                        time.monotonic())
        if message is None:
            return False
        scheduled = tp.task.name in self.restarts.pending
        if scheduled and tp.returncode != 0:
            self._report_failure(tp)
        self._say(message)
        return scheduled

    def _restart(self, pending: PendingRestart) -> None:
        """Starts a task again once its back-off has passed: same command, TF_CONFIG
        and port; its log (with --logdir) continues."""
        i, old = next((i, tp) for i, tp in enumerate(self.tasks)
                      if tp.task.name == pending.name)
        ending = pending.clean and any(tp.returncode == 0 for tp in self.tasks
                                       if tp.task.is_training and tp is not old)
        if self._decided() or ending:
            self._not_restarted(pending)
            return
        old.signal_group(signal.SIGKILL)  # its leftovers could hold the task's port
        try:
            self.tasks[i] = self._start_task(old.task, append=True)
        except OSError as e:
            self._say(f"cannot restart {pending.name}: {e.strerror or e}")
            self.verdict.first_failure = self.verdict.first_failure or EXIT_NOT_FOUND
            return
        self.restarts.started(pending)
        if old.task.job == "ps":
            self.tracker.reset()  # the global step goes back to the last checkpoint's
        proc = self.tasks[i].proc
        pid = proc.pid if proc is not None else "?"
        self._say(f"restarted {pending.name} (pid {pid}; it had ended: {pending.reason}), "
                  f"restart {pending.number} of {self.options.restart.max_restarts}")

    def _not_restarted(self, pending: PendingRestart) -> None:
        self._say(f"{pending.name} not restarted: the job has ended")
        self.verdict.fates[pending.name] = f"{pending.reason}, not restarted as the job had ended"

    def _fail_fast(self) -> int:
        failure = self.verdict.first_failure
        assert failure is not None
        others = [tp for tp in self.tasks if tp.running]
        if others:
            self._say("stopping the other tasks (" + ", ".join(tp.task.name for tp in others)
                      + "); --keep-going would let them run on")
            self._stop(others)
        self._say(f"exit code {failure}")
        return failure

    def _finished(self) -> int:
        self.display.status = "ended"
        if self.options.progress:
            self.display.finish()
        return self._outcome()

    def _outcome(self) -> int:
        code, message = self.verdict.outcome(self.tasks)
        self._say(message)
        return code

    def _ps_overstayed(self, serving: list[TaskProcess]) -> int:
        names = ", ".join(tp.task.name for tp in serving)
        self._say(f"{names} still running {self.options.ps_grace:g}s after the last worker "
                  "ended; stopping it. (A ps exits by itself when the chief's "
                  "MonitoredTrainingSession or Supervisor ends the job; a program with a "
                  "plain tf.Session never tells it, which is fine. Raise --ps-grace if "
                  "yours needs longer.) This does not change the exit code.")
        self._stop(serving)
        self.verdict.record_overstay(serving, self.options.ps_grace)
        self.display.status = "ended"
        return self._outcome()

    def _interrupted(self) -> int:
        sig = self._signal or signal.SIGINT
        self._say(f"{signal.Signals(sig).name} received; stopping every task "
                  f"(SIGKILL after {self.options.kill_grace:g}s; press Ctrl-C again to kill now)")
        self._signal = None
        self._stop([tp for tp in self.tasks if tp.running])
        return EXIT_INTERRUPTED if sig == signal.SIGINT else EXIT_TERMINATED

    def _on_signal(self, signum: int, frame: object) -> None:
        self._signal = signum

    def _set_status(self, training: list[TaskProcess]) -> None:
        running = sum(tp.running for tp in training)
        restarts = self.restarts.summary()
        self.display.status = (f"{running}/{len(training)} workers running"
                               + (f", {restarts}" if restarts else ""))
