"""Same-host links, the serving side: a task's abstract Unix socket and its connections.

A reader thread per connection handles what arrives: pushes and quick calls
inline; a blocking call (RunGraph, RunStep, ...) runs on the thread that read it,
once a long-lived runner thread has taken over the reading, so no thread is
created per step and no hand-off delays the call.

Example:
    >>> listener = UnixListener("localhost:2222", server)   # server.service(name)
    >>> listener.stop()
"""
from __future__ import annotations

import functools
import logging
import socket
import threading
from typing import Any, Callable

from tensorweave.distributed.protocol.methods import SERVICES
from tensorweave.distributed.transport import credentials as creds_mod
from tensorweave.distributed.transport import limits, sidechannel
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
        self._sock.listen(64)
        self._conns: set[_Conn] = set()
        self._lock = threading.Lock()
        self._runners = _Runners(f"tw-serve-{address}")
        self._stopped = False
        self._acceptor = threading.Thread(target=self._accept, daemon=True,
                                          name=f"tw-accept-{address}")
        self._acceptor.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._sock.accept()
            except OSError:
                return
            _tune(sock)
            if self._stopped:
                sock.close()
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True,
                             name=f"tw-conn-{self.address}").start()

    def _admit(self, sock: socket.socket) -> _Conn | None:
        """The connection once its peer has proved itself (None: refused, closed)."""
        try:
            sock = handshake.unix_server_handshake(sock, self._creds, self._task)
        except sidechannel.Refused as e:
            if not e.args[1]:
                handshake.refuse_first_call(sock, self._creds, self._task)
            sock.close()
            return None
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
        conn = _Conn(sock, out_ring, in_ring)
        with self._lock:
            if self._stopped:
                conn.close()
                return None
            self._conns.add(conn)
        return conn

    def _serve(self, sock: socket.socket) -> None:
        conn = self._admit(sock)
        if conn is not None:
            self._read(conn)

    def _read(self, conn: _Conn) -> None:
        """Handles `conn`'s frames until a call that blocks (RunGraph, ...) arrives;
        then a runner thread takes over the reading and this thread runs the call, so
        the call starts at once (no hand-off on the step's path) while the new reader
        wakes up in time for the tensors the call will wait for."""
        try:
            while True:
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
                self._conns.discard(conn)
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
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        # The name stays bound while accept() is inside the kernel: wait for it, so a
        # server started right after this one stopped can take the same address.
        self._acceptor.join(5.0)
        self._sock.close()
        for c in conns:
            c.close()
        self._runners.stop()
