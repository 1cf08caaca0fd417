"""`GET /metrics` on the task port: a tiny HTTP/1.1 server for Prometheus scrapes.

The task port (shared_port.py) sorts each connection by its first bytes: a bulk pull
starts with `bulk.MAGIC`, gRPC with HTTP/2's preface "PRI * HTTP/2.0", and a scrape
with an HTTP/1.1 request line ("GET /metrics HTTP/1.1"). So Prometheus scrapes the
one port a firewall already opens for the task, and no second listener exists.

One request per connection (`Connection: close`), answered on a pool thread within
TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS (a request that takes longer is closed, as any
slow first message); requests over 16 KiB of head are refused. Only `GET` (and
`HEAD`) of `/metrics`: anything else is 404 (405 for other methods).

Authentication is the port's: over TLS when the task has TLS (the port terminates it
before the first bytes are sorted, so a scrape needs a certificate the cluster CA
signed), and with the cluster's token when it has one, as `Authorization: Bearer
<token>` (Prometheus' `authorization: {credentials_file: ...}`), compared in constant
time (`Credentials.bearer_matches`); without it the answer is 401 and the refusal is
logged like any other (`tensorweave.security`).

Example:
    >>> is_http(b"GET /met")
    True
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from tensorweave.distributed.transport import limits, sidechannel
from tensorweave.distributed.transport.credentials import Credentials
from tensorweave.runtime.metrics import CONTENT_TYPE

__all__ = ["MAX_HEAD_BYTES", "is_http", "serve"]

log = logging.getLogger("tensorweave.transport.tcp")
MAX_HEAD_BYTES = 16 * 1024
_METHODS = (b"GET ", b"HEAD ")
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            405: "Method Not Allowed", 431: "Request Header Fields Too Large",
            500: "Internal Server Error"}


def is_http(head: bytes) -> bool:
    """Whether a connection's first bytes are an HTTP/1.x request line we answer."""
    return head.startswith(_METHODS)


def serve(conn: Any, head: bytes, creds: Credentials, task: str, peer: str,
          render: Callable[[], str] | None) -> None:
    """Reads one request that began with `head` (consumed) from `conn` and answers it;
    blocks (bounded by the handshake timeout). The caller closes `conn`."""
    conn.setblocking(True)
    conn.settimeout(limits.handshake_timeout_secs())
    try:
        request = _read_head(conn, head)
    except (OSError, ValueError) as e:
        _send(conn, 431 if isinstance(e, ValueError) else 400, str(e))
        return
    status, body = _answer(request, creds, task, peer, render)
    extra = {"WWW-Authenticate": 'Bearer realm="tensorweave"'} if status == 401 else {}
    _send(conn, status, body, extra, head_only=request.startswith(b"HEAD "))


def _read_head(conn: Any, head: bytes) -> bytes:
    """The request's line and headers (up to the blank line); a body is never read."""
    data = bytearray(head)
    while b"\r\n\r\n" not in data and b"\n\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            raise ValueError(f"request head over {MAX_HEAD_BYTES} bytes")
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("the client closed before the end of its request")
        data += chunk
    return bytes(data)


def _answer(request: bytes, creds: Credentials, task: str, peer: str,
            render: Callable[[], str] | None) -> tuple[int, str]:
    lines = request.decode("latin-1").splitlines()
    parts = lines[0].split() if lines else []
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return 400, "not an HTTP/1.x request line\n"
    if creds.token and not creds.bearer_matches(_bearer(lines[1:])):
        sidechannel.log_refused(task, peer, "a metrics scrape without the auth token")
        return 401, ("this task requires the cluster's token: send 'Authorization: Bearer "
                     "<token>' (the contents of TENSORWEAVE_AUTH_TOKEN_FILE)\n")
    method, path = parts[0], parts[1].partition("?")[0]
    if path != "/metrics" or render is None:
        return 404, "this port serves GET /metrics only\n"
    if method not in ("GET", "HEAD"):
        return 405, "GET /metrics only\n"
    try:
        return 200, render()
    except Exception:  # noqa: BLE001 - a collector's bug answers 500; the task goes on
        log.exception("%s: rendering /metrics failed", task)
        return 500, "rendering the metrics failed (see the task's log)\n"


def _bearer(header_lines: list[str]) -> bytes:
    for line in header_lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "authorization":
            scheme, _, token = value.strip().partition(" ")
            if scheme.lower() == "bearer":
                return token.strip().encode("latin-1")
    return b""


def _send(conn: Any, status: int, body: str, extra: dict[str, str] | None = None,
          head_only: bool = False) -> None:
    payload = body.encode("utf-8")
    kind = CONTENT_TYPE if status == 200 else "text/plain; charset=utf-8"
    headers = {"Content-Type": kind, "Content-Length": str(len(payload)),
               "Connection": "close", **(extra or {})}
    head = f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    try:
        conn.sendall(head.encode("latin-1") + (b"" if head_only else payload))
    except OSError:
        pass  # the scraper went away; nothing to tell it
