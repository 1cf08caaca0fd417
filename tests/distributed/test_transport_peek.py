"""sidechannel.peek: the one bounded wait for a connection's first bytes (the task port's
protocol sniffing, the same-host handshake, the shared-memory hello)."""
from __future__ import annotations

import socket

import pytest

from tensorweave.distributed.transport import limits
from tensorweave.distributed.transport.sidechannel import peek
from tensorweave.distributed.transport.unix import shm


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_peek_returns_the_first_bytes_without_consuming_them(pair):
    a, b = pair
    a.sendall(b"HELLO, rest")
    assert peek(b, 5) == b"HELLO"
    assert b.recv(11) == b"HELLO, rest"


def test_peek_stops_early_at_eof_or_when_the_rest_is_not_worth_waiting_for(pair):
    a, b = pair
    a.sendall(b"GE")
    assert peek(b, 5, lambda data: b"HELLO".startswith(data)) == b"GE"
    a.close()
    b.recv(2)
    assert peek(b, 5) == b""


def test_a_peer_that_stops_part_way_is_dropped_after_the_handshake_timeout(pair, monkeypatch):
    monkeypatch.setenv(limits.ENV_HANDSHAKE_TIMEOUT_SECS, "0.2")
    a, b = pair
    a.sendall(b"HE")   # and then nothing: a slow loris
    with pytest.raises(TimeoutError, match=r"first 5 bytes.*2 of them arrived.*"
                       + limits.ENV_HANDSHAKE_TIMEOUT_SECS):
        peek(b, 5)


def test_the_shared_memory_hello_waits_the_same_way(monkeypatch):
    monkeypatch.setenv(limits.ENV_HANDSHAKE_TIMEOUT_SECS, "0.2")
    for sent, expected in [(shm.HELLO, True), (b"\x01frame", False), (shm.HELLO[:2], None)]:
        a, b = socket.socketpair()
        try:
            a.sendall(sent)
            if expected is None:   # part of a hello, then nothing
                with pytest.raises(TimeoutError):
                    shm.offered(b)
            else:
                assert shm.offered(b) is expected
        finally:
            a.close()
            b.close()
