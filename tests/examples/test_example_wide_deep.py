"""examples/wide_deep.py as a real job: 2 ps + 2 worker processes on loopback.

Async with the seed flags (one process per task); sync under `tensorweave launch` (the
cluster from TF_CONFIG) with `--ev=true`, DeepRec's switch: the deep part embeds users
and items with EmbeddingVariables (categorical_column_with_embedding, 2 parts).
Each run must learn the click log's planted signal
(held-out AUC well above chance; each worker's mean loss falls), write its final
checkpoint, split the wide weights and the embeddings across both ps tasks, and
every process, the ps tasks included, must exit 0 by itself (TF 1.x's ps never
exits: a deliberate difference).
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.testing.seed_job import run_seed_job
from suite_paths import REPO_ROOT
from suite_markers import WHOLE_JOB

ROOT = str(REPO_ROOT)
SCRIPT = "examples/wide_deep.py"
STEPS = 400


def _flags(tmp_path):
    return [f"--train_steps={STEPS}", "--log_every=25", "--examples_per_worker=6000",
            "--eval_examples=2000", f"--data_dir={tmp_path / 'data'}",
            f"--checkpoint_dir={tmp_path / 'ckpt'}"]


def _assert_learned(chief_output, worker_outputs):
    auc = re.findall(r"worker 0: eval auc ([0-9.]+), accuracy ([0-9.]+), loss ([0-9.]+) "
                     r"on 2000 held-out clicks", chief_output)
    assert auc, chief_output[-3000:]
    # chance is 0.5, the planted signal's Bayes AUC about 0.88; 0.83-0.86 here
    assert float(auc[-1][0]) >= 0.78, auc
    # Each line is a worker's mean loss over its last 25 steps: the job's first line
    # (from near the initial 0.69) against its last one and the held-out loss.
    logged = sorted((int(step), float(loss)) for out in worker_outputs for step, loss in
                    re.findall(r"global step (\d+), mean loss ([0-9.]+)", out))
    assert len(logged) >= 4, worker_outputs
    assert logged[-1][1] < logged[0][1] and float(auc[-1][2]) < logged[0][1], logged


def _assert_checkpoint_and_placement(ckpt_dir):
    saved = [int(re.search(r"ckpt-(\d+)", p.name).group(1)) for p in ckpt_dir.glob("*.index")]
    assert saved and max(saved) >= STEPS, sorted(p.name for p in ckpt_dir.iterdir())
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(str(ckpt_dir / f"model.ckpt-{max(saved)}.meta"))
        devices = {op.name: op.device for op in g.get_operations()
                   if op.type in ("VariableV2", "Variable", "KvVariable")}
    for shard in ("wide/linear_model/category_X_user/weights",
                  "deep/inputs/input_layer/user_embedding/embedding_weights",
                  "deep/inputs/input_layer/item_embedding/embedding_weights"):
        # replica_device_setter deals variables round robin: the two parts of one
        # variable land on the two ps tasks, in either order
        parts = {devices.get(f"{shard}/part_{i}") for i in (0, 1)}
        assert parts == {"/job:ps/task:0", "/job:ps/task:1"}, (shard, devices)


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_async_with_the_seed_flags(tmp_path):
    result = run_seed_job(SCRIPT, ps=2, workers=2, extra=_flags(tmp_path), timeout=240)
    assert result.returncodes == {"ps0": 0, "ps1": 0, "worker0": 0, "worker1": 0}, \
        {k: v[-2000:] for k, v in result.outputs.items()}
    _assert_learned(result.outputs["worker0"],
                    [result.outputs["worker0"], result.outputs["worker1"]])
    assert "eval auc" not in result.outputs["worker1"]  # only the chief evaluates
    _assert_checkpoint_and_placement(tmp_path / "ckpt")


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_sync_with_embedding_variables_under_tensorweave_launch(tmp_path):
    cmd = [sys.executable, "-m", "tensorweave", "launch", "--ps", "2", "--workers", "2",
           "--", sys.executable, SCRIPT, "--sync=true", "--ev=true", "--ev_filter=counter",
           "--ev_filter_freq=3", "--ev_elimination=gstep", "--ev_steps_to_live=100",
           *_flags(tmp_path)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=240,
                       check=False, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    for ps in (0, 1):
        assert f"ps {ps} exited by itself (exit code 0)" in r.stderr, r.stderr[-2000:]
    lines = {w: "\n".join(x for x in r.stdout.splitlines() if x.startswith(f"[worker {w}]"))
             for w in (0, 1)}
    _assert_learned(lines[0], lines.values())
    # sync: the workers' steps make global steps together (about one per pair)
    steps = [int(s) for s in re.findall(r"local step \d+, global step (\d+)", lines[0])]
    assert steps and steps[-1] <= STEPS, lines[0]
    _assert_checkpoint_and_placement(tmp_path / "ckpt")
    final = tf.train.latest_checkpoint(str(tmp_path / "ckpt"))
    users = sum(len(tf.train.load_variable(
        final, f"deep/inputs/input_layer/user_embedding/embedding_weights/part_{i}-keys"))
        for i in (0, 1))
    assert 0 < users <= 1000, users   # the ids seen, not a bucket count
    # the filter and the eviction on the ps: every saved item id was looked up at least
    # 3 times, and within the 100 global steps before the save (older ones evicted)
    step = int(tf.train.load_variable(final, "global_step"))
    item = "deep/inputs/input_layer/item_embedding/embedding_weights/part_{}-{}"
    freqs = np.concatenate([tf.train.load_variable(final, item.format(i, "freqs"))
                            for i in (0, 1)])
    versions = np.concatenate([tf.train.load_variable(final, item.format(i, "versions"))
                               for i in (0, 1)])
    assert len(freqs) and freqs.min() >= 3, freqs.min()
    assert versions.min() >= step - 100, (versions.min(), step)


@pytest.mark.parametrize("labels,scores,want", [
    ([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.75),  # one of four pairs misordered
    ([1, 0], [0.9, 0.1], 1.0),
    ([1, 0], [0.1, 0.9], 0.0),
])
def test_the_examples_auc_against_hand_computed_values(labels, scores, want):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import wide_deep
    finally:
        sys.path.pop(0)
    import numpy as np
    assert wide_deep.auc(np.array(labels, float), np.array(scores)) == pytest.approx(want)
