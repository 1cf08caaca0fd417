"""`ConfigProto.device_filters` never shut a session out of its own task, as in TF.

TF's master always adds its own (local) devices to a session's device set, whatever
the filters say. So `device_filters=["/job:ps"]` on a worker limits which *other*
tasks the session uses, while the worker's own ops (and ops with no device, which
go to the session's task first) still run there.
"""
from __future__ import annotations

import contextlib

import pytest

import tensorweave as tf
from tensorweave.distributed import Server
from tensorweave.framework import errors
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from suite_markers import TASK_PROCESSES

pytestmark = pytest.mark.usefixtures("fresh_graph")

W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
PS0 = "/job:ps/replica:0/task:0/device:CPU:0"
PS_ONLY = tf.ConfigProto(device_filters=["/job:ps"], operation_timeout_in_ms=20000)


@pytest.fixture
def worker0(transport, per_transport):
    """ps 0 as a process, worker 0 in this process (its session's own task), worker 1
    never started: one such cluster per transport, shared by the module's tests."""
    return per_transport.get(transport, _worker0)


@contextlib.contextmanager
def _worker0():
    spec = cluster_dict(ps=1, workers=2)
    with LocalCluster(spec=spec, in_process=(("worker", 0), ("worker", 1))):
        server = Server(spec, job_name="worker", task_index=0, exit_when_done=False)
        try:
            yield server
        finally:
            server.stop()


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_ops_pinned_to_the_sessions_own_task_run(worker0):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(3.0, name="on_ps")
    with tf.device("/job:worker/task:0"):
        doubled = v * 2.0
    with tf.Session(worker0.target, config=PS_ONLY) as sess:
        sess.run(v.initializer)
        assert sess.run(doubled) == 6.0


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_ops_without_a_device_go_to_the_sessions_own_task(worker0, capfd):
    free = tf.constant(3.0, name="free_const") * 2.0
    cfg = tf.ConfigProto(device_filters=["/job:ps"], log_device_placement=True)
    with tf.Session(worker0.target, config=cfg) as sess:
        assert sess.run(free) == 6.0
    assert f"free_const: (Const): {W0}" in capfd.readouterr().err


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_list_devices_includes_the_own_task(worker0):
    with tf.Session(worker0.target, config=PS_ONLY) as sess:
        assert [d.name for d in sess.list_devices()] == [PS0, W0]


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_other_filtered_out_tasks_stay_excluded(worker0):
    with tf.device("/job:worker/task:1"):
        c = tf.constant(1.0, name="on_worker1")
    with tf.Session(worker0.target, config=PS_ONLY) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="on_worker1"):
            sess.run(c)


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_reset_with_filters_also_clears_the_own_task(worker0):
    with tf.device("/job:worker/task:0"):
        local = tf.Variable(2.0, name="local_var")
    with tf.Session(worker0.target) as sess:
        sess.run(local.initializer)
    tf.Session.reset(worker0.target, config=tf.ConfigProto(device_filters=["/job:ps"]))
    with tf.Session(worker0.target) as sess:
        with pytest.raises(errors.FailedPreconditionError, match="local_var"):
            sess.run(local)
