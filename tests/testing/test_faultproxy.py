"""The fault proxy itself (`tensorweave.testing.faultproxy`), on loopback: bytes pass,
delay adds latency, a cut stops bytes silently and heal resumes them, a blackhole
loses them, a reset closes connections."""
from __future__ import annotations

import socket
import threading
import time
from typing import Iterator

import pytest

from tensorweave.testing.faultproxy import FaultProxy


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    """An echo server on loopback (one thread per connection)."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                while data := conn.recv(65536):
                    conn.sendall(data)
            except ConnectionResetError:  # the proxy's reset and heal tests do this
                pass

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except (TimeoutError, socket.timeout):
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    yield srv.getsockname()[:2]
    stop.set()
    t.join(2)
    srv.close()


@pytest.fixture
def proxy(echo: tuple[str, int]) -> Iterator[tuple[FaultProxy, tuple[str, int]]]:
    with FaultProxy(names={"127.0.0.1": "client"}) as p:
        yield p, p.add_route(("127.0.0.1", 0), echo, name="echo")


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise EOFError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)


def _silent(sock: socket.socket, secs: float) -> bool:
    """Whether nothing (no byte, no FIN, no reset) arrives on `sock` for `secs`."""
    sock.settimeout(secs)
    try:
        sock.recv(1)
    except (TimeoutError, socket.timeout):
        return True
    finally:
        sock.settimeout(10)
    return False


def test_bytes_pass_both_ways_and_are_counted(proxy: tuple[FaultProxy, tuple[str, int]]
                                              ) -> None:
    p, addr = proxy
    payload = bytes(range(256)) * 8192  # 2 MiB: more than a socket buffer
    with socket.create_connection(addr, timeout=10) as s:
        threading.Thread(target=s.sendall, args=(payload,), daemon=True).start()
        assert _recv_exactly(s, len(payload)) == payload
        assert p.connections("client", "echo") == 1
    assert p.forwarded("client", "echo") == len(payload)
    assert p.forwarded("echo", "client") == len(payload)


def test_delay_adds_latency_and_keeps_order(proxy: tuple[FaultProxy, tuple[str, int]]
                                            ) -> None:
    p, addr = proxy
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(b"warm")
        assert _recv_exactly(s, 4) == b"warm"
        p.delay("client", "echo", 0.3, jitter=0.1)
        start = time.monotonic()
        for i in range(20):
            s.sendall(b"%03d" % i)
        got = _recv_exactly(s, 60)
        assert time.monotonic() - start >= 0.3
        assert got == b"".join(b"%03d" % i for i in range(20))
        p.heal("client", "echo")
        start = time.monotonic()
        s.sendall(b"fast")
        assert _recv_exactly(s, 4) == b"fast"
        print(f"round trip after heal: {time.monotonic() - start:.4f}s")


def test_cut_is_silent_and_heal_delivers_what_waited(proxy: tuple[FaultProxy, tuple[str, int]]
                                                     ) -> None:
    p, addr = proxy
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(b"before")
        assert _recv_exactly(s, 6) == b"before"
        p.cut("client", "echo")
        s.sendall(b"during")
        assert _silent(s, 0.5)  # no bytes, no FIN, no RST
        sent = p.forwarded()
        # A connection made during the cut is accepted but nothing crosses it.
        with socket.create_connection(addr, timeout=10) as s2:
            s2.sendall(b"new")
            assert _silent(s2, 0.3)
            assert p.forwarded() == sent
            p.heal("client", "echo")
            assert _recv_exactly(s, 6) == b"during"
            assert _recv_exactly(s2, 3) == b"new"


def test_one_way_cut_stalls_only_that_direction(proxy: tuple[FaultProxy, tuple[str, int]]
                                                ) -> None:
    p, addr = proxy
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(b"x")
        assert _recv_exactly(s, 1) == b"x"
        p.cut("echo", "client", one_way=True)
        s.sendall(b"ping")
        assert _silent(s, 0.5)
        assert p.forwarded("client", "echo") == 5  # the way in still flows
        p.heal()
        assert _recv_exactly(s, 4) == b"ping"


def test_blackhole_loses_bytes_and_heal_resets(proxy: tuple[FaultProxy, tuple[str, int]]
                                               ) -> None:
    p, addr = proxy
    with socket.create_connection(addr, timeout=10) as s:
        p.blackhole("client", "echo")
        s.sendall(b"lost")
        assert _silent(s, 0.5)
        assert p.forwarded("client", "echo") == 0
        p.heal("client", "echo")
        with pytest.raises((ConnectionResetError, EOFError)):
            _recv_exactly(s, 1)
    with socket.create_connection(addr, timeout=10) as s:  # new connections work again
        s.sendall(b"ok")
        assert _recv_exactly(s, 2) == b"ok"


def test_reset_closes_connections_now(proxy: tuple[FaultProxy, tuple[str, int]]) -> None:
    p, addr = proxy
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(b"x")
        assert _recv_exactly(s, 1) == b"x"
        assert p.reset("client", "echo") == 1
        with pytest.raises((ConnectionResetError, EOFError)):
            _recv_exactly(s, 1)
    assert p.connections() == 0


def test_a_dead_target_is_a_refused_connection() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = free.getsockname()[:2]  # nothing listens here once closed
    with FaultProxy() as p:
        addr = p.add_route(("127.0.0.1", 0), dead, name="dead")
        # The reset may land while connect() returns, or at the first read.
        with pytest.raises((ConnectionResetError, EOFError)):
            with socket.create_connection(addr, timeout=10) as s:
                _recv_exactly(s, 1)
