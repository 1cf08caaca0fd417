"""What a TLS client is told when a task closes or resets its connection during the TLS
handshake (issue 32): not a credentials problem unless the task answers a plain
connection (no TLS there); otherwise the causes its log can confirm (this host not
admitted, the connection limit)."""
from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Callable

import pytest

from tensorweave.distributed.transport import credentials as C
from tensorweave.distributed.transport.tcp.grpc_auth import diagnose
from tensorweave.framework import errors
from tensorweave.launch.credentials import write_cluster_certificates

TASK = "/job:ps/replica:0/task:0"
Answer = Callable[[socket.socket], None]


@pytest.fixture(scope="module")
def creds():
    import tempfile
    with tempfile.TemporaryDirectory(prefix="tw-diagnose-") as d:
        files = write_cluster_certificates(d, ["localhost"])
        yield C.Credentials.from_files(ca=files["ca.crt"], cert=files["tls.crt"],
                                       key=files["tls.key"])


def _serve(*answers: Answer) -> int:
    """A port whose n-th connection gets answers[n], then is closed; after the last one
    nothing listens there."""
    listener = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        with listener:
            for answer in answers:
                sock, _ = listener.accept()
                answer(sock)
                sock.close()
    threading.Thread(target=run, daemon=True).start()
    return listener.getsockname()[1]


def _hello_then_close(sock: socket.socket) -> None:
    sock.recv(4096)  # the ClientHello: the client now waits for the server's


def _hello_then_reset(sock: socket.socket) -> None:
    sock.recv(4096)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _close_at_once(sock: socket.socket) -> None:
    pass


def _answer_plainly(sock: socket.socket) -> None:
    sock.recv(4096)
    sock.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")  # an HTTP/2 SETTINGS frame


@pytest.mark.parametrize("handshake", [_hello_then_close, _hello_then_reset],
                         ids=["closed", "reset"])
def test_a_task_that_answers_a_plain_connection_is_named_as_without_tls(creds, handshake):
    err = diagnose("127.0.0.1", _serve(handshake, _answer_plainly), creds, TASK)
    assert isinstance(err, errors.UnauthenticatedError), err
    assert TASK in err.message and "does not answer TLS" in err.message
    assert "same TLS credentials" in err.message


@pytest.mark.parametrize("handshake", [_hello_then_close, _hello_then_reset],
                         ids=["closed", "reset"])
def test_a_task_that_closes_a_plain_connection_too_is_not_called_a_credentials_problem(
        creds, handshake):
    err = diagnose("127.0.0.1", _serve(handshake, _close_at_once), creds, TASK)
    assert isinstance(err, errors.UnavailableError), err
    text = err.message
    assert TASK in text and "during the TLS handshake" in text
    assert "ClusterSpec's hosts" in text and "TENSORWEAVE_MAX_CONNECTIONS" in text
    assert "may not use TLS" not in text


def test_with_no_plain_answer_every_cause_is_named(creds, monkeypatch):
    from tensorweave.distributed.transport.tcp import grpc_auth
    monkeypatch.setattr(grpc_auth, "_PLAIN_ANSWER_SECS", 0.3)

    def silent(sock: socket.socket) -> None:  # accepts the plain connection, says nothing
        time.sleep(1.0)
    err = diagnose("127.0.0.1", _serve(_hello_then_close, silent), creds, TASK)
    assert isinstance(err, errors.UnavailableError), err
    assert "may not use TLS" in err.message and "ClusterSpec's hosts" in err.message


def test_a_task_that_answers_garbage_to_tls_is_named_as_without_tls(creds):
    def garbage(sock: socket.socket) -> None:
        sock.recv(4096)
        sock.sendall(b"not TLS at all\r\n" * 4)
    err = diagnose("127.0.0.1", _serve(garbage), creds, TASK)
    assert isinstance(err, errors.UnauthenticatedError), err
    assert "does not answer TLS" in err.message
