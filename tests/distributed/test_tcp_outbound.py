"""gRPC to other tasks over TCP connections this process makes (transport/tcp/outbound.py):
tuned so that a healed partition costs about a second, not TCP's back-off; a failed
connect is named by its cause."""
from __future__ import annotations

import socket

import pytest

import tensorweave as tf
from tensorweave.base import knobs
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.topology import free_ports
from tensorweave.distributed.transport.tcp import outbound
from tensorweave.distributed.transport.tcp.peer import TCP
from tensorweave.testing.cluster import LocalCluster
from suite_markers import ONE_WIRE

_RTO_MAX = 44  # TCP_RTO_MAX_MS


needs_rto_max = pytest.mark.skipif(not outbound.kernel_has_rto_max(),
                                   reason="this kernel has no TCP_RTO_MAX_MS (Linux 6.14+)")


@needs_rto_max
def test_a_link_retransmits_at_most_the_knob_apart_and_a_listener_passes_it_on(monkeypatch):
    monkeypatch.setenv(knobs.TCP_RETRANSMIT_MAX_SECS.name, "2.5")
    listener = socket.create_server(("127.0.0.1", 0))
    outbound.tune_link(listener)
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    try:
        assert accepted.getsockopt(socket.IPPROTO_TCP, _RTO_MAX) == 2500
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        assert client.getsockopt(socket.IPPROTO_TCP, _RTO_MAX) != 2500  # untouched
        outbound.tune_link(client)
        assert client.getsockopt(socket.IPPROTO_TCP, _RTO_MAX) == 2500
    finally:
        for s in (client, accepted, listener):
            s.close()


@needs_rto_max
def test_under_a_second_is_the_kernel_s_floor_of_one(monkeypatch):
    monkeypatch.setenv(knobs.TCP_RETRANSMIT_MAX_SECS.name, "0.2")
    with socket.socket() as s:
        outbound.tune_link(s)
        assert s.getsockopt(socket.IPPROTO_TCP, _RTO_MAX) == 1000


@needs_rto_max
def test_zero_keeps_the_kernel_s_back_off(monkeypatch):
    monkeypatch.setenv(knobs.TCP_RETRANSMIT_MAX_SECS.name, "0")
    with socket.socket() as s:
        kernel = s.getsockopt(socket.IPPROTO_TCP, _RTO_MAX)
        outbound.tune_link(s)
        assert s.getsockopt(socket.IPPROTO_TCP, _RTO_MAX) == kernel


def test_with_the_knob_at_zero_grpc_dials_itself(monkeypatch):
    monkeypatch.setenv(knobs.TCP_RETRANSMIT_MAX_SECS.name, "0")
    assert outbound.grpc_target("10.0.0.2", 2222) == "10.0.0.2:2222"


@needs_rto_max
@pytest.mark.transports("tcp", why=ONE_WIRE)
def test_a_tcp_call_goes_through_this_process_s_dialer_and_its_tuned_connection():
    with LocalCluster(ps=1, workers=0) as cluster:
        address = cluster.spec["ps"][0]
        host, port = address.rsplit(":", 1)
        peer = TCP.connect(address, "/job:ps/replica:0/task:0", "tensorweave.Worker")
        try:
            status = peer.call("get_status", pb.GetStatusRequest(), timeout=30)[0]
            assert status.task == "/job:ps/replica:0/task:0"
        finally:
            peer.close()
        dialer = outbound._dialers[(host, int(port))]
        assert dialer.target.startswith("unix-abstract:tw-dial-") and dialer.error == ""


@needs_rto_max
def test_a_failed_connect_is_named_by_its_cause():
    (port,) = free_ports(1)  # nothing listens there
    peer = TCP.connect(f"127.0.0.1:{port}", "/job:ps/replica:0/task:0", "tensorweave.Worker")
    try:
        with pytest.raises(tf.errors.UnavailableError) as info:
            peer.call("get_status", pb.GetStatusRequest(), timeout=10)
    finally:
        peer.close()
    message = str(info.value)
    assert f"connecting to 127.0.0.1:{port} failed: Connection refused" in message, message
    assert "/job:ps/replica:0/task:0" in message


def _hung_listener() -> tuple[socket.socket, list[socket.socket]]:
    """A loopback listener whose accept queue is full: a connect to it hangs (the kernel
    drops its SYNs), as one to a task behind a partition does."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers = []
    for _ in range(4):  # fill the queue; these connect, later ones hang
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(listener.getsockname())
        fillers.append(s)
    return listener, fillers


def _dial(dialer: outbound.Dialer) -> socket.socket:
    """What gRPC does: a connection to the dialer's abstract socket."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0" + dialer.target.split(":", 1)[1])
    return s


def test_connects_hanging_on_one_task_hold_up_none_to_another():
    # Before: each connect held a thread of an 8-thread pool for up to 20 s, so gRPC's
    # retries to one task behind a partition starved every other task's connects (a
    # first call timed out "before receiving SETTINGS frame" in the suite).
    hung, fillers = _hung_listener()
    healthy = socket.create_server(("127.0.0.1", 0))
    stuck = outbound.Dialer("127.0.0.1", hung.getsockname()[1])
    good = outbound.Dialer("127.0.0.1", healthy.getsockname()[1])
    clients = [_dial(stuck) for _ in range(12)]  # more than the old pool's threads
    try:
        clients.append(_dial(good))
        healthy.settimeout(10)
        accepted, _ = healthy.accept()  # relayed at once, while the others still hang
        accepted.close()
        assert stuck.error == "", stuck.error  # none of the hung connects has given up
    finally:
        for s in clients + fillers + [hung, healthy]:
            s.close()
