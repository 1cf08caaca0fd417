"""Training progress read from the tasks' output, shown as one live line.

The launcher reads every line a task prints. Two sources feed the progress:

* free text, matched tolerantly: ``global step[: ]+(\\d+)`` and
  ``loss[: ]+(number)`` (seed 002's trainer prints "global step 40, loss 0.12");
* an explicit protocol for programs that want exact numbers: the launcher sets
  ``TENSORWEAVE_PROGRESS_PREFIX`` in each task's environment; a line that starts
  with it and continues with a JSON object (``{"global_step": 40, "loss": 0.12}``)
  is taken as progress and not echoed. `report_progress` writes such a line and
  does nothing when the program was not started by the launcher.

Example:
    >>> tracker = ProgressTracker()
    >>> tracker.feed("worker 0: local step 20, global step 32, loss 0.0586")
    True
    >>> tracker.global_step, tracker.loss
    (32, 0.0586)
"""
from __future__ import annotations

import json
import re
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import TextIO

from tensorweave.base import knobs

__all__ = ["PROGRESS_ENV", "PROGRESS_PREFIX", "ProgressDisplay", "ProgressTracker",
           "report_progress"]

PROGRESS_ENV = knobs.PROGRESS_PREFIX.name
PROGRESS_PREFIX = "@tensorweave-progress "

# "global step 120", "global_step: 120", and the LoggingTensorHook line that TF 1.x's
# Estimator logs: "loss = 0.31, step = 120 (0.9 sec)".
_STEP = re.compile(r"(?:global[ _]step|, step)[: =]+(\d+)", re.IGNORECASE)
_LOSS = re.compile(r"\bloss[: =]+([0-9.eE+-]+|nan|inf)", re.IGNORECASE)
# The steps/s shown is measured over this many recent seconds (smooths bursts).
_RATE_WINDOW_S = 10.0


def report_progress(global_step: int, loss: float | None = None) -> None:
    """Tells `tensorweave launch` the training progress of this task, if it runs under it.

    Args:
        global_step: the global step after the last training step.
        loss: the last loss, if known.

    Example:
        >>> report_progress(120, loss=0.31)  # prints nothing outside the launcher
    """
    prefix = knobs.PROGRESS_PREFIX.get()
    if not prefix:
        return
    payload: dict[str, float] = {"global_step": int(global_step)}
    if loss is not None:
        payload["loss"] = float(loss)
    print(prefix + json.dumps(payload), flush=True)


def _number(text: str) -> float | None:
    try:
        return float(text.rstrip(".,;+-eE") or "x")
    except ValueError:
        return None


class ProgressTracker:
    """Keeps the latest global step and loss and measures steps per second."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.monotonic
        self.global_step: int | None = None
        self.loss: float | None = None
        self._history: deque[tuple[float, int]] = deque()
        self.started = self._clock()

    def feed(self, line: str) -> bool:
        """Reads one output line; True when it carried progress."""
        step_m, loss_m = _STEP.search(line), _LOSS.search(line)
        step = int(step_m.group(1)) if step_m else None
        loss = _number(loss_m.group(1)) if loss_m else None
        return self.update(step, loss)

    def feed_protocol(self, payload: str) -> bool:
        """Reads the JSON part of a protocol line; False if it is not valid."""
        try:
            data = json.loads(payload)
            step = data.get("global_step")
            loss = data.get("loss")
            return self.update(None if step is None else int(step),
                               None if loss is None else float(loss))
        except (ValueError, TypeError, AttributeError):
            return False

    def update(self, step: int | None, loss: float | None) -> bool:
        """Records a report; the global step shown never goes backwards (workers
        report at different moments)."""
        if step is None and loss is None:
            return False
        if loss is not None:
            self.loss = loss
        if step is not None and (self.global_step is None or step > self.global_step):
            self.global_step = step
            now = self._clock()
            self._history.append((now, step))
            while len(self._history) > 2 and now - self._history[1][0] > _RATE_WINDOW_S:
                self._history.popleft()
        return True

    def reset(self) -> None:
        """Forgets the step (and rate) shown: after a ps restart the global step goes
        back to the last checkpoint's, which `update` would otherwise ignore."""
        self.global_step = None
        self._history.clear()

    @property
    def steps_per_sec(self) -> float | None:
        """Global steps per second over the recent window; None before two reports."""
        if len(self._history) < 2:
            return None
        (t0, s0), (t1, s1) = self._history[0], self._history[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 else None

    def summary(self) -> str | None:
        """One line such as "global step 120 | 45.3 steps/s | loss 0.0586"; None
        when nothing has been reported yet."""
        if self.global_step is None and self.loss is None:
            return None
        parts = []
        if self.global_step is not None:
            parts.append(f"global step {self.global_step}")
        rate = self.steps_per_sec
        if rate is not None:
            parts.append(f"{rate:.1f} steps/s")
        if self.loss is not None:
            parts.append(f"loss {self.loss:.4g}")
        return " | ".join(parts)


class ProgressDisplay:
    """Shows the progress line: redrawn in place on a terminal, else printed every
    `interval` seconds as a plain line (logs stay readable).

    Args:
        tracker: where the numbers come from.
        stream: where the progress line goes (stderr by default).
        interval: seconds between plain lines when `stream` is not a terminal.
        tty: force terminal (True) or plain (False) mode; None asks the stream.
    """

    def __init__(self, tracker: ProgressTracker, stream: TextIO | None = None,
                 interval: float = 5.0, tty: bool | None = None) -> None:
        self.tracker = tracker
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval = interval
        self._shown = ""
        self._last_plain = time.monotonic()
        self._finished = False
        self.status = ""  # e.g. "2/2 workers running", appended to the line

    def _text(self) -> str | None:
        summary = self.tracker.summary()
        if summary is None:
            return None
        # The elapsed time keeps the terminal line visibly alive between reports.
        elapsed = f"{time.monotonic() - self.tracker.started:.0f}s"
        return f"[progress] {summary} | " + (f"{self.status}, " if self.status else "") + elapsed

    def clear(self) -> None:
        """Erases the in-place line before other output is written (terminal only)."""
        if self.tty and self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = ""

    def refresh(self, force: bool = False) -> None:
        """Redraws the line (terminal) or prints it if `interval` has passed (plain)."""
        text = self._text()
        if text is None:
            return
        if self.tty:
            if text != self._shown:
                width = 200
                self.stream.write("\r\x1b[K" + text[:width])
                self.stream.flush()
                self._shown = text
        elif force or time.monotonic() - self._last_plain >= self.interval:
            self._last_plain = time.monotonic()
            self.stream.write(text + "\n")
            self.stream.flush()

    def finish(self) -> None:
        """Leaves the last progress as a permanent line (once)."""
        text = None if self._finished else self._text()
        self._finished = True
        self.clear()
        if text is not None:
            self.stream.write(text + "\n")
            self.stream.flush()
