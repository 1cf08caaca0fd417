"""The launcher's output and the stopping of its tasks (a part of `Launcher`).

`LauncherIO` holds what every part of the launcher uses to talk and to stop tasks: the
tasks' output echoed with a "[worker 1]" prefix and scanned for progress, the launcher's
own "tensorweave launch: ..." lines, a failed task's last lines, and stopping a group of
tasks (SIGTERM, SIGKILL after `kill_grace`). `Launcher` (launch/launcher.py) mixes it in.

Example:
    >>> class Launcher(LauncherIO): ...   # doctest: +SKIP
"""
from __future__ import annotations

import queue
import signal
import time
from typing import TYPE_CHECKING, TextIO

from tensorweave.distributed.topology import Task
from tensorweave.launch.process import TaskProcess, describe_exit
from tensorweave.launch.progress import ProgressDisplay, ProgressTracker

if TYPE_CHECKING:
    from tensorweave.launch.dashboard import Dashboard
    from tensorweave.distributed.topology import Topology
    from tensorweave.launch.options import LaunchOptions

__all__ = ["LauncherIO"]

_COLORS = ("36", "33", "35", "32", "34", "31")


class LauncherIO:
    """Output and stopping, over the launcher's state (set by `Launcher.__init__`)."""

    options: LaunchOptions
    topology: Topology
    tasks: list[TaskProcess]
    tracker: ProgressTracker
    display: ProgressDisplay
    out: TextIO
    err: TextIO
    _events: queue.Queue
    _signal: int | None
    _color: bool
    dashboard: Dashboard | None

    # ----- output -----------------------------------------------------------------

    def _pump(self, timeout: float) -> None:
        """Prints queued output lines and updates progress, waiting up to `timeout`
        for the first event."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                kind, tp, text = self._events.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                break
            if kind == "progress":
                self.tracker.feed_protocol(text)
                continue
            self.tracker.feed(text)
            self.display.clear()
            self.out.write(f"{self._prefix(tp.task)} {text}\n")
            self.out.flush()
            timeout, deadline = 0, time.monotonic()  # then drain without waiting
        if self.options.progress:
            self.display.refresh()

    def _prefix(self, task: Task) -> str:
        label = f"[{task.name}]"
        if not self._color:
            return label
        color = _COLORS[self.topology.tasks.index(task) % len(_COLORS)]
        return f"\x1b[{color}m{label}\x1b[0m"

    def _report_failure(self, tp: TaskProcess) -> None:
        assert tp.returncode is not None
        how = "was stopped by the launcher" if tp.stopped_by_launcher else "failed"
        lines = "\n".join(f"    {line}" for line in tp.tail) or "    (no output)"
        self._say(f"{tp.task.name} {how} ({describe_exit(tp.returncode)}); its last "
                  f"{len(tp.tail)} output lines:\n{lines}")

    def _say(self, message: str) -> None:
        self.display.clear()
        self.err.write(f"tensorweave launch: {message}\n")
        self.err.flush()
        dashboard = getattr(self, "dashboard", None)  # set by Launcher.__init__
        if dashboard is not None:  # restarts, failures, leavers: the page's events
            dashboard.collector.say(message)

    # ----- stopping -----------------------------------------------------------------

    def _stop(self, tasks: list[TaskProcess]) -> None:
        """SIGTERM to each task's group, SIGKILL to those still there after
        `kill_grace` (or at once on a second Ctrl-C); output keeps flowing meanwhile."""
        for tp in tasks:
            tp.stopped_by_launcher = True
            tp.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + self.options.kill_grace
        while any(tp.running for tp in tasks) and time.monotonic() < deadline:
            self._pump(0.1)
            if self._signal is not None:
                self._say("second signal: killing every task now")
                break
        for tp in tasks:
            if tp.running:
                self._say(f"{tp.task.name} did not stop after SIGTERM; sending SIGKILL")
                tp.signal_group(signal.SIGKILL)
        for tp in tasks:
            if tp.proc is not None:
                tp.proc.wait()
                tp.poll()
                tp.finish_reading()
        self._pump(0)

    def _kill_everything(self) -> None:
        """Last resort on any exit path: SIGKILL every task's group (leftover
        grandchildren included) and reap the processes."""
        for tp in self.tasks:
            tp.signal_group(signal.SIGKILL)
        for tp in self.tasks:
            if tp.proc is not None:
                tp.proc.wait()
                tp.finish_reading(0.5)
