"""gRPC channels to other tasks over TCP connections this process makes and tunes.

gRPC's C core opens a channel's TCP connections itself, and Python cannot set options
on them. Across a real network one option decides how long a silent partition costs
after it heals: the retransmission back-off. Linux doubles the wait between
retransmissions from 200 ms up to 120 s, so a request sent into a link cut for 10 s
is sent again 2.6-6 s after the link is back, and the step waits that long. So a
channel to another task dials a private abstract Unix socket of this process (a
`Dialer`, one per remote address); for each connection gRPC opens there, a pool
thread resolves the task's host and the event loop connects to it, without blocking
(so a task behind a partition, whose connects hang until they time out, holds up no
connect to another task), with a socket tuned by `tune_link`
(TCP_NODELAY, and TCP_RTO_MAX_MS from TENSORWEAVE_TCP_RETRANSMIT_MAX_SECS where the
kernel has it: Linux 6.14+), and the event loop relays the two (relay.py: spliced
in the kernel, no thread per connection). The relay costs a call ~0.1 ms on loopback,
so where tuning changes nothing (the knob at 0, an older kernel) gRPC dials itself.
TLS stays gRPC's, end to end: the relay carries its bytes as they are. A failed
connect is recorded (`connect_error`), so the error names the cause ("Connection
refused") rather than gRPC's "Socket closed".

Example:
    >>> target = grpc_target("10.0.0.2", 2222)        # doctest: +SKIP
    >>> grpc.insecure_channel(target, options=[("grpc.default_authority", "10.0.0.2:2222")])
"""
from __future__ import annotations

import errno
import functools
import logging
import os
import secrets
import socket
import threading
import time
from typing import Any

from tensorweave.base import knobs
from tensorweave.distributed.transport import reactor
from tensorweave.distributed.transport.tcp.relay import Relay

__all__ = ["Dialer", "connect_error", "grpc_target", "kernel_has_rto_max", "tune_link"]

log = logging.getLogger("tensorweave.transport.tcp")
_READ, _WRITE = 1, 2  # selectors.EVENT_READ, EVENT_WRITE
# Linux's TCP_RTO_MAX_MS (include/uapi/linux/tcp.h, 6.14+); older kernels refuse it.
_TCP_RTO_MAX_MS = 44
_KERNEL_FLOOR_MS = 1000  # the least it accepts
# A connect that takes longer is given up (gRPC then retries with its back-off).
_CONNECT_TIMEOUT_SECS = 20.0

_dialers: dict[tuple[str, int], "Dialer"] = {}
_dialers_lock = threading.Lock()


def tune_link(sock: socket.socket) -> None:
    """The options of every TCP socket between tasks: no Nagle, and retransmissions at
    most TENSORWEAVE_TCP_RETRANSMIT_MAX_SECS apart (kept as the kernel's where it cannot).
    On a listening socket they pass to the connections it accepts."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if _tunable():  # else the kernel's own back-off, up to 120 s
        rto_max = knobs.TCP_RETRANSMIT_MAX_SECS.get()
        sock.setsockopt(socket.IPPROTO_TCP, _TCP_RTO_MAX_MS,
                        max(_KERNEL_FLOOR_MS, int(rto_max * 1000)))


def grpc_target(host: str, port: int) -> str:
    """The gRPC target of a channel to host:port: this process's dialer for it
    ("unix-abstract:..."), or host:port itself, dialled by gRPC, where tuning changes
    nothing (TENSORWEAVE_TCP_RETRANSMIT_MAX_SECS=0, or a kernel before 6.14): the relay
    costs a call ~0.1 ms on loopback, worth it only for what it buys."""
    if not _tunable():
        return f"{host}:{port}"
    with _dialers_lock:
        dialer = _dialers.get((host, port))
        if dialer is None:
            dialer = _dialers[(host, port)] = Dialer(host, port)
    return dialer.target


def _tunable() -> bool:
    return knobs.TCP_RETRANSMIT_MAX_SECS.get() > 0 and kernel_has_rto_max()


@functools.cache
def kernel_has_rto_max() -> bool:
    """Whether this kernel takes TCP_RTO_MAX_MS (Linux 6.14 and later)."""
    with socket.socket() as s:
        try:
            s.setsockopt(socket.IPPROTO_TCP, _TCP_RTO_MAX_MS, _KERNEL_FLOOR_MS)
        except OSError:
            return False
    return True


def connect_error(host: str, port: int) -> str:
    """Why the newest connection to host:port failed ("" if it did not, or none was made)."""
    with _dialers_lock:
        dialer = _dialers.get((host, port))
    return dialer.error if dialer is not None else ""


class Dialer:
    """Accepts gRPC's connections on an abstract Unix socket and relays each to a new TCP
    connection to host:port (see the module docstring). Lives as long as the process."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.error = ""
        name = f"tw-dial-{os.getpid()}-{secrets.token_hex(6)}"
        self.target = f"unix-abstract:{name}"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind("\0" + name)
        self._listener.listen(64)
        self._listener.setblocking(False)
        self._loop = reactor.get()
        self._loop.run_sync(lambda: self._loop.watch(self._listener, _READ, self._accept))

    def _accept(self, _events: int) -> None:  # on the loop's thread
        for _ in range(64):
            try:
                conn, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log.warning("cannot accept gRPC's connection for %s:%d: %s", self.host,
                            self.port, e)
                return
            reactor.blocking("dial").submit(self._dial, conn)

    def _dial(self, conn: socket.socket) -> None:  # on a pool thread: DNS may block
        deadline = time.monotonic() + _CONNECT_TIMEOUT_SECS
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        except OSError as e:
            self._failed(conn, e)
            return
        self._loop.call_soon(lambda: self._connect(conn, infos, deadline))

    def _connect(self, conn: socket.socket, infos: list[Any], deadline: float) -> None:
        """On the loop's thread: a non-blocking connect to the first address of `infos`
        (then the next, as `socket.create_connection` tries them), relayed once up."""
        family, kind, proto, _, address = infos[0]
        tcp = socket.socket(family, kind, proto)
        tcp.setblocking(False)
        settled = [False]

        def settle(error: OSError | None) -> None:
            if settled[0]:
                return
            settled[0] = True
            self._loop.unwatch(tcp)
            if error is None:
                self.error = ""
                tune_link(tcp)
                _relay(self._loop, conn, tcp)
                return
            tcp.close()
            if len(infos) > 1 and not isinstance(error, socket.timeout):
                self._connect(conn, infos[1:], deadline)
            else:
                self._failed(conn, error)

        def writable(_events: int) -> None:
            code = tcp.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            settle(OSError(code, os.strerror(code)) if code else None)
        code = tcp.connect_ex(address)
        if code not in (0, errno.EINPROGRESS):
            settle(OSError(code, os.strerror(code)))
            return
        self._loop.watch(tcp, _WRITE, writable)
        self._loop.at(deadline, lambda: settle(socket.timeout()))

    def _failed(self, conn: socket.socket, e: OSError) -> None:
        self.error = f"connecting to {self.host}:{self.port} failed: {_reason(e)}"
        conn.close()  # gRPC sees the connection end, fails its calls, retries later


def _relay(loop: reactor.Reactor, conn: socket.socket, tcp: socket.socket) -> None:
    def closed() -> None:
        conn.close()
        tcp.close()
    Relay(loop, conn, tcp, closed).start()


def _reason(e: OSError) -> str:
    if isinstance(e, socket.timeout):
        return f"no answer within {_CONNECT_TIMEOUT_SECS:g} s"
    return e.strerror or str(e)
