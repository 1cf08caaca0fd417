"""Authentication on raw sockets: the task port's TLS, bulk pulls, same-host links.

With credentials (credentials.py) every raw connection proves itself before a
byte of the protocol it carries is served:

* the task port (shared_port.py) terminates TLS itself (`accept_tls`), so gRPC
  and big-tensor pulls are encrypted and both ends verified against the
  cluster CA; a refused handshake is logged with the peer's address;
* a bulk pull starts with `BULK_TOKEN_MAGIC` and the 32-byte token digest when
  the cluster has a token (`open_bulk` / `check_bulk`);
* a same-host (`unix`) link starts with `UNIX_HELLO` + the client's flags; the
  server answers with its own (or a refusal), then TLS runs and is unwrapped
  again (the bytes never leave the kernel: the handshake is the point, and the
  link keeps its speed), then the token digest; each step answers one byte.

Example:
    >>> sock = unix_client_handshake(raw, creds, "localhost:2222", "/job:ps/task:0")
    ... # doctest: +SKIP
"""
from __future__ import annotations

import logging
import socket
import ssl
import struct
import threading
import time
from typing import Any

from tensorweave.base.address import parse_host_port
from tensorweave.distributed.transport import bulk, limits, shm
from tensorweave.distributed.transport.credentials import (
    TLS_HINT, TOKEN_HINT, Credentials, refused)
from tensorweave.distributed.transport.framing import ERROR, HEAD, REQUEST, Conn
from tensorweave.framework import errors

__all__ = ["BULK_TOKEN_MAGIC", "UNIX_HELLO", "Refused", "accept_tls", "check_bulk",
           "log_refused", "open_bulk", "reason", "refuse_first_call", "unix_client_handshake",
           "unix_server_handshake"]

log = logging.getLogger("tensorweave.security")

# A peer that stalls its handshake is dropped after this (TENSORWEAVE_HANDSHAKE_TIMEOUT_S).
HANDSHAKE_TIMEOUT_S = limits.handshake_timeout_s()
BULK_TOKEN_MAGIC = b"TWBULK\x00\x02"  # a bulk connection whose 32-byte digest follows
UNIX_HELLO = b"TWUNIX\x00"           # + one byte of flags: a same-host link's handshake
FLAG_TLS, FLAG_TOKEN, FLAG_REFUSED = 1, 2, 0x80
_OK, _BAD = b"\x01", b"\x00"
_DIGEST = 32
_LOG_EVERY_S = 10.0
_last_logged: dict[tuple[str, str], float] = {}
_log_lock = threading.Lock()


class Refused(Exception):
    """A peer failed authentication (already logged); `answered` says whether it was told."""


def log_refused(task: str, peer: str, reason: str) -> None:
    """Logs a refused peer, at most once per `_LOG_EVERY_S` per peer host and reason."""
    key = (peer.rpartition(":")[0] or peer, reason)
    now = time.monotonic()
    with _log_lock:
        if now - _last_logged.get(key, -_LOG_EVERY_S) < _LOG_EVERY_S:
            return
        _last_logged[key] = now
        if len(_last_logged) > 10000:  # a scan from many addresses must not grow this forever
            _last_logged.clear()
    log.warning("%s: refused connection from %s: %s", task, peer, reason)


def _recv_exactly(sock: Any, n: int) -> bytes:
    buf = bytearray(n)
    bulk.recv_exactly_into(sock, memoryview(buf))
    return bytes(buf)


def _flags(creds: Credentials) -> int:
    return (FLAG_TLS if creds.tls else 0) | (FLAG_TOKEN if creds.token else 0)


def accept_tls(conn: socket.socket, creds: Credentials, task: str, peer: str
               ) -> ssl.SSLSocket | None:
    """Server side of TLS on `conn`; None (logged, closed by the caller) when refused.
    The socket keeps the handshake's timeout until the caller has read what follows."""
    conn.settimeout(HANDSHAKE_TIMEOUT_S)
    try:
        return creds.server_context().wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError) as e:
        log_refused(task, peer, f"TLS handshake failed ({reason(e)})")
        return None


def reason(e: BaseException) -> str:
    """A short reason for a TLS failure (the verify message, or OpenSSL's reason)."""
    return getattr(e, "verify_message", None) or getattr(e, "reason", None) or str(e) or \
        type(e).__name__


def check_bulk(conn: Any, first: bytes, creds: Credentials, task: str, peer: str) -> bool:
    """Whether a bulk connection that began with `first` (consumed) may pull."""
    conn.settimeout(HANDSHAKE_TIMEOUT_S)  # a digest that never comes frees the thread
    try:
        digest = _recv_exactly(conn, _DIGEST) if first == BULK_TOKEN_MAGIC else b""
    except OSError:
        log_refused(task, peer, "bulk connection that did not finish its handshake")
        return False
    conn.settimeout(None)
    if creds.token and not digest:
        log_refused(task, peer, "bulk connection without the auth token")
        return False
    if creds.token and not creds.token_matches(digest):
        log_refused(task, peer, "bulk connection with a wrong auth token")
        return False
    return True


def open_bulk(sock: socket.socket, creds: Credentials, host: str) -> Any:
    """Client side: TLS (if any) then the bulk magic (with the token digest, if any)."""
    if creds.tls:
        sock = creds.client_context().wrap_socket(
            sock, server_hostname=creds.server_name or host)
    sock.sendall(BULK_TOKEN_MAGIC + creds.digest if creds.token else bulk.MAGIC)
    return sock


def unix_client_handshake(sock: socket.socket, creds: Credentials, address: str, who: str
                          ) -> socket.socket:
    """Proves this process to the same-host task `who`; returns the socket to use.

    Raises:
        UnauthenticatedError: the task wants credentials this process lacks, or it
            has none while this process uses TLS (it cannot prove it is the task).
        PermissionDeniedError: the task refused our certificate or token, or its
            certificate is not the cluster's.
        ConnectionError: the connection broke.
    """
    sock.settimeout(HANDSHAKE_TIMEOUT_S)
    sock.sendall(UNIX_HELLO + bytes([_flags(creds)]))
    server = _recv_exactly(sock, 1)[0]
    if server & FLAG_REFUSED:
        need = "TLS" if server & FLAG_TLS else "an auth token"
        raise refused(errors.UNAUTHENTICATED, who, f"it requires {need}",
                      TLS_HINT if server & FLAG_TLS else TOKEN_HINT)
    if creds.tls and not server & FLAG_TLS:
        raise refused(errors.UNAUTHENTICATED, who, f"it does not use TLS, so it cannot "
                      f"prove it is the task at {address}", "give every task the same "
                      "TLS credentials")
    if server & FLAG_TLS:
        sock = _client_tls(sock, creds, address, who)
    if server & FLAG_TOKEN:
        sock.sendall(creds.digest)
        if _recv_exactly(sock, 1) != _OK:
            raise refused(errors.PERMISSION_DENIED, who, "wrong auth token", TOKEN_HINT)
    sock.settimeout(None)
    return sock


def _client_tls(sock: socket.socket, creds: Credentials, address: str, who: str
                ) -> socket.socket:
    """Mutual TLS on a same-host link, then unwrapped (the bytes stay in the kernel)."""
    host = parse_host_port(address)[0]
    try:
        tls = creds.client_context().wrap_socket(sock, server_hostname=creds.server_name or host)
        tls.settimeout(HANDSHAKE_TIMEOUT_S)
        _recv_exactly(tls, 1)  # TLS 1.3: the server's verdict on our certificate
        return _plain(tls.unwrap())
    except ssl.SSLCertVerificationError as e:
        raise refused(errors.PERMISSION_DENIED, who, "its certificate does not verify "
                      f"against this process's CA ({reason(e)})", TLS_HINT) from None
    except ssl.SSLError as e:
        raise refused(errors.PERMISSION_DENIED, who, "it did not accept this process's "
                      f"certificate ({reason(e)})", TLS_HINT) from None


def unix_server_handshake(sock: socket.socket, creds: Credentials, task: str
                          ) -> socket.socket:
    """Checks a same-host client (the first bytes must be `UNIX_HELLO` when `creds`
    are on); returns the socket to serve frames on.

    Raises:
        Refused: logged; `args[1]` is True when the client was already told (a
            handshake refusal), False when it sent a frame instead of a hello.
    """
    peer = _unix_peer(sock)
    sock.settimeout(HANDSHAKE_TIMEOUT_S)
    try:
        first = _peek(sock, len(UNIX_HELLO))
        if first != UNIX_HELLO:
            if creds.enabled:
                log_refused(task, peer, "same-host connection without credentials")
                raise Refused("no credentials", False)
            sock.settimeout(None)
            return sock
        client = _recv_exactly(sock, len(UNIX_HELLO) + 1)[-1]
        missing = _flags(creds) & ~client
        if missing:
            sock.sendall(bytes([FLAG_REFUSED | missing]))
            log_refused(task, peer, "same-host connection without "
                        + ("TLS" if missing & FLAG_TLS else "the auth token"))
            raise Refused("missing credentials", True)
        sock.sendall(bytes([_flags(creds)]))
        sock = _server_layers(sock, creds, task, peer)
    except (OSError, ValueError) as e:  # broke or stalled mid-handshake
        log_refused(task, peer, f"same-host handshake broke ({e})")
        raise Refused("broken handshake", True) from None
    sock.settimeout(None)
    return sock


def refuse_first_call(sock: socket.socket, creds: Credentials, task: str) -> None:
    """Answers a credential-less client's first call with UNAUTHENTICATED (its caller
    learns what to set), instead of a connection that just breaks."""
    try:
        sock.settimeout(HANDSHAKE_TIMEOUT_S)
        if shm.offered(sock):  # its shared-memory hello comes before its first frame
            shm.accept(sock)
        kind, _, _, ident, _ = HEAD.unpack(_recv_exactly(sock, HEAD.size))
        if kind == REQUEST:
            need = "TLS" if creds.tls else "an auth token"
            err = refused(errors.UNAUTHENTICATED, task, f"it requires {need}",
                          TLS_HINT if creds.tls else TOKEN_HINT)
            sock.settimeout(None)
            Conn(sock).send(ERROR, 0, err.error_code, ident, err.message.encode(), [])
    except (OSError, ValueError):
        pass  # it went away; nothing to tell


def _server_layers(sock: socket.socket, creds: Credentials, task: str, peer: str
                   ) -> socket.socket:
    if creds.tls:
        try:
            tls = creds.server_context().wrap_socket(sock, server_side=True)
            tls.sendall(_OK)
            sock = _plain(tls.unwrap())
        except ssl.SSLError as e:
            log_refused(task, peer, f"same-host TLS handshake failed ({reason(e)})")
            raise Refused("TLS", True) from None
    if creds.token:
        if not creds.token_matches(_recv_exactly(sock, _DIGEST)):
            sock.sendall(_BAD)
            log_refused(task, peer, "same-host connection with a wrong auth token")
            raise Refused("token", True)
        sock.sendall(_OK)
    return sock


def _plain(sock: socket.socket) -> socket.socket:
    """A plain socket object for an unwrapped TLS socket (which refuses sendmsg)."""
    family, kind, timeout = sock.family, sock.type, sock.gettimeout()
    plain = socket.socket(family, kind, fileno=sock.detach())
    plain.settimeout(timeout)  # also puts the descriptor back in the matching mode
    return plain


def _peek(sock: socket.socket, n: int) -> bytes:
    while True:
        data = sock.recv(n, socket.MSG_PEEK)
        if len(data) >= n or not data:
            return data
        if not data.startswith(UNIX_HELLO[:len(data)]):
            return data  # not a hello: no need to wait for the rest
        time.sleep(0.001)


def _unix_peer(sock: socket.socket) -> str:
    """"pid P uid U" of a same-host peer (Linux), for the log."""
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _ = struct.unpack("3i", creds)
        return f"same-host process {pid} (uid {uid})"
    except (OSError, AttributeError):
        return "a same-host process"
