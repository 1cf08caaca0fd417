"""A session's master calls and Session.reset wait for an unreachable master until the
operation timeout, as TF's master client does (then DeadlineExceededError); with no
timeout an unreachable master is UnavailableError at once. Server.create_local_server
is TF's one-task job "local"."""
from __future__ import annotations

import threading
import time

import pytest

import tensorweave as tf
from tensorweave.distributed.topology import free_ports

from session_helpers import close_while_blocked
from suite_markers import OTHER_PROCESSES

pytestmark = pytest.mark.usefixtures("graph")


@pytest.mark.transports("grpc", "tcp", "unix", why=OTHER_PROCESSES)
def test_a_master_that_comes_up_within_the_timeout_is_waited_for():
    port = free_ports(1)[0]
    servers = []

    def start_later():
        time.sleep(0.8)
        servers.append(tf.train.Server({"local": [f"localhost:{port}"]}, job_name="local",
                                       task_index=0))
    starter = threading.Thread(target=start_later)
    starter.start()
    try:
        config = tf.ConfigProto(operation_timeout_in_ms=20000)
        with tf.Session(f"grpc://localhost:{port}", config=config) as sess:
            assert sess.run(tf.constant(5) * 2) == 10
    finally:
        starter.join()
        for s in servers:
            s.stop()


def test_reset_of_an_unreachable_master_is_deadline_exceeded_after_the_timeout():
    port = free_ports(1)[0]
    start = time.monotonic()
    with pytest.raises(tf.errors.DeadlineExceededError, match=f"localhost:{port}.*300 ms"):
        tf.Session.reset(f"grpc://localhost:{port}", ["c"],
                         config=tf.ConfigProto(operation_timeout_in_ms=300))
    assert time.monotonic() - start >= 0.3


def test_without_a_timeout_an_unreachable_master_is_unavailable_at_once():
    port = free_ports(1)[0]
    start = time.monotonic()
    with pytest.raises(tf.errors.UnavailableError, match=f"localhost:{port}"):
        tf.Session.reset(f"grpc://localhost:{port}", ["c"])
    with pytest.raises(tf.errors.UnavailableError, match=f"localhost:{port}"):
        tf.Session(f"grpc://localhost:{port}").run(tf.constant(1))
    assert time.monotonic() - start < 10


@pytest.mark.transports()
def test_create_local_server_is_tfs_job_local():
    server = tf.train.Server.create_local_server()
    try:
        assert server.server_def.job_name == "local"
        assert list(server.server_def.cluster.job[0].tasks) == [0]
        with tf.device("/job:local"):
            v = tf.Variable(3.0)
        with tf.Session(server.target) as sess:
            sess.run(v.initializer)
            assert sess.run(v) == 3.0
    finally:
        server.stop()


@pytest.mark.transports("grpc", "tcp", "unix", why=OTHER_PROCESSES)
def test_closing_a_session_over_rpc_cancels_its_blocked_step_naming_session_close():
    from tensorweave.framework.proto import config_pb2
    server = tf.train.Server.create_local_server()
    rpc = tf.ConfigProto(rpc_options=config_pb2.RPCOptions(use_rpc_for_inprocess_master=True))
    try:
        q = tf.FIFOQueue(1, [tf.float32])
        take = q.dequeue()
        sess = tf.Session(server.target, config=rpc)
        sess.run(q.enqueue(1.0))
        sess.run(take)
        seen = close_while_blocked(sess, take, wait=0.5)
        assert seen and "Session::Close()" in seen[0]
    finally:
        server.stop()
