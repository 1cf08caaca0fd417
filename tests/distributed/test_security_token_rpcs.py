"""Issue 32: with a token configured, what a stranger could do to a task is refused.

The three things the issue names: stopping the ps (JobDone), wiping every variable
(Session.reset) and making the task write files (a graph with a file op). A client
without the token gets UnauthenticatedError naming the call it tried and the variable
to set; the task keeps its variables, its files and its `join()`. The client reaches
the server (of this process) over each socket transport: gRPC on TCP and the
same-host Unix link, whose handshakes differ.
"""
from __future__ import annotations

import logging

import pytest

import tensorweave as tf
from tensorweave.base import knobs
from tensorweave.distributed.job import notify_job_done
from tensorweave.distributed.topology import free_ports
from tensorweave.distributed.transport import credentials as C
from tensorweave.distributed.transport import sidechannel

TOKEN = C.Credentials(token=b"the-cluster-secret")


@pytest.fixture(params=["tcp", "unix"])
def ps(request, monkeypatch):
    """A ps with a token, holding a variable (5.0) that a client with the token set."""
    monkeypatch.setenv(knobs.TRANSPORT.name, request.param)
    monkeypatch.setattr(sidechannel, "_last_logged", {})
    server = tf.train.Server({"ps": [f"localhost:{free_ports(1)[0]}"]}, job_name="ps",
                             task_index=0, credentials=TOKEN)
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:ps/task:0"):
        v = tf.Variable(5.0, name="v")
    C.set_default(TOKEN)
    try:
        with tf.Session(server.target, graph=graph) as sess:
            sess.run(v.initializer)
        C.set_default(C.NONE)  # from here on, this process is a client without the token
        yield server, graph, v
    finally:
        C.set_default(None)
        server.stop()


def _value(server, graph, v) -> float:
    C.set_default(TOKEN)
    try:
        with tf.Session(server.target, graph=graph) as sess:
            return float(sess.run(v))
    finally:
        C.set_default(C.NONE)


def _assert_names(message: str, method: str) -> None:
    assert f"refused the {method} call" in message, message
    assert "requires an auth token" in message and C.TOKEN_FILE_ENV in message, message
    assert "/job:ps/replica:0/task:0" in message, message


def test_reset_without_the_token_is_refused(ps):
    server, graph, v = ps
    with pytest.raises(tf.errors.UnauthenticatedError) as info:
        tf.Session.reset(server.target)
    _assert_names(info.value.message, "Reset")
    assert _value(server, graph, v) == 5.0  # nothing was reset
    C.set_default(TOKEN)
    tf.Session.reset(server.target)  # the token's holder may
    C.set_default(C.NONE)
    with pytest.raises(tf.errors.FailedPreconditionError):
        _value(server, graph, v)  # reset: the variable is uninitialized again


def test_job_done_without_the_token_is_refused(ps, caplog):
    server, _, _ = ps
    with caplog.at_level(logging.WARNING):
        assert notify_job_done(server.target) == []
    refusals = [r.getMessage() for r in caplog.records  # what the chief's log says
                if r.name == "tensorweave.job" and "refused" in r.getMessage()]
    assert refusals, [r.getMessage() for r in caplog.records]
    _assert_names(refusals[0], "JobDone")
    assert not server.worker.job_done_event.is_set()  # the ps keeps serving
    C.set_default(TOKEN)
    try:
        assert notify_job_done(server.target) == ["/job:ps/replica:0/task:0"]
    finally:
        C.set_default(C.NONE)
    assert server.worker.job_done_event.is_set()


def test_file_ops_without_the_token_are_refused(ps, tmp_path):
    server, _, _ = ps
    victim = tmp_path / "existing.txt"
    victim.write_text("keep me")
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            write = tf.write_file(str(victim), "overwritten")
            read = tf.read_file(str(victim))
        with pytest.raises(tf.errors.UnauthenticatedError) as info:
            with tf.Session(server.target) as sess:
                sess.run(write)
        _assert_names(info.value.message, "CreateSession")
        with pytest.raises(tf.errors.UnauthenticatedError):
            with tf.Session(server.target) as sess:
                sess.run(read)
    assert victim.read_text() == "keep me"
