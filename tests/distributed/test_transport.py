"""One test body, every registered transport: the default "grpc", in-process servers,
gRPC on TCP, same-host Unix sockets.

The `net` fixture (tests/conftest.py) is parametrised by `registry.names()` (torch RPC's
habit: write the test once, run it against every backend). Also: protocols chosen by
name (Server(protocol=...), ServerDef.protocol, TENSORWEAVE_TRANSPORT), task-name
helpers, and `import tensorweave` staying free of grpc.
"""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import peers
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.protocol.methods import WORKER_SERVICE
from tensorweave.distributed.transport import registry
from tensorweave.framework import errors
from tensorweave.framework.device import (
    parse_task_name, task_device, task_name, device_task)
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from suite_markers import DEFAULT_PROTOCOL, PORT, TASK_PROCESSES


pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_values_cross_tasks_both_ways(net):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0, 2.0], name="v")
    with tf.device("/job:worker/task:0"):
        doubled = v * 2.0
    with tf.device("/job:ps/task:0"):
        back = doubled + 1.0   # worker -> ps
    with tf.Session(net.target("worker", 1)) as sess:
        sess.run(v.initializer)
        d, b = sess.run([doubled, back])
    np.testing.assert_allclose(d, [2.0, 4.0])
    np.testing.assert_allclose(b, [3.0, 5.0])


def test_between_graph_updates_are_shared(net):
    with tf.device("/job:ps/task:0"):
        counter = tf.Variable(0, name="shared_counter")
    with tf.device("/job:worker/task:0"):
        inc = tf.assign_add(counter, 1)
    with tf.Session(net.target("worker", 0)) as s0, tf.Session(net.target("worker", 1)) as s1:
        s0.run(counter.initializer)
        for _ in range(3):
            s0.run(inc)
            s1.run(inc)
        assert s1.run(counter) == 6


def test_big_and_string_tensors_arrive_intact(net):
    n = 3 * 1024 * 1024  # 12 MiB of float32: beyond any inline/frame limit
    with tf.device("/job:ps/task:0"):
        big = tf.range(n, dtype=tf.float32) * 0.5
        words = tf.constant([b"push", b"", b"not pull" * 1000])
    with tf.device("/job:worker/task:0"):
        total = tf.reduce_sum(big[-4:])
        joined = tf.identity(words)
    with tf.Session(net.target("worker", 0)) as sess:
        t, w, b = sess.run([total, joined, big])
    assert t == pytest.approx(sum((n - k) * 0.5 for k in range(1, 5)))
    assert list(w) == [b"push", b"", b"not pull" * 1000]
    assert b.shape == (n,) and b[12345] == 12345 * 0.5


def test_control_edge_across_tasks_orders_the_update(net):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(10.0, name="ctl_v")
        bump = tf.assign_add(v, 5.0)
    with tf.device("/job:worker/task:1"):
        with tf.control_dependencies([bump]):
            marker = tf.constant(1.0)
    with tf.Session(net.target("worker", 1)) as sess:
        sess.run(v.initializer)
        sess.run(marker)
        assert sess.run(v) == 15.0


def test_remote_failure_names_node_and_task_and_session_goes_on(net):
    with tf.device("/job:ps/task:0"):
        never = tf.Variable(tf.ones([2]), name="never_set")
        ok = tf.constant(7.0)
    with tf.device("/job:worker/task:0"):
        y = never + 1.0
        z = ok * 2.0
    with tf.Session(net.target("worker", 0)) as sess:
        with pytest.raises(errors.FailedPreconditionError) as info:
            sess.run(y)
        assert "never_set" in str(info.value) and "/job:ps/replica:0/task:0" in str(info.value)
        assert sess.run(z) == 14.0  # the failed step left nothing behind


def test_training_steps_over_the_transport(net):
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64, 8)).astype(np.float32)
    ys = (xs @ rng.normal(size=(8, 1))).astype(np.float32)
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:0", cluster=tf.train.ClusterSpec(net.spec))):
        x = tf.placeholder(tf.float32, [None, 8])
        y = tf.placeholder(tf.float32, [None, 1])
        w = tf.get_variable("w", [8, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session(net.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: xs, y: ys})
        for _ in range(30):
            sess.run(train, {x: xs, y: ys})
        assert sess.run(loss, {x: xs, y: ys}) < first * 0.2


def _replica(net, task, build):
    """A worker's own graph (between-graph replication): variables on the ps by
    replica_device_setter, ops on /job:worker/task:<task>; `build()` returns the model."""
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{task}", cluster=tf.train.ClusterSpec(net.spec))):
        return g, build()


def test_between_graph_training_over_the_transport(net):
    """Two workers, each its own graph and session, train the same ps variables."""
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(32, 4)).astype(np.float32)
    ys = (xs @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32))

    def model():
        x = tf.placeholder(tf.float32, [None, 4])
        y = tf.placeholder(tf.float32, [None, 1])
        w = tf.get_variable("between_w", [4, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        return x, y, w, loss, tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    (g0, (x0, y0, w0, loss0, train0)), (g1, (x1, y1, w1, _, train1)) = [
        _replica(net, i, model) for i in (0, 1)]
    with tf.Session(net.target("worker", 0), graph=g0) as s0, \
            tf.Session(net.target("worker", 1), graph=g1) as s1:
        s0.run(w0.initializer)
        first = s0.run(loss0, {x0: xs, y0: ys})
        for _ in range(20):
            s0.run(train0, {x0: xs, y0: ys})
            s1.run(train1, {x1: xs, y1: ys})
        np.testing.assert_array_equal(s0.run(w0), s1.run(w1))  # one set of variables
        assert s0.run(loss0, {x0: xs, y0: ys}) < first * 0.05


def test_sync_replicas_average_two_workers_over_the_transport(net):
    """SyncReplicasOptimizer across the two workers: each step applies their average."""
    def model():
        step = tf.train.get_or_create_global_step()
        w = tf.Variable([0.0], name="sync_w")
        target = tf.placeholder(tf.float32, [1])
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0),
                                             replicas_to_aggregate=2, total_num_replicas=2)
        train = opt.minimize(tf.reduce_sum(tf.square(w - target)) / 2.0, global_step=step)
        return opt, train, target, w, step
    replicas = [_replica(net, i, model) for i in (0, 1)]
    sessions, hooks, coord = [], [], tf.train.Coordinator()
    for i, (g, (opt, *_)) in enumerate(replicas):
        hook = opt.make_session_run_hook(is_chief=i == 0)
        with g.as_default():
            hook.begin()
            init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
        sess = tf.Session(net.target("worker", i), graph=g)
        sess.run(init if i == 0 else init[1:])
        hook.after_create_session(sess, coord)
        sessions.append(sess)
        hooks.append(hook)
    try:
        threads = [threading.Thread(target=sessions[i].run, args=(
            replicas[i][1][1], {replicas[i][1][2]: [2.0 if i == 0 else 4.0]})) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        _, (_, _, _, w, step) = replicas[0]
        deadline = time.monotonic() + 30  # the chief's queue runner applies the average
        while sessions[0].run(step) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sessions[0].run(step) == 1
        np.testing.assert_allclose(sessions[0].run(w), [3.0])  # 0 - mean(0-2, 0-4)
    finally:
        hooks[0].end(sessions[0])
        coord.request_stop()
        for sess in sessions:
            sess.close()


# ---- the one choice point: protocols by name ---------------------------------------
@pytest.mark.transports("grpc", why=DEFAULT_PROTOCOL)
def test_connect_prefers_this_process_then_unix_then_tcp(monkeypatch):
    spec = cluster_dict(1, 0)
    server = tf.train.Server(spec, job_name="ps", task_index=0, exit_when_done=False)
    try:
        peer = peers.connect(spec["ps"][0], "/job:ps/replica:0/task:0", WORKER_SERVICE)
        assert isinstance(peer, peers.InProcessPeer) and peer.local_service is server.worker
        assert peer.call("get_status", pb.GetStatusRequest())[0].task == server.task
    finally:
        server.stop()
    other = "localhost:1"  # nothing there: peers are made lazily, calls fail
    monkeypatch.delenv("TENSORWEAVE_TRANSPORT", raising=False)
    unix_peer = peers.connect(other, "t", WORKER_SERVICE)
    assert type(unix_peer).__name__ == "UnixPeer" and unix_peer.local_service is None
    assert type(peers.connect(other, "t", WORKER_SERVICE, protocol="unix")).__name__ == \
        "UnixPeer"
    monkeypatch.setenv("TENSORWEAVE_TRANSPORT", "tcp")
    tcp_peer = peers.connect(other, "t", WORKER_SERVICE)
    assert type(tcp_peer).__name__ == "GrpcPeer" and not tcp_peer.shares_memory
    tcp_peer.close()
    # An explicit protocol beats the variable.
    assert type(peers.connect(other, "t", WORKER_SERVICE, protocol="grpc")).__name__ == \
        "UnixPeer"
    monkeypatch.setenv("TENSORWEAVE_TRANSPORT", "carrier-pigeon")
    with pytest.raises(ValueError, match="carrier-pigeon") as info:
        peers.connect(other, "t", WORKER_SERVICE)
    assert all(name in str(info.value) for name in ("grpc", "inprocess", "tcp", "unix"))


def test_inprocess_protocol_reaches_only_this_processs_servers(monkeypatch):
    monkeypatch.delenv("TENSORWEAVE_TRANSPORT", raising=False)
    with pytest.raises(errors.UnavailableError, match="'inprocess'.*localhost:1"):
        peers.connect("localhost:1", "/job:ps/replica:0/task:0", WORKER_SERVICE,
                      protocol="inprocess")


def test_registry_lists_every_protocol_default_first():
    assert registry.names()[0] == "grpc" == registry.DEFAULT
    assert set(registry.names()) >= {"grpc", "inprocess", "tcp", "unix"}
    assert registry.resolve("AUTO") == "grpc"  # the variable's old spelling of the default
    with pytest.raises(ValueError, match="already"):
        registry.register("unix", ("x:y",), True, "a second unix")
    with pytest.raises(ValueError, match="built in"):
        registry.unregister("grpc")


@pytest.mark.parametrize("protocol", registry.names())
def test_server_protocol_takes_every_registered_name(protocol, monkeypatch):
    """Server(protocol=...) as TF's switch: each name runs a step across two tasks."""
    monkeypatch.delenv("TENSORWEAVE_TRANSPORT", raising=False)
    spec = cluster_dict(1, 1)
    servers = [tf.train.Server(spec, job_name=job, task_index=0, protocol=protocol,
                               exit_when_done=False) for job in ("ps", "worker")]
    try:
        assert [s.protocol for s in servers] == [protocol] * 2
        assert servers[0].server_def.protocol == protocol
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable([1.0, 2.0], name="proto_v")
            with tf.device("/job:worker/task:0"):
                doubled = v * 2.0
            with tf.Session(servers[1].target, graph=g) as sess:
                sess.run(v.initializer)
                np.testing.assert_allclose(sess.run(doubled), [2.0, 4.0])
    finally:
        for s in servers:
            s.stop()


@pytest.mark.transports()
def test_server_def_protocol_chooses_and_unknown_names_are_refused(monkeypatch):
    monkeypatch.delenv("TENSORWEAVE_TRANSPORT", raising=False)
    spec = cluster_dict(1, 0)
    server_def = tf.train.ServerDef(cluster=tf.train.ClusterSpec(spec).as_cluster_def(),
                                    job_name="ps", task_index=0, protocol="tcp")
    server = tf.train.Server(server_def, start=False)
    assert server.protocol == "tcp"
    assert tf.train.Server(spec, start=False).protocol == "grpc"  # TF's default
    monkeypatch.setenv("TENSORWEAVE_TRANSPORT", "unix")
    assert tf.train.Server(spec, start=False).protocol == "unix"
    assert tf.train.Server(spec, protocol="grpc", start=False).protocol == "grpc"
    with pytest.raises(ValueError, match=r"'grpc\+verbs'.*\['grpc', 'inprocess', 'tcp', "
                                         r"'unix'"):
        tf.train.Server(spec, protocol="grpc+verbs", start=False)


def test_unreachable_task_is_unavailable_and_named(monkeypatch):
    monkeypatch.delenv("TENSORWEAVE_TRANSPORT", raising=False)
    peer = peers.connect("localhost:1", "/job:ps/replica:0/task:9", WORKER_SERVICE)
    with pytest.raises(errors.UnavailableError, match="task:9"):
        peer.call("get_status", pb.GetStatusRequest(), timeout=1.0)


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_killed_peer_fails_calls_in_flight(monkeypatch):
    monkeypatch.delenv("TENSORWEAVE_TRANSPORT", raising=False)
    with LocalCluster(ps=1, workers=0, spec=cluster_dict(1, 0)) as lc:
        peer = peers.connect(lc.spec["ps"][0], "/job:ps/replica:0/task:0", WORKER_SERVICE)
        assert peer.call("get_status", pb.GetStatusRequest())[0].task.endswith("task:0")
        lc.kill("ps", 0)
        with pytest.raises(errors.UnavailableError, match="task:0"):
            peer.call("get_status", pb.GetStatusRequest(), timeout=10.0)


@pytest.mark.transports("grpc", "tcp", "unix", why=PORT)
def test_second_server_on_same_address_is_refused():
    spec = cluster_dict(1, 0)
    first = tf.train.Server(spec, job_name="ps", task_index=0, exit_when_done=False)
    try:
        with pytest.raises(tf.errors.UnknownError, match="in use"):
            tf.train.Server(spec, job_name="ps", task_index=0)
    finally:
        first.stop()


# ---- task names ---------------------------------------------------------------------
def test_task_names_have_one_home():
    assert task_name("ps", 2) == "/job:ps/replica:0/task:2"
    assert task_device(task_name("worker", 0)) == "/job:worker/replica:0/task:0/device:CPU:0"
    assert device_task("/job:ps/task:1/cpu:0") == "/job:ps/replica:0/task:1"
    assert parse_task_name("/job:worker/replica:0/task:3") == ("worker", 3)
    with pytest.raises(ValueError, match="cpu:0"):
        device_task("/cpu:0")
    with pytest.raises(ValueError, match="not a task name"):
        parse_task_name("/device:CPU:0")


@pytest.mark.slow
def test_import_tensorweave_does_not_load_grpc():
    code = ("import sys, tensorweave as tf; assert 'grpc' not in sys.modules, 'grpc loaded'; "
            "tf.train.Server.create_local_server().stop(); assert 'grpc' in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), timeout=120)
    assert out.returncode == 0, out.stderr
