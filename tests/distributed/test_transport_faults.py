"""A slow or lossy network, made on purpose: the "lossy" test transport (testing/lossy.py)
delays or drops the messages its rules pick, on real same-host sockets between servers of
this process. What the rest does about it: a late tensor only makes the step late; a lost
one ends the step with a deadline error that names the task; a lost status call is
retried until the task answers; the session goes on after a lost step.
"""
import threading

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import master_step
from tensorweave.distributed.transport import registry
from tensorweave.testing import lossy

pytestmark = pytest.mark.usefixtures("fresh_graph")
PS = "/job:ps/replica:0/task:0"
WORKER = "/job:worker/replica:0/task:0"


def _round_trip():
    """The worker doubles its input, the ps adds a variable to it, the worker fetches."""
    with tf.device("/job:ps/task:0"):
        bias = tf.Variable([10.0, 20.0], name="bias")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [2])
        doubled = tf.multiply(x, 2.0, name="doubled")
    with tf.device("/job:ps/task:0"):
        summed = tf.add(doubled, bias, name="summed")
    with tf.device("/job:worker/task:0"):
        out = tf.identity(summed, name="out")
    return bias, x, out


def test_the_lossy_protocol_is_registered_only_while_a_test_uses_it(lossy_cluster):
    assert lossy.NAME in registry.names()
    assert all(s.protocol == lossy.NAME for s in lossy_cluster.servers.values())


def test_late_tensors_make_the_step_late_not_wrong(lossy_cluster):
    bias, x, out = _round_trip()
    delayed = lossy.Rule("push", match="doubled", task=PS, delay_s=0.3)
    lossy.LOSSY.rules = [delayed]
    with tf.Session(lossy_cluster.target("worker", 0)) as sess:
        sess.run(bias.initializer)
        for i in range(3):
            got = sess.run(out, {x: [1.0 + i, 2.0]})
            np.testing.assert_allclose(got, [12.0 + 2 * i, 24.0])
    assert len(delayed.hits) == 3 and all(PS in hit for hit in delayed.hits)


def test_a_lost_tensor_ends_the_step_with_a_deadline_naming_the_task(lossy_cluster):
    bias, x, out = _round_trip()
    lost = lossy.Rule("push", match="doubled", task=PS, drop=True, times=1)
    lossy.LOSSY.rules = [lost]
    config = tf.ConfigProto(operation_timeout_in_ms=1500)
    with tf.Session(lossy_cluster.target("worker", 0), config=config) as sess:
        sess.run(bias.initializer)
        with pytest.raises(tf.errors.DeadlineExceededError) as info:
            sess.run(out, {x: [1.0, 2.0]})
        # Whichever Recv gave up first (the ps's, for the lost tensor, or the worker's,
        # for the sum that could not be made) names its node and the task it waited for.
        message = str(info.value)
        assert (f"doubled:0 from {WORKER}" in message and "_recv/doubled" in message) or \
            (f"summed:0 from {PS}" in message and "_recv/summed" in message), message
        assert len(lost.hits) == 1
        # The rule is spent: the next step's tensors arrive and the session goes on.
        np.testing.assert_allclose(sess.run(out, {x: [1.0, 2.0]}), [12.0, 24.0])


def test_lost_status_calls_are_retried_until_the_task_answers(lossy_cluster):
    """The master asks every task of a new plan for its status, with a timeout; the
    first two answers from the ps are lost, so it asks again."""
    bias, x, out = _round_trip()
    lost = lossy.Rule("call", match="get_status", task=PS, drop=True, times=2)
    lossy.LOSSY.rules = [lost]
    with tf.Session(lossy_cluster.target("worker", 0)) as sess:
        sess.run(bias.initializer)
        np.testing.assert_allclose(sess.run(out, {x: [0.5, 0.5]}), [11.0, 21.0])
    assert len(lost.hits) == 2


def test_dropping_a_call_that_has_no_timeout_is_refused_not_hung(lossy_cluster):
    """A request lost with no timeout would wait forever: the test transport says so."""
    peer = lossy.LOSSY.connect(lossy_cluster.spec["ps"][0], PS, "tensorweave.Worker")
    lossy.LOSSY.rules = [lossy.Rule("call", match="get_status", drop=True)]
    from tensorweave.distributed.protocol import service_pb2 as pb
    with pytest.raises(tf.errors.InternalError, match="no timeout"):
        peer.call("get_status", pb.GetStatusRequest())
    with pytest.raises(tf.errors.DeadlineExceededError, match=f"get_status to task {PS}"):
        peer.call("get_status", pb.GetStatusRequest(), timeout=0.2)


def test_a_lost_run_graph_ends_the_step_at_its_deadline(lossy_cluster, monkeypatch):
    """The ps never gets its part of the step: the master does not wait for that part
    past the step's deadline (plus a grace), and the session goes on."""
    monkeypatch.setattr(master_step, "RUN_GRAPH_GRACE_S", 0.5)
    bias, x, out = _round_trip()
    lost = lossy.Rule("call", match="run_graph", task=PS, drop=True, times=1)
    config = tf.ConfigProto(operation_timeout_in_ms=1500)
    with tf.Session(lossy_cluster.target("worker", 0), config=config) as sess:
        sess.run(bias.initializer)
        lossy.LOSSY.rules = [lost]
        with pytest.raises(tf.errors.DeadlineExceededError, match=f"from {PS}"):
            sess.run(out, {x: [1.0, 2.0]})
        assert len(lost.hits) == 1
        np.testing.assert_allclose(sess.run(out, {x: [1.0, 2.0]}), [12.0, 24.0])


def test_an_unanswered_call_times_out_on_a_unix_link(lossy_cluster):
    """The same-host link fails an async call nobody answers once its timeout passes."""
    from tensorweave.distributed.protocol import service_pb2 as pb
    from tensorweave.distributed.transport.unix import UNIX
    worker = lossy_cluster.servers[("ps", 0)].worker
    blocked, answered = threading.Event(), []
    real = worker.get_status
    worker.get_status = lambda req, tensors=(): (blocked.wait(10), real(req, tensors))[1]
    try:
        peer = UNIX.connect(lossy_cluster.spec["ps"][0], PS, "tensorweave.Worker")
        done = threading.Event()
        peer.call_async("get_status", pb.GetStatusRequest(), [],
                        lambda resp, outs, err: (answered.append(err), done.set()), 0.3)
        assert done.wait(5)
        assert isinstance(answered[0], tf.errors.DeadlineExceededError)
        assert f"get_status to task {PS} timed out" in str(answered[0])
    finally:
        blocked.set()
        worker.get_status = real
