"""One TCP port per task: gRPC and big-tensor (bulk) connections share it.

The task's port is ours: `SharedPort` accepts every connection and reads its
first 8 bytes. A bulk connection (bulk.py) starts with `bulk.MAGIC` and is served
here, straight from the arrays' memory. Anything else is gRPC (HTTP/2 starts
with "PRI * HTTP/2.0") and is relayed byte for byte to the task's gRPC server,
which listens only on a private abstract Unix socket (no file, no port). The
relay copies in the kernel (`os.splice`), one thread per direction and
connection; it costs a gRPC call some tens of microseconds on loopback, against
a network round trip between machines.

So a firewall or a Kubernetes NetworkPolicy opens one port per task, and big
tensors still move at raw-socket speed.

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

import fcntl
import os
import secrets
import select
import socket
import threading
from typing import Any

from tensorweave.base.address import parse_host_port
from tensorweave.distributed.transport.tcp import bulk, bulk_auth, grpc_auth
from tensorweave.distributed.transport import admission, limits, sidechannel
from tensorweave.distributed.transport.credentials import NONE, Credentials

__all__ = ["SharedPort", "relay_target"]

_SPLICE_BYTES = 1 << 20
_TLS_RECORD = b"\x16"  # a TLS handshake record's first byte (ClientHello)
_HTTP2 = b"PRI * HT"    # the first bytes of HTTP/2's (gRPC's) client preface


def relay_target(name: str) -> str:
    """The gRPC server address of the private socket `name` ("unix-abstract:...")."""
    return f"unix-abstract:{name}"


class SharedPort:
    """Listens on `bind_address` and sorts each connection into bulk or gRPC.

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

    Raises:
        ValueError: when the address cannot be bound (port in use, foreign host).
    """

    def __init__(self, bind_address: str, grpc_socket: str, offers: bulk.BulkOffers,
                 credentials: Credentials = NONE, task: str = "",
                 refusal_socket: str = "",
                 peer_filter: admission.PeerFilter | None = None) -> None:
        host, port = parse_host_port(bind_address)
        self._peer_filter = peer_filter
        self._grpc_socket = "\0" + grpc_socket
        self._creds, self._task = credentials, task or bind_address
        self._refusal_socket = "\0" + refusal_socket
        self._offers = offers
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        try:
            self._listener = _listen(host, port)
        except OSError as e:
            raise ValueError(f"Cannot listen on {bind_address}: the port is in use or the "
                             f"host is not an address of this machine ({e.strerror or e}).") \
                from None
        self._listener.settimeout(0.2)  # so stop() ends the accept loop within a tick
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name=f"tw-port-{self.port}")
        self._thread.start()

    def stop(self) -> None:
        """Stops accepting and closes every open connection (bulk and relayed)."""
        self._stopped.set()
        self._thread.join()
        self._listener.close()
        with self._lock:
            conns = list(self._open)
        for conn in conns:
            _shutdown(conn)

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not admission.admit(self._peer_filter, conn, addr):
                continue  # not from the cluster's hosts: closed before a byte is read
            peer = f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) else str(addr)
            if not self._admit(conn, peer):
                continue
            threading.Thread(target=self._sort, args=(conn, peer), daemon=True,
                             name=f"tw-port-{self.port}-conn").start()

    def _admit(self, conn: socket.socket, peer: str) -> bool:
        """Counts `conn` among the open ones, or closes it when TENSORWEAVE_MAX_CONNECTIONS
        are open already (a flood of idle connections must not cost a thread each)."""
        cap = limits.max_connections()
        with self._lock:
            full = len(self._open) >= cap
            if not full:
                self._open.add(conn)
        if full:
            sidechannel.log_refused(self._task, peer, f"{cap} connections are open already "
                                    f"({limits.ENV_MAX_CONNECTIONS})")
            conn.close()
        return not full

    def _track(self, sock: socket.socket, add: bool) -> None:
        with self._lock:
            (self._open.add if add else self._open.discard)(sock)

    def _sort(self, conn: socket.socket, peer: str) -> None:
        self._track(conn, True)
        try:
            first = _peek(conn, len(bulk.MAGIC))
            if self._creds.tls:
                self._sort_tls(conn, first, peer)
            elif first in (bulk.MAGIC, bulk_auth.BULK_TOKEN_MAGIC):
                conn.recv(len(bulk.MAGIC))  # consume it; the rest is the bulk protocol
                if bulk_auth.check_bulk(conn, first, self._creds, self._task, peer):
                    bulk.serve_bulk(conn, self._offers, self._stopped.is_set)
            elif first.startswith(_TLS_RECORD) and self._creds.enabled:
                sidechannel.log_refused(self._task, peer, "it speaks TLS, this task has no "
                                        "TLS credentials")
            elif first:
                self._relay(conn, peer)
        except OSError:
            pass
        finally:
            self._track(conn, False)
            conn.close()

    def _sort_tls(self, conn: socket.socket, first: bytes, peer: str) -> None:
        if first.startswith(_HTTP2):  # plain gRPC: told UNAUTHENTICATED by the refuser
            sidechannel.log_refused(self._task, peer, "plain gRPC without TLS")
            self._relay(conn, peer, target=self._refusal_socket)
            return
        if not first.startswith(_TLS_RECORD):
            if first:
                sidechannel.log_refused(self._task, peer, "a connection without TLS")
            return
        tls = sidechannel.accept_tls(conn, self._creds, self._task, peer)
        if tls is None:
            return
        self._track(tls, True)
        try:
            head = bytearray(len(bulk.MAGIC))
            bulk.recv_exactly_into(tls, memoryview(head))  # within the handshake's timeout
            if bytes(head) in (bulk.MAGIC, bulk_auth.BULK_TOKEN_MAGIC):
                if bulk_auth.check_bulk(tls, bytes(head), self._creds, self._task, peer):
                    bulk.serve_bulk(tls, self._offers, self._stopped.is_set)
            else:
                tls.settimeout(None)
                self._relay_tls(tls, bytes(head), peer)
        finally:
            self._track(tls, False)
            tls.close()

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
            inner.connect(target or self._grpc_socket)
        except OSError:
            self._release(inner)
            raise
        return inner

    def _release(self, inner: socket.socket) -> None:
        self._track(inner, False)
        name = inner.getsockname()
        if isinstance(name, (str, bytes)) and name:
            grpc_auth.unregister_relay(name[1:] if isinstance(name, str)
                                       else name[1:].decode("latin-1"))
        inner.close()

    def _relay(self, conn: socket.socket, peer: str, target: str = "") -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        inner = self._inner(peer, False, target)
        try:
            back = threading.Thread(target=_pump, args=(inner, conn), daemon=True,
                                    name=f"tw-port-{self.port}-relay")
            back.start()
            _pump(conn, inner)
            back.join()
        finally:
            self._release(inner)

    def _relay_tls(self, tls: Any, head: bytes, peer: str) -> None:
        """Relays a verified TLS connection's HTTP/2 to the gRPC server, in one thread
        (an SSL object must not be read and written by two threads at once)."""
        inner = self._inner(peer, True)
        try:
            inner.sendall(head)
            _pump_tls(tls, inner)
        finally:
            self._release(inner)


def _listen(host: str, port: int) -> socket.socket:
    if host == "::":  # every interface: IPv6 and IPv4 where the host has IPv6, else IPv4
        try:
            return socket.create_server(("::", port), family=socket.AF_INET6,
                                        dualstack_ipv6=True)
        except OSError:
            return socket.create_server(("0.0.0.0", port))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family)


def _peek(conn: socket.socket, n: int) -> bytes:
    """The first `n` bytes of `conn` without consuming them (fewer at EOF); a client
    that says nothing within TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS is dropped (TimeoutError)."""
    conn.settimeout(limits.handshake_timeout_secs())
    try:
        return sidechannel.peek(conn, n)  # HTTP/2's preface and our MAGIC: sent at once
    finally:
        conn.settimeout(None)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copies src to dst until src ends, then half-closes dst (in-kernel with splice)."""
    try:
        if hasattr(os, "splice"):
            r, w = os.pipe()
            try:
                # A bigger pipe moves a big gRPC message (a pushed tensor) in fewer calls.
                fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), _SPLICE_BYTES)
            except OSError:
                pass  # over the user's pipe-size limit: the default 64 KiB works too
            try:
                while True:
                    n = os.splice(src.fileno(), w, _SPLICE_BYTES)
                    if n == 0:
                        break
                    while n:
                        n -= os.splice(r, dst.fileno(), n)
            finally:
                os.close(r)
                os.close(w)
        else:
            buf = memoryview(bytearray(_SPLICE_BYTES))
            while n := src.recv_into(buf):
                dst.sendall(buf[:n])
    except OSError:
        pass  # either side went away; the other learns it from the shutdown below
    finally:
        _shutdown(dst, socket.SHUT_WR)


def _pump_tls(tls: Any, inner: socket.socket) -> None:
    """Both directions between a TLS socket and a plain one until either ends (HTTP/2
    never half-closes; and SSLSocket.shutdown would drop its TLS state)."""
    tls.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            ready = [tls] if tls.pending() else select.select([tls, inner], [], [])[0]
            if tls in ready:
                data = tls.recv(_SPLICE_BYTES)
                if not data:
                    return
                inner.sendall(data)
            if inner in ready:
                data = inner.recv(_SPLICE_BYTES)
                if not data:
                    return
                tls.sendall(data)
    except OSError:
        pass  # either side went away
    finally:
        _shutdown(inner)


def _shutdown(sock: Any, how: int = socket.SHUT_RDWR) -> None:
    try:
        sock.shutdown(how)
    except OSError:
        pass
