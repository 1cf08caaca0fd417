"""A worker that starts after a short job ended finds the job finished (issue 32).

The chief can finish a short job before a slow worker (a pod scheduled late, an
import on a loaded machine) has even started. Its ps then keeps serving, for
TENSORWEAVE_JOB_END_LATE_WORKER_SECS, the cluster's trainers that never opened a
session on it: the late worker meets a finished model (its last step reached),
ends cleanly, and the ps exits after it. Before, the ps exited at once and the late
worker waited out its session deadline for a ps that was gone, then failed.
"""
from __future__ import annotations

import sys
import time

import pytest

from tensorweave.distributed.job import JobEndWatch
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from suite_markers import JOB_END


def _trainer(tmp_path, late: bool = False) -> list[str]:
    program = [sys.executable, "-m", "tensorweave.testing.fault_trainer", "--checkpoint_dir",
               str(tmp_path / "ckpt"), "--last_step", "20", "--save_steps", "10"]
    if not late:
        return program
    # Starts once the chief's final checkpoint is written, and a moment more: after the
    # chief's program ended and told the ps the job is done.
    final = tmp_path / "ckpt" / "model.ckpt-20.index"
    return ["sh", "-c", f'while [ ! -e "{final}" ]; do sleep 0.1; done; sleep 1; exec "$@"',
            "late-worker", *program]


@pytest.mark.slow
@pytest.mark.transports("grpc", why=JOB_END)
def test_a_worker_that_starts_after_the_chief_finished_exits_0(tmp_path):
    spec = cluster_dict(1, 1, {"chief": 1})
    programs = {"chief": _trainer(tmp_path), "worker": _trainer(tmp_path, late=True)}
    lc = LocalCluster(spec=spec, programs=programs)
    try:  # each task started, none waited for: the late one listens only once it starts
        for job in ("ps", "chief", "worker"):
            lc.start_task(job, 0)
        chief_code = lc.procs[("chief", 0)].wait(120)
        codes = lc.wait(120)
    finally:
        lc.stop()
    ps_log, worker_log = lc.output("ps", 0), lc.output("worker", 0)
    assert chief_code == 0, lc.output("chief", 0)[-2000:]
    assert codes == {("ps", 0): 0, ("chief", 0): 0, ("worker", 0): 0}, \
        (codes, ps_log[-2000:], worker_log[-2000:])
    # It came up after the chief's last step, found the model there, and stopped (after at
    # most one step of its own, as StopAtStepHook does in TF).
    steps = [int(line.split()[1]) for line in worker_log.splitlines() if line.startswith("step")]
    assert "session at step 2" in worker_log and len(steps) <= 1, worker_log[-2000:]
    assert "done worker:0" in worker_log


# ---- in this process: which never-seen workers the ps waits for -----------------------
WORKER1 = "/job:worker/replica:0/task:1"  # nothing serves it in these clusters


def test_a_worker_told_of_the_end_that_has_exited_is_not_waited_for(lossy_cluster):
    # An in-graph job's serving worker: told by the chief before the ps, then gone.
    ps = lossy_cluster.servers[("ps", 0)]
    watch = JobEndWatch(ps.task, ps.worker, ps.peer, True, 120.0, trainers=(WORKER1,))
    ps.worker.job_done(pb.JobDoneRequest(reason="test", told=[WORKER1]))
    start = time.monotonic()
    while not watch.finished():
        assert time.monotonic() - start < 5, "the ps waited for a worker that had exited"
        time.sleep(0.2)


def test_a_worker_not_told_of_the_end_is_waited_for_within_the_window(lossy_cluster,
                                                                      monkeypatch):
    # Not told: it may still be starting. The ps serves it for the window, then ends.
    monkeypatch.setenv("TENSORWEAVE_JOB_END_LATE_WORKER_SECS", "2")
    ps = lossy_cluster.servers[("ps", 0)]
    watch = JobEndWatch(ps.task, ps.worker, ps.peer, True, 120.0, trainers=(WORKER1,))
    ps.worker.job_done(pb.JobDoneRequest(reason="test"))
    start = time.monotonic()
    assert not watch.finished()
    while not watch.finished():
        assert time.monotonic() - start < 10, "the window did not end"
        time.sleep(0.2)
    assert time.monotonic() - start >= 1.5
