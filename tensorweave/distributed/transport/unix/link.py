"""Same-host links, the client side: one connection per task pair, calls and pushes.

A task opens one long-lived connection (`_Link`) to each same-host task it talks
to; every peer of that task (its master, its worker) shares it. Frames are
framing.py's; the serving side is listener.py; why a Unix socket: unix/__init__.py.

Example:
    >>> peer = UNIX.connect("localhost:2222", "/job:ps/replica:0/task:0",
    ...                     "tensorweave.Worker")
    >>> peer.call("get_status", GetStatusRequest())
"""
from __future__ import annotations

import itertools
import logging
import socket
import sys
import threading
import time
from typing import Any, Sequence

from tensorweave.base.address import address_key, same_host
from tensorweave.base import knobs
from tensorweave.distributed.protocol.methods import SERVICES, WORKER_SERVICE
from tensorweave.distributed.transport import credentials as creds_mod
from tensorweave.distributed.transport import limits
from tensorweave.distributed.transport.unix import handshake, shm
from tensorweave.distributed.transport.base import Done, Peer, Tensors
from tensorweave.distributed.transport.credentials import Credentials
from tensorweave.distributed.transport.unix.framing import (
    PUSH, REPLY, REQUEST, Conn as _Conn, tune as _tune)
from tensorweave.framework import errors
from tensorweave.runtime.threads import TIMERS

log = logging.getLogger("tensorweave.transport.unix")

_SERVICE_IDS = {name: i for i, name in enumerate(SERVICES)}
_METHOD_IDS = {name: {m.py_name: i for i, m in enumerate(ms)} for name, ms in SERVICES.items()}
# A link's health check: the worker's GetStatus (every task serves it, quickly).
_PING_SERVICE = _SERVICE_IDS[WORKER_SERVICE]
_PING_MID = _METHOD_IDS[WORKER_SERVICE]["get_status"]
_PING_METHOD = SERVICES[WORKER_SERVICE][_PING_MID]


def _check_interval() -> float:
    """How often a link with calls in flight checks its peer's silence."""
    return min(1.0, knobs.PEER_SILENCE_SECS.get() / 10)
__all__ = ["UNIX", "UnixPeer", "UnixTransport", "socket_name"]


def socket_name(address: str) -> str:
    """The abstract socket name of the task listening at "host:port"."""
    host, port = address_key(address)
    return f"\0tensorweave:{host}:{port}"


class _Link:
    """This process's one connection to the task at `address` (reconnects on demand)."""

    def __init__(self, address: str, name: str,
                 credentials: Credentials = creds_mod.NONE) -> None:
        self.address, self.name = address, name
        self._creds = credentials
        self._lock = threading.Lock()
        self._conn: _Conn | None = None
        # In-flight calls: id -> (callback, response type, the connection it went out on;
        # a broken connection fails only its own calls, not those of its successor).
        self._pending: dict[int, tuple[Done, Any, _Conn]] = {}
        self._ids = itertools.count(1)
        # Health checks while calls are in flight (`_check`): when the peer last sent a
        # frame, whether a check is scheduled, the id of the ping in flight.
        self._last_read = time.monotonic()
        self._checking = False
        self._ping: int | None = None

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
                    "(or use the 'tcp' protocol: TENSORWEAVE_TRANSPORT=tcp).") from None
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
            return handshake.unix_client_handshake(sock, self._creds, self.address,
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
             tensors: Sequence[Any], before: Sequence[Any] = (),
             conn: _Conn | None = None) -> None:
        """Sends one frame, after the frames `before` (in the same write), on `conn` (by
        default the link's connection, opened if need be)."""
        conn = conn or self._connected()
        try:
            conn.send_many([*before, (kind, service, method, ident, message, tensors)])
        except OSError as e:
            self._broken(conn, e)
            raise errors.UnavailableError(None, None, f"Task {self.name} is unavailable: "
                                          f"sending to it failed ({e})") from None

    def start(self, service: int, method: Any, mid: int, request: Any, tensors: Sequence[Any],
              done: Done, call_id: int = 0, before: Sequence[Any] = ()) -> int:
        call_id = call_id or next(self._ids)
        conn = self._connected()
        with self._lock:
            if not self._pending:  # the silence counts from the first call in flight
                self._last_read = time.monotonic()
            self._pending[call_id] = (done, method.response, conn)
            check, self._checking = not self._checking, True
        if check:
            TIMERS.add(_check_interval(), self._check)
        try:
            self.send(REQUEST, service, mid, call_id, request.SerializeToString(), tensors,
                      before, conn)
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
                if kind != REPLY and code == errors.UNAUTHENTICATED:
                    self._refused(conn, errors.make_error(code, message.decode()))
                    return
                with self._lock:
                    self._last_read = time.monotonic()
                    entry = self._pending.pop(call_id, None)
                if entry is None:
                    continue  # timed out on our side
                done, response_type, _ = entry
                try:
                    if kind == REPLY:
                        done(response_type.FromString(message), tensors, None)
                    else:
                        done(None, [], errors.make_error(code, message.decode()))
                except Exception:  # noqa: BLE001 - a caller's callback must not end the link
                    log.exception("%s: a completion callback failed", self.name)
        except (ConnectionError, OSError, ValueError) as e:
            self._broken(conn, e)

    def _refused(self, conn: _Conn, error: BaseException) -> None:
        """The task refused this process's credentials (and closes the connection): every
        call sent on it gets the refusal; the next call opens a new connection."""
        for done in self._drop(conn):
            done(None, [], error)

    def _check(self) -> None:
        """While calls are in flight: a peer silent for a third of the bound is pinged
        (get_status, answered by its I/O threads); one silent for the whole bound
        (TENSORWEAVE_PEER_SILENCE_SECS) is given up on: the link closes and its calls
        fail with UnavailableError naming the task (it reconnects on the next call)."""
        silence_s = knobs.PEER_SILENCE_SECS.get()
        with self._lock:
            conn = self._conn
            if conn is None or not set(self._pending) - {self._ping}:
                self._checking = False  # idle, or broken: nothing to watch
                return
            quiet = time.monotonic() - self._last_read
            ping = quiet >= silence_s / 3 and self._ping not in self._pending
        if quiet >= silence_s:
            with self._lock:
                self._checking = False
            self._broken(conn, None, f"Task {self.name} is unavailable: it answered nothing on "
                         f"its connection, not even a health check, for {quiet:.0f}s (frozen, "
                         f"overloaded or cut off; {knobs.PEER_SILENCE_SECS.name}="
                         f"{silence_s:g}).")
            return
        if ping:
            self._send_ping()
        TIMERS.add(_check_interval(), self._check)

    def _send_ping(self) -> None:
        m = _PING_METHOD
        try:
            self._ping = self.start(_PING_SERVICE, m, _PING_MID, m.request(),
                                    [], lambda *_: None)
        except errors.OpError:
            pass  # the link broke: its calls have failed already

    def _broken(self, conn: _Conn, e: BaseException | None, message: str = "") -> None:
        err = errors.UnavailableError(None, None, message or (
            f"Task {self.name} is unavailable: the connection to {self.address} broke "
            f"({e}); it stopped or crashed."))
        for done in self._drop(conn):
            done(None, [], err)

    def _drop(self, conn: _Conn) -> list[Done]:
        """Closes `conn` (the next call opens a new connection) and returns the callbacks of
        the calls sent on it. Its reader notices the close late (after a new connection may
        carry calls), so only `conn`'s own calls are taken."""
        with self._lock:
            if self._conn is conn:
                self._conn = None
            mine = [i for i, entry in self._pending.items() if entry[2] is conn]
            dropped = [self._pending.pop(i)[0] for i in mine]
        conn.close()
        return dropped

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
            call_id = self.start(method, request, tensors, done)
        except errors.OpError as e:
            done(None, [], e)
            return
        self._expire(call_id, method, timeout)

    def push(self, step_id: int, items: list[tuple[str, Any]]) -> None:
        self._link.send(*self._push_frame(step_id, items))

    def push_and_call_async(self, step_id: int, items: list[tuple[str, Any]], method: str,
                            request: Any, tensors: Sequence[Any], done: Done,
                            timeout: float | None = None) -> None:
        """`push` then `call_async`, in one write (the peer reads both at one wake-up)."""
        try:
            call_id = self.start(method, request, tensors, done,
                                 [self._push_frame(step_id, items)])
        except errors.OpError as e:
            done(None, [], e)
            return
        self._expire(call_id, method, timeout)

    def _expire(self, call_id: int, method: str, timeout: float | None) -> None:
        """Fails call `call_id` with DeadlineExceededError if unanswered after `timeout`."""
        if timeout is not None:
            error = errors.DeadlineExceededError(
                None, None, f"Call {method} to task {self.name} timed out after {timeout}s "
                "(no answer: the task is stuck, or the request or its answer was lost)")
            TIMERS.add(timeout, lambda: self._link.cancel({call_id}, error))

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
