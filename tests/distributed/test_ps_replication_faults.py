"""Issue 33 on task processes: kill -9 the ps mid-run, start it again with the same
command, and the job goes on from the ps's replica instead of its checkpoint.

The job is the fault matrix's (`tensorweave.testing.fault_trainer`: 1 ps, a chief and a
worker), with checkpoints far apart (one at the start, the next after LAST_STEP), so a
restore would send the global step back to 0. With TENSORWEAVE_PS_REPLICATION=1 in every
task, the step at the kill is kept up to the replica's lag, every process exits 0, and the
logs say what happened: the ps loaded its replica, the chief restored nothing. Without
replication the same kill goes back to the checkpoint, as test_fault_matrix.py checks
(bench.recovery shows both: `python -m bench.recovery --replication both`).
"""
from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from tensorweave.base import knobs
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from tensorweave.testing.faults import Fault, StepWatch, run_job
from suite_markers import SYNC_JOB

LAST_STEP = 60
STEP_SECS = 0.1
MODES = {"async": [], "sync_backup": ["--sync", "--replicas_to_aggregate", "1"]}
# Async sends every 0.05 s; sync after every step that changed the ps (0), before the
# step ends: no completed step is lost.
REPLICA_SECS = {"async": "0.05", "sync_backup": "0"}


def program(tmp_path, mode: str) -> list[str]:
    """The fault matrix's trainer, checkpoints far apart (one at the start)."""
    return [sys.executable, "-m", "tensorweave.testing.fault_trainer",
            "--checkpoint_dir", str(tmp_path / "ckpt"), "--last_step", str(LAST_STEP),
            "--save_steps", "100000", "--seed", "7", "--step_secs", str(STEP_SECS),
            *MODES[mode]]


def replication_env(mode: str, replication: bool = True) -> dict[str, str]:
    return {knobs.PS_REPLICATION.name: "1" if replication else "0",
            knobs.PS_REPLICA_SECS.name: REPLICA_SECS[mode]}


def _job(tmp_path, mode: str, replication: bool) -> LocalCluster:
    spec = cluster_dict(1, 1, {"chief": 1})
    return LocalCluster(spec=spec, programs={job: program(tmp_path, mode) for job in spec},
                        env=replication_env(mode, replication))


def check_restart_from_replica(lc: LocalCluster, mode: str, codes: dict, records: list
                               ) -> None:
    """The ps killed at step 25 came back from its replica: every task exits 0, at most
    the replica's lag is lost (none in sync), and the logs say so."""
    logs = {f"{job}{i}": lc.output(job, i)[-3000:] for job, i in lc.logs}
    record = records[0]
    assert record.error is None and record.restarted_at is not None, (record, logs)
    assert codes == {("ps", 0): 0, ("worker", 0): 0, ("chief", 0): 0}, (codes, logs)
    lost = record.steps_lost(lc)
    if mode == "async":
        # the replica is at most 0.05 s (plus a put) behind; at 2 replicas x 10 steps/s
        # that is a step or two, against the 25 a checkpoint restore would lose
        assert lost is not None and lost <= 3, (lost, record, logs)
    else:  # every completed step was in the replica before it completed
        assert lost == 0, (lost, record, logs)
    assert "loaded " in lc.output("ps", 0) and "from its replica on" in lc.output("ps", 0)
    assert "live on the ps tasks" in lc.output("chief", 0), logs
    assert "done chief:0" in lc.output("chief", 0)


# Each case is a ~13 s job: async over "grpc" (the unix link between task processes), sync
# over "tcp", so both wires between processes carry a restarted ps's replica.
_EACH_WIRE = ("each case is a ~13 s job of task processes: async runs over grpc (their unix "
              "link), sync over tcp, so both wires carry a replica")


@pytest.mark.slow
@pytest.mark.parametrize("mode", [
    pytest.param("async", marks=pytest.mark.transports("grpc", why=_EACH_WIRE)),
    pytest.param("sync_backup", marks=pytest.mark.transports("tcp", why=_EACH_WIRE))])
def test_a_ps_killed_and_restarted_loses_at_most_the_replica_lag(tmp_path, mode):
    lc = _job(tmp_path, mode, replication=True)
    codes, records = run_job(lc, [Fault("ps", 0, at_step=25)], timeout=150)
    check_restart_from_replica(lc, mode, codes, records)


@pytest.mark.slow
@pytest.mark.transports("grpc", why=SYNC_JOB)
def test_a_frozen_holder_costs_sync_training_one_short_wait_then_catches_up(tmp_path):
    """Sync replication (after every step) to a ps_standby task that is SIGSTOPped for
    3 s mid-run: the ps waits for it once, for at most STEP_WAIT_S, then steps go on
    without it; once it is continued it catches up and steps wait for it again. The job
    finishes, every task exits 0."""
    spec = cluster_dict(1, 1, {"chief": 1, "ps_standby": 1})
    argv = program(tmp_path, "sync_backup")
    lc = LocalCluster(spec=spec, programs={j: argv for j in ("ps", "chief", "worker")},
                      env=replication_env("sync_backup"))
    progress = StepWatch(lc)
    with lc:
        standby = lc.procs[("ps_standby", 0)]
        deadline = time.monotonic() + 90
        while progress.poll() < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        frozen_at = progress.step
        os.kill(standby.pid, signal.SIGSTOP)
        try:
            time.sleep(3.0)
            during = progress.poll() - frozen_at
        finally:
            os.kill(standby.pid, signal.SIGCONT)
        codes = lc.wait(120)
        logs = {f"{job}{i}": lc.output(job, i)[-3000:] for job, i in lc.logs}
    # 3 s at ~10 steps/s, less the one wait of at most 2 s
    assert frozen_at >= 10 and during >= 5, (frozen_at, during, logs)
    assert codes == {("ps", 0): 0, ("worker", 0): 0, ("chief", 0): 0,
                     ("ps_standby", 0): 0}, (codes, logs)
    ps_log = lc.output("ps", 0)
    assert "steps no longer wait for it" in ps_log, logs
    assert "is caught up: steps wait for it again" in ps_log, logs
