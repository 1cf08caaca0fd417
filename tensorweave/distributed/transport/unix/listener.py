"""Same-host links, the serving side: a task's abstract Unix socket and its connections.

A connection costs no thread while it is idle: the process's event loop
(transport/reactor.py) accepts, waits for each new connection's hello (closing, and
logging, one that says nothing within TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS), runs the
handshake on its small pool, and parks a link with nothing to read. Once a frame
arrives a runner thread reads: pushes and quick calls inline; a blocking call
(RunGraph, RunStep, ...) runs on the thread that read it, once another runner has
taken over the reading, so no thread is created per step and no hand-off delays the
call. A reader that finds nothing to read for `_LINGER_S` parks the link again.

Example:
    >>> listener = UnixListener("localhost:2222", server)   # server.service(name)
    >>> listener.stop()
"""
from __future__ import annotations

import functools
import logging
import select
import socket
import threading
import time
from typing import Any, Callable

from tensorweave.distributed.protocol.methods import SERVICES
from tensorweave.distributed.transport import credentials as creds_mod
from tensorweave.distributed.transport import limits, reactor, sidechannel
from tensorweave.distributed.transport.base import ServiceHost, Tensors
from tensorweave.distributed.transport.credentials import Credentials
from tensorweave.distributed.transport.unix import handshake, shm
from tensorweave.distributed.transport.unix.framing import (
    ERROR, PUSH, REPLY, Conn as _Conn, Runners as _Runners, error_frame as _error_frame,
    tune as _tune)
from tensorweave.distributed.transport.unix.link import socket_name

log = logging.getLogger("tensorweave.transport.unix")

_SERVICE_NAMES = list(SERVICES)
# Calls that never block on other messages of the same connection run on its reader.
_INLINE = {"get_status", "push_tensors", "abort_step", "deregister_graph"}
# A reader with nothing to read for this long parks its link on the event loop: a
# training loop's frames come far more often, a paused link costs no thread.
_LINGER_S = 2.0
_READ = 1  # selectors.EVENT_READ
__all__ = ["UnixListener"]


class UnixListener:
    """Serves a `ServiceHost`'s services on the abstract socket of `address`.

    With `credentials`, each connection must pass sidechannel's handshake first
    (any process of the host can reach an abstract socket).

    Raises:
        ValueError: when another process already serves that address.
    """

    def __init__(self, address: str, host: ServiceHost,
                 credentials: Credentials = creds_mod.NONE, task: str = "") -> None:
        self.address, self._host = address, host
        self._creds, self._task = credentials, task or address
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.bind(socket_name(address))
        except OSError as e:
            self._sock.close()
            raise ValueError(f"Cannot listen on {address}: the port is in use by another "
                             f"task of this host (its same-host socket: {e.strerror}).") from None
        self._sock.listen(1024)
        self._sock.setblocking(False)
        self._conns: dict[_Conn, reactor.Ticket] = {}
        self._pending: set[socket.socket] = set()  # accepted, handshake not done
        self._lock = threading.Lock()
        self._runners = _Runners(f"tw-serve-{address}")
        self._stopped = False
        self._counts = reactor.Counts(self._task, "unix")
        self._loop = reactor.get()
        self._loop.run_sync(lambda: self._loop.watch(self._sock, _READ, self._accept))

    # --- on the loop's thread ---
    def _accept(self, _events: int) -> None:
        for _ in range(64):  # then let the loop serve the others
            try:
                sock, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # out of descriptors: pause, or this would spin
                log.warning("%s: cannot accept same-host connections: %s", self.address, e)
                self._loop.unwatch(self._sock)
                self._loop.at(time.monotonic() + 0.5, self._resume)
                return
            ticket = self._counts.admit(handshake.unix_peer(sock))
            if ticket is None or self._stopped:
                if ticket is not None:
                    ticket.release()
                sock.close()
                continue
            _tune(sock)
            with self._lock:
                self._pending.add(sock)
            deadline = time.monotonic() + limits.handshake_timeout_secs()
            self._loop.when_readable(
                sock, functools.partial(self._hello, sock, ticket), deadline)

    def _resume(self) -> None:
        if not self._stopped:
            self._loop.watch(self._sock, _READ, self._accept)

    def _hello(self, sock: socket.socket, ticket: reactor.Ticket, ready: bool) -> None:
        """Its first bytes arrived (the handshake runs on the pool), or never did."""
        if ready and not self._stopped:
            reactor.blocking().submit(self._serve, sock, ticket)
            return
        if not self._stopped:
            sidechannel.log_refused(self._task, handshake.unix_peer(sock),
                                    f"it said nothing within "
                                    f"{limits.handshake_timeout_secs():g} s "
                                    f"({limits.ENV_HANDSHAKE_TIMEOUT_SECS})")
        self._forget(sock, ticket)

    def _park(self, conn: _Conn) -> None:
        """Waits (without a thread) for `conn`'s next frame, then a runner reads it."""
        def watch() -> None:
            if self._stopped or conn.sock.fileno() < 0:
                return
            self._loop.when_readable(conn.sock, lambda ready: self._runners.submit(
                functools.partial(self._read, conn)))
        self._loop.call_soon(watch)

    # --- on the pools' threads ---
    def _forget(self, sock: socket.socket, ticket: reactor.Ticket) -> None:
        with self._lock:
            self._pending.discard(sock)
        ticket.release()
        sock.close()

    def _serve(self, sock: socket.socket, ticket: reactor.Ticket) -> None:
        """The credentials' handshake (bounded by TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS);
        then the loop waits, without a thread, for the shared-memory hello."""
        try:
            proved = handshake.unix_server_handshake(sock, self._creds, self._task)
        except sidechannel.Refused as e:
            if not e.args[1]:
                handshake.refuse_first_call(sock, self._creds, self._task)
            self._forget(sock, ticket)
            return
        with self._lock:
            self._pending.discard(sock)
            self._pending.add(proved)
        deadline = time.monotonic() + limits.handshake_timeout_secs()

        def wait() -> None:
            if self._stopped:
                self._forget(proved, ticket)
                return
            self._loop.when_readable(
                proved, functools.partial(self._rings_ready, proved, ticket), deadline)
        self._loop.call_soon(wait)

    def _rings_ready(self, sock: socket.socket, ticket: reactor.Ticket, ready: bool) -> None:
        if ready and not self._stopped:
            reactor.blocking().submit(self._start, sock, ticket)
            return
        if not self._stopped:
            sidechannel.log_refused(self._task, handshake.unix_peer(sock),
                                    f"it did not finish its handshake within "
                                    f"{limits.handshake_timeout_secs():g} s "
                                    f"({limits.ENV_HANDSHAKE_TIMEOUT_SECS})")
        self._forget(sock, ticket)

    def _start(self, sock: socket.socket, ticket: reactor.Ticket) -> None:
        """The rings, then the link is parked until its first frame."""
        conn = self._rings(sock)
        with self._lock:
            self._pending.discard(sock)
            if conn is not None and self._stopped:
                conn.close()
                conn = None
            if conn is not None:
                self._conns[conn] = ticket
        if conn is None:
            ticket.release()
            return
        ticket.identified()
        self._park(conn)

    def _rings(self, sock: socket.socket) -> _Conn | None:
        """The link over `sock` once the rings are set up (None: failed, closed)."""
        try:  # the rings: a client's shared-memory hello comes first; this side answers it
            sock.settimeout(limits.handshake_timeout_secs())
            in_ring = out_ring = None
            if shm.offered(sock):
                in_ring = shm.accept(sock)
                out_ring = shm.offer(sock, limits.shm_ring_bytes())
            sock.settimeout(None)
        except (OSError, ValueError) as e:
            log.warning("%s: dropped a same-host connection whose shared-memory set-up "
                        "failed: %s (%s=0 on the connecting task turns the rings off)",
                        self.address, e, limits.ENV_SHM_RING_BYTES)
            sock.close()
            return None
        return _Conn(sock, out_ring, in_ring)

    def _read(self, conn: _Conn) -> None:
        """Handles `conn`'s frames until a call that blocks (RunGraph, ...) arrives;
        then a runner thread takes over the reading and this thread runs the call, so
        the call starts at once (no hand-off on the step's path) while the new reader
        wakes up in time for the tensors the call will wait for."""
        try:
            while True:
                if not conn.has_input() and not _readable_within(conn.sock, _LINGER_S):
                    self._park(conn)  # idle: the link waits without a thread
                    return
                kind, sid, mid, ident, message, tensors = conn.read()
                service = self._host.service(_SERVICE_NAMES[sid])
                if kind == PUSH:
                    try:
                        service.deliver(ident, list(zip(message.decode().split("\n"),
                                                        tensors)))
                    except Exception as e:  # noqa: BLE001 - a bad push must not end the link
                        log.warning("%s: dropped tensors pushed for step %d: %s",
                                    self.address, ident, e)
                    continue
                method = SERVICES[_SERVICE_NAMES[sid]][mid]
                job = self._job(conn, service, method, ident, message, tensors)
                if method.py_name in _INLINE:
                    job()
                    continue
                self._runners.submit(functools.partial(self._read, conn))
                break
        except Exception as e:  # noqa: BLE001 - closed, or garbage: either way the link ends
            log.debug("%s: connection ended: %s", self.address, e)
            with self._lock:
                ticket = self._conns.pop(conn, None)
            if ticket is not None:
                ticket.release()
            conn.close()
            return
        job()

    @staticmethod
    def _job(conn: _Conn, service: Any, method: Any, call_id: int, message: bytes,
             tensors: Tensors) -> Callable[[], None]:
        def run() -> None:
            try:
                resp, out = getattr(service, method.py_name)(method.request.FromString(message),
                                                             tensors)
                frame = (REPLY, 0, 0, call_id, resp.SerializeToString(), out)
            except BaseException as e:  # noqa: BLE001 - every failure goes back to the caller
                code, text = _error_frame(e)
                frame = (ERROR, 0, code, call_id, text, [])
            try:
                conn.send(*frame)
            except OSError:
                pass  # the caller went away; its side reports the broken connection
        return run

    def stop(self) -> None:
        """Stops accepting and closes every connection (peers see the task gone)."""
        with self._lock:
            self._stopped = True
            conns = list(self._conns)
            pending = list(self._pending)

        def unwatch() -> None:
            self._loop.unwatch(self._sock)
            for sock in [c.sock for c in conns] + pending:
                self._loop.unwatch(sock)
        self._loop.run_sync(unwatch)
        self._sock.close()  # no accept() is under way: the name is free at once
        for c in conns:
            c.close()
        for sock in pending:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # a handshake on the pool ends now
            except OSError:
                pass
        self._runners.stop()


def _readable_within(sock: socket.socket, secs: float) -> bool:
    """Whether `sock` has something to read (or its end) within `secs`."""
    poll = select.poll()
    poll.register(sock, select.POLLIN)
    return bool(poll.poll(secs * 1000))
