"""Same-host tasks: one Unix-domain stream socket per task pair, push and calls.

Why not gRPC between tasks of one machine: a gRPC Python unary call costs
~150-300 us of thread hand-offs and HTTP/2 framing, a stream set-up more, and
every tensor is copied into and out of `bytes`. Here a task opens one
long-lived connection to each peer it talks to; everything one task sends the
other (the master's calls, every Send's tensor) travels on it as frames:

    head   <BBHqI>: kind, service, method (or error code), call or step id,
                    envelope length
    envelope       rpc_pb2.Envelope: the request/response message (or push key)
                   and one TensorHeader per tensor
    payloads       each tensor's raw bytes, sent straight from the array's memory
                   (`sendall(memoryview)`) and received straight into the result
                   (`readinto`), whatever their size: no side channel.

Kinds: REQUEST (answered by REPLY or ERROR with the same id) and PUSH (a
tensor for the peer's rendezvous, never answered). A reader thread per
connection handles what arrives: pushes and quick calls inline; a blocking
call (RunGraph, RunStep, ...) runs on the thread that read it, once a
long-lived runner thread has taken over the reading, so no thread is created
per step and no hand-off delays the call. The socket lives in Linux's abstract
namespace, named after the
task's "host:port", so it needs no file and no second port.

Example:
    >>> listener = UnixListener("localhost:2222", server)   # serving side
    >>> peer = UNIX.connect("localhost:2222", "/job:ps/replica:0/task:0",
    ...                     "tensorweave.Worker")
    >>> peer.call("get_status", GetStatusRequest())
"""
from __future__ import annotations

import functools
import itertools
import logging
import socket
import sys
import threading
from typing import Any, Callable, Sequence

from tensorweave.base.address import address_key, same_host
from tensorweave.distributed.protocol.methods import SERVICES
from tensorweave.distributed.transport import credentials as creds_mod
from tensorweave.distributed.transport import limits, shm, sidechannel
from tensorweave.distributed.transport.base import Done, Peer, ServiceHost, Tensors
from tensorweave.distributed.transport.credentials import Credentials
from tensorweave.distributed.transport.framing import (
    ERROR, PUSH, REPLY, REQUEST, STATS, Conn as _Conn, Runners as _Runners,
    error_frame as _error_frame, tune as _tune)
from tensorweave.framework import errors

log = logging.getLogger("tensorweave.transport.unix")

_SERVICE_NAMES = list(SERVICES)
_SERVICE_IDS = {name: i for i, name in enumerate(_SERVICE_NAMES)}
_METHOD_IDS = {name: {m.py_name: i for i, m in enumerate(ms)} for name, ms in SERVICES.items()}
# Calls that never block on other messages of the same connection run on its reader.
_INLINE = {"get_status", "push_tensors", "abort_step", "deregister_graph"}
__all__ = ["STATS", "UNIX", "UnixListener", "UnixPeer", "UnixTransport", "socket_name"]


def socket_name(address: str) -> str:
    """The abstract socket name of the task listening at "host:port"."""
    host, port = address_key(address)
    return f"\0tensorweave:{host}:{port}"


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
            sock = sidechannel.unix_server_handshake(sock, self._creds, self._task)
        except sidechannel.Refused as e:
            if not e.args[1]:
                sidechannel.refuse_first_call(sock, self._creds, self._task)
            sock.close()
            return None
        try:  # the rings: a client's shared-memory hello comes first; this side answers it
            sock.settimeout(sidechannel.HANDSHAKE_TIMEOUT_S)
            in_ring = out_ring = None
            if shm.offered(sock):
                in_ring = shm.accept(sock)
                out_ring = shm.offer(sock, limits.shm_ring_bytes())
            sock.settimeout(None)
        except (OSError, ValueError) as e:
            log.warning("%s: dropped a same-host connection whose shared-memory set-up "
                        "failed: %s (TENSORWEAVE_SHM_RING_MB=0 on the connecting task turns "
                        "the rings off)", self.address, e)
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


class _Link:
    """This process's one connection to the task at `address` (reconnects on demand)."""

    def __init__(self, address: str, name: str,
                 credentials: Credentials = creds_mod.NONE) -> None:
        self.address, self.name = address, name
        self._creds = credentials
        self._lock = threading.Lock()
        self._conn: _Conn | None = None
        self._pending: dict[int, tuple[Done, Any]] = {}
        self._ids = itertools.count(1)

    def _connected(self) -> _Conn:
        with self._lock:
            if self._conn is not None:
                return self._conn
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(socket_name(self.address))
            except OSError as e:
                sock.close()
                raise errors.UnavailableError(
                    None, None, f"Task {self.name} is unavailable: nothing serves {self.address}"
                    f" on this host ({e.strerror or e}). Check that its server is running "
                    "(or set TENSORWEAVE_TRANSPORT=grpc).") from None
            _tune(sock)
            if self._creds.enabled:
                sock = self._handshake(sock)
            try:  # the peer's answer is the first thing this link's reader reads
                out_ring = shm.offer(sock, limits.shm_ring_bytes())
            except OSError as e:
                sock.close()
                raise errors.UnavailableError(
                    None, None, f"Task {self.name} is unavailable: the connection to "
                    f"{self.address} broke as it started ({e}).") from None
            conn = self._conn = _Conn(sock, out_ring)
        threading.Thread(target=self._read, args=(conn,), daemon=True,
                         name=f"tw-link-{self.address}").start()
        return conn

    def _handshake(self, sock: socket.socket) -> socket.socket:
        try:
            return sidechannel.unix_client_handshake(sock, self._creds, self.address,
                                                     self.name)
        except OSError as e:
            sock.close()
            raise errors.UnavailableError(
                None, None, f"Task {self.name} is unavailable: the connection to "
                f"{self.address} broke during its handshake ({e}).") from None
        except BaseException:
            sock.close()
            raise

    def send(self, kind: int, service: int, method: int, ident: int, message: bytes,
             tensors: Sequence[Any], before: Sequence[Any] = ()) -> None:
        """Sends one frame, after the frames `before` (in the same write)."""
        conn = self._connected()
        try:
            conn.send_many([*before, (kind, service, method, ident, message, tensors)])
        except OSError as e:
            self._broken(conn, e)
            raise errors.UnavailableError(None, None, f"Task {self.name} is unavailable: "
                                          f"sending to it failed ({e})") from None

    def start(self, service: int, method: Any, mid: int, request: Any, tensors: Sequence[Any],
              done: Done, call_id: int = 0, before: Sequence[Any] = ()) -> int:
        call_id = call_id or next(self._ids)
        with self._lock:
            self._pending[call_id] = (done, method.response)
        try:
            self.send(REQUEST, service, mid, call_id, request.SerializeToString(), tensors,
                      before)
        except BaseException:
            with self._lock:
                self._pending.pop(call_id, None)
            raise
        return call_id

    def forget(self, call_id: int) -> None:
        with self._lock:
            self._pending.pop(call_id, None)

    def cancel(self, call_ids: set[int], error: BaseException) -> None:
        """Fails the given in-flight calls now (their late answers are dropped)."""
        with self._lock:
            entries = [self._pending.pop(i, None) for i in call_ids]
        for entry in entries:
            if entry is not None:
                entry[0](None, [], error)

    def _read(self, conn: _Conn) -> None:
        try:
            if shm.offered(conn.sock):
                conn.in_ring = shm.accept(conn.sock)
            while True:
                kind, _, code, call_id, message, tensors = conn.read()
                with self._lock:
                    entry = self._pending.pop(call_id, None)
                if entry is None:
                    continue  # timed out on our side
                done, response_type = entry
                try:
                    if kind == REPLY:
                        done(response_type.FromString(message), tensors, None)
                    else:
                        done(None, [], errors.make_error(code, message.decode()))
                except Exception:  # noqa: BLE001 - a caller's callback must not end the link
                    log.exception("%s: a completion callback failed", self.name)
        except (ConnectionError, OSError, ValueError) as e:
            self._broken(conn, e)

    def _broken(self, conn: _Conn, e: BaseException) -> None:
        with self._lock:
            if self._conn is conn:
                self._conn = None
            pending, self._pending = self._pending, {}
        conn.close()
        err = errors.UnavailableError(None, None, f"Task {self.name} is unavailable: the "
                                      f"connection to {self.address} broke ({e}); it stopped "
                                      "or crashed.")
        for done, _ in pending.values():
            done(None, [], err)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


class UnixPeer(Peer):
    """A service of one same-host task, over that task's `_Link`."""

    def __init__(self, link: _Link, service: str) -> None:
        self.name = link.name
        self._link = link
        self._sid = _SERVICE_IDS[service]
        self._methods = {m.py_name: m for m in SERVICES[service]}
        self._mids = _METHOD_IDS[service]
        self._inflight: set[int] = set()  # this peer's calls, failed by close()

    def call(self, method: str, request: Any, tensors: Sequence[Any] = (),
             timeout: float | None = None) -> tuple[Any, Tensors]:
        box: list[Any] = []
        waiter = threading.Lock()
        waiter.acquire()

        def done(resp: Any, out: Tensors, err: BaseException | None) -> None:
            box.append((resp, out, err))
            waiter.release()
        call_id = self.start(method, request, tensors, done)
        if not waiter.acquire(timeout=-1 if timeout is None else timeout):
            self._link.forget(call_id)
            raise errors.DeadlineExceededError(
                None, None, f"Call {method} to task {self.name} timed out after {timeout}s")
        resp, out, err = box[0]
        if err is not None:
            raise err
        return resp, out

    def start(self, method: str, request: Any, tensors: Sequence[Any], done: Done,
              before: Sequence[Any] = ()) -> int:
        m = self._methods[method]
        ids = self._inflight
        call_id = next(self._link._ids)

        def finished(resp: Any, out: Tensors, err: BaseException | None) -> None:
            ids.discard(call_id)
            done(resp, out, err)
        ids.add(call_id)
        try:
            return self._link.start(self._sid, m, self._mids[method], request, tensors,
                                    finished, call_id, before)
        except BaseException:
            ids.discard(call_id)
            raise

    def call_async(self, method: str, request: Any, tensors: Sequence[Any], done: Done,
                   timeout: float | None = None) -> None:
        try:
            self.start(method, request, tensors, done)
        except errors.OpError as e:
            done(None, [], e)

    def push(self, step_id: int, items: list[tuple[str, Any]]) -> None:
        self._link.send(*self._push_frame(step_id, items))

    def push_and_call_async(self, step_id: int, items: list[tuple[str, Any]], method: str,
                            request: Any, tensors: Sequence[Any], done: Done) -> None:
        """`push` then `call_async`, in one write (the peer reads both at one wake-up)."""
        try:
            self.start(method, request, tensors, done, [self._push_frame(step_id, items)])
        except errors.OpError as e:
            done(None, [], e)

    def _push_frame(self, step_id: int, items: list[tuple[str, Any]]
                    ) -> tuple[int, int, int, int, bytes, list[Any]]:
        keys = "\n".join(k for k, _ in items).encode()  # keys never hold a newline
        return PUSH, self._sid, 0, step_id, keys, [v for _, v in items]

    def close(self) -> None:
        """Fails this peer's calls still in flight with CancelledError; the link (shared
        by every peer of the task) stays open for others."""
        if self._inflight:
            self._link.cancel(set(self._inflight), errors.CancelledError(
                None, None, f"Call to task {self.name} cancelled: its client was closed"))


class UnixTransport:
    """Connects to tasks of this machine (by their address's host) over Unix sockets."""

    name = "unix"

    def __init__(self) -> None:
        self._links: dict[tuple[str, Credentials], _Link] = {}
        self._lock = threading.Lock()

    def connect(self, address: str, task: str, service: str,
                credentials: Credentials | None = None) -> UnixPeer | None:
        if not sys.platform.startswith("linux") or not same_host(address):
            return None  # the abstract socket namespace is Linux's, and per host
        creds = credentials or creds_mod.default()
        key = (socket_name(address), creds)
        with self._lock:
            link = self._links.get(key)
            if link is None:
                link = self._links[key] = _Link(address, task or address, creds)
            elif task and task != address:
                link.name = task  # one address is one task: name it in errors
        return UnixPeer(link, service)

    def close_links(self) -> None:
        with self._lock:
            links, self._links = list(self._links.values()), {}
        for link in links:
            link.close()


UNIX = UnixTransport()
