"""The suite's file order (tests/suite_markers.longest_first) and the durations table it
reads (tools/test_durations.py)."""
from __future__ import annotations

import os
import sys

import suite_markers

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import test_durations  # noqa: E402  (a tool, by path)


class _Item:
    def __init__(self, nodeid: str, *markers: str) -> None:
        self.nodeid, self._markers = nodeid, set(markers)

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self._markers else None


def test_recorded_seconds_order_the_files_and_estimates_fill_in(monkeypatch):
    monkeypatch.setattr(suite_markers, "_recorded_durations",
                        lambda: {"tests/a.py": 3.0, "tests/b.py": 40.0, "tests/c.py": 0.5})
    items = [_Item("tests/a.py::t1"), _Item("tests/a.py::t2", "cluster"),
             _Item("tests/c.py::t", "slow"), _Item("tests/b.py::t"),
             _Item("tests/new.py::t", "slow"), _Item("tests/new.py::u", "cluster")]
    suite_markers.longest_first(items)
    # b (40 s), new (not recorded: one slow + one cluster test, ~9 s), a (3 s), c (0.5 s:
    # recorded beats its slow marker); each file's own order is kept
    assert [i.nodeid for i in items] == ["tests/b.py::t", "tests/new.py::t", "tests/new.py::u",
                                         "tests/a.py::t1", "tests/a.py::t2", "tests/c.py::t"]


def test_the_table_sums_setup_call_and_teardown_per_file():
    log = ("=== slowest durations ===\n"
           "2.50s call     tests/x/test_a.py::test_one[grpc]\n"
           "0.50s setup    tests/x/test_a.py::test_one[grpc]\n"
           "1.00s teardown tests/x/test_b.py::Case::test_two\n"
           "(10 durations < 0.005s hidden.)\n")
    assert test_durations.per_file(log) == {"tests/x/test_a.py": 3.0, "tests/x/test_b.py": 1.0}


def test_the_checked_in_table_loads():
    table = suite_markers._recorded_durations()
    assert len(table) > 100 and all(v >= 0 for v in table.values())
