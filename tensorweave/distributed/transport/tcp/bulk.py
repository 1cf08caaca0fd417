"""Big tensors over a plain TCP connection to the task's own port.

gRPC in Python copies every message several times (into a `bytes`, into core
slices, out of HTTP/2 frames); a raw socket sends straight from the array's
memory (`sendall(memoryview)`) and receives straight into the preallocated
result (`recv_into`). The gRPC response still carries the message and the
tensor's header; the header holds a one-time random token (and the port to
redeem it at), which the client redeems here.

A task has one port: its server's `SharedPort` (shared_port.py) answers gRPC
and bulk connections on it, telling them apart by their first bytes (a bulk
connection starts with `MAGIC`, gRPC with HTTP/2's preface). `BulkServer` is a
stand-alone listener of the same protocol for `stream.TensorServer` (tests,
benchmarks). With TENSORWEAVE_BULK=0 offers name no port and clients fetch over
the gRPC `FetchPayload` stream instead, as they also do when a pull fails.

Protocol on one connection (kept open and reused):
  client -> server: MAGIC (8 bytes, once per connection)
  client -> server: 16-byte token
  server -> client: 8-byte little-endian signed length (-1: unknown token),
                    then that many payload bytes.

Example:
    >>> server = BulkServer("127.0.0.1")
    >>> header, chunks = codec.encode(np.arange(3.0))
    >>> token = server.offer(chunks, header.nbytes)
    >>> assembler = codec.TensorAssembler(header)
    >>> client = BulkClient()
    >>> client.pull("127.0.0.1", server.port, token, assembler)
    >>> assembler.finish()
    array([0., 1., 2.])
    >>> client.close(); server.close()
"""
from __future__ import annotations

import secrets
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np  # noqa: F401 - used by the module docstring example

from tensorweave.base import knobs
from tensorweave.distributed.transport import codec
from tensorweave.distributed.transport.sidechannel import recv_exactly_into
from tensorweave.distributed.transport.tcp import outbound

__all__ = ["MAGIC", "BulkClient", "BulkOffers", "BulkServer", "BulkUnavailable",
           "recv_exactly_into", "serve_bulk", "serve_one", "tune_socket"]

TOKEN_BYTES = 16
# The first bytes of a bulk connection. HTTP/2 (gRPC) connections start with
# "PRI * HTTP/2.0", so a shared port tells the two apart from 8 bytes.
MAGIC = b"TWBULK\x00\x01"
_LEN = struct.Struct("<q")
# Larger kernel buffers let a 64 MiB send run with fewer wakeups on loopback.
_SOCK_BUF = 4 << 20


class BulkUnavailable(ConnectionError):
    """The bulk path could not deliver; use the gRPC stream instead."""


def tune_socket(sock: socket.socket) -> None:
    """Applies the options every bulk socket uses (a link's, outbound.tune_link: no
    Nagle, bounded retransmission back-off; and big buffers)."""
    outbound.tune_link(sock)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCK_BUF)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SOCK_BUF)


class BulkOffers:
    """Payloads offered for one pull each, by token.

    Args:
        port: the port clients redeem tokens at (the task's port); 0 means none,
            so clients fetch over gRPC.
        ttl_s: seconds an offered payload waits for its pull before it is
            dropped, so an abandoned fetch does not pin the tensor forever.
    """

    def __init__(self, port: int = 0, ttl_s: float = 60.0) -> None:
        self.port = port
        self._ttl_s = ttl_s
        self._offers: dict[bytes, tuple[float, list[memoryview], int]] = {}
        self._lock = threading.Lock()

    def offer(self, chunks: list[memoryview], nbytes: int) -> bytes:
        """Registers a payload for one pull; returns its token. Does not block.

        The chunks must stay unchanged until pulled (or expired).
        """
        token = secrets.token_bytes(TOKEN_BYTES)
        now = time.monotonic()
        with self._lock:
            expired = [t for t, (at, _, _) in self._offers.items() if now - at > self._ttl_s]
            for t in expired:
                del self._offers[t]
            self._offers[token] = (now, chunks, nbytes)
        return token

    def take(self, token: bytes) -> tuple[list[memoryview], int] | None:
        """Removes and returns an offer (chunks, nbytes), or None if unknown."""
        with self._lock:
            offer = self._offers.pop(token, None)
        return None if offer is None else (offer[1], offer[2])

    def close(self) -> None:
        """Drops pending offers."""
        with self._lock:
            self._offers.clear()


def serve_bulk(conn: socket.socket, offers: BulkOffers, stopped: Callable[[], bool]) -> None:
    """Answers token requests on `conn` (its MAGIC already read) until it closes.

    Blocks; closes `conn` when done.
    """
    token = bytearray(TOKEN_BYTES)
    try:
        tune_socket(conn)
        while not stopped():
            recv_exactly_into(conn, memoryview(token))
            entry = offers.take(bytes(token))
            if entry is None:
                conn.sendall(_LEN.pack(-1))
                continue
            chunks, nbytes = entry
            conn.sendall(_LEN.pack(nbytes))
            for chunk in chunks:
                conn.sendall(chunk)  # straight from the array's memory
    except OSError:
        pass  # the client went away; it falls back or retries on its side
    finally:
        conn.close()


def serve_one(conn: socket.socket, offers: BulkOffers) -> bool:
    """Answers the one token request that has started to arrive on `conn` (its MAGIC
    already read); False when the connection ended or broke (the caller closes it).

    A task port parks a bulk connection on its event loop between pulls and calls
    this on a pool thread once the connection is readable (shared_port.py).
    """
    token = bytearray(TOKEN_BYTES)
    try:
        recv_exactly_into(conn, memoryview(token))
        entry = offers.take(bytes(token))
        conn.settimeout(None)  # a big payload leaves as fast as the client reads it
        if entry is None:
            conn.sendall(_LEN.pack(-1))
            return True
        chunks, nbytes = entry
        conn.sendall(_LEN.pack(nbytes))
        for chunk in chunks:
            conn.sendall(chunk)  # straight from the array's memory
        return True
    except OSError:
        return False  # the client went away; it falls back or retries on its side


class BulkServer:
    """A stand-alone bulk listener with its own offers (for `stream.TensorServer`).

    A task's server needs none: its `SharedPort` serves bulk on the task's port.

    Args:
        host: address to listen on.
        port: port to listen on; 0 picks a free one (see `port`).
        ttl_s: see `BulkOffers`.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, ttl_s: float = 60.0) -> None:
        self._stopped = threading.Event()
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server((host, port))
        # Polling accept lets close() finish within one tick on every platform.
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self.offers = BulkOffers(self.port, ttl_s)
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name=f"bulk-accept-{self.port}")
        self._thread.start()

    def offer(self, chunks: list[memoryview], nbytes: int) -> bytes:
        """See `BulkOffers.offer`."""
        return self.offers.offer(chunks, nbytes)

    def take(self, token: bytes) -> tuple[list[memoryview], int] | None:
        """See `BulkOffers.take`."""
        return self.offers.take(token)

    def close(self) -> None:
        """Stops listening, drops pending offers and closes open connections."""
        self._stopped.set()
        self._thread.join()
        self._listener.close()
        self.offers.close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            _shutdown(conn)

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            with self._lock:
                self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True,
                             name=f"bulk-conn-{self.port}").start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            hello = bytearray(len(MAGIC))
            recv_exactly_into(conn, memoryview(hello))
            if bytes(hello) == MAGIC:
                serve_bulk(conn, self.offers, self._stopped.is_set)
        except OSError:
            pass
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()


class BulkClient:
    """Pulls offered payloads, reusing one idle connection per server port.

    Thread-safe: concurrent pulls to the same server use separate sockets.

    Args:
        connect_timeout_s: how long to try reaching a port before giving up;
            short, because the gRPC fallback is always available.
    """

    def __init__(self, connect_timeout_s: float = 2.0, retry_after_s: float = 60.0) -> None:
        self._timeout = connect_timeout_s
        self._retry_after_s = retry_after_s
        self._idle: dict[tuple, list[socket.socket]] = {}
        self._down: dict[str, float] = {}  # host -> when a connect to it last failed
        self._lock = threading.Lock()

    def usable(self, host: str) -> bool:
        """False for `retry_after_s` after a connect to `host` failed.

        Lets callers stop asking that peer for bulk offers (each of which the
        server would hold until it expires) when its bulk port is firewalled.
        """
        with self._lock:
            failed_at = self._down.get(host)
        return failed_at is None or time.monotonic() - failed_at > self._retry_after_s

    def pull(self, host: str, port: int, token: bytes, assembler: codec.TensorAssembler,
             hello: Callable[[socket.socket], Any] | None = None) -> None:
        """Receives one payload straight into `assembler.buffer`. Blocks until done.

        `hello(sock) -> sock` opens a new connection instead of sending MAGIC (with
        credentials: TLS and the token, see bulk_auth.open_bulk); connections are
        reused only with the same `hello`.

        Raises:
            BulkUnavailable: if the server cannot be reached, does not know the
                token, or the connection breaks; nothing was kept, so the
                caller may refetch another way.
        """
        key = (host, port) if hello is None else (host, port, hello)
        sock = self._checkout(key, hello)
        conn_ok = False
        try:
            sock.sendall(token)
            head = bytearray(_LEN.size)
            recv_exactly_into(sock, memoryview(head))
            (nbytes,) = _LEN.unpack(head)
            if nbytes != assembler.nbytes:
                raise BulkUnavailable(
                    f"Bulk server {host}:{port} answered {nbytes} bytes for token "
                    f"{token.hex()} but the header announced {assembler.nbytes} (-1 means "
                    f"the token expired or was already used)")
            recv_exactly_into(sock, assembler.buffer[assembler.filled:])
            assembler.filled = assembler.nbytes
            conn_ok = True
        except OSError as e:
            if isinstance(e, BulkUnavailable):
                raise
            raise BulkUnavailable(f"Bulk transfer from {host}:{port} failed: {e}") from e
        finally:
            self._checkin(key, sock, conn_ok)

    def close(self) -> None:
        """Closes idle connections."""
        with self._lock:
            socks = [s for group in self._idle.values() for s in group]
            self._idle.clear()
        for s in socks:
            s.close()

    def _checkout(self, key: tuple, hello: Callable[[socket.socket], Any] | None
                  ) -> socket.socket:
        host, port = key[0], key[1]
        with self._lock:
            group = self._idle.get(key)
            if group:
                return group.pop()
        try:
            sock = socket.create_connection((host, port), timeout=self._timeout)
        except OSError as e:
            with self._lock:
                self._down[host] = time.monotonic()
            raise BulkUnavailable(f"Cannot reach bulk port {host}:{port}: {e}") from e
        # A pull from a frozen or cut-off task fails after a bounded silence (the caller
        # then refetches over gRPC, whose keepalive gives up on it as well).
        sock.settimeout(knobs.PEER_SILENCE_SECS.get())
        tune_socket(sock)
        try:
            if hello is None:
                sock.sendall(MAGIC)  # tells a shared port this is no gRPC connection
            else:
                sock = hello(sock)
        except OSError as e:
            sock.close()
            raise BulkUnavailable(f"Cannot reach bulk port {host}:{port}: {e}") from e
        return sock

    def _checkin(self, key: tuple, sock: socket.socket, ok: bool) -> None:
        if not ok:  # a half-read stream cannot be reused
            sock.close()
            return
        with self._lock:
            self._idle.setdefault(key, []).append(sock)


def _shutdown(sock: Any) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
