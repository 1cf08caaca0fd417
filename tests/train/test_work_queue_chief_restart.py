"""Exactly once over a chief restart (issue 35): 1 ps + 2 worker processes train a
WorkQueue epoch; the chief (worker 0, which saves the model and the queue in one
checkpoint) is SIGKILLed mid-epoch and restarted, and restores that checkpoint over the
live ps and the live worker 1.

What "trained once" means across that restore: the model is the accounting. Each
training adds 1 to its example's count in a variable on the ps (and 1 to the global step,
in the same step), so the final model's counts say how many times the model that came
out of the job trained each example. The restore rewinds the model to the checkpoint:
what was trained after it is gone from the model, so its slices must be handed out again
(or they are lost), and slices trained before it must not be (or they are trained
twice). Only a slice in flight at the checkpoint or at the restore (being read, or queued
in a worker's pipeline) may be trained again, once: at the checkpoint its first lines are
in the model while the queue lists it as not trained; at the restore, the live worker
reads on through the slices of its pipeline while the restored queue hands them out
again. So the test asserts, on the final model: no example at 0 (none lost), none above
2, and every example at 2 in a slice that was in flight at the checkpoint or the restore
(read from the workers' step lines); and that the restore did erase training (slices
trained only between the checkpoint and the restore), which was done again exactly once.
"""
from __future__ import annotations

import re
import sys
import time

import numpy as np
import pytest

from suite_markers import TASK_PROCESSES
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from test_work_queue_cluster import _ps_state, _wait_for_step
from data_helpers import write_id_slices

SLICES, LINES = 24, 4          # 24 files of 4 ids: 2 steps a slice, 48 steps in all
EXAMPLES = SLICES * LINES
_LINE = re.compile(r"^step \d+ worker:\d ids ([\d ]+) gs \d+ t ([0-9.]+)$", re.MULTILINE)


def _reads(log: str) -> list[tuple[float, int]]:
    """(time, slice) of each step of a worker's log, in order."""
    return [(float(t), int(ids.split()[0]) // LINES) for ids, t in _LINE.findall(log)]


def _marked(log: str, what: str) -> list[tuple[str, float]]:
    return [(m.group(1), float(m.group(2)))
            for m in re.finditer(rf"^{what} (\S*) ?t ([0-9.]+)$", log, re.MULTILINE)]


def _in_flight(logs: list[list[tuple[float, int]]], live: list[tuple[float, int]],
               saved_at: float, restored_at: float) -> set[int]:
    """The slices in flight at the checkpoint (`saved_at`) or at the restore: each log's
    last slice read before the checkpoint, every slice read between the two, and the
    first 3 slices the live worker reads after the restore (its pipeline: the slice
    being read, one queued, one in its runner's hands)."""
    flight: set[int] = set()
    for reads in logs:
        before = [s for t, s in reads if t <= saved_at]
        flight.update(before[-1:])
        flight.update(s for t, s in reads if saved_at < t <= restored_at)
    after: list[int] = []
    for t, s in live:
        if t > restored_at and s not in after:
            after.append(s)
    return flight | set(after[:3])


def _kill_chief_mid_interval(lc: LocalCluster) -> None:
    """SIGKILLs the chief once it has trained 4 steps (2 whole slices) past its first
    checkpoint, and starts it again."""
    deadline = time.monotonic() + 60
    while True:
        log = lc.output("worker", 0)
        if "\nsaved " in log and log[log.rfind("\nsaved "):].count("\nstep ") >= 4:
            break
        assert time.monotonic() < deadline, log[-3000:]
        assert lc.procs[("worker", 0)].poll() is None, log[-3000:]
        time.sleep(0.02)
    lc.restart("worker", 0)


@pytest.mark.slow
@pytest.mark.transports("grpc", why=TASK_PROCESSES)
def test_a_chief_restarted_over_live_workers_loses_no_slice(tmp_path):
    files = write_id_slices(tmp_path, SLICES, LINES)
    program = [sys.executable, "-m", "tensorweave.testing.work_queue_trainer",
               "--data_dir", str(tmp_path), "--examples", str(EXAMPLES),
               "--checkpoint_dir", str(tmp_path / "ck"), "--save_every", "6",
               "--step_secs", "0.05", "--worker_step_secs", "0.2"]
    with LocalCluster(spec=cluster_dict(1, 2), programs={"worker": program}) as lc:
        _wait_for_step(lc, 1, 1, 60)
        _kill_chief_mid_interval(lc)
        for i in (0, 1):
            assert lc.procs[("worker", i)].wait(60) == 0, lc.output("worker", i)[-3000:]
        counts, left = _ps_state(lc, files)
        killed, restarted = (open(p).read() for p in lc.logs[("worker", 0)])
        worker1 = lc.output("worker", 1)
    restored = _marked(restarted, "restored")
    assert len(restored) == 1, restarted[-3000:]
    path, restored_at = restored[0]
    saving = _marked(killed, "saving")
    saved_at = saving[[p for p, _ in _marked(killed, "saved")].index(path)][1]
    by_slice = counts.reshape(SLICES, LINES)
    assert left == []                                   # every slice handed out and done
    assert counts.min() >= 1, by_slice                  # none lost to the restore
    assert counts.max() <= 2, by_slice                  # none trained more than twice
    reads = [_reads(killed), _reads(worker1)]
    flight = _in_flight(reads, reads[1], saved_at, restored_at)
    twice = {int(i) // LINES for i in np.flatnonzero(counts == 2)}
    assert twice <= flight, (sorted(twice), sorted(flight), by_slice)
    # The restore erased training: slices read only between the checkpoint and the
    # restore (and not in flight at either) were handed out again and are in the final
    # model exactly once.
    erased = {s for r in reads for t, s in r if saved_at < t <= restored_at} - \
        {s for r in reads for t, s in r if not saved_at < t <= restored_at}
    assert erased, (saved_at, restored_at, reads)
    assert all(by_slice[s].tolist() == [1] * LINES for s in erased - twice), by_slice
