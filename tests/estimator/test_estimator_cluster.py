"""examples/estimator_mnist.py (the official MNIST Estimator sample's shape, seed 004) run
unchanged as a cluster under `tensorweave launch --chief --ps 1 --workers 1 --evaluator`:
every task exits 0 (our ps tasks exit when the chief ends the job; TF 1.x's never do) and
the evaluator reports the final checkpoint's accuracy."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.datasets import load_digits
from suite_paths import REPO_ROOT
from suite_markers import WHOLE_JOB

ROOT = str(REPO_ROOT)
EXAMPLE = os.path.join(ROOT, "examples", "estimator_mnist.py")
LAUNCH = [sys.executable, "-m", "tensorweave", "launch"]


def _launch(args, timeout=300):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("TF_CONFIG", None)
    return subprocess.run([*LAUNCH, *args], check=False, capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def _cluster_args(logs, model_dir, *extra):
    return ["--chief", "--ps", "1", "--workers", "1", "--evaluator", "--no-progress",
            "--ps-grace", "30", "--logdir", str(logs), "--", sys.executable, EXAMPLE,
            f"--model_dir={model_dir}", "--max_steps=300", "--save_checkpoints_steps=100",
            *extra]


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_estimator_sample_on_chief_ps_worker_and_evaluator(tmp_path):
    model_dir, logs, export_dir = tmp_path / "model", tmp_path / "logs", tmp_path / "export"
    proc = _launch(_cluster_args(logs, model_dir, f"--export_dir={export_dir}"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    for task in ("ps 0", "chief 0", "worker 0", "evaluator 0"):
        assert f"{task} finished" in out, out[-4000:]
    assert sorted(os.listdir(logs)) == ["chief-0.log", "evaluator-0.log", "ps-0.log",
                                        "worker-0.log"]
    # the ps exited by itself (Server.join() ends the process at the job's end)
    assert "stopping the server and exiting (code 0)" in (logs / "ps-0.log").read_text()
    evaluator_log = (logs / "evaluator-0.log").read_text()
    # Two asynchronous trainers may both run the step that reaches max_steps (as in TF):
    # the final global step is 300 or 301.
    final = re.findall(r"Exiting evaluation, global_step=(\d+) >= train max_steps=300",
                       evaluator_log)
    assert final and int(final[0]) in (300, 301), evaluator_log[-3000:]
    found = re.findall(r"eval accuracy ([0-9.]+) at global step (\d+)", evaluator_log)
    assert found, evaluator_log[-3000:]
    accuracy, step = float(found[-1][0]), int(found[-1][1])
    # 300 asynchronous Adam steps of two trainers: 0.87-0.96 over 40 runs here (the
    # trainers' interleaving varies); a model that did not learn scores ~0.1.
    # The program's last evaluate() may read the chief's final save, of step 301.
    assert int(final[0]) <= step <= 301 and accuracy >= 0.85, found
    # both trainers trained between-graph on the same variables: one global step in all
    assert tf.train.load_variable(str(model_dir), "global_step") == step
    assert "Loss for final step" in (logs / "worker-0.log").read_text()
    # the chief wrote the checkpoints and training summaries, the evaluator eval summaries
    tags = {v.tag for f in model_dir.glob("events.out.tfevents.*")
            for e in tf.train.summary_iterator(str(f)) for v in e.summary.value}
    # (the tag is "train_accuracy_1": the sample's tf.identity took "train_accuracy", and TF
    # 1.x's summary tags are unique op names too)
    assert "loss" in tags and any(t.startswith("train_accuracy") for t in tags), tags
    eval_tags = {(e.step, v.tag) for f in (model_dir / "eval").glob("events.*")
                 for e in tf.train.summary_iterator(str(f)) for v in e.summary.value}
    assert (step, "accuracy") in eval_tags, eval_tags

    # the chief exported a SavedModel of the final checkpoint that serves the test digits
    (path,) = re.findall(r"exported SavedModel to (\S+)", (logs / "chief-0.log").read_text())
    assert os.path.dirname(path) == str(export_dir)
    _, _, x_test, y_test = load_digits()
    with tf.Graph().as_default(), tf.Session() as sess:
        meta_graph = tf.saved_model.loader.load(sess, ["serve"], path)
        assert sorted(meta_graph.signature_def) == ["classify", "serving_default"]
        sig = meta_graph.signature_def["classify"]
        classes = sess.run(sig.outputs["classes"].name,
                           {sig.inputs["image"].name: x_test.astype(np.float32)})
    assert np.mean(classes == y_test) == pytest.approx(accuracy, abs=1e-4)  # printed .4f


    # Run again on the finished model_dir: nothing to train; the chief still ends the job,
    # so the ps exits by itself, and the evaluator evaluates the final checkpoint once.
    again = _launch(_cluster_args(tmp_path / "logs2", model_dir))
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    assert "stopping the server and exiting (code 0)" in (
        tmp_path / "logs2" / "ps-0.log").read_text()
    assert "Skipping training since max_steps has already saved" in (
        tmp_path / "logs2" / "chief-0.log").read_text()
    rerun_eval = (tmp_path / "logs2" / "evaluator-0.log").read_text()
    assert re.findall(r"eval accuracy ([0-9.]+) at global step (\d+)", rerun_eval) == found
