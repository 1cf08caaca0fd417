"""A ps that stops answering (SIGSTOP: a GC pause, a stalled VM, a partition that sends no
reset) while a worker's step waits on it. With a deadline the step ends at it, naming the
ps; without one, the health checks name the silent ps in WARNING lines and then end the
step with UnavailableError (what MonitoredTrainingSession recovers from). Once the ps is
continued, the same session runs the next step. Every process is stopped in `finally`.
"""
import logging
import os
import signal
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.base import knobs
from tensorweave.testing import lossy
from tensorweave.testing.cluster import LocalCluster
from suite_markers import ONE_WIRE

pytestmark = pytest.mark.usefixtures("fresh_graph")
PS = "/job:ps/replica:0/task:0"
# Generous: the deadline is 3 s and the step should end within 4 s; a loaded CI
# machine must not make this flaky. The time taken is printed.
BOUND_S = 8.0


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def _freeze(pid: int) -> None:
    """SIGSTOP, and wait until the kernel says the process is stopped."""
    os.kill(pid, signal.SIGSTOP)
    end = time.monotonic() + 5
    while not _stopped(pid):
        assert time.monotonic() < end, f"process {pid} did not stop"
        time.sleep(0.01)


def _thaw(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def _graph():
    """The ps adds the worker's value to its variable; the worker fetches the sum."""
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(0.0, name="v")
    with tf.device("/job:worker/task:0"):
        ones = tf.ones([100]) + tf.identity(v) * 0
    with tf.device("/job:ps/task:0"):
        total = v.assign_add(tf.reduce_sum(ones) / 100)
    with tf.device("/job:worker/task:0"):
        out = tf.identity(total) * 1
    return v, out


class _FrozenPs:
    """A ps process and a worker Server in this process, over `protocol`."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self.cluster = LocalCluster(ps=1, workers=1, in_process=(("worker", 0),),
                                    env=knobs.TRANSPORT.setting(protocol))

    def __enter__(self) -> "_FrozenPs":
        self.cluster.start()
        self.pid = self.cluster.procs[("ps", 0)].pid
        self.server = tf.train.Server(tf.train.ClusterSpec(self.cluster.spec),
                                      job_name="worker", task_index=0,
                                      protocol=self.protocol)
        return self

    def __exit__(self, *exc) -> None:
        _thaw(self.pid)  # a stopped process cannot even be killed cleanly
        self.cluster.stop()
        self.server.stop()


@pytest.fixture
def env_protocol(monkeypatch):
    def use(protocol):
        monkeypatch.setenv(knobs.TRANSPORT.name, protocol)  # the client session's
    return use


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["grpc", "tcp", "unix"])
@pytest.mark.parametrize("how", ["run_options", "config"])
def test_a_step_with_a_deadline_ends_on_time_naming_the_frozen_ps(protocol, how,
                                                                  env_protocol):
    env_protocol(protocol)
    config = tf.ConfigProto(operation_timeout_in_ms=3000) if how == "config" else None
    options = tf.RunOptions(timeout_in_ms=3000) if how == "run_options" else None
    with _FrozenPs(protocol) as c:
        v, out = _graph()
        with tf.Session(c.server.target, config=config) as sess:
            sess.run(v.initializer)
            assert sess.run(out, options=options) == 1.0
            try:
                _freeze(c.pid)
                start = time.monotonic()
                with pytest.raises(tf.errors.DeadlineExceededError) as info:
                    sess.run(out, options=options)
                took = time.monotonic() - start
            finally:
                _thaw(c.pid)
            print(f"{protocol}/{how}: the step ended {took:.2f}s after the ps froze")
            assert took < BOUND_S
            assert PS in str(info.value), str(info.value)
            # The ps is back: the same session runs the next step (the frozen one may
            # have run its update once the ps woke up, as TF's may).
            assert sess.run(out, options=options) in (2.0, 3.0)


@pytest.mark.slow
def test_without_a_deadline_a_silent_ps_is_named_then_unavailable(env_protocol, monkeypatch,
                                                                  caplog):
    env_protocol("grpc")
    monkeypatch.setenv(knobs.PEER_SILENCE_SECS.name, "3")
    with _FrozenPs("grpc") as c:
        v, out = _graph()
        with tf.Session(c.server.target) as sess:
            sess.run(v.initializer)
            sess.run(out)
            caplog.set_level(logging.WARNING, logger="tensorweave.master")
            try:
                _freeze(c.pid)
                start = time.monotonic()
                with pytest.raises(tf.errors.UnavailableError) as info:
                    sess.run(out)
                took = time.monotonic() - start
            finally:
                _thaw(c.pid)
            print(f"the silent ps was given up on after {took:.2f}s (bound: 3s of silence)")
            assert 2.0 < took < 3 + BOUND_S
            assert PS in str(info.value) and "health check" in str(info.value)
            warnings = [r.getMessage() for r in caplog.records
                        if r.levelno == logging.WARNING and PS in r.getMessage()]
            assert warnings and "answered no health check for" in warnings[0], warnings
            assert sess.run(out) in (2.0, 3.0)


def test_a_slow_ps_that_answers_health_checks_is_waited_for(lossy_cluster, monkeypatch):
    """The worker's tensors reach the ps 1.5 s late, past the 0.6 s silence bound: the
    ps still answers its health checks, so the step waits and succeeds."""
    monkeypatch.setenv(knobs.PEER_SILENCE_SECS.name, "0.6")
    v, out = _graph()
    with tf.Session(lossy_cluster.target("worker", 0)) as sess:
        sess.run(v.initializer)
        late = lossy.Rule("push", match="add", task=PS, delay_s=1.5, times=1)
        lossy.LOSSY.rules = [late]
        assert sess.run(out) == 1.0
        assert len(late.hits) == 1


def test_a_ps_whose_health_checks_are_lost_is_given_up_on(lossy_cluster, monkeypatch):
    """No deadline: the worker's tensors never reach the ps and no health check is
    answered, so the step ends with UnavailableError naming the ps; then it goes on."""
    monkeypatch.setenv(knobs.PEER_SILENCE_SECS.name, "1")
    v, out = _graph()
    with tf.Session(lossy_cluster.target("worker", 0)) as sess:
        sess.run(v.initializer)
        sess.run(out)  # the plan is made (its wait for the tasks asks for their status)
        lost = lossy.Rule("push", match="add", task=PS, drop=True, times=1)
        unanswered = lossy.Rule("call", match="get_status", task=PS, drop=True)
        lossy.LOSSY.rules = [lost, unanswered]
        with pytest.raises(tf.errors.UnavailableError, match="answered no health check"):
            sess.run(out)
        assert len(lost.hits) == 1 and unanswered.hits
        lossy.LOSSY.rules = []
        np.testing.assert_allclose(sess.run(out), 2.0)


def _answers_again(peer, pb, within: float = 20.0) -> str:
    """The task name of the first get_status that succeeds within `within` s (each call
    bounded; an UnavailableError while the channel reconnects is tried again)."""
    deadline = time.monotonic() + within
    while True:
        try:
            return peer.call("get_status", pb.GetStatusRequest(), timeout=10)[0].task
        except tf.errors.UnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.transports("tcp", why=ONE_WIRE)
def test_a_grpc_call_without_a_timeout_to_a_frozen_task_fails_after_the_silence(monkeypatch):
    """gRPC keepalive: pings while a call is in flight; one unanswered for the bound
    closes the connection and the call fails with UnavailableError naming the task."""
    from tensorweave.distributed.protocol import service_pb2 as pb
    from tensorweave.distributed.transport.tcp.peer import TCP
    monkeypatch.setenv(knobs.PEER_SILENCE_SECS.name, "3")
    with LocalCluster(ps=1, workers=0) as cluster:
        pid = cluster.procs[("ps", 0)].pid
        peer = TCP.connect(cluster.spec["ps"][0], PS, "tensorweave.Worker")
        try:
            assert peer.call("get_status", pb.GetStatusRequest())[0].task == PS
            try:
                _freeze(pid)
                start = time.monotonic()
                with pytest.raises(tf.errors.UnavailableError, match=PS):
                    peer.call("get_status", pb.GetStatusRequest())  # no timeout
                took = time.monotonic() - start
            finally:
                _thaw(pid)
            print(f"the call to the frozen task failed after {took:.2f}s (bound: 3s)")
            assert took < 3 + BOUND_S
            # The channel reconnects by itself: the task answers again. (A call made while
            # gRPC still drains the connection its keepalive closed can fail once more with
            # "Delayed close due to in-progress write": seen once in eight loaded CI runs.)
            assert _answers_again(peer, pb) == PS
        finally:
            peer.close()


@pytest.mark.slow
@pytest.mark.transports("unix", why=ONE_WIRE)
def test_a_unix_link_call_without_a_timeout_to_a_frozen_task_fails_after_the_silence(
        monkeypatch):
    """The same-host link pings a silent peer while calls are in flight; one that answers
    nothing for the bound is given up on: its calls fail with UnavailableError naming it."""
    from tensorweave.distributed.protocol import service_pb2 as pb
    from tensorweave.distributed.transport.unix import UNIX
    monkeypatch.setenv(knobs.PEER_SILENCE_SECS.name, "3")
    with LocalCluster(ps=1, workers=0) as cluster:
        pid = cluster.procs[("ps", 0)].pid
        peer = UNIX.connect(cluster.spec["ps"][0], PS, "tensorweave.Worker")
        try:
            assert peer.call("get_status", pb.GetStatusRequest())[0].task == PS
            try:
                _freeze(pid)
                start = time.monotonic()
                with pytest.raises(tf.errors.UnavailableError, match="health check") as info:
                    peer.call("get_status", pb.GetStatusRequest())  # no timeout
                took = time.monotonic() - start
            finally:
                _thaw(pid)
            print(f"the call to the frozen task failed after {took:.2f}s (bound: 3s)")
            assert took < 3 + BOUND_S and PS in str(info.value)
            assert peer.call("get_status", pb.GetStatusRequest(), timeout=10)[0].task == PS
        finally:
            peer.close()


@pytest.mark.slow
def test_monitored_training_session_recovers_from_a_silent_ps(env_protocol, monkeypatch,
                                                             caplog):
    """The UnavailableError of a silent ps is what MonitoredTrainingSession recovers from:
    it restarts the session (waiting for the ps), and the step runs once the ps is back."""
    import threading
    env_protocol("grpc")
    monkeypatch.setenv(knobs.PEER_SILENCE_SECS.name, "3")
    with _FrozenPs("grpc") as c:
        with tf.device("/job:ps/task:0"):
            step = tf.train.get_or_create_global_step()
            v = tf.Variable(0.0, name="v")
        with tf.device("/job:worker/task:0"):
            grad = tf.identity(v) * 0 + 1.0
        with tf.device("/job:ps/task:0"):
            train = tf.group(v.assign_add(grad), step.assign_add(1))
        with tf.train.MonitoredTrainingSession(master=c.server.target, is_chief=True) as sess:
            sess.run(train)
            caplog.set_level(logging.WARNING)
            thaw = threading.Timer(6.0, _thaw, (c.pid,))
            try:
                _freeze(c.pid)
                thaw.start()
                start = time.monotonic()
                sess.run(train)  # fails after 3 s of silence, recovers once thawed
                took = time.monotonic() - start
            finally:
                thaw.cancel()
                _thaw(c.pid)
            print(f"the step went through recovery in {took:.2f}s (ps frozen for 6 s)")
            assert took > 3.0
            restarts = [r.getMessage() for r in caplog.records
                        if "restarting the session" in r.getMessage()]
            assert restarts and PS in restarts[0] and "health check" in restarts[0], restarts
            assert sess.run(v) >= 1.0
