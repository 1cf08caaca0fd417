"""`Server.join()` never returns into the program, as in TF.

TF 1.x programs write `if job_name == "ps": server.join()` and put the worker's
code after it: TF's join() blocks forever, so that code never runs on a ps. Here,
once the chief ends the job, join() stops the server, runs the exit cleanup
(at_exit callbacks, atexit handlers, logging and stdio flushes) and ends the process
with exit code 0 itself, so the code after join() does not run either, and a thread
still blocked in the ps process does not hold the exit. `Server(exit_when_done=False)`
keeps TF's block-forever; `stop()` (beyond TF) still makes join() return.

The job ends when the chief's MonitoredTrainingSession/Supervisor finishes, or when
the program of a "chief" (or legacy "master") task exits normally (Kubeflow's TFJob
rule): then every task is told, workers that only serve included.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.server import Server
from tensorweave.testing.cluster import cluster_dict
from suite_markers import OTHER_PROCESSES

pytestmark = pytest.mark.usefixtures("fresh_graph")

# The ps side of a TF1 program, with what a normal exit would do made visible: a
# block-buffered print, an atexit handler, a log line, and a thread blocked forever.
PS_PROGRAM = textwrap.dedent("""
    import atexit, json, logging, sys, threading
    import tensorweave as tf
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    cluster, exit_when_done = json.loads(sys.argv[1]), sys.argv[2] == "1"
    job = sys.argv[3] if len(sys.argv) > 3 else "ps"
    server = tf.train.Server(cluster, job_name=job, task_index=0,
                             exit_when_done=exit_when_done)
    atexit.register(lambda: print("atexit handler ran", flush=False))
    threading.Thread(target=threading.Event().wait, daemon=False).start()  # never ends
    print("ps serving", flush=False)  # stdout is a pipe: block-buffered until flushed
    server.join()
    print("code after join() ran")
    raise SystemExit(3)
""")


def _start_ps(tmp_path, spec, exit_when_done: bool, job: str = "ps") -> subprocess.Popen:
    script = tmp_path / "ps.py"
    script.write_text(PS_PROGRAM)
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)  # stdout stays block-buffered: the exit must flush it
    return subprocess.Popen(
        [sys.executable, str(script), json.dumps(spec), "1" if exit_when_done else "0", job],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _train_as_chief(spec) -> None:
    """Worker 0 in this process trains a few steps with MonitoredTrainingSession,
    whose normal end tells the ps tasks the job is done."""
    worker = Server(spec, job_name="worker", task_index=0, exit_when_done=False)
    try:
        with tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:0", cluster=spec)):
            x = tf.placeholder(tf.float32, [None, 1])
            w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
            step = tf.train.get_or_create_global_step()
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        cfg = tf.ConfigProto(operation_timeout_in_ms=30000)
        with tf.train.MonitoredTrainingSession(
                master=worker.target, is_chief=True, config=cfg,
                hooks=[tf.train.StopAtStepHook(last_step=3)]) as sess:
            while not sess.should_stop():
                sess.run(train, {x: np.ones([2, 1], np.float32)})
    finally:
        worker.stop()


def _stop(proc: subprocess.Popen) -> tuple[str, str]:
    if proc.poll() is None:
        proc.kill()
    return proc.communicate(timeout=30)


@pytest.mark.transports("grpc", "tcp", "unix", why=OTHER_PROCESSES)
def test_join_ends_the_ps_process_with_exit_0_and_skips_the_code_after_it(tmp_path):
    spec = cluster_dict(ps=1, workers=1)
    ps = _start_ps(tmp_path, spec, exit_when_done=True)
    try:
        _train_as_chief(spec)
        code = ps.wait(timeout=60)
    finally:
        out, err = _stop(ps)
    assert code == 0, out + err
    assert "code after join() ran" not in out
    # the exit cleanup ran and flushed: buffered stdout, atexit handlers, log lines
    assert "ps serving" in out and "atexit handler ran" in out
    assert "job done, no open sessions: stopping the server and exiting (code 0)" in err


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", "unix", why=OTHER_PROCESSES)
def test_exit_when_done_false_keeps_tfs_block_forever(tmp_path):
    spec = cluster_dict(ps=1, workers=1)
    ps = _start_ps(tmp_path, spec, exit_when_done=False)
    try:
        _train_as_chief(spec)
        time.sleep(1.5)  # well past join()'s 0.2 s poll of the job's end
        assert ps.poll() is None, "the ps exited although exit_when_done=False"
    finally:
        out, err = _stop(ps)
    assert "code after join() ran" not in out


# Kubeflow's smoke test: a "master" (or "chief") task drives every task with a plain
# tf.Session; ps and workers only serve. Its normal exit ends the job (TFJob's rule).
CHIEF_PROGRAM = textwrap.dedent("""
    import json, sys
    import tensorweave as tf
    cluster, job, fail = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
    server_def = tf.train.ServerDef(cluster=tf.train.ClusterSpec(cluster).as_cluster_def(),
                                    protocol="grpc", job_name=job, task_index=0)
    server = tf.train.Server(server_def)
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(2.0)
    with tf.device("/job:worker/task:0"):
        doubled = v * 2.0
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        print("result", sess.run(doubled))
    if fail:
        raise RuntimeError("the chief failed")
""")


def _run_chief(tmp_path, spec, job: str, fail: bool) -> subprocess.CompletedProcess:
    script = tmp_path / "chief.py"
    script.write_text(CHIEF_PROGRAM)
    return subprocess.run([sys.executable, str(script), json.dumps(spec), job,
                           "1" if fail else "0"], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("chief_job", ["master", "chief"])
def test_a_chiefs_normal_exit_ends_the_job_for_every_serving_task(tmp_path, chief_job):
    spec = cluster_dict(ps=1, workers=1, extra={chief_job: 1})
    ps = _start_ps(tmp_path, spec, exit_when_done=True)
    worker = _start_ps(tmp_path, spec, exit_when_done=True, job="worker")
    try:
        chief = _run_chief(tmp_path, spec, chief_job, fail=False)
        assert chief.returncode == 0 and "result 4.0" in chief.stdout, chief.stderr
        codes = [ps.wait(timeout=60), worker.wait(timeout=60)]
    finally:
        outs = [_stop(ps), _stop(worker)]
    assert codes == [0, 0], outs
    assert all("code after join() ran" not in out for out, _ in outs)


@pytest.mark.slow
def test_a_chief_that_fails_ends_nothing(tmp_path):
    spec = cluster_dict(ps=1, workers=1, extra={"chief": 1})
    ps = _start_ps(tmp_path, spec, exit_when_done=True)
    worker = _start_ps(tmp_path, spec, exit_when_done=True, job="worker")
    try:
        chief = _run_chief(tmp_path, spec, "chief", fail=True)
        assert chief.returncode == 1 and "the chief failed" in chief.stderr
        time.sleep(1.5)
        assert ps.poll() is None, "the ps exited although the chief failed"
        assert worker.poll() is None, "the worker exited although the chief failed"
    finally:
        _stop(ps)
        _stop(worker)


@pytest.mark.transports("grpc", "tcp", "unix", why=OTHER_PROCESSES)
def test_stop_makes_join_return_in_the_same_process():
    spec = cluster_dict(ps=1, workers=1)
    server = Server(spec, job_name="ps", task_index=0)  # exit_when_done: the job never ends
    timer = threading.Timer(0.3, server.stop)
    timer.start()
    started = time.monotonic()
    server.join()
    timer.join()
    assert time.monotonic() - started < 10


def test_tf_distribute_server_is_tf_train_server():
    assert tf.distribute.Server is tf.train.Server
    assert tf.compat.v1.distribute.Server is tf.train.Server


def test_server_protos_are_under_tf_train():
    job = tf.train.JobDef(name="ps", tasks={0: "localhost:2222"})
    server_def = tf.train.ServerDef(cluster=tf.train.ClusterDef(job=[job]), job_name="ps",
                                    task_index=0, protocol="grpc")
    assert tf.train.ClusterSpec(server_def.cluster).as_dict() == {"ps": ["localhost:2222"]}
