"""The side channels refuse unauthenticated connections (issue 12): the task port's
big-tensor pulls and the same-host (unix) sockets, spoken to byte by byte against
a live server with credentials, which logs each refused peer and keeps serving.
Beyond TF 1.x, which authenticates nothing.
"""
import logging
import socket
import struct

import pytest

from tensorweave.base import knobs
from tensorweave.distributed.server import Server
from tensorweave.distributed.transport.tcp import bulk, bulk_auth
from tensorweave.distributed.transport.unix import handshake
from tensorweave.distributed.transport import sidechannel
from tensorweave.distributed.transport import credentials as C
from tensorweave.distributed.transport.unix.framing import ERROR, HEAD, REQUEST
from tensorweave.distributed.transport.unix import socket_name
from tensorweave.framework import errors
from tensorweave.launch.credentials import write_cluster_certificates
from tensorweave.testing.cluster import cluster_dict
from suite_markers import ONE_WIRE


_servers: list = []  # the `served` fixture's server, for the tests that look inside it


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_cluster_certificates(str(tmp_path_factory.mktemp("creds")), ["localhost"])


@pytest.fixture(params=["token", "tls"])
def served(request, files):
    """(credentials, address, task) of a started one-task server with credentials."""
    tls = request.param == "tls"
    creds = C.Credentials.from_files(
        ca=files["ca.crt"] if tls else None, cert=files["tls.crt"] if tls else None,
        key=files["tls.key"] if tls else None, token_file=files["token"])
    spec = cluster_dict(0, 1)
    server = Server(spec, "worker", 0, credentials=creds, exit_when_done=False)
    _servers.append(server)
    try:
        yield creds, spec["worker"][0], server.task
    finally:
        _servers.remove(server)
        server.stop()


def _port(address):
    return int(address.rsplit(":", 1)[1])


def _closed_without_answer(sock, timeout=15.0):
    """Whether the server hung up without sending a byte."""
    sock.settimeout(timeout)
    try:
        return sock.recv(64) == b""
    except ConnectionResetError:
        return True


def _ends(sock, timeout=15.0):
    """Whether the server ends the connection (a TLS alert or nothing before)."""
    sock.settimeout(timeout)
    got = b""
    try:
        while chunk := sock.recv(64):
            got += chunk
            assert len(got) < 256, got  # an alert at most, never a protocol answer
    except ConnectionResetError:
        pass
    return True


def _bulk_pull_answer(creds, address, hello):
    """The server's answer to a pull of an unknown token after `hello(sock)`."""
    sock = socket.create_connection(("127.0.0.1", _port(address)), timeout=15)
    try:
        sock = hello(sock)
        sock.sendall(bytes(bulk.TOKEN_BYTES))
        return sock.recv(8)
    except ConnectionResetError:
        return b""  # closed on us, our bytes unread
    finally:
        sock.close()


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_bulk_pull_without_credentials_is_closed(served, caplog):
    creds, address, task = served
    caplog.set_level(logging.WARNING, "tensorweave.security")
    with socket.create_connection(("127.0.0.1", _port(address)), timeout=15) as sock:
        sock.sendall(bulk.MAGIC + bytes(bulk.TOKEN_BYTES))  # the plain protocol, no proof
        assert _closed_without_answer(sock)
    assert any("refused connection from 127.0.0.1" in r.getMessage() and task in
               r.getMessage() for r in caplog.records), caplog.text
    # The port still serves pulls that prove themselves: -1 is "unknown token".
    answer = _bulk_pull_answer(creds, address, lambda s: bulk_auth.open_bulk(
        s, creds, "localhost"))
    assert struct.unpack("<q", answer) == (-1,)


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_bulk_pull_with_wrong_token_is_closed(served):
    creds, address, _ = served
    wrong = C.Credentials(ca=creds.ca, cert=creds.cert, key=creds.key, token=b"guess")
    assert _bulk_pull_answer(creds, address, lambda s: bulk_auth.open_bulk(
        s, wrong, "localhost")) == b""


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_unix_hello_without_credentials_is_refused(served):
    creds, address, _ = served
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(15)
        sock.connect(socket_name(address))
        sock.sendall(handshake.UNIX_HELLO + bytes([0]))  # "I have nothing"
        answer = sock.recv(1)
        assert answer and answer[0] & handshake.FLAG_REFUSED
        assert bool(answer[0] & sidechannel.FLAG_TLS) == creds.tls


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_unix_frame_without_hello_gets_unauthenticated(served):
    """A client that knows nothing of credentials gets its call answered with
    UNAUTHENTICATED (naming the task and what to set), then the connection closes."""
    creds, address, task = served
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(15)
        sock.connect(socket_name(address))
        sock.sendall(HEAD.pack(REQUEST, 0, 0, 77, 0))  # a call with an empty message
        head = sock.recv(HEAD.size, socket.MSG_WAITALL)
        kind, _, code, ident, n = HEAD.unpack(head)
        assert (kind, code, ident) == (ERROR, errors.UNAUTHENTICATED, 77)
        body = sock.recv(n, socket.MSG_WAITALL)
        assert task.encode() in body
        assert (C.CA_ENV if creds.tls else C.TOKEN_FILE_ENV).encode() in body
        assert _closed_without_answer(sock)


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_unix_wrong_token_is_permission_denied_and_right_one_passes(served):
    creds, address, task = served
    wrong = C.Credentials(ca=creds.ca, cert=creds.cert, key=creds.key, token=b"guess")
    for who, expect in ((wrong, errors.PermissionDeniedError), (creds, None)):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(socket_name(address))
        try:
            if expect is None:
                sock = handshake.unix_client_handshake(sock, who, address, task)
                assert sock.gettimeout() is None  # ready for frames
            else:
                with pytest.raises(expect, match="wrong auth token"):
                    handshake.unix_client_handshake(sock, who, address, task)
        finally:
            sock.close()


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_tls_port_refuses_plain_bytes_and_bad_handshakes(files):
    """With TLS, anything but a TLS handshake signed by the CA is dropped (logged), and
    the port goes on serving."""
    creds = C.Credentials.from_files(files["ca.crt"], files["tls.crt"], files["tls.key"])
    spec = cluster_dict(0, 1)
    server = Server(spec, "worker", 0, credentials=creds, exit_when_done=False)
    address = spec["worker"][0]
    try:
        for garbage in (b"hello there, anyone home?", b"\x16\x03\x01\x00\x05hello"):
            with socket.create_connection(("127.0.0.1", _port(address)), timeout=15) as s:
                s.sendall(garbage)
                assert _ends(s)
        answer = _bulk_pull_answer(creds, address, lambda s: bulk_auth.open_bulk(
            s, creds, "localhost"))
        assert struct.unpack("<q", answer) == (-1,)
    finally:
        server.stop()


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_bulk_handshake_that_stalls_is_dropped(served, monkeypatch):
    """A bulk connection that announces a digest and never sends it does not hold its
    thread forever: it is dropped after the handshake timeout."""
    creds, address, _ = served
    monkeypatch.setenv(knobs.HANDSHAKE_TIMEOUT_SECS.name, "0.5")  # read at each handshake
    with socket.create_connection(("127.0.0.1", _port(address)), timeout=15) as sock:
        if creds.tls:
            sock = creds.client_context().wrap_socket(sock, server_hostname="localhost")
        sock.sendall(bulk_auth.BULK_TOKEN_MAGIC + b"12")  # 2 of the 32 digest bytes
        assert _ends(sock)


@pytest.mark.transports("grpc", why=ONE_WIRE)
def test_dialling_the_private_grpc_socket_skips_nothing(served):
    """A process of the host that finds the task's private gRPC socket (abstract
    sockets are listed in /proc/net/unix) and dials it directly, skipping the port's
    TLS and sending no token, is refused by the servers' guard."""
    from tensorweave.distributed.protocol import service_pb2 as pb
    from tensorweave.distributed.protocol.methods import SERVICES, WORKER_SERVICE
    from tensorweave.distributed.transport.tcp import rpc
    from tensorweave.distributed.transport.tcp.peer import GrpcListener

    creds, address, task = served
    server = next(s for s in _servers if s.task == task)
    (listener,) = [li for li in server._listeners if isinstance(li, GrpcListener)]
    private = listener._front._grpc_socket.lstrip("\0")
    client = rpc.Client(f"unix-abstract:{private}", WORKER_SERVICE, SERVICES[WORKER_SERVICE])
    try:
        with pytest.raises(errors.UnauthenticatedError, match=task):
            client.call("get_status", pb.GetStatusRequest(), [], timeout=15)
    finally:
        client.close()
