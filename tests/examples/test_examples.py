"""The examples on the shipped digits: in-graph replication and the local trainer.

(The between-graph seed programs run as real jobs in test_seed_programs.py.)
"""
import ast
import os
import re
import socket
import subprocess
import sys

import pytest

import tensorweave as tf
from suite_paths import REPO_ROOT
from suite_markers import WHOLE_JOB

ROOT = str(REPO_ROOT)
IN_GRAPH = os.path.join(ROOT, "examples", "in_graph.py")
TRAIN_LOCAL = os.path.join(ROOT, "examples", "train_local.py")


def _run(args, timeout=120):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, *args], check=False, capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def _test_accuracy(output):
    found = re.findall(r"test accuracy ([0-9.]*[0-9])", output)
    assert found, output[-3000:]
    return float(found[-1])


def _listening(address):
    port = address.rsplit(":", 1)[1]
    try:
        with socket.create_connection(("127.0.0.1", int(port)), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_in_graph_starts_its_own_cluster_and_reaches_95_percent(tmp_path):
    proc = _run([IN_GRAPH, "--train_steps=600", "--log_every=200", f"--logdir={tmp_path}"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert _test_accuracy(out) >= 0.95
    assert len(re.findall(r"global step \d+, loss", out)) == 3
    assert list(tmp_path.glob("model.ckpt-600.index")), sorted(os.listdir(tmp_path))
    tags = {v.tag for f in tmp_path.glob("events.out.tfevents.*")
            for e in tf.train.summary_iterator(str(f)) for v in e.summary.value}
    assert {"loss", "accuracy"} <= tags
    # the servers it started are gone
    spec = ast.literal_eval(re.search(r"started local cluster: (\{.*\})", out).group(1))
    assert not any(_listening(a) for addrs in spec.values() for a in addrs), spec


@pytest.mark.slow
@pytest.mark.cluster_shape(ps=2, workers=2)
@pytest.mark.transports("grpc", "tcp", "unix",
                        why="the program runs in a process of its own: 'inprocess' reaches "
                            "only the servers of the process it runs in")
def test_in_graph_against_a_running_cluster_of_bare_servers(tmp_path, local_cluster):
    cluster = local_cluster
    ps, workers = (",".join(cluster.spec[j]) for j in ("ps", "worker"))
    proc = _run([IN_GRAPH, f"--ps_hosts={ps}", f"--worker_hosts={workers}",
                 "--train_steps=50", "--log_every=50", f"--logdir={tmp_path}"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "global step 50, loss" in out
    _test_accuracy(out)
    # an existing cluster is left running
    assert all(p.poll() is None for p in cluster.procs.values())


def test_in_graph_places_variables_on_ps_and_towers_on_workers():
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import in_graph
    finally:
        sys.path.pop(0)
    with tf.Graph().as_default() as g:
        m = in_graph.build(num_ps=2, num_workers=3, hidden=8, learning_rate=0.01)
        variables = {v.op.name: v.device for v in tf.trainable_variables()}
    assert set(variables) == {"model/w1", "model/b1", "model/w2", "model/b2"}
    assert {d.split("/task:")[0] for d in variables.values()} == {"/job:ps"}
    assert len(set(variables.values())) == 2  # round robin over both ps tasks
    for i, (images, _labels, loss, logits) in enumerate(m["towers"]):
        assert images.device == loss.device == logits.device == f"/job:worker/task:{i}"
    ops = g.get_operations()
    tower_ops = [op for op in ops if op.name.startswith("model/tower_1/")]
    assert any("gradients" in op.name for op in tower_ops)  # backward pass in the tower
    assert tower_ops and all(op.device == "/job:worker/task:1" for op in tower_ops)
    # each variable's averaged gradient is computed, and applied, on its own ps task
    for op in ops:
        if op.type == "ApplyAdam" or (op.type == "AddN" and "gradients" in op.inputs[0].name):
            assert op.device.startswith("/job:ps/task:"), (op.name, op.device)


def test_in_graph_rejects_half_a_cluster():
    proc = _run([IN_GRAPH, "--ps_hosts=localhost:1"], timeout=60)
    assert proc.returncode == 2 and "only --ps_hosts" in proc.stderr


@pytest.mark.timeout(60)
def test_train_local_reaches_95_percent_on_the_digits():
    proc = _run([TRAIN_LOCAL], timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _test_accuracy(proc.stdout) >= 0.95
