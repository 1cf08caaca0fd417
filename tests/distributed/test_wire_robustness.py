"""The wire survives bad input (issue 12): garbage, truncated prefaces, corrupt bodies of
real methods, oversized messages, unknown handles/tokens and slow-loris connections on
a live server's listening sockets (the task port, which answers gRPC and the bulk side
channel, and the same-host unix socket) each get an error or a closed connection; the
server process stays up and then runs a legitimate step.

TF 1.x leaves this to gRPC alone; our own frames, side channel and unix transport are
checked here. The server is a real process on loopback, so a crash would show.
"""
import os
import socket
import struct
import threading

import grpc
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorweave as tf
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.protocol.methods import (MASTER_METHODS, MASTER_SERVICE,
                                                      WORKER_METHODS, WORKER_SERVICE)
from tensorweave.distributed.protocol.rpc_pb2 import Envelope
from tensorweave.distributed.transport.tcp import bulk, rpc
from tensorweave.distributed.transport import limits
from tensorweave.distributed.transport.unix import socket_name
from tensorweave.testing.cluster import LocalCluster
from suite_markers import ONE_WIRE

pytestmark = pytest.mark.usefixtures("fresh_graph")

HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SERVER_ENV = {limits.ENV_HANDSHAKE_TIMEOUT_SECS: "1", limits.ENV_MAX_CONNECTIONS: "64",
              limits.ENV_MAX_MESSAGE_BYTES: str(4 << 20)}


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(ps=1, workers=0, env=SERVER_ENV) as c:
        yield c


def _address(cluster):
    return cluster.spec["ps"][0]


def _port(cluster):
    return int(_address(cluster).rsplit(":", 1)[1])


def _alive(cluster):
    assert cluster.procs[("ps", 0)].poll() is None, cluster.output("ps", 0)


def _legit_step(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            x = tf.placeholder(tf.float32, [None])
            y = tf.reduce_sum(x * 2.0)
        with tf.Session(cluster.target("ps", 0)) as sess:
            # 8 MiB: more than TENSORWEAVE_MAX_MESSAGE_BYTES, so it must travel in chunks.
            big = np.ones(2 << 20, np.float32)
            assert sess.run(y, {x: big}) == pytest.approx(2.0 * big.size)


def _throw(family, address, data, read=True):
    """Connects, sends `data`, reads whatever comes back (briefly), closes."""
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2.0)
    try:
        s.connect(address)
        s.sendall(data)
        if read:
            # Say we are done sending: a server that waits for the rest of a frame sees
            # the end at once instead of after its handshake timeout (keeps this fast).
            s.shutdown(socket.SHUT_WR)
            try:
                s.recv(65536)
            except OSError:
                pass  # a reset or a timeout: either way this connection is done
    except OSError:
        pass  # the server may close before we are done sending
    finally:
        s.close()


PREFIXES = [b"", HTTP2_PREFACE[:10], HTTP2_PREFACE, bulk.MAGIC, b"\x16\x03\x01\x00\xff"]


@pytest.mark.slow
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=st.sampled_from(PREFIXES), garbage=st.binary(min_size=0, max_size=2048))
@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_garbage_on_every_listening_socket(cluster, prefix, garbage):
    _throw(socket.AF_INET, ("127.0.0.1", _port(cluster)), prefix + garbage)
    _throw(socket.AF_UNIX, socket_name(_address(cluster)), prefix + garbage)


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_server_runs_a_step_after_the_garbage(cluster):
    # Named to run after the fuzz test: the same process took every example above.
    _alive(cluster)
    _legit_step(cluster)


def _call(cluster, service, method, body, stream=False):
    channel = grpc.insecure_channel(_address(cluster))
    try:
        if stream:
            stub = channel.stream_unary(f"/{service}/{method}Stream")
            return stub(iter(body), timeout=30)
        return channel.unary_unary(f"/{service}/{method}")(body, timeout=30)
    finally:
        channel.close()


@pytest.mark.parametrize("service,methods", [(MASTER_SERVICE, MASTER_METHODS),
                                             (WORKER_SERVICE, WORKER_METHODS)])
@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_corrupt_bodies_of_real_methods_are_invalid_argument(cluster, service, methods):
    rng = np.random.default_rng(0)
    bodies = [b"", b"\x01", struct.pack("<I", 1 << 30) + b"xx",  # length past the end
              rng.bytes(300)]
    for m in methods:
        for body in bodies:
            with pytest.raises(grpc.RpcError) as e:
                _call(cluster, service, m.name, body)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (m.name, body)
            assert "Malformed call frame" in e.value.details()
        with pytest.raises(grpc.RpcError) as e:  # the streaming variant, cut short
            _call(cluster, service, m.name, [rng.bytes(64)], stream=True)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    _alive(cluster)


# JobDone is left out: a well-formed one ends the job (the ps exits), by design.
_CALLS = [(svc, m.name) for svc, ms in ((MASTER_SERVICE, MASTER_METHODS),
                                        (WORKER_SERVICE, WORKER_METHODS))
          for m in ms if m.name != "JobDone"]
_CLIENT_ERRORS = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.ABORTED,
                  grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=st.sampled_from(_CALLS), message=st.binary(max_size=80))
@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_well_framed_garbage_messages_get_a_caller_error(cluster, call, message):
    """A valid frame around random message bytes: the answer is a result or the
    caller's error, never INTERNAL/UNKNOWN (a server-side exception)."""
    body = Envelope(message=message).SerializeToString()
    try:
        _call(cluster, call[0], call[1], struct.pack("<I", len(body)) + body)
    except grpc.RpcError as e:
        assert e.code() in _CLIENT_ERRORS, (call, message, e.code(), e.details())


def _frame(message, headers):
    env = Envelope(message=message.SerializeToString())
    for h in headers:
        env.tensors.add().CopyFrom(h)
    body = env.SerializeToString()
    return struct.pack("<I", len(body)) + body


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_an_announced_huge_tensor_is_refused_before_allocating(cluster):
    h = Envelope().tensors.add()
    h.dtype, h.nbytes = 1, 1 << 50
    h.shape.extend([1 << 48])
    with pytest.raises(grpc.RpcError) as e:
        _call(cluster, WORKER_SERVICE, "RunGraph", _frame(pb.RunGraphRequest(), [h]))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert limits.ENV_MAX_TENSOR_BYTES in e.value.details()
    h.nbytes, h.shape[:] = 1 << 20, [1 << 18]  # plausible size, but no bytes follow
    with pytest.raises(grpc.RpcError) as e:
        _call(cluster, WORKER_SERVICE, "RunGraph", _frame(pb.RunGraphRequest(), [h]))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    _alive(cluster)


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_oversized_frames_on_the_unix_socket_end_the_link(cluster):
    from tensorweave.distributed.transport.unix.framing import HEAD, REQUEST
    h = Envelope().tensors.add()
    h.dtype, h.nbytes = 1, 1 << 50
    h.shape.extend([1 << 48])
    env = Envelope(tensors=[h]).SerializeToString()
    for frame in (HEAD.pack(REQUEST, 0, 0, 1, 0xFFFFFFF0),  # a 4 GiB envelope announced
                  HEAD.pack(REQUEST, 0, 0, 1, len(env)) + env):  # a 1 PiB tensor
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        try:
            s.connect(socket_name(_address(cluster)))
            s.sendall(frame)
            assert _closed_by_server(s)
        finally:
            s.close()
    _alive(cluster)


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_an_oversized_message_is_refused(cluster):
    with pytest.raises(grpc.RpcError) as e:
        _call(cluster, WORKER_SERVICE, "GetStatus", b"\0" * (5 << 20))
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    _alive(cluster)
    _legit_step(cluster)  # a bigger tensor than that still goes, in chunks


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_unknown_handles_steps_and_tokens(cluster):
    worker = rpc.Client(_address(cluster), WORKER_SERVICE, WORKER_METHODS)
    master = rpc.Client(_address(cluster), MASTER_SERVICE, MASTER_METHODS)
    try:
        with pytest.raises(tf.errors.AbortedError, match="nope"):
            worker.run_graph(pb.RunGraphRequest(graph_handle="nope", step_id=7), timeout=30)
        with pytest.raises(tf.errors.AbortedError, match="nope"):
            master.run_step(pb.RunStepRequest(session_handle="nope"), timeout=30)
        with pytest.raises(tf.errors.AbortedError, match="nope"):
            master.extend_session(pb.ExtendSessionRequest(session_handle="nope"),
                                  timeout=30)
        with pytest.raises(tf.errors.NotFoundError, match="expired"):
            channel = grpc.insecure_channel(_address(cluster))
            try:
                list(channel.unary_stream(f"/{WORKER_SERVICE}/{rpc.FETCH_METHOD}")(
                    b"\x0a\x04nope", timeout=30))
            except grpc.RpcError as e:
                raise rpc.error_from_rpc(e, _address(cluster)) from None
            finally:
                channel.close()
    finally:
        worker.close()
        master.close()
    # The side channel answers an unknown token with -1 and keeps the connection.
    s = socket.create_connection(("127.0.0.1", _port(cluster)), timeout=30)
    try:
        s.sendall(bulk.MAGIC + os.urandom(bulk.TOKEN_BYTES))
        assert struct.unpack("<q", _recv_exactly(s, 8))[0] == -1
    finally:
        s.close()


def _recv_exactly(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "connection closed early"
        out += chunk
    return out


def _slow_loris(port, n, stop):
    """n connections that each trickle a byte of HTTP/2's preface now and then."""
    socks = []
    for _ in range(n):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            pass
    i = 0
    while not stop.is_set():
        for s in socks:
            try:
                s.send(HTTP2_PREFACE[i % 4:i % 4 + 1])
            except OSError:
                pass
        i += 1
        stop.wait(0.3)
    for s in socks:
        s.close()


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_slow_loris_does_not_block_another_sessions_step(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(0.0)
            inc = tf.assign_add(v, 1.0)
        with tf.Session(cluster.target("ps", 0)) as sess:  # connected before the flood
            sess.run(v.initializer)
            stop = threading.Event()
            loris = threading.Thread(target=_slow_loris, args=(_port(cluster), 40, stop))
            loris.start()
            try:
                for _ in range(5):
                    sess.run(inc)
                _legit_step(cluster)  # a new session, while the trickle goes on
            finally:
                stop.set()
                loris.join()
            assert sess.run(v) == 5.0
    _alive(cluster)


def _closed_by_server(s):
    """EOF or a reset (unread bytes at close); our own 60 s timeout raises instead."""
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_a_silent_or_stalled_connection_is_closed_after_the_handshake_timeout(cluster):
    # "PRI * " is most of HTTP/2's first 8 bytes: the port waits for the rest, but only
    # for TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS (1 s here), then closes the connection.
    silent = socket.create_connection(("127.0.0.1", _port(cluster)), timeout=60)
    stalled = socket.create_connection(("127.0.0.1", _port(cluster)), timeout=60)
    try:
        stalled.sendall(b"PRI * ")
        assert _closed_by_server(stalled)
        assert _closed_by_server(silent)
    finally:
        silent.close()
        stalled.close()
    _alive(cluster)


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_a_flood_of_connections_beyond_the_cap_is_closed(cluster):
    socks = [socket.create_connection(("127.0.0.1", _port(cluster)), timeout=30)
             for _ in range(100)]  # the cap is 64
    try:
        closed = 0
        for s in socks:
            s.settimeout(30)
            closed += _closed_by_server(s)
        assert closed == len(socks)  # the extras at once, the rest after the timeout
    finally:
        for s in socks:
            s.close()
    _alive(cluster)
    assert "64 connections are open already" in cluster.output("ps", 0)
    _legit_step(cluster)
