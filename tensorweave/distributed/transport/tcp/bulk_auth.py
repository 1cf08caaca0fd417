"""Who may pull a big tensor: the bulk connection's token check (TLS is the port's).

A bulk pull starts with `bulk.MAGIC`, or with `BULK_TOKEN_MAGIC` and the 32-byte
token digest when the cluster has a token.

Example:
    >>> sock = open_bulk(raw, creds, "10.0.0.7")   # client side  # doctest: +SKIP
"""
from __future__ import annotations

import socket
from typing import Any

from tensorweave.distributed.transport.credentials import Credentials
from tensorweave.distributed.transport import limits
from tensorweave.distributed.transport.sidechannel import (
    DIGEST_BYTES as _DIGEST, log_refused, recv_exactly as _recv_exactly)
from tensorweave.distributed.transport.tcp import bulk

__all__ = ["BULK_TOKEN_MAGIC", "check_bulk", "open_bulk"]

BULK_TOKEN_MAGIC = b"TWBULK\x00\x02"  # a bulk connection whose 32-byte digest follows


def check_bulk(conn: Any, first: bytes, creds: Credentials, task: str, peer: str) -> bool:
    """Whether a bulk connection that began with `first` (consumed) may pull."""
    # A digest that never comes frees the thread (TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS).
    conn.settimeout(limits.handshake_timeout_secs())
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
