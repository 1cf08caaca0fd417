"""The fault matrix (issue 13): kill -9 one task of a training job at a seeded random step.

{ps, chief, non-chief worker} x {async, sync with a backup worker}: a job of
1 ps + 1 chief + 1 worker (`tensorweave.testing.fault_trainer`, a checkpoint
every SAVE_STEPS global steps) runs on a LocalCluster; a FaultInjector kills one
task with SIGKILL once the job reaches a step drawn from random.Random(seed)
and restarts it on the same port, as an orchestrator would. Each case asserts
that the job completes (the last step is reached), that every process exits by
itself with code 0 (beyond TF 1.x, whose ps never exits), and that the steps
lost are at most one checkpoint interval (and the save in progress at the kill).

The interval is counted in global steps as the chief's CheckpointSaverHook
sees them: it saves when the step it reads after its own run is SAVE_STEPS past
the last save, and with 2 replicas the other one's step can land in between, so
two checkpoints are up to SAVE_STEPS + 1 global steps apart.
"""
from __future__ import annotations

import sys

import pytest

from tensorweave.testing.cluster import LocalCluster, cluster_dict
from tensorweave.testing.faults import Fault, run_job
from suite_markers import FAULT_MATRIX

LAST_STEP = 60
SAVE_STEPS = 5
# Each replica's pace: a task restarted at the latest kill step (LAST_STEP // 2)
# rejoins well before the others finish (a worker restarted after the chief is
# done finds the ps gone and fails, as it would under any orchestrator).
STEP_SECS = 0.1
REPLICAS = 2  # the chief and one worker
MODES = {"async": [], "sync_backup": ["--sync", "--replicas_to_aggregate", "1"]}
VICTIMS = {"ps": ("ps", 0), "chief": ("chief", 0), "worker": ("worker", 0)}


def program_argv(tmp_path, mode: str, seed: int) -> list[str]:
    return [sys.executable, "-m", "tensorweave.testing.fault_trainer",
            "--checkpoint_dir", str(tmp_path / "ckpt"), "--last_step", str(LAST_STEP),
            "--save_steps", str(SAVE_STEPS), "--seed", str(seed), "--step_secs", str(STEP_SECS),
            *MODES[mode]]


def case_seed(victim: str, mode: str) -> int:
    return 1000 + 10 * sorted(VICTIMS).index(victim) + sorted(MODES).index(mode)


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("victim", sorted(VICTIMS))
@pytest.mark.transports("grpc", why=FAULT_MATRIX)
def test_kill_one_task_at_a_random_step_job_completes(tmp_path, victim, mode):
    spec = cluster_dict(1, 1, {"chief": 1})
    program = program_argv(tmp_path, mode, case_seed(victim, mode))
    check_case(LocalCluster(spec=spec, programs={job: program for job in spec}), victim,
               case_seed(victim, mode))


def check_case(lc: LocalCluster, victim: str, seed: int) -> None:
    """Runs `lc`'s job (1 ps, 1 chief, 1 worker), kills `victim` at a step drawn from
    `seed` and restarts it; asserts what the module docstring says."""
    fault = Fault.at_random_step(*VICTIMS[victim], seed=seed, low=6, high=LAST_STEP // 2)
    codes, records = run_job(lc, [fault], timeout=150)  # the injector watches from step 0
    logs = {f"{job}{i}": lc.output(job, i)[-3000:] for job, i in lc.logs}
    record = records[0]
    assert record.error is None, (record, logs)
    assert record.killed_at_step is not None and record.restarted_at is not None, record
    # every process (the restarted one too) exited by itself, with code 0
    assert codes == {("ps", 0): 0, ("worker", 0): 0, ("chief", 0): 0}, (codes, logs)
    assert "done chief:0" in lc.output("chief", 0), logs
    final = max(int(line.split()[1]) for job, i in lc.logs
                for line in lc.output(job, i).splitlines() if line.startswith("step "))
    assert final >= LAST_STEP, logs
    if victim != "ps":  # the restarted trainer rejoined: it made a session and ended
        with open(lc.logs[VICTIMS[victim]][-1]) as f:
            again = f.read()
        assert "session at step" in again and f"done {victim}:0" in again, again[-3000:]
    lost = record.steps_lost(lc)
    # One interval, and the save in progress at the kill: a chief killed while writing the
    # checkpoint at step s restores the one before (seen once across hosts: killed at 30
    # while saving 28, restored 23).
    assert lost is not None and lost <= SAVE_STEPS + 2 * REPLICAS, (record, lost, logs)
