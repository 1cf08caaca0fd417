"""A userspace TCP proxy that puts network faults between tasks (no `tc netem` needed).

Each route listens on one address and forwards every connection to a target
address. Connections are labelled by host: the dialling side's by its source
address (`names` maps addresses to labels, e.g. "10.213.7.3" -> "worker1"), the
target's by its route. Faults apply to the bytes flowing from one host to
another (`src`, `dst`; "*" matches any), in both directions of every connection
between them, whichever side dialled:

* `delay(src, dst, secs, jitter)`: each chunk is held `secs` plus up to `jitter`
  more (order kept), as a slow link.
* `cut(a, b)`: a silent partition: nothing is read or written between a and b
  (no FIN, no RST); bytes already sent wait, and new connections are accepted
  but not forwarded, until `heal`. A TCP sender sees its window close, not an
  error (unlike a real partition, its own retransmission back-off does not grow).
  `one_way=True` stalls only a -> b.
* `blackhole(src, dst)`: bytes from src to dst are read and thrown away, silently.
  Such a stream has lost bytes for good, so `heal` resets its connections.
* `reset(a, b)`: closes every connection between a and b now, with RST to both ends.
* `heal(a, b)`: removes the faults between a and b (both directions).

The proxy runs on one thread (a selector loop); with `netns`, that thread and
its sockets live in that network namespace (`tensorweave.testing.netns`).

Example:
    >>> proxy = FaultProxy(names={"127.0.0.1": "client"})
    >>> port = proxy.add_route(("127.0.0.1", 0), ("127.0.0.1", 2222), name="ps0")[1]
    >>> with proxy:
    ...     proxy.cut("client", "ps0"); ...; proxy.heal("client", "ps0")
"""
from __future__ import annotations

import collections
import errno
import random
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any

from tensorweave.testing.netns import enter_netns, in_netns

__all__ = ["FaultProxy", "Rule"]

ANY = "*"
_CHUNK = 65536
_HOLD_LIMIT = 4 << 20  # bytes queued in one direction before the proxy stops reading it


@dataclass
class Rule:
    """The faults on the bytes from one host to another."""

    delay: float = 0.0
    jitter: float = 0.0
    held: bool = False  # cut: neither read nor written until healed
    discard: bool = False  # blackhole: read and dropped


_NO_FAULT = Rule()


def _touches(key: tuple[str, str], a: str, b: str) -> bool:
    """Whether the rule for (src, dst) `key` is one `heal(a, b)` removes."""
    if a == ANY and b == ANY:
        return True
    if a == ANY or b == ANY:
        return (b if a == ANY else a) in key
    return set(key) == {a, b}


def _rst_close(sock: socket.socket) -> None:
    try:  # linger 0: close() sends RST, as a reset connection does
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class _Flow:
    """One direction of a proxied connection."""

    def __init__(self, src_host: str, dst_host: str) -> None:
        self.src_host, self.dst_host = src_host, dst_host
        self.src: socket.socket | None = None
        self.dst: socket.socket | None = None
        self.queue: collections.deque[tuple[float, memoryview]] = collections.deque()
        self.queued = 0
        self.last_release = 0.0
        self.eof = False  # the source sent FIN
        self.shut = False  # ... and it was passed on
        self.lost = False  # bytes were blackholed


class _Conn:
    def __init__(self, client: socket.socket, client_host: str, target: tuple[str, int],
                 server_host: str) -> None:
        self.client, self.target = client, target
        self.upstream: socket.socket | None = None
        self.connected = False
        self.up = _Flow(client_host, server_host)
        self.down = _Flow(server_host, client_host)
        self.up.src = self.down.dst = client

    def between(self, a: str, b: str) -> bool:
        hosts = (self.up.src_host, self.up.dst_host)
        return (a == ANY or a in hosts) and (b == ANY or b in hosts)


class FaultProxy:
    """Forwards TCP connections through routes, with faults set per pair of hosts.

    Args:
        names: address -> host label, for the dialling side of connections.
        netns: run the proxy's thread and sockets in this network namespace.
        seed: the jitter's random numbers.
    """

    def __init__(self, names: dict[str, str] | None = None, netns: str | None = None,
                 seed: int = 0) -> None:
        self.names = dict(names or {})
        self.netns = netns
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._rules: dict[tuple[str, str], Rule] = {}
        self._routes: dict[socket.socket, tuple[tuple[str, int], str]] = {}
        self._conns: list[_Conn] = []
        self._forwarded: collections.Counter[tuple[str, str]] = collections.Counter()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._stop = False
        self._thread: threading.Thread | None = None
        self._calls: list[Any] = []  # run on the proxy's thread at its next turn
        self._sel: selectors.BaseSelector = selectors.DefaultSelector()

    # ----- set-up -------------------------------------------------------------------

    def add_route(self, listen: tuple[str, int], target: tuple[str, int],
                  name: str | None = None) -> tuple[str, int]:
        """Listens on `listen` and forwards to `target`, whose host is labelled `name`
        (default: `names` of its address). Returns the address listened on."""
        def make() -> socket.socket:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(listen)
            s.listen(128)
            s.setblocking(False)
            return s
        sock = in_netns(self.netns, make) if self.netns else make()
        with self._lock:
            self._routes[sock] = (target, name or self.names.get(target[0], target[0]))
        self._wake()
        return sock.getsockname()[:2]

    def start(self) -> "FaultProxy":
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stops forwarding and closes every socket (again: nothing)."""
        if self._stop:
            return
        self._stop = True
        self._wake()
        if self._thread is not None:
            self._thread.join(10)
        else:
            self._sel.close()
        for conn in self._conns:
            self._drop(conn)
        for sock in self._routes:
            sock.close()
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ----- faults -------------------------------------------------------------------

    def delay(self, src: str, dst: str, secs: float, jitter: float = 0.0) -> None:
        """Holds every chunk from `src` to `dst` for `secs` plus up to `jitter` more."""
        if secs < 0 or jitter < 0:
            raise ValueError(f"delay needs secs >= 0 and jitter >= 0, got {secs}, {jitter}.")
        self._update(src, dst, delay=secs, jitter=jitter)

    def cut(self, a: str, b: str = ANY, one_way: bool = False) -> None:
        """A silent partition between `a` and `b` (only a -> b with `one_way`)."""
        self._update(a, b, held=True)
        if not one_way:
            self._update(b, a, held=True)

    def blackhole(self, src: str, dst: str) -> None:
        """Bytes from `src` to `dst` are dropped silently (their streams are lost)."""
        self._update(src, dst, discard=True)

    def reset(self, a: str, b: str = ANY) -> int:
        """Resets (RST both ends) every connection between `a` and `b`; returns how many."""
        with self._lock:
            doomed = [c for c in self._conns if c.between(a, b)]
        for conn in doomed:
            self._call(lambda c=conn: self._drop(c))
        return len(doomed)

    def heal(self, a: str = ANY, b: str = ANY) -> None:
        """Removes every fault between `a` and `b`; resets streams that lost bytes."""
        with self._lock:
            for key in [k for k in self._rules if _touches(k, a, b)]:
                del self._rules[key]
            lossy = [c for c in self._conns if c.between(a, b) and (c.up.lost or c.down.lost)]
        for conn in lossy:
            self._call(lambda c=conn: self._drop(c))
        self._wake()

    def forwarded(self, src: str = ANY, dst: str = ANY) -> int:
        """Bytes forwarded so far from `src` to `dst`."""
        with self._lock:
            return sum(n for (s, d), n in self._forwarded.items()
                       if src in (ANY, s) and dst in (ANY, d))

    def connections(self, a: str = ANY, b: str = ANY) -> int:
        """Connections open now between `a` and `b`."""
        with self._lock:
            return sum(1 for c in self._conns if c.between(a, b))

    def _update(self, src: str, dst: str, **changes: Any) -> None:
        with self._lock:
            rule = self._rules.setdefault((src, dst), Rule())
            for k, v in changes.items():
                setattr(rule, k, v)
        self._wake()

    def _rule(self, src: str, dst: str) -> Rule:
        for key in ((src, dst), (src, ANY), (ANY, dst), (ANY, ANY)):
            rule = self._rules.get(key)
            if rule is not None:
                return rule
        return _NO_FAULT

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def _call(self, fn: Any) -> None:
        # Runs fn on the proxy's thread (sockets belong to it) or now if it is not running.
        if self._thread is None or not self._thread.is_alive():
            fn()
            return
        with self._lock:
            self._calls.append(fn)
        self._wake()

    # ----- the loop -----------------------------------------------------------------

    def _run(self) -> None:
        if self.netns:
            enter_netns(self.netns)
        try:
            while not self._stop:
                self._step(self._sel)
        finally:
            self._sel.close()

    def _step(self, sel: selectors.BaseSelector) -> None:
        now = time.monotonic()
        with self._lock:
            calls, self._calls = self._calls, []
            rules = {id(f): self._rule(f.src_host, f.dst_host)
                     for c in self._conns for f in (c.up, c.down)}
            routes = dict(self._routes)
        for fn in calls:
            fn()
        interest: dict[Any, int] = {self._wake_r: selectors.EVENT_READ}
        for sock in routes:
            interest[sock] = selectors.EVENT_READ
        timeout = None
        for conn in list(self._conns):
            if conn.upstream is None and not rules.get(id(conn.up), _NO_FAULT).held:
                self._dial(conn)
            if conn.upstream is None or conn not in self._conns:
                continue  # held by a cut, or refused at once
            if not conn.connected:
                interest[conn.upstream] = interest.get(conn.upstream, 0) | selectors.EVENT_WRITE
                continue
            for flow in (conn.up, conn.down):
                rule = rules.get(id(flow), _NO_FAULT)
                if rule.held or flow.shut:
                    continue
                if not flow.eof and flow.queued < _HOLD_LIMIT:
                    interest[flow.src] = interest.get(flow.src, 0) | selectors.EVENT_READ
                if flow.queue:
                    wait = flow.queue[0][0] - now
                    if wait <= 0:
                        interest[flow.dst] = interest.get(flow.dst, 0) | selectors.EVENT_WRITE
                    else:
                        timeout = wait if timeout is None else min(timeout, wait)
        for key in list(sel.get_map().values()):
            if key.fileobj not in interest:
                sel.unregister(key.fileobj)
        for sock, events in interest.items():
            if sock.fileno() < 0:
                continue
            if sel.get_map().get(sock) is not None:
                sel.modify(sock, events)
            else:
                sel.register(sock, events)
        for key, events in sel.select(timeout):
            self._ready(key.fileobj, events, routes)

    def _ready(self, sock: Any, events: int, routes: dict) -> None:
        if sock is self._wake_r:
            try:
                while self._wake_r.recv(4096):
                    pass
            except BlockingIOError:
                pass
            return
        if sock in routes:
            self._accept(sock, *routes[sock])
            return
        for conn in list(self._conns):
            if conn.upstream is not None and sock is conn.upstream and not conn.connected:
                err = conn.upstream.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    self._drop(conn)
                else:
                    conn.connected = True
                return
            for flow in (conn.up, conn.down):
                if conn not in self._conns:
                    return
                # The rule as it is now, not as this turn began: a fault set while the
                # loop waited in select applies to the bytes that woke it.
                with self._lock:
                    rule = self._rule(flow.src_host, flow.dst_host)
                if rule.held:
                    continue
                if flow.src is sock and events & selectors.EVENT_READ:
                    self._read(conn, flow, rule)
                if flow.dst is sock and events & selectors.EVENT_WRITE:
                    self._write(conn, flow)

    def _accept(self, listener: socket.socket, target: tuple[str, int], server: str) -> None:
        try:
            client, addr = listener.accept()
        except BlockingIOError:
            return
        client.setblocking(False)
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Conn(client, self.names.get(addr[0], addr[0]), target, server)
        with self._lock:
            self._conns.append(conn)

    def _dial(self, conn: _Conn) -> None:
        up = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        up.setblocking(False)
        up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.upstream = conn.up.dst = conn.down.src = up
        code = up.connect_ex(conn.target)
        if code not in (0, errno.EINPROGRESS):
            self._drop(conn)
        conn.connected = code == 0

    def _read(self, conn: _Conn, flow: _Flow, rule: Rule) -> None:
        assert flow.src is not None
        try:
            data = flow.src.recv(_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            self._drop(conn)
            return
        if not data:
            flow.eof = True
        elif rule.discard:
            flow.lost = True
            return
        now = time.monotonic()
        extra = rule.delay + (self._rng.uniform(0, rule.jitter) if rule.jitter else 0.0)
        flow.last_release = max(flow.last_release, now + extra)
        if data:
            flow.queue.append((flow.last_release, memoryview(data)))
            flow.queued += len(data)
        self._finish(conn, flow)

    def _write(self, conn: _Conn, flow: _Flow) -> None:
        assert flow.dst is not None
        now = time.monotonic()
        while flow.queue and flow.queue[0][0] <= now:
            release, data = flow.queue[0]
            # The count moves under the lock with the send, so a reader who has seen the
            # bytes arrive also sees them counted.
            with self._lock:
                try:
                    sent = flow.dst.send(data)
                except BlockingIOError:
                    return
                except OSError:
                    sent = -1
                else:
                    self._forwarded[(flow.src_host, flow.dst_host)] += sent
            if sent < 0:
                self._drop(conn)
                return
            flow.queued -= sent
            if sent < len(data):
                flow.queue[0] = (release, data[sent:])
                return
            flow.queue.popleft()
        self._finish(conn, flow)

    def _finish(self, conn: _Conn, flow: _Flow) -> None:
        """Passes a FIN on once its bytes are out; closes a connection shut both ways."""
        if flow.eof and not flow.queue and not flow.shut and flow.dst is not None:
            flow.shut = True
            try:
                flow.dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        if conn.up.shut and conn.down.shut:
            self._drop(conn, rst=False)

    def _drop(self, conn: _Conn, rst: bool = True) -> None:
        with self._lock:
            if conn in self._conns:
                self._conns.remove(conn)
        for sock in (conn.client, conn.upstream):
            if sock is not None and sock.fileno() >= 0:
                try:  # before close: a closed socket's number may come back as a new one
                    self._sel.unregister(sock)
                except (KeyError, ValueError, AttributeError):  # not registered; closed
                    pass
                if rst:
                    _rst_close(sock)
                else:
                    sock.close()
