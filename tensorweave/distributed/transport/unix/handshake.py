"""The same-host link's handshake: a hello, credentials, then frames.

A unix link starts with `UNIX_HELLO` + the client's flags; the server answers
with its own (or a refusal), then TLS runs and is unwrapped again (the bytes
never leave the kernel: the handshake is the point, and the link keeps its
speed), then the token digest; each step answers one byte.

Example:
    >>> sock = unix_client_handshake(raw, creds, "localhost:2222", "/job:ps/task:0")
    ... # doctest: +SKIP
"""
from __future__ import annotations

import socket
import ssl
import struct
import time

from tensorweave.base.address import parse_host_port
from tensorweave.distributed.protocol.methods import SERVICES
from tensorweave.distributed.transport.credentials import (
    TLS_HINT, TOKEN_HINT, Credentials, refused)
from tensorweave.distributed.transport import limits
from tensorweave.distributed.transport.sidechannel import (
    DIGEST_BYTES as _DIGEST, FLAG_TLS, FLAG_TOKEN, Refused, flags as _flags, log_refused, peek,
    reason, recv_exactly as _recv_exactly)
from tensorweave.distributed.transport.unix import shm
from tensorweave.distributed.transport.unix.framing import ERROR, HEAD, REQUEST, Conn
from tensorweave.framework import errors

__all__ = ["UNIX_HELLO", "refuse_first_call", "unix_client_handshake", "unix_peer",
           "unix_server_handshake"]

UNIX_HELLO = b"TWUNIX\x00"           # + one byte of flags: a same-host link's handshake
FLAG_REFUSED = 0x80
_OK, _BAD = b"\x01", b"\x00"


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
    sock.settimeout(limits.handshake_timeout_secs())
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
        tls.settimeout(limits.handshake_timeout_secs())
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
    peer = unix_peer(sock)
    sock.settimeout(limits.handshake_timeout_secs())
    try:
        # not a hello: no need to wait for the rest
        first = peek(sock, len(UNIX_HELLO), lambda data: UNIX_HELLO.startswith(data))
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
        sock.settimeout(limits.handshake_timeout_secs())
        if shm.offered(sock):  # its shared-memory hello comes before its first frame
            shm.accept(sock)
        kind, sid, mid, ident, _ = HEAD.unpack(_recv_exactly(sock, HEAD.size))
        if kind == REQUEST:
            need = "TLS" if creds.tls else "an auth token"
            err = refused(errors.UNAUTHENTICATED, task, f"it requires {need}",
                          TLS_HINT if creds.tls else TOKEN_HINT, method=_method_name(sid, mid))
            sock.settimeout(None)
            Conn(sock).send(ERROR, 0, err.error_code, ident, err.message.encode(), [])
            _drain(sock)
    except (OSError, ValueError):
        pass  # it went away; nothing to tell


def _drain(sock: socket.socket, secs: float = 1.0) -> None:
    """Reads what the client still sends (the refused call's body) for at most `secs`
    before the caller closes: closing with unread bytes would reset the connection and
    could drop the answer before the client reads it."""
    sock.shutdown(socket.SHUT_WR)
    deadline = time.monotonic() + secs
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        if not sock.recv(1 << 16):
            return


def _method_name(sid: int, mid: int) -> str:
    """The gRPC name of a frame's method ("Reset"); "" for ids no service has."""
    services = list(SERVICES.values())
    if sid < len(services) and mid < len(services[sid]):
        return services[sid][mid].name
    return ""


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


def unix_peer(sock: socket.socket) -> str:
    """"pid P uid U" of a same-host peer (Linux), for the log."""
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _ = struct.unpack("3i", creds)
        return f"same-host process {pid} (uid {uid})"
    except (OSError, AttributeError):
        return "a same-host process"
