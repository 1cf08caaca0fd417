"""The metrics registry's text exposition format (Prometheus 0.0.4), and the sync
barrier and update counts the task's metrics read at scrape time."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tensorweave.framework import dtypes
from tensorweave.kernels.accumulator_resource import DenseAccumulator
from tensorweave.runtime.metrics import Family, Registry, escape_label, format_value
from tensorweave.runtime.update_gate import UpdateGate
from tensorweave.runtime.waiting import Attempt

# One sample line: name, optional {labels}, a value (Prometheus' text format).
SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"'
                    r'(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*)?\})? '
                    r'(-?[0-9.e+-]+|\+Inf|-Inf|NaN)$')
W = [f"/job:worker/replica:0/task:{i}" for i in range(3)]


def assert_valid_exposition(text: str) -> set[str]:
    """Every line a sample, `# HELP` or `# TYPE`; returns the families' names."""
    families = set()
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            families.add(line.split()[2])
            continue
        assert SAMPLE.match(line), f"not a sample line: {line!r}"
    return families


def test_label_values_are_escaped():
    reg = Registry()
    reg.counter("odd_total", "Odd labels.", ("v",)).labels('a"b\\c\nd').inc(2)
    text = reg.render()
    assert 'odd_total{v="a\\"b\\\\c\\nd"} 2' in text
    assert escape_label('x"y') == 'x\\"y'
    assert assert_valid_exposition(text) == {"odd_total"}


def test_histogram_buckets_are_cumulative_and_end_with_inf():
    reg = Registry()
    h = reg.histogram("lat_seconds", "Latency.", ("peer",), buckets=(0.1, 1.0))
    child = h.labels("/job:ps/replica:0/task:0")
    for v in (0.05, 0.1, 0.5, 3.0):
        child.observe(v)
    lines = [ln for ln in reg.render().splitlines() if ln.startswith("lat_seconds")]
    peer = 'peer="/job:ps/replica:0/task:0"'
    assert lines == [f'lat_seconds_bucket{{{peer},le="0.1"}} 2',  # le: 0.1 is in it
                     f'lat_seconds_bucket{{{peer},le="1"}} 3',
                     f'lat_seconds_bucket{{{peer},le="+Inf"}} 4',
                     f"lat_seconds_sum{{{peer}}} 3.65",
                     f"lat_seconds_count{{{peer}}} 4"]


def test_registry_types_values_and_collectors():
    reg = Registry()
    c = reg.counter("steps_total", "Steps.")
    assert reg.counter("steps_total", "Steps.") is c          # asked again: the same one
    with pytest.raises(ValueError, match="registered already"):
        reg.gauge("steps_total", "Steps.")
    with pytest.raises(ValueError, match="labels"):
        reg.counter("by_total", "x", ("a",)).labels("1", "2")
    c.labels().inc()
    reg.gauge("depth", "Depth.", ("q",)).labels("q1").set(7)
    reg.add_collector(lambda: [Family("up", "gauge", "Up.\nline two").add(1)])
    text = reg.render()
    assert "# TYPE steps_total counter\nsteps_total 1\n" in text
    assert 'depth{q="q1"} 7' in text and "# HELP up Up.\\nline two" in text
    assert assert_valid_exposition(text) == {"steps_total", "by_total", "depth", "up"}
    assert [format_value(v) for v in (1.0, 0.25, math.inf, -math.inf, math.nan)] == \
        ["1", "0.25", "+Inf", "-Inf", "NaN"]
    reg.gauge("depth", "Depth.", ("q",)).remove("q1")
    assert 'depth{q="q1"}' not in reg.render()


def test_barrier_says_how_long_and_for_whom_a_take_waits():
    acc = DenseAccumulator("grad_acc", dtypes.float32, [2], "MEAN")
    assert acc.barrier() == (None, [])                        # no take waits
    acc.apply(0, np.ones(2), replica=W[0])
    acc.apply(0, np.ones(2), replica=W[1])
    got: list = []
    acc.submit(Attempt((2, 3, 1), got.append))                # served at once: 2 fresh
    assert got and acc.barrier_waits[0] == 1
    acc.apply(1, np.ones(2), replica=W[0])
    acc.submit(Attempt((2, 3, 1), got.append))                # waits for worker 1
    waited, replicas = acc.barrier()
    assert waited is not None and waited >= 0 and replicas == [W[1]]
    acc.apply(1, np.ones(2), replica=W[1])
    assert len(got) == 2 and acc.barrier() == (None, [])
    assert acc.barrier_waits[0] == 2 and acc.barrier_waits[1] >= 0


def test_update_gate_counts_updates_and_bytes_per_variable():
    class Var:
        name, value = "w", np.zeros(10, np.float32)
    gate = UpdateGate("/job:ps/replica:0/task:0")
    for _ in range(3):
        gate.count_update(Var)
    assert gate.update_counts() == {"w": (3, 120)}
