"""A worker whose connection to a living ps was reset or refused reconnects (issue 32).

The worker reaches the ps over TCP (protocol "tcp", the path between hosts) through
the userspace fault proxy (`testing/faultproxy.py`) on a second loopback address, so
the test can reset the connection (RST both ends), refuse new ones (the proxy gone
for a while) or hold its bytes (a silent cut), while the ps itself lives. As TF's
fail-fast RPCs, a step while the ps cannot be reached fails with UnavailableError
naming it (MonitoredTrainingSession re-creates its session on that); once the ps can
be reached again, the same session's next steps succeed, with nothing lost or
applied twice.

Timings here are bounds, never targets: the machine is shared.
"""
from __future__ import annotations

import threading
import time

import pytest

import tensorweave as tf
from tensorweave.distributed.server import Server
from tensorweave.distributed.topology import free_ports
from tensorweave.framework import errors
from tensorweave.testing.faultproxy import FaultProxy
from suite_markers import CONNECTION

pytestmark = [pytest.mark.usefixtures("fresh_graph"), pytest.mark.cluster]

PS = "/job:ps/replica:0/task:0"
PROXY_HOST = "127.0.0.2"  # the ps as the worker dials it: the proxy's side of loopback


class _Bed:
    """A ps and a worker in this process over TCP; each dials the other via the proxy."""

    def __init__(self) -> None:
        self.ps_port, self.worker_port, self.ps_via, self.worker_via = free_ports(4)
        self.proxy = self._proxy().start()
        ps_spec = {"ps": [f"127.0.0.1:{self.ps_port}"],
                   "worker": [f"{PROXY_HOST}:{self.worker_via}"]}
        worker_spec = {"ps": [f"{PROXY_HOST}:{self.ps_via}"],
                       "worker": [f"127.0.0.1:{self.worker_port}"]}
        self.ps = Server(ps_spec, "ps", 0, protocol="tcp", exit_when_done=False)
        self.worker = Server(worker_spec, "worker", 0, protocol="tcp", exit_when_done=False)

    def _proxy(self) -> FaultProxy:
        proxy = FaultProxy(names={"127.0.0.1": "tasks"})
        proxy.add_route((PROXY_HOST, self.ps_via), ("127.0.0.1", self.ps_port), name="ps")
        proxy.add_route((PROXY_HOST, self.worker_via), ("127.0.0.1", self.worker_port),
                        name="worker")
        return proxy

    def refuse(self) -> None:
        """Nothing listens where the tasks dial each other (RST to open connections)."""
        self.proxy.close()

    def listen_again(self) -> None:
        self.proxy = self._proxy().start()

    def stop(self) -> None:
        self.worker.stop()
        self.ps.stop()
        self.proxy.close()


@pytest.fixture
def bed():
    b = _Bed()
    try:
        yield b
    finally:
        b.stop()


def _counter(bed):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(0.0, name="count")
        add = tf.assign_add(v, 1.0)
    with tf.device("/job:worker/task:0"):
        out = tf.identity(add)
    sess = tf.Session(bed.worker.target, config=tf.ConfigProto(operation_timeout_in_ms=20000))
    sess.run(v.initializer)
    return sess, out


def _step_until_it_works(sess, out, seconds):
    """Runs the step until it succeeds (UnavailableError meanwhile); returns its value."""
    end = time.monotonic() + seconds
    while True:
        try:
            return sess.run(out)
        except errors.UnavailableError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


@pytest.mark.transports("grpc", "tcp", "unix", why=CONNECTION)
def test_a_reset_connection_to_a_living_ps_is_reopened_by_the_next_step(bed):
    sess, out = _counter(bed)
    with sess:
        assert sess.run(out) == 1.0
        assert bed.proxy.reset("*") >= 1
        assert _step_until_it_works(sess, out, 30) == 2.0
        assert [sess.run(out) for _ in range(3)] == [3.0, 4.0, 5.0]


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", "unix", why=CONNECTION)
def test_refused_while_the_ps_lives_then_the_same_session_goes_on(bed):
    sess, out = _counter(bed)
    with sess:
        assert sess.run(out) == 1.0
        bed.refuse()
        with pytest.raises(errors.UnavailableError, match=PS):
            sess.run(out)
        time.sleep(2)
        bed.listen_again()
        assert _step_until_it_works(sess, out, 30) == 2.0  # the failed steps applied nothing
        assert [sess.run(out) for _ in range(3)] == [3.0, 4.0, 5.0]


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", "unix", why=CONNECTION)
def test_a_step_held_by_a_silent_cut_finishes_once_the_link_heals(bed):
    sess, out = _counter(bed)
    with sess:
        assert sess.run(out) == 1.0
        bed.proxy.cut("*", "*")
        healer = threading.Timer(3.0, bed.proxy.heal)
        healer.start()
        try:
            assert sess.run(out) == 2.0  # the 20 s deadline outlasts the cut
        finally:
            healer.cancel()
            bed.proxy.heal()
        assert sess.run(out) == 3.0
