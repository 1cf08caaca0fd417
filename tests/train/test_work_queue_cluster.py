"""Exactly once with a WorkQueue (issue 35's done-when): between-graph training on 1 ps + 2
worker processes, one worker SIGKILLed mid-epoch and restarted. Every example is trained
once, except those of the slice that was being read at the kill, trained again once
(by the restarted worker, which gets its predecessor's slices back first)."""
from __future__ import annotations

import re
import sys
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from tensorweave.testing.work_queue_trainer import build
from suite_markers import TASK_PROCESSES
from data_helpers import write_id_slices

SLICES, LINES = 12, 4          # 12 files of 4 ids: 2 steps a slice, 24 steps in all
EXAMPLES = SLICES * LINES


def _steps(log: str) -> list[list[int]]:
    return [[int(i) for i in ids.split()]
            for ids in re.findall(r"^step \d+ worker:\d ids ([\d ]+) gs", log, re.MULTILINE)]


def _wait_for_step(lc: LocalCluster, index: int, step: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(_steps(lc.output("worker", index))) < step:
        assert time.monotonic() < deadline, lc.output("worker", index)[-3000:]
        assert lc.procs[("worker", index)].poll() is None, lc.output("worker", index)[-3000:]
        time.sleep(0.05)


def _ps_state(lc: LocalCluster, files: list[str]) -> tuple[np.ndarray, list[bytes]]:
    """The counts on the ps and what is left of its queue, read by a fresh client."""
    with tf.Graph().as_default():
        m = build(lc.spec, 0, files, EXAMPLES)
        with tf.Session(lc.target("ps", 0)) as sess:
            return sess.run(m["counts"]), sess.run(m["queue"].specs[1].tensor).tolist()


@pytest.mark.slow
@pytest.mark.transports("grpc", why=TASK_PROCESSES)
def test_a_killed_and_restarted_worker_loses_no_slice_and_trains_none_twice(tmp_path):
    files = write_id_slices(tmp_path, SLICES, LINES)
    program = [sys.executable, "-m", "tensorweave.testing.work_queue_trainer",
               "--data_dir", str(tmp_path), "--examples", str(EXAMPLES),
               "--step_secs", "0.1"]
    with LocalCluster(spec=cluster_dict(1, 2), programs={"worker": program}) as lc:
        _wait_for_step(lc, 1, 3, 60)         # worker 1 is mid-epoch, mid-slice
        lc.restart("worker", 1)              # kill -9, then the same task again
        for i in (0, 1):
            assert lc.procs[("worker", i)].wait(60) == 0, lc.output("worker", i)[-3000:]
        counts, left = _ps_state(lc, files)
        killed, restarted = (_steps(open(p).read()) for p in lc.logs[("worker", 1)])
    assert left == []   # every slice handed out and trained; none held any more
    assert counts.min() == 1, counts.reshape(SLICES, LINES)   # nothing lost
    twice = np.flatnonzero(counts == 2)
    assert counts.max() <= 2 and len({i // LINES for i in twice}) <= 1, \
        counts.reshape(SLICES, LINES)   # at most the slice in flight, at most once more
    if len(twice):
        # Its first lines (read before the kill), trained again by the restarted worker:
        # its first step is that slice's first batch.
        first = twice[0] // LINES * LINES
        assert list(twice) == list(range(first, first + len(twice)))
        assert restarted[0] == [first, first + 1]
        assert all(i in {x for step in killed for x in step} for i in twice) or \
            len(twice) == 2   # (or the killed step's update landed, its print did not)
