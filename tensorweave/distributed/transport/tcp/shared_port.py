"""One TCP port per task: gRPC and big-tensor (bulk) connections share it.

The task's port is ours: `SharedPort` accepts every connection and reads its
first 8 bytes. A bulk connection (bulk.py) starts with `bulk.MAGIC` and is served
here, straight from the arrays' memory. Anything else is gRPC (HTTP/2 starts
with "PRI * HTTP/2.0") and is relayed byte for byte to the task's gRPC server,
which listens only on a private abstract Unix socket (no file, no port). The
relay copies in the kernel (`os.splice`) on the process's event loop (relay.py),
as the sorting does: an idle or silent connection costs no thread
(transport/reactor.py); it costs a gRPC round trip some tens of microseconds on
loopback (~60 us through the port against ~40 us with a thread per direction),
against a network round trip between machines.

A Prometheus scrape starts with an HTTP/1.1 request line ("GET /metrics") and is
answered here too (http_metrics.py), so a NetworkPolicy opens one port per task,
and big tensors still move at raw-socket speed.

With credentials (credentials.py) the port is also where connections prove
themselves: with TLS it terminates TLS (a TLS record starts with 0x16), then
sorts the decrypted stream the same way; plain gRPC is sent to a refusal server
(`refusal_socket`) and anything else is logged and closed. The relay's socket
is bound to a name registered with the peer's address (grpc_auth.py).

Example:
    >>> offers = bulk.BulkOffers()
    >>> front = SharedPort("127.0.0.1:0", "tensorweave-grpc-1234", offers)
    >>> front.port > 0
    True
    >>> front.stop()
"""
from __future__ import annotations

import logging
import secrets
import socket
import ssl
import threading
import time
from typing import Any, Callable

from tensorweave.base.address import parse_host_port
from tensorweave.distributed.transport.tcp import (bulk, bulk_auth, grpc_auth, http_metrics,
                                                   outbound)
from tensorweave.distributed.transport.tcp.relay import Relay
from tensorweave.distributed.transport import admission, limits, reactor, sidechannel
from tensorweave.distributed.transport.credentials import NONE, Credentials

__all__ = ["SharedPort", "relay_target"]

log = logging.getLogger("tensorweave.transport.tcp")
_READ = 1  # selectors.EVENT_READ
_TLS_RECORD = b"\x16"  # a TLS handshake record's first byte (ClientHello)
_HTTP2 = b"PRI * HT"    # the first bytes of HTTP/2's (gRPC's) client preface


def relay_target(name: str) -> str:
    """The gRPC server address of the private socket `name` ("unix-abstract:...")."""
    return f"unix-abstract:{name}"


class SharedPort:
    """Listens on `bind_address` and sorts each connection into bulk or gRPC.

    Every connection waits on the process's event loop (transport/reactor.py), not
    on a thread: until its first bytes say what it is (within
    TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS, else it is closed and logged), while it is a
    relayed gRPC channel (tcp/relay.py) and between its bulk pulls. Connections over
    TENSORWEAVE_MAX_CONNECTIONS, or over TENSORWEAVE_MAX_HALF_OPEN not yet sorted,
    are refused (logged with the peer's address). TLS connections too: the handshake,
    the relay and the parked bulk connection are the loop's (relay.py).

    Args:
        bind_address: "host:port" to listen on ("[::]:p" for every interface;
            port 0 picks a free one, see `port`).
        grpc_socket: the abstract Unix socket name the gRPC server listens on.
        offers: the bulk offers this port serves.
        credentials: what a connection must prove (none by default).
        task: the task's name, for the log of refused peers.
        refusal_socket: with TLS, the abstract socket of the server that refuses
            plain gRPC calls (grpc_auth.RefusalServer).
        peer_filter: the addresses that may connect (admission.py; None: any).
        metrics: renders the task's metrics for `GET /metrics` (http_metrics.py; None:
            404).

    Raises:
        ValueError: when the address cannot be bound (port in use, foreign host).
    """

    def __init__(self, bind_address: str, grpc_socket: str, offers: bulk.BulkOffers,
                 credentials: Credentials = NONE, task: str = "",
                 refusal_socket: str = "",
                 peer_filter: admission.PeerFilter | None = None,
                 metrics: Callable[[], str] | None = None) -> None:
        host, port = parse_host_port(bind_address)
        self._metrics = metrics
        self._peer_filter = peer_filter
        self._grpc_socket = "\0" + grpc_socket
        self._creds, self._task = credentials, task or bind_address
        self._refusal_socket = "\0" + refusal_socket
        self._offers = offers
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._open: set[Any] = set()   # every socket this port holds, to close at stop
        self._relays: set[Relay] = set()
        self._counts = reactor.Counts(self._task, "tcp")
        self._loop = reactor.get()
        try:
            self._listener = _listen(host, port)
        except OSError as e:
            raise ValueError(f"Cannot listen on {bind_address}: the port is in use or the "
                             f"host is not an address of this machine ({e.strerror or e}).") \
                from None
        self._listener.setblocking(False)
        outbound.tune_link(self._listener)  # its connections' retransmissions too
        self.port: int = self._listener.getsockname()[1]
        self._loop.run_sync(lambda: self._loop.watch(self._listener, _READ, self._accept))

    def stop(self) -> None:
        """Stops accepting and closes every open connection (bulk and relayed)."""
        self._stopped.set()

        def stop_on_loop() -> list[Any]:
            self._loop.unwatch(self._listener)
            for relay in list(self._relays):
                relay.close()
            with self._lock:
                socks = list(self._open)
            for sock in socks:
                self._loop.unwatch(sock)
            return socks
        socks = self._loop.run_sync(stop_on_loop)
        self._listener.close()
        for sock in socks:
            _shutdown(sock)

    # --- on the loop's thread ---
    def _accept(self, _events: int) -> None:
        for _ in range(64):  # then let the loop serve the others
            try:
                conn, addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # out of descriptors: pause, or this would spin
                log.warning("%s: cannot accept connections on port %d: %s", self._task,
                            self.port, e)
                self._loop.unwatch(self._listener)
                self._loop.at(time.monotonic() + 0.5, self._resume)
                return
            if not admission.admit(self._peer_filter, conn, addr):
                continue  # not from the cluster's hosts: closed before a byte is read
            peer = f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) else str(addr)
            ticket = self._counts.admit(peer)
            if ticket is None or self._stopped.is_set():
                if ticket is not None:
                    ticket.release()
                conn.close()
                continue
            conn.setblocking(False)
            self._track(conn, True)
            deadline = time.monotonic() + limits.handshake_timeout_secs()
            self._wait_first(_Pending(conn, peer, ticket, deadline))

    def _resume(self) -> None:
        if not self._stopped.is_set():
            self._loop.watch(self._listener, _READ, self._accept)

    def _wait_first(self, p: _Pending) -> None:
        self._loop.when_readable(p.conn, lambda ready: self._first_bytes(p, ready),
                                 p.deadline)

    def _first_bytes(self, p: _Pending, ready: bool) -> None:
        """Reads up to the first 8 bytes (a TLS ClientHello only peeked at) and sorts."""
        if self._stopped.is_set():
            self._close(p.conn, p.ticket)
            return
        if not ready:
            sidechannel.log_refused(
                self._task, p.peer, f"it sent {len(p.head)} of the first "
                f"{len(bulk.MAGIC)} bytes within {limits.handshake_timeout_secs():g} s "
                f"({limits.ENV_HANDSHAKE_TIMEOUT_SECS})")
            self._close(p.conn, p.ticket)
            return
        try:
            if not p.head and self._creds.tls:
                first = p.conn.recv(1, socket.MSG_PEEK)
                if first == _TLS_RECORD:
                    self._start_tls(p)
                    return
            data = p.conn.recv(len(bulk.MAGIC) - len(p.head))
        except (BlockingIOError, InterruptedError):
            self._wait_first(p)
            return
        except OSError:
            data = b""
        if not data:  # it went away before saying what it is
            self._close(p.conn, p.ticket)
            return
        p.head += data
        if len(p.head) < len(bulk.MAGIC):
            self._wait_first(p)  # the rest of a first message is milliseconds away
            return
        self._sort(p)

    def _sort(self, p: _Pending) -> None:
        head = bytes(p.head)
        if head in (bulk.MAGIC, bulk_auth.BULK_TOKEN_MAGIC) and not self._creds.tls:
            reactor.blocking().submit(self._start_bulk, p, head)
        elif http_metrics.is_http(head) and not self._creds.tls:
            reactor.blocking().submit(self._serve_http, p, head)
        elif self._creds.tls and head.startswith(_HTTP2):
            sidechannel.log_refused(self._task, p.peer, "plain gRPC without TLS")
            self._relay(p, self._refusal_socket)  # told UNAUTHENTICATED by the refuser
        elif self._creds.tls:
            sidechannel.log_refused(self._task, p.peer, "a connection without TLS")
            self._close(p.conn, p.ticket)
        elif head.startswith(_TLS_RECORD) and self._creds.enabled:
            sidechannel.log_refused(self._task, p.peer, "it speaks TLS, this task has no "
                                    "TLS credentials")
            self._close(p.conn, p.ticket)
        else:  # gRPC (or garbage, which the gRPC server answers and closes)
            self._relay(p, self._grpc_socket)

    def _relay(self, p: _Pending, target: str) -> None:
        try:
            inner = self._inner(p.peer, False, target)
            inner.sendall(p.head)  # a new socket's buffer is empty: this never waits
        except OSError as e:
            log.warning("%s: cannot relay %s to the gRPC server: %s", self._task, p.peer, e)
            self._close(p.conn, p.ticket)
            return
        p.ticket.identified()
        self._start_relay(p, inner)

    def _start_relay(self, p: _Pending, inner: socket.socket) -> None:
        p.conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        relay: Relay

        def closed() -> None:
            self._relays.discard(relay)
            self._release(inner)
            self._close(p.conn, p.ticket)
        relay = Relay(self._loop, p.conn, inner, closed)
        self._relays.add(relay)
        relay.start()

    def _start_tls(self, p: _Pending) -> None:
        """TLS's handshake on the loop, a step each time the peer's bytes arrive: a
        peer that stalls part-way holds no thread (closed at its deadline)."""
        try:
            tls = self._creds.server_context().wrap_socket(
                p.conn, server_side=True, do_handshake_on_connect=False)
        except (ssl.SSLError, OSError) as e:
            sidechannel.log_refused(self._task, p.peer,
                                    f"TLS handshake failed ({sidechannel.reason(e)})")
            self._close(p.conn, p.ticket)
            return
        self._track(p.conn, False)
        p.conn = tls  # the same descriptor, from now on read through TLS
        self._track(tls, True)
        self._tls_step(p, True)

    def _tls_step(self, p: _Pending, ready: bool) -> None:
        if self._stopped.is_set():
            self._close(p.conn, p.ticket)
            return
        if not ready:
            sidechannel.log_refused(self._task, p.peer, "TLS handshake not done within "
                                    f"{limits.handshake_timeout_secs():g} s "
                                    f"({limits.ENV_HANDSHAKE_TIMEOUT_SECS})")
            self._close(p.conn, p.ticket)
            return
        try:
            p.conn.do_handshake()  # type: ignore[attr-defined]
        except ssl.SSLWantReadError:
            self._loop.when_readable(p.conn, lambda ready: self._tls_step(p, ready),
                                     p.deadline)
            return
        except ssl.SSLWantWriteError:  # a fresh socket's buffer is full: rare; soon again
            self._loop.at(time.monotonic() + 0.01, lambda: self._tls_step(p, True))
            return
        except (ssl.SSLError, OSError) as e:
            sidechannel.log_refused(self._task, p.peer,
                                    f"TLS handshake failed ({sidechannel.reason(e)})")
            self._close(p.conn, p.ticket)
            return
        # Verified: the first 8 decrypted bytes say bulk or gRPC (on the pool, bounded).
        if p.conn.pending():  # type: ignore[attr-defined]
            reactor.blocking().submit(self._serve_tls, p)
        else:
            self._loop.when_readable(p.conn, lambda ready: self._verified_ready(p, ready),
                                     time.monotonic() + limits.handshake_timeout_secs())

    def _verified_ready(self, p: _Pending, ready: bool) -> None:
        if ready and not self._stopped.is_set():
            reactor.blocking().submit(self._serve_tls, p)
            return
        if not self._stopped.is_set():
            sidechannel.log_refused(self._task, p.peer, "it said nothing after TLS within "
                                    f"{limits.handshake_timeout_secs():g} s "
                                    f"({limits.ENV_HANDSHAKE_TIMEOUT_SECS})")
        self._close(p.conn, p.ticket)

    def _park_bulk(self, conn: socket.socket, ticket: reactor.Ticket) -> None:
        """Waits (without a thread) for the next token on a bulk connection."""
        if self._stopped.is_set():
            self._close(conn, ticket)
            return

        def readable(_ready: bool) -> None:
            reactor.blocking("bulk").submit(self._bulk_pull, conn, ticket)
        if isinstance(conn, ssl.SSLSocket) and conn.pending():
            readable(True)  # decrypted already: its socket would not turn readable for it
        else:
            self._loop.when_readable(conn, readable)

    # --- on the pools' threads ---
    def _start_bulk(self, p: _Pending, head: bytes) -> None:
        p.conn.setblocking(True)
        if bulk_auth.check_bulk(p.conn, head, self._creds, self._task, p.peer):
            p.ticket.identified()
            bulk.tune_socket(p.conn)
            self._loop.call_soon(lambda: self._park_bulk(p.conn, p.ticket))
        else:
            self._close(p.conn, p.ticket)

    def _serve_http(self, p: _Pending, head: bytes) -> None:
        """A scrape (`GET /metrics`): one request, answered, then closed."""
        p.ticket.identified()
        http_metrics.serve(p.conn, head, self._creds, self._task, p.peer, self._metrics)
        self._close(p.conn, p.ticket)

    def _bulk_pull(self, conn: socket.socket, ticket: reactor.Ticket) -> None:
        """Serves the one pull whose token has started to arrive, then parks again."""
        conn.settimeout(limits.handshake_timeout_secs())  # the token's 16 bytes come at once
        if bulk.serve_one(conn, self._offers):
            conn.setblocking(False)
            self._loop.call_soon(lambda: self._park_bulk(conn, ticket))
        else:
            self._close(conn, ticket)

    def _serve_tls(self, p: _Pending) -> None:
        """A verified TLS connection's first 8 bytes, then, as for a plain one, bulk pulls
        parked on the loop or gRPC relayed on it: no thread of its own."""
        tls = p.conn
        tls.setblocking(True)
        tls.settimeout(limits.handshake_timeout_secs())
        try:
            head = bytearray(len(bulk.MAGIC))
            bulk.recv_exactly_into(tls, memoryview(head))  # within the handshake's timeout
            p.ticket.identified()
            if http_metrics.is_http(bytes(head)):
                self._serve_http(p, bytes(head))
                return
            if bytes(head) in (bulk.MAGIC, bulk_auth.BULK_TOKEN_MAGIC):
                if not bulk_auth.check_bulk(tls, bytes(head), self._creds, self._task,
                                            p.peer):
                    raise ConnectionAbortedError("bulk credentials refused")
                bulk.tune_socket(tls)
                tls.setblocking(False)
                self._loop.call_soon(lambda: self._park_bulk(tls, p.ticket))
                return
            inner = self._inner(p.peer, True)
            inner.sendall(head)
        except OSError:
            self._close(tls, p.ticket)
            return
        self._loop.call_soon(lambda: self._start_relay(p, inner))

    # --- any thread ---
    def _track(self, sock: Any, add: bool) -> None:
        with self._lock:
            (self._open.add if add else self._open.discard)(sock)

    def _close(self, sock: Any, ticket: reactor.Ticket) -> None:
        self._track(sock, False)
        ticket.release()
        sock.close()

    def _inner(self, peer: str, verified: bool, target: str = "") -> socket.socket:
        """A connected socket to the gRPC server (or `target`); with credentials, bound
        to a name registered with `peer` so the server's guard knows who it carries."""
        inner = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._track(inner, True)
        if self._creds.enabled:
            name = f"tw-relay-{secrets.token_hex(12)}"
            inner.bind("\0" + name)
            grpc_auth.register_relay(name, peer, verified)
        try:
            # A full backlog must not stall the loop: such a connection is dropped.
            inner.setblocking(verified)
            inner.connect(target or self._grpc_socket)
        except OSError:
            self._release(inner)
            raise
        inner.setblocking(True)
        return inner

    def _release(self, inner: socket.socket) -> None:
        self._track(inner, False)
        name = inner.getsockname()
        if isinstance(name, (str, bytes)) and name:
            grpc_auth.unregister_relay(name[1:] if isinstance(name, str)
                                       else name[1:].decode("latin-1"))
        inner.close()


class _Pending:
    """A connection not sorted yet: its peer, its first bytes so far, its deadline."""

    def __init__(self, conn: socket.socket, peer: str, ticket: reactor.Ticket,
                 deadline: float) -> None:
        self.conn, self.peer, self.ticket, self.deadline = conn, peer, ticket, deadline
        self.head = bytearray()


def _listen(host: str, port: int) -> socket.socket:
    if host == "::":  # every interface: IPv6 and IPv4 where the host has IPv6, else IPv4
        try:
            return socket.create_server(("::", port), family=socket.AF_INET6,
                                        dualstack_ipv6=True)
        except OSError:
            return socket.create_server(("0.0.0.0", port))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family)


def _shutdown(sock: Any) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
