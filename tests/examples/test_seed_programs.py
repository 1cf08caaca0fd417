"""The seed programs as real jobs: 1 ps + 2 worker processes on loopback.

Each must train to high accuracy and every process, the ps included, must exit
by itself (TF 1.x's ps never did; its sync workers hung at the end).
"""
import re
import time

import pytest

from tensorweave.testing.seed_job import SeedJob, run_seed_job
from suite_markers import WHOLE_JOB

TRAINER = "examples/trainer.py"
SUPERVISOR = "examples/supervisor_trainer.py"


def _assert_clean_exit(result):
    if result.returncodes != {"ps0": 0, "worker0": 0, "worker1": 0}:
        # Each task's output in full on stdout (pytest shows it for a failed test; an
        # assertion message would be elided in the middle), then the codes.
        for task, out in result.outputs.items():
            print(f"===== {task} (exit {result.returncodes.get(task)}) =====\n{out[-6000:]}")
        raise AssertionError(f"exit codes {result.returncodes}; outputs printed above")


def _final_accuracies(result, pattern):
    return [float(m) for w in ("worker0", "worker1")
            for m in re.findall(pattern, result.outputs[w])[-1:]]


@pytest.mark.slow
@pytest.mark.parametrize("mode", [
    [],                                                            # async
    ["--sync_replicas=true"],                                      # sync, 2 of 2
    ["--sync_replicas=true", "--replicas_to_aggregate=1"],         # sync with a backup
], ids=["async", "sync", "sync-backup"])
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_seed_002_trainer(tmp_path, mode):
    """On the shipped digits: >= 95% on the held-out test images, async and sync."""
    result = run_seed_job(TRAINER, extra=["--train_steps=800", "--hidden=96", "--log_every=200",
                                          f"--checkpoint_dir={tmp_path}", *mode], timeout=150)
    _assert_clean_exit(result)
    accs = _final_accuracies(result, r"final batch accuracy ([0-9.]+)")
    assert len(accs) == 2 and min(accs) >= 0.9
    test_acc = re.findall(r"worker 0: test accuracy ([0-9.]+) on 359 held-out digits",
                          result.outputs["worker0"])
    assert test_acc and float(test_acc[-1]) >= 0.95, result.outputs["worker0"][-2000:]
    assert "test accuracy" not in result.outputs["worker1"]  # only the chief evaluates
    # the final checkpoint (async: another worker's step may push the last step past 800)
    saved = [int(re.search(r"ckpt-(\d+)", p.name).group(1)) for p in tmp_path.glob("*.index")]
    assert saved and max(saved) >= 800, sorted(p.name for p in tmp_path.iterdir())
    _assert_summaries(tmp_path, {"loss", "accuracy"})


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_seed_002_chief_trains_while_worker_1_never_starts(tmp_path):
    """trainer.py passes mnist_replica.py's device_filters, so the chief's session
    neither waits for nor contacts worker 1 (TF 1.x without the filters would wait
    for every worker at session creation)."""
    # The ps serves a never-started worker TENSORWEAVE_JOB_END_LATE_WORKER_SECS after the
    # job's end (tests/distributed/test_job_end_late_worker.py); here 1 s, not 10, is enough.
    job = SeedJob(TRAINER, extra=["--train_steps=200", "--hidden=32", "--log_every=50",
                                  f"--checkpoint_dir={tmp_path}"],
                  env={"TENSORWEAVE_JOB_END_LATE_WORKER_SECS": "1"})
    try:
        job.start_task("ps0")
        job.start_task("worker0")  # worker1 is in the ClusterSpec but never started
        result = job.wait(120)
    finally:
        job.stop()
    assert result.returncodes == {"ps0": 0, "worker0": 0}, \
        {k: v[-2000:] for k, v in result.outputs.items()}
    steps = [int(s) for s in re.findall(r"global step (\d+)", result.outputs["worker0"])]
    assert steps and steps[-1] >= 150, result.outputs["worker0"][-2000:]


def _assert_summaries(logdir, tags):
    """The chief's event files hold every tag of `tags` at least twice."""
    import collections

    import tensorweave as tf
    counts = collections.Counter(
        v.tag for f in logdir.glob("events.out.tfevents.*")
        for e in tf.train.summary_iterator(str(f)) for v in e.summary.value)
    assert all(counts[t] >= 2 for t in tags), counts


@pytest.mark.slow
@pytest.mark.parametrize("issync", ["0", "1"], ids=["async", "sync"])
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_seed_001_supervisor_program(tmp_path, issync):
    """On the shipped digits: >= 95% on the whole held-out test set, async and sync."""
    result = run_seed_job(SUPERVISOR, extra=[f"--issync={issync}", "--training_steps=600",
                                             f"--logdir={tmp_path}"], timeout=150)
    _assert_clean_exit(result)
    # the seed's line: accuracy on one test batch of 64 images
    accs = _final_accuracies(result, r"validation accuracy using average model is ([0-9.]*[0-9])")
    assert len(accs) == 2 and min(accs) >= 0.85
    test_accs = _final_accuracies(result, r"test accuracy ([0-9.]+) on 359 held-out digits")
    assert len(test_accs) == 2 and min(test_accs) >= 0.95, test_accs
    assert list(tmp_path.glob("model.ckpt-*.index")), "the chief wrote no checkpoint"
    _assert_summaries(tmp_path, {"loss", "test_accuracy"})


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_ps_killed_and_restarted_workers_recover_from_checkpoint(tmp_path):
    # 2000 steps: the job runs at ~600 steps/s here, and 400 could end before the kill
    # (which then hit the chief's final hooks instead of training: not this test's case).
    job = SeedJob(TRAINER, extra=["--train_steps=2000", "--hidden=32",
                                  f"--checkpoint_dir={tmp_path}",
                                  "--save_checkpoint_steps=50", "--log_every=25"]).start()
    try:
        def global_step():
            steps = re.findall(r"global step (\d+)", job.output("worker0"))
            return max(map(int, steps)) if steps else 0
        deadline = time.monotonic() + 90
        while global_step() < 120 and time.monotonic() < deadline:
            time.sleep(0.02)
        killed_at = global_step()
        assert 120 <= killed_at < 1500, job.output("worker0")[-2000:]
        job.kill("ps0")  # SIGKILL: every variable on the ps is lost
        time.sleep(0.5)
        job.start_task("ps0")
        result = job.wait(150)
    finally:
        job.stop()
    _assert_clean_exit(result)
    steps = [int(s) for s in re.findall(r"global step (\d+)", result.outputs["worker0"])]
    # Either worker may log the last steps (each logs every 25 of its own steps).
    assert max(int(s) for w in ("worker0", "worker1")
               for s in re.findall(r"global step (\d+)", result.outputs[w])) >= 1950
    # training went on from the last checkpoint (every 50 steps), not from step 0
    resumed = steps[steps.index(max(s for s in steps if s <= killed_at)) + 1:]
    assert resumed and min(resumed) >= killed_at - 60
