"""Helpers of the elastic-job tests: the step lines fault_trainer logs, and a bounded
wait on a running launcher."""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Callable

STEP_LINE = re.compile(r"^step (\d+) worker:(\d+) .* t ([0-9.]+)$")


def logged_steps(logs: Path) -> list[tuple[float, int, int]]:
    """(time, global step, worker) of every step line the workers logged so far."""
    out = []
    for log in logs.glob("worker-*.log"):
        for line in log.read_text(errors="replace").splitlines():
            m = STEP_LINE.match(line)
            if m:
                out.append((float(m.group(3)), int(m.group(1)), int(m.group(2))))
    return sorted(out)


def wait_for(what: str, ok: Callable[[], bool], proc: subprocess.Popen,
             secs: float = 60.0) -> None:
    """Polls `ok` until true; fails if the launcher ends first or `secs` pass."""
    deadline = time.monotonic() + secs
    while not ok():
        assert proc.poll() is None, f"the launcher ended (code {proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} within {secs:g}s"
        time.sleep(0.1)
