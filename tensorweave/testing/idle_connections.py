"""Idle connections to a task, and what they cost it: for tests and bench.connections.

Example:
    >>> socks = open_idle("tcp-grpc", "127.0.0.1", port, 100)   # doctest: +SKIP
    >>> task_stats(pid)["threads"]                              # doctest: +SKIP
    12
"""
from __future__ import annotations

import os
import socket
import ssl

from tensorweave.distributed.transport.credentials import Credentials
from tensorweave.distributed.transport.tcp import bulk_auth
from tensorweave.distributed.transport.unix import shm
from tensorweave.distributed.transport.unix.handshake import UNIX_HELLO
from tensorweave.distributed.transport.unix.link import socket_name

__all__ = ["KINDS", "TLS_KINDS", "held", "open_idle", "task_stats"]

# tcp-silent: a TCP connection to the task port that sends nothing (half-open);
# tcp-grpc: one that sent HTTP/2's preface, then nothing (an idle gRPC channel);
# unix: a same-host link, set up (hello, no shared-memory ring), then idle.
# With TLS credentials (a task that has them): tls-grpc, a verified TLS connection
# that sent the preface; tls-bulk, one that opened a bulk channel and pulls nothing.
KINDS = ("tcp-silent", "tcp-grpc", "unix")
TLS_KINDS = ("tls-grpc", "tls-bulk")
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def task_stats(pid: int) -> dict[str, int]:
    """Threads, RSS (KiB) and open sockets of process `pid` (Linux /proc)."""
    out = {"threads": 0, "rss_kib": 0, "sockets": 0}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                out["threads"] = int(line.split()[1])
            elif line.startswith("VmRSS:"):
                out["rss_kib"] = int(line.split()[1])
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink(os.path.join(fd_dir, fd)).startswith("socket:"):
                out["sockets"] += 1
        except OSError:
            pass  # closed meanwhile
    return out


def open_idle(kind: str, host: str, port: int, n: int,
              credentials: Credentials | None = None) -> list[socket.socket]:
    """`n` idle connections of `kind` (see KINDS; TLS_KINDS with `credentials`) to the
    task at host:port; they stay open until closed."""
    socks: list[socket.socket] = []
    for _ in range(n):
        if kind in TLS_KINDS:
            if credentials is None or not credentials.tls:
                raise ValueError(f"{kind!r} connections need TLS credentials.")
            raw = socket.create_connection((host, port))
            if kind == "tls-bulk":
                s = bulk_auth.open_bulk(raw, credentials, host)  # TLS, then the bulk magic
            else:
                s = credentials.client_context().wrap_socket(raw, server_hostname=host)
                s.sendall(_PREFACE)
        elif kind == "unix":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(socket_name(f"{host}:{port}"))
            s.sendall(UNIX_HELLO + b"\0")  # no credentials
            s.recv(1)                       # the task's answer
            shm.offer(s, 0)                 # the link's set-up, without a ring
        else:
            s = socket.create_connection((host, port))
            if kind == "tcp-grpc":
                s.sendall(_PREFACE)
        socks.append(s)
    return socks




def held(socks: list[socket.socket]) -> int:
    """How many of `socks` the other side still holds open (not closed nor reset)."""
    return sum(_held(s) for s in socks)


def _held(s: socket.socket) -> bool:
    try:
        if isinstance(s, ssl.SSLSocket):  # no peeking through TLS: read what came (the
            s.setblocking(False)          # task's HTTP/2 settings); b"" when it closed
            while s.recv(1 << 16):
                pass
            return False
        return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except (BlockingIOError, ssl.SSLWantReadError):
        return True  # open, nothing (more) to read
    except OSError:
        return False  # reset
