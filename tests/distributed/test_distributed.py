"""The distributed runtime on real server processes over loopback gRPC."""
import socket
import sys
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import ClusterSpec, Server
from tensorweave.framework import errors
from tensorweave.testing.cluster import LocalCluster, cluster_dict, free_ports
from session_helpers import run_then_close
from suite_markers import OTHER_PROCESSES, PORT, TASK_PROCESSES

pytestmark = pytest.mark.usefixtures("fresh_graph")


@pytest.mark.transports()
def test_hello_distributed_local_server():
    c = tf.constant("Hello, distributed TensorFlow!")
    server = tf.train.Server.create_local_server()
    try:
        with tf.Session(server.target) as sess:
            assert sess.run(c) == b"Hello, distributed TensorFlow!"
        assert server.target.startswith("grpc://localhost:")
    finally:
        server.stop()


def test_cross_process_variable_and_update(local_cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.ones([3]), name="xproc_v")
    with tf.device("/job:worker/task:0"):
        y = v * 2.0
        upd = tf.assign_add(v, y)
    with tf.Session(local_cluster.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), [2, 2, 2])
        np.testing.assert_allclose(sess.run(upd), [3, 3, 3])
        np.testing.assert_allclose(sess.run(v), [3, 3, 3])


def test_between_graph_replication_shares_ps_variables(local_cluster):
    graphs = []
    for w in range(2):
        g = tf.Graph()
        with g.as_default(), tf.device("/job:ps/task:0"):
            v = tf.Variable(tf.zeros([2]), name="shared_counter")
            with tf.device(f"/job:worker/task:{w}"):
                inc = tf.assign_add(v, tf.ones([2]))
        graphs.append((g, v, inc))
    s0 = tf.Session(local_cluster.target("worker", 0), graph=graphs[0][0])
    s1 = tf.Session(local_cluster.target("worker", 1), graph=graphs[1][0])
    try:
        s0.run(graphs[0][1].initializer)
        s0.run(graphs[0][2])
        s1.run(graphs[1][2])
        s1.run(graphs[1][2])
        np.testing.assert_allclose(s0.run(graphs[0][1]), [3, 3])
    finally:
        s0.close()
        s1.close()


def test_in_graph_towers_on_two_workers(local_cluster):
    rng = np.random.default_rng(0)
    w_true = rng.normal(size=(4, 1)).astype(np.float32)
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([4, 1]), name="tower_w")
    grads, xs, ys = [], [], []
    for i in range(2):
        with tf.device(f"/job:worker/task:{i}"):
            x = tf.placeholder(tf.float32, [None, 4])
            y = tf.placeholder(tf.float32, [None, 1])
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
            grads.append(tf.gradients(loss, [w])[0])
            xs.append(x)
            ys.append(y)
    with tf.device("/job:ps/task:0"):
        train = tf.assign_sub(w, 0.1 * tf.add_n(grads) / 2.0)
    with tf.Session(local_cluster.target("worker", 0)) as sess:
        sess.run(w.initializer)
        for _ in range(200):
            feed = {}
            for x, y in zip(xs, ys):
                bx = rng.normal(size=(16, 4)).astype(np.float32)
                feed[x], feed[y] = bx, bx @ w_true
            sess.run(train, feed)
        np.testing.assert_allclose(sess.run(w), w_true, atol=1e-2)


def test_remote_error_names_node_and_task(local_cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.ones([2]), name="never_initialized")
    with tf.device("/job:worker/task:1"):
        y = v + 1.0
    with tf.Session(local_cluster.target("worker", 1)) as sess:
        with pytest.raises(errors.FailedPreconditionError) as info:
            sess.run(y)
    msg = str(info.value)
    assert "never_initialized" in msg and "/job:ps/replica:0/task:0" in msg



def test_remote_error_names_the_line_that_made_the_op(local_cluster):
    # The graph crosses two tasks as GraphDefs (client -> master on worker 0 -> ps);
    # the error raised on the ps names this file's line, not the importing thread's.
    with tf.device("/job:ps/task:0"):
        bad = tf.constant([1.0, np.nan])
        checked = tf.check_numerics(bad, "bad on ps")
        line = sys._getframe().f_lineno - 1
    with tf.Session(local_cluster.target("worker", 0)) as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(checked)
    msg = str(info.value)
    assert f"created at {__file__}:{line}" in msg, msg
    assert "threading.py" not in msg

def test_unknown_device_is_a_clear_error(local_cluster):
    with tf.device("/job:ps/task:7"):
        c = tf.constant(1.0, name="lost")
    with tf.Session(local_cluster.target("worker", 0)) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"'ps' has tasks \[0\]"):
            sess.run(c)


@pytest.mark.slow
def test_big_tensor_crosses_between_tasks(local_cluster):
    n = 64 * 1024 * 1024  # 256 MiB of float32
    with tf.device("/job:ps/task:0"):
        big = tf.Variable(tf.zeros([n]), name="big256")
        fill = tf.assign(big, tf.range(n, dtype=tf.float32) * 0.5 if False else
                         tf.fill([n], 3.0))
    with tf.device("/job:worker/task:0"):
        total = tf.reduce_sum(big)
    with tf.Session(local_cluster.target("worker", 0)) as sess:
        sess.run(big.initializer)
        sess.run(fill.op)
        value = sess.run(big)
        assert value.shape == (n,) and value.dtype == np.float32
        assert value[0] == 3.0 and value[-1] == 3.0 and value[n // 2] == 3.0
        assert sess.run(total) == pytest.approx(3.0 * n, rel=1e-3)


def test_session_reset_clears_variables(local_cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.ones([1]), name="reset_me")
    target = local_cluster.target("worker", 0)
    with tf.Session(target) as sess:
        sess.run(v.initializer)
        assert sess.run(v)[0] == 1.0
    tf.Session.reset(target)
    with tf.Session(target) as sess:
        with pytest.raises(errors.FailedPreconditionError):
            sess.run(v)


def test_isolate_session_state(local_cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.ones([1]), name="isolated_v")
    cfg = tf.ConfigProto(isolate_session_state=True)
    with tf.Session(local_cluster.target("worker", 0), config=cfg) as s1:
        s1.run(v.initializer)
        with tf.Session(local_cluster.target("worker", 0), config=cfg) as s2:
            with pytest.raises(errors.FailedPreconditionError):
                s2.run(v)


def test_close_cancels_a_blocked_remote_step(local_cluster):
    with tf.device("/job:ps/task:0"):
        forever = tf.while_loop(lambda i: i >= 0, lambda i: i + 1, [tf.constant(0)])
    sess = tf.Session(local_cluster.target("worker", 0))
    alive, error = run_then_close(sess, forever, wait=1.0, join=15)
    assert not alive
    assert isinstance(error, errors.CancelledError)


@pytest.mark.transports()
def test_task_that_never_comes_up_fails_in_bounded_time():
    spec = cluster_dict(ps=1, workers=1)  # nothing listens on the ps address
    worker = Server(spec, job_name="worker", task_index=0)
    try:
        with tf.device("/job:ps/task:0"):
            c = tf.constant(1.0)
        cfg = tf.ConfigProto(operation_timeout_in_ms=1500)
        start = time.monotonic()
        with tf.Session(worker.target, config=cfg) as sess:
            with pytest.raises(errors.UnavailableError, match=r"/job:ps/replica:0/task:0"):
                sess.run(c)
        assert time.monotonic() - start < 10
    finally:
        worker.stop()


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_killed_task_gives_bounded_time_error():
    with LocalCluster(ps=1, workers=1) as lc:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(tf.ones([2]), name="doomed")
        with tf.device("/job:worker/task:0"):
            y = v * 2.0
        with tf.Session(lc.target("worker", 0),
                        config=tf.ConfigProto(operation_timeout_in_ms=3000)) as sess:
            sess.run(v.initializer)
            sess.run(y)
            lc.kill("ps", 0)
            start = time.monotonic()
            with pytest.raises((errors.UnavailableError, errors.AbortedError)) as info:
                sess.run(y)
            assert time.monotonic() - start < 15
            assert "ps" in str(info.value)


@pytest.mark.transports()
def test_server_constructor_errors():
    spec = {"ps": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]}
    with pytest.raises(ValueError, match="job"):
        Server(spec, start=False)
    with pytest.raises(ValueError, match="task"):
        Server(spec, job_name="worker", start=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="has no port"):  # as TF
        Server({"local": ["localhost"]}, start=False)
    with pytest.raises(ValueError, match="evil"):
        Server(spec, job_name="evil", task_index=0, start=False)


@pytest.mark.transports("grpc", "tcp", "unix", why=PORT)
def test_port_in_use_is_a_clear_error_and_stop_releases_it():
    (port,) = free_ports(1)
    spec = {"local": [f"localhost:{port}"]}
    first = Server(spec, job_name="local", task_index=0)
    try:
        with pytest.raises(tf.errors.UnknownError, match="in use"):  # TF's class
            Server(spec, job_name="local", task_index=0)
    finally:
        first.stop()
    with Server(spec, job_name="local", task_index=0) as again:
        assert again.target == f"grpc://localhost:{port}"


@pytest.mark.transports("grpc", "tcp", "unix", why=PORT)
def test_server_listens_on_loopback_only_for_localhost_tasks():
    server = tf.train.Server.create_local_server()
    try:
        port = int(server.target.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        assert server.server_def.job_name == "local"  # as TF's create_local_server
    finally:
        server.stop()


@pytest.mark.transports()
def test_log_device_placement_prints(capfd):
    server = tf.train.Server.create_local_server()
    try:
        c = tf.constant(2.0, name="placed_const")
        with tf.Session(server.target, config=tf.ConfigProto(log_device_placement=True)) as s:
            s.run(c)
        err = capfd.readouterr().err
        assert "placed_const: (Const): /job:local/replica:0/task:0/device:CPU:0" in err
    finally:
        server.stop()


def test_cluster_spec_exported_under_train():
    spec = tf.train.ClusterSpec({"j": {0: "h:1"}})
    assert spec == ClusterSpec({"j": ["h:1"]})


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", "unix", why=OTHER_PROCESSES)
def test_ps_join_returns_after_job_done_and_sessions_close():
    from tensorweave.distributed.job import notify_job_done
    spec = cluster_dict(ps=1, workers=1)
    with LocalCluster(spec=spec, in_process=(("worker", 0),)) as lc:
        worker = Server(spec, job_name="worker", task_index=0)
        try:
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(1.0, name="job_v")
            sess = tf.Session(worker.target)
            sess.run(v.initializer)
            notified = notify_job_done(worker.target)
            assert notified == ["/job:ps/replica:0/task:0"]
            time.sleep(0.5)
            assert lc.procs[("ps", 0)].poll() is None  # a session is still open there
            sess.close()
            assert lc.procs[("ps", 0)].wait(10) == 0  # join() returned: the ps exited
        finally:
            worker.stop()


def test_remote_session_sees_ops_added_after_first_run(local_cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0, 2.0], name="grow_v")
    with tf.Session(local_cluster.target("worker", 1)) as sess:
        sess.run(v.initializer)
        doubled = tf.concat([v.value(), v.value()], 0)
        np.testing.assert_allclose(sess.run(doubled), [1, 2, 1, 2])
        scaled = v * 2.0
        np.testing.assert_allclose(sess.run(scaled), [2, 4])
        with tf.control_dependencies([scaled]):
            after = tf.identity(doubled)
        np.testing.assert_allclose(sess.run(after), [1, 2, 1, 2])
