"""One task of a launched cluster as a process: its process group, output, exit.

Example:
    >>> tp = TaskProcess(Task("worker", 0), tail_lines=20, log=None)
    >>> tp.start(["python", "train.py"], dict(os.environ), queue.Queue())  # doctest: +SKIP
    >>> tp.signal_group(signal.SIGTERM)  # doctest: +SKIP
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections import deque
from typing import IO

from tensorweave.launch.progress import PROGRESS_PREFIX
from tensorweave.distributed.topology import Task

__all__ = ["TaskProcess", "describe_exit", "exit_code_of"]


def exit_code_of(returncode: int) -> int:
    """A shell-style exit code for a task's return code (negative = killed by signal)."""
    return 128 - returncode if returncode < 0 else returncode


def describe_exit(returncode: int) -> str:
    """"exit code 3" or "killed by SIGKILL" for a task's return code."""
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


class TaskProcess:
    """One running task: its process group, an output reader thread, its last lines."""

    def __init__(self, task: Task, tail_lines: int, log: IO[bytes] | None) -> None:
        self.task = task
        self.proc: subprocess.Popen | None = None
        self.tail: deque[str] = deque(maxlen=tail_lines)
        self._log = log
        self._reader: threading.Thread | None = None
        self.returncode: int | None = None
        self.reaped = False  # its exit has been reported (Launcher._reap)
        self.stopped_by_launcher = False

    def start(self, argv: list[str], env: dict[str, str], events: queue.Queue) -> None:
        """Starts the process in a new session (its own process group), so that
        signals meant for the launcher's terminal group do not reach it and
        `killpg` reaches everything it spawned."""
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self._reader = threading.Thread(target=self._read, args=(events,), daemon=True,
                                        name=f"tw-launch-{self.task.job}-{self.task.index}")
        self._reader.start()

    def _read(self, events: queue.Queue) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            if self._log is not None:
                self._log.write(raw)
                self._log.flush()
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if text.startswith(PROGRESS_PREFIX):
                events.put(("progress", self, text[len(PROGRESS_PREFIX):]))
            else:
                self.tail.append(text)
                events.put(("line", self, text))
        self.proc.stdout.close()

    def finish_reading(self, timeout: float = 2.0) -> None:
        """Waits (briefly) until all output written before exit has been read."""
        if self._reader is not None:
            self._reader.join(timeout)
        if self._log is not None and (self._reader is None or not self._reader.is_alive()):
            self._log.close()
            self._log = None

    def poll(self) -> int | None:
        """The return code once the process has exited (recorded once)."""
        if self.returncode is None and self.proc is not None:
            self.returncode = self.proc.poll()
        return self.returncode

    @property
    def running(self) -> bool:
        return self.proc is not None and self.poll() is None

    def signal_group(self, sig: int) -> None:
        """Sends `sig` to the task's whole process group (children included); a
        group that is already gone is fine."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
