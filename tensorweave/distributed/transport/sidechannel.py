"""Authentication on raw sockets, shared by the transports: what every handshake uses.

With credentials (credentials.py) every raw connection proves itself before a
byte of the protocol it carries is served:

* the task port (tcp/shared_port.py) terminates TLS itself (a handshake stepped on
  the event loop), so gRPC and big-tensor pulls are encrypted and both ends
  verified against the cluster CA; a refused handshake is logged with the peer's
  address;
* a bulk pull starts with a token digest when the cluster has a token
  (tcp/bulk_auth.py);
* a same-host link runs its own handshake (unix/handshake.py).

Refusals are logged here (`log_refused`, rate-limited) with the peer's address.

Example:
    >>> log_refused("/job:ps/replica:0/task:0", "10.0.0.7:51234", "wrong auth token")
    ... # doctest: +SKIP
"""
from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any, Callable

from tensorweave.base.waits import Backoff, Wait
from tensorweave.distributed.transport import limits
from tensorweave.distributed.transport.credentials import Credentials

__all__ = ["FLAG_TLS", "FLAG_TOKEN", "Refused", "flags", "log_refused", "peek",
           "reason", "recv_exactly", "recv_exactly_into"]

log = logging.getLogger("tensorweave.security")

FLAG_TLS, FLAG_TOKEN = 1, 2  # what a side's credentials include, in a handshake byte
DIGEST_BYTES = 32            # a token's SHA-256 digest
_LOG_EVERY_S = 10.0
_last_logged: dict[tuple[str, str], float] = {}
_log_lock = threading.Lock()
# A message's first bytes are sent at once: the rest of them is milliseconds away.
_PEEK_POLL = Backoff(first=0.001, cap=0.01)


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


def recv_exactly_into(sock: Any, view: memoryview) -> None:
    """Fills `view` from `sock`; blocks until full. Raises ConnectionError on EOF."""
    got, total = 0, view.nbytes
    while got < total:
        n = sock.recv_into(view[got:], total - got)
        if n == 0:
            raise ConnectionError(f"Peer closed after {got} of {total} bytes")
        got += n


def recv_exactly(sock: Any, n: int) -> bytes:
    """`n` bytes from `sock` (blocks until they are all there)."""
    buf = bytearray(n)
    recv_exactly_into(sock, memoryview(buf))
    return bytes(buf)


def peek(sock: Any, n: int, coming: Callable[[bytes], bool] = lambda data: True) -> bytes:
    """The first `n` bytes on `sock` without consuming them: fewer at EOF, or once
    `coming(data)` says the rest is not worth waiting for (not the message expected).

    The rest of a message sent at once arrives within milliseconds; a peer that stops
    part-way (a byte at a time: a slow loris) gets TimeoutError after
    TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS instead of holding this thread.
    """
    wait = Wait(f"for the first {n} bytes of a connection", limits.handshake_timeout_secs(),
                backoff=_PEEK_POLL, error=TimeoutError,
                hint=f"The peer stopped part-way; {limits.ENV_HANDSHAKE_TIMEOUT_SECS} bounds "
                "this wait.")
    while True:
        data = sock.recv(n, socket.MSG_PEEK)
        if len(data) >= n or not data or not coming(data):
            return data
        wait.pause(f"{len(data)} of them arrived")


def flags(creds: Credentials) -> int:
    """FLAG_TLS | FLAG_TOKEN as `creds` have them."""
    return (FLAG_TLS if creds.tls else 0) | (FLAG_TOKEN if creds.token else 0)


def reason(e: BaseException) -> str:
    """A short reason for a TLS failure (the verify message, or OpenSSL's reason)."""
    return getattr(e, "verify_message", None) or getattr(e, "reason", None) or str(e) or \
        type(e).__name__


