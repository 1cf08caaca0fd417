"""Metrics a task exports: counters, gauges and histograms with labels, and their text.

One `Registry` per task (a test's in-process cluster holds several tasks in one
process, each answering `GET /metrics` with its own numbers; there is no global
registry). Hot paths keep the child of their labels (`family.labels(...)`) and
update it: an increment is one uncontended lock and an add (~0.2 us), an
observation a `bisect` more. Whatever is cheaper to read than to count (queue
depths, open sessions, RSS) is a *collector*: a function the registry calls at
scrape time that returns `Sample`-filled `Family` objects.

`render()` writes Prometheus' text exposition format 0.0.4: `# HELP` and `# TYPE`
lines, then `name{label="value"} number` lines; histograms as cumulative
`_bucket{le=...}` lines ending with `le="+Inf"`, then `_sum` and `_count`.

Why not `prometheus_client`: its default registry is process-global (tasks sharing a
process would mix their numbers, or need a registry each threaded through anyway),
its `labels()` takes a lock and builds a tuple per call, and the text format is a
page of code. This module is that page; nothing else here depends on a library.

Example:
    >>> reg = Registry()
    >>> steps = reg.counter("tensorweave_steps_total", "Steps run.", ("session",))
    >>> steps.labels("s1").inc()
    >>> "tensorweave_steps_total{session=\\"s1\\"} 1" in reg.render()
    True
"""
from __future__ import annotations

import bisect
import math
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

__all__ = ["CONTENT_TYPE", "Counter", "Family", "Gauge", "Histogram", "LATENCY_BUCKETS",
           "Registry", "Sample", "escape_label", "format_value"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds: 50 us (a same-host call) to 60 s (a sync step waiting for a straggler).
LATENCY_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                   0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
Labels = tuple[tuple[str, str], ...]


@dataclass
class Sample:
    """One line: `suffix` after the family's name ("_bucket", "_sum" or ""), its labels
    as (name, value) pairs, and its value."""

    suffix: str
    labels: Labels
    value: float


@dataclass
class Family:
    """A metric family as rendered: name, kind ("counter", "gauge", "histogram",
    "summary"), help text and samples. Collectors return these."""

    name: str
    kind: str
    help: str
    samples: list[Sample] = field(default_factory=list)

    def add(self, value: float, labels: dict[str, str] | None = None,
            suffix: str = "") -> "Family":
        """Appends a sample (labels in the order given); returns self."""
        self.samples.append(Sample(suffix, tuple((labels or {}).items()), float(value)))
        return self


class _Child:
    __slots__ = ("value", "_lock")

    def __init__(self, lock: threading.Lock) -> None:
        self.value = 0.0
        self._lock = lock


class CounterChild(_Child):
    """One label set's counter."""

    __slots__ = ()

    def inc(self, amount: float = 1.0) -> None:
        """Adds `amount` (>= 0: a counter only rises)."""
        with self._lock:
            self.value += amount


class GaugeChild(_Child):
    """One label set's gauge."""

    __slots__ = ()

    def set(self, value: float) -> None:
        self.value = float(value)  # one store: atomic under the GIL

    def inc(self, amount: float = 1.0) -> None:
        with self._lock:
            self.value += amount


class HistogramChild:
    """One label set's histogram: counts per bucket (not cumulative until rendered)."""

    __slots__ = ("bounds", "counts", "sum", "_lock")

    def __init__(self, bounds: Sequence[float], lock: threading.Lock) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one: above every bound (+Inf)
        self.sum = 0.0
        self._lock = lock

    def observe(self, value: float) -> None:
        i = bisect.bisect_left(self.bounds, value)  # le: a value on a bound is in it
        with self._lock:
            self.counts[i] += 1
            self.sum += value


class _Metric:
    kind = ""

    def __init__(self, name: str, help: str, labelnames: Sequence[str]) -> None:
        self.name, self.help, self.labelnames = name, help, tuple(labelnames)
        self._lock = threading.Lock()
        self._children: dict[tuple[str, ...], object] = {}

    def _new(self) -> object:
        raise NotImplementedError

    def _child(self, values: tuple[str, ...]) -> object:
        child = self._children.get(values)
        if child is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"Metric {self.name} has labels {list(self.labelnames)}; "
                                 f"got {len(values)} values {list(values)}.")
            with self._lock:
                child = self._children.setdefault(values, self._new())
        return child

    def remove(self, *values: str) -> None:
        """Drops a label set (a closed session's): its lines leave the scrape."""
        with self._lock:
            self._children.pop(tuple(values), None)

    def _items(self) -> list[tuple[Labels, object]]:
        with self._lock:
            items = list(self._children.items())
        return [(tuple(zip(self.labelnames, k)), c) for k, c in items]

    def collect(self) -> Family:
        raise NotImplementedError


class Counter(_Metric):
    """A value that only rises (`name` ends in `_total`)."""

    kind = "counter"

    def _new(self) -> CounterChild:
        return CounterChild(self._lock)

    def labels(self, *values: str) -> CounterChild:
        """The child for these label values (created at first use); keep it on hot paths."""
        return self._child(values)  # type: ignore[return-value]

    def collect(self) -> Family:
        fam = Family(self.name, self.kind, self.help)
        fam.samples = [Sample("", labels, c.value) for labels, c in self._items()]  # type: ignore[attr-defined]
        return fam


class Gauge(Counter):
    """A value that goes up and down."""

    kind = "gauge"

    def _new(self) -> GaugeChild:  # type: ignore[override]
        return GaugeChild(self._lock)

    def labels(self, *values: str) -> GaugeChild:  # type: ignore[override]
        return self._child(values)  # type: ignore[return-value]


class Histogram(_Metric):
    """Observations counted into buckets (upper bounds, seconds for latencies)."""

    kind = "histogram"

    def __init__(self, name: str, help: str, labelnames: Sequence[str],
                 buckets: Sequence[float] = LATENCY_BUCKETS) -> None:
        super().__init__(name, help, labelnames)
        self.buckets = tuple(sorted(buckets))

    def _new(self) -> HistogramChild:
        return HistogramChild(self.buckets, self._lock)

    def labels(self, *values: str) -> HistogramChild:
        return self._child(values)  # type: ignore[return-value]

    def collect(self) -> Family:
        fam = Family(self.name, self.kind, self.help)
        for labels, child in self._items():
            with self._lock:
                counts, total = list(child.counts), child.sum  # type: ignore[attr-defined]
            running = 0
            for bound, n in zip(self.buckets + (math.inf,), counts):
                running += n
                fam.samples.append(Sample("_bucket", labels + (("le", format_value(bound)),),
                                          running))
            fam.samples.append(Sample("_sum", labels, total))
            fam.samples.append(Sample("_count", labels, running))
        return fam


class Registry:
    """A task's metric families and scrape-time collectors; `render()` writes them all.

    Example:
        >>> reg = Registry()
        >>> reg.add_collector(lambda: [Family("up", "gauge", "Serving.").add(1)])
        >>> reg.render().splitlines()[-1]
        'up 1'
    """

    def __init__(self) -> None:
        self._metrics: dict[str, _Metric] = {}
        self._collectors: list[Callable[[], Iterable[Family]]] = []
        self._lock = threading.Lock()

    def _register(self, metric: _Metric) -> _Metric:
        with self._lock:
            have = self._metrics.get(metric.name)
            if have is not None:
                if type(have) is not type(metric) or have.labelnames != metric.labelnames:
                    raise ValueError(f"Metric {metric.name} is registered already as a "
                                     f"{have.kind} with labels {list(have.labelnames)}.")
                return have
            self._metrics[metric.name] = metric
            return metric

    def counter(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Counter:
        """The counter `name` (the same object when asked again with the same labels)."""
        return self._register(Counter(name, help, labelnames))  # type: ignore[return-value]

    def gauge(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Gauge:
        return self._register(Gauge(name, help, labelnames))  # type: ignore[return-value]

    def histogram(self, name: str, help: str, labelnames: Sequence[str] = (),
                  buckets: Sequence[float] = LATENCY_BUCKETS) -> Histogram:
        return self._register(  # type: ignore[return-value]
            Histogram(name, help, labelnames, buckets))

    def add_collector(self, collect: Callable[[], Iterable[Family]]) -> None:
        """Calls `collect()` at every scrape for more families (read then, not counted)."""
        with self._lock:
            self._collectors.append(collect)

    def families(self) -> list[Family]:
        """Every family now: the registered ones, then the collectors'."""
        with self._lock:
            metrics, collectors = list(self._metrics.values()), list(self._collectors)
        out = [m.collect() for m in metrics]
        for collect in collectors:
            out.extend(collect())
        return out

    def render(self) -> str:
        """The text exposition format (0.0.4) of `families()`."""
        return render(self.families())


def render(families: Iterable[Family]) -> str:
    """Families as Prometheus text: HELP and TYPE lines, then one line per sample."""
    lines: list[str] = []
    for fam in families:
        lines.append(f"# HELP {fam.name} {_escape_help(fam.help)}")
        lines.append(f"# TYPE {fam.name} {fam.kind}")
        for s in fam.samples:
            labels = ",".join(f'{k}="{escape_label(v)}"' for k, v in s.labels)
            lines.append(f"{fam.name}{s.suffix}{{{labels}}} {format_value(s.value)}"
                         if labels else f"{fam.name}{s.suffix} {format_value(s.value)}")
    return "\n".join(lines) + "\n"


def escape_label(value: str) -> str:
    """A label value as the text format writes it: backslash, quote, newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    """A sample value: integers without ".0", "+Inf", "-Inf", "NaN"."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))
