"""`tf.keras.utils.Progbar`: the text progress bar Keras prints for steps or samples.

Example:
    >>> bar = tf.keras.utils.Progbar(100)
    >>> for step in range(1, 101):
    ...     bar.update(step, values=[("loss", 0.5)])
    100/100 [==============================] - 1s 10ms/step - loss: 0.5000
"""
from __future__ import annotations

import sys
import time
from typing import Any, Iterable


def _duration(seconds: float) -> str:
    if seconds > 3600:
        return "%d:%02d:%02d" % (seconds // 3600, (seconds % 3600) // 60, seconds % 60)
    if seconds > 60:
        return "%d:%02d" % (seconds // 60, seconds % 60)
    return "%ds" % seconds


def _number(value: float) -> str:
    return " %.4f" % value if abs(value) > 1e-3 else " %.4e" % value


class Progbar:
    """A progress bar over `target` steps (None: unknown), with running metric means.

    `verbose=1` redraws one line (a new line per update when stdout is not a
    terminal); `verbose=2` prints one line when the target is reached; 0 is silent.
    Metrics named in `stateful_metrics` are shown as given, the others as their mean
    over the steps so far, weighted by the steps each update covers.

    Example:
        >>> bar = tf.keras.utils.Progbar(10, stateful_metrics=["acc"])
        >>> bar.add(5, values=[("loss", 1.0), ("acc", 0.9)])
    """

    def __init__(self, target: int | None, width: int = 30, verbose: int = 1,
                 interval: float = 0.05, stateful_metrics: Iterable[str] | None = None,
                 unit_name: str = "step") -> None:
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._dynamic_display = bool(getattr(sys.stdout, "isatty", lambda: False)())
        self._total_width = 0
        self._seen_so_far = 0
        self._values: dict[str, Any] = {}
        self._values_order: list[str] = []
        self._start = time.time()
        self._last_update = 0.0

    def _record(self, current: int, values: Iterable[tuple[str, Any]]) -> None:
        steps = current - self._seen_so_far
        for name, value in values:
            if name not in self._values_order:
                self._values_order.append(name)
            if name in self.stateful_metrics:
                self._values[name] = value
            else:
                total, count = self._values.get(name, (0.0, 0))
                self._values[name] = (total + float(value) * steps, count + steps)
        self._seen_so_far = current

    def _metrics(self) -> str:
        out = ""
        for name in self._values_order:
            value = self._values[name]
            if isinstance(value, tuple):
                out += f" - {name}:" + _number(value[0] / max(1, value[1]))
            else:
                out += f" - {name}: {value}"
        return out

    def _bar(self, current: int) -> str:
        if self.target is None:
            return "%7d/Unknown" % current
        digits = len(str(self.target))
        done = int(self.width * min(current / self.target, 1.0)) if self.target else self.width
        arrow = ("=" * (done - 1) + (">" if current < self.target else "=")) if done else ""
        return f"{current:{digits}d}/{self.target} [{arrow}{'.' * (self.width - done)}]"

    def _timing(self, current: int, now: float) -> str:
        per_unit = (now - self._start) / current if current else 0.0
        if self.target is not None and current < self.target:
            return " - ETA: " + _duration(per_unit * (self.target - current))
        info = " - %.0fs" % (now - self._start)
        if per_unit >= 1 or per_unit == 0:
            return info + " %.0fs/%s" % (per_unit, self.unit_name)
        if per_unit >= 1e-3:
            return info + " %.0fms/%s" % (per_unit * 1e3, self.unit_name)
        return info + " %.0fus/%s" % (per_unit * 1e6, self.unit_name)

    def update(self, current: int, values: Iterable[tuple[str, Any]] | None = None) -> None:
        """Moves the bar to step `current`; `values` are `(name, value of this update)`."""
        self._record(current, values or ())
        now = time.time()
        finished = self.target is not None and current >= self.target
        if self.verbose == 1:
            if now - self._last_update < self.interval and not finished \
                    and self.target is not None:
                return
            previous = self._total_width
            sys.stdout.write("\b" * previous + "\r" if self._dynamic_display else "\n")
            line = self._bar(current) + self._timing(current, now) + self._metrics()
            self._total_width = len(line)
            line += " " * max(0, previous - len(line))
            sys.stdout.write(line + ("\n" if finished else ""))
            sys.stdout.flush()
        elif self.verbose == 2 and finished:
            digits = len(str(self.target))
            sys.stdout.write(f"{current:{digits}d}/{self.target}"
                             + self._timing(current, now) + self._metrics() + "\n")
            sys.stdout.flush()
        self._last_update = now

    def add(self, n: int, values: Iterable[tuple[str, Any]] | None = None) -> None:
        """Moves the bar `n` steps on."""
        self.update(self._seen_so_far + n, values)


__all__ = ["Progbar"]
