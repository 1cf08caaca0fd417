"""What a TLS client is told when its call to a task fails (issue 32): a task that closes
or resets the connection during the handshake is not called a credentials problem (it
may not admit this host, or be at its connection limit); one that answers something
other than TLS is."""
from __future__ import annotations

import socket
import struct
import threading

import pytest

from tensorweave.distributed.transport import credentials as C
from tensorweave.distributed.transport.tcp.grpc_auth import diagnose
from tensorweave.framework import errors
from tensorweave.launch.credentials import write_cluster_certificates

TASK = "/job:ps/replica:0/task:0"


@pytest.fixture(scope="module")
def creds(tmp_path_factory):
    files = write_cluster_certificates(str(tmp_path_factory.mktemp("creds")), ["localhost"])
    return C.Credentials.from_files(ca=files["ca.crt"], cert=files["tls.crt"],
                                    key=files["tls.key"])


def _serve_once(answer) -> int:
    """A port whose first connection gets `answer(sock)`, then is closed."""
    listener = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        with listener:
            sock, _ = listener.accept()
            answer(sock)
            sock.close()
    threading.Thread(target=run, daemon=True).start()
    return listener.getsockname()[1]


def _reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@pytest.mark.parametrize("answer", [_reset, lambda sock: None], ids=["reset", "closed"])
def test_a_connection_closed_during_the_handshake_names_every_cause(creds, answer):
    err = diagnose("127.0.0.1", _serve_once(answer), creds, TASK)
    assert isinstance(err, errors.UnavailableError), err
    text = err.message
    assert TASK in text and "during the TLS handshake" in text
    assert "ClusterSpec's hosts" in text and "TENSORWEAVE_MAX_CONNECTIONS" in text


def test_a_task_that_answers_without_tls_is_named_so(creds):
    def plain(sock: socket.socket) -> None:
        sock.recv(1024)
        sock.sendall(b"not TLS at all\r\n" * 4)
    err = diagnose("127.0.0.1", _serve_once(plain), creds, TASK)
    assert isinstance(err, errors.UnauthenticatedError), err
    assert "does not answer TLS" in err.message and "same TLS credentials" in err.message
