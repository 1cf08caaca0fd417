"""Relays a task port's gRPC connection to the task's gRPC server, on the event loop.

gRPC reaching the task port (shared_port.py) is copied byte for byte to the gRPC
server's private Unix socket and back; a TLS connection is decrypted and encrypted
here, and only the loop's thread touches its SSL object. Both directions run on the
process's connection loop (transport/reactor.py), not on threads of their own: an idle
gRPC channel costs its sockets and two pipes (a TLS one its buffers), nothing more.
Plain bytes are copied in the kernel (`os.splice` through a pipe per direction, 1 MiB
at a time); where a destination is full, its source is not read until it drains, so a
slow reader holds back only its own connection.

Example:
    >>> relay = Relay(reactor.get(), conn, inner, on_close=lambda: None)  # doctest: +SKIP
    >>> reactor.get().call_soon(relay.start)                              # doctest: +SKIP
"""
from __future__ import annotations

import fcntl
import os
import socket
import ssl
from typing import Callable

from tensorweave.distributed.transport.reactor import Reactor

__all__ = ["Relay"]

_CHUNK = 1 << 20
_READ, _WRITE = 1, 2  # selectors.EVENT_READ, EVENT_WRITE
_HAS_SPLICE = hasattr(os, "splice")
_NONBLOCK = getattr(os, "SPLICE_F_NONBLOCK", 2) | getattr(os, "SPLICE_F_MOVE", 1)
# A TLS socket that cannot go on now says so with these, where a plain one raises
# BlockingIOError; either way the direction waits for the loop.
_WOULD_BLOCK = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class _Direction:
    """src -> dst: what is read from src waits in a pipe (or a buffer) until dst takes it."""

    def __init__(self, src: socket.socket, dst: socket.socket) -> None:
        self.src, self.dst = src, dst
        self.pending = 0          # bytes read from src not yet written to dst
        self.buffer = b""         # those bytes where there is no splice
        self.eof = self.done = False
        self.pipe: tuple[int, int] | None = None
        # TLS bytes are decrypted and encrypted in this process: no splice for them.
        self.tls = isinstance(src, ssl.SSLSocket) or isinstance(dst, ssl.SSLSocket)
        if _HAS_SPLICE and not self.tls:
            r, w = os.pipe()
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            try:  # fewer calls for a big message (a pushed tensor)
                fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), _CHUNK)
            except OSError:
                pass  # over the user's pipe-size limit: the default 64 KiB works too
            self.pipe = (r, w)

    def pump(self) -> None:
        """Moves what it can without blocking; OSError when either side broke."""
        while not self.done:
            if self.pending:
                try:
                    n = self._write()
                except _WOULD_BLOCK:
                    return  # dst is full: wait until it is writable
                self.pending -= n
                continue
            if self.eof:  # HTTP/2 never half-closes, but pass it on if a peer does
                try:
                    self.dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                self.done = True
                return
            try:
                n = self._read()
            except _WOULD_BLOCK:
                return  # nothing to read now
            if n == 0:
                if self.tls:  # a TLS socket cannot half-close and keep its session
                    raise ConnectionResetError("TLS peer closed")
                self.eof = True
            self.pending += n
            if 0 < n < _CHUNK:  # all there was, most likely: write it, and let the
                try:            # loop say when more comes (no read that finds nothing)
                    self.pending -= self._write()
                except _WOULD_BLOCK:
                    pass
                if not self.pending and not self._decrypted_waiting():
                    return

    def _decrypted_waiting(self) -> bool:
        """Whether src is TLS with bytes already decrypted: they would never make its
        socket readable again, so they are read now."""
        return isinstance(self.src, ssl.SSLSocket) and self.src.pending() > 0

    def _read(self) -> int:
        if self.pipe is not None:
            return os.splice(self.src.fileno(), self.pipe[1], _CHUNK, flags=_NONBLOCK)
        self.buffer = self.src.recv(_CHUNK)
        return len(self.buffer)

    def _write(self) -> int:
        if self.pipe is not None:
            return os.splice(self.pipe[0], self.dst.fileno(), self.pending, flags=_NONBLOCK)
        n = self.dst.send(self.buffer)
        self.buffer = self.buffer[n:]
        return n

    def wants(self, sock: socket.socket) -> int:
        """The events this direction waits for on `sock`."""
        if self.done:
            return 0
        if self.pending:
            return _WRITE if sock is self.dst else 0
        return _READ if sock is self.src else 0

    def close(self) -> None:
        if self.pipe is not None:
            os.close(self.pipe[0])
            os.close(self.pipe[1])
            self.pipe = None


class Relay:
    """Copies `a` to `b` and `b` to `a` until both ends are done or either breaks;
    then `on_close()` runs (once, on the loop's thread). The sockets are made
    non-blocking; `start` and everything after it run on `loop`'s thread.
    """

    def __init__(self, loop: Reactor, a: socket.socket, b: socket.socket,
                 on_close: Callable[[], None]) -> None:
        self._loop, self._a, self._b = loop, a, b
        self._on_close = on_close
        a.setblocking(False)
        b.setblocking(False)
        self._dirs = (_Direction(a, b), _Direction(b, a))
        self._events = [0, 0]  # what a and b are watched for now
        self._closed = False

    def start(self) -> None:
        """Starts relaying (on the loop's thread)."""
        self._on_a(_READ)
        self._on_b(_READ)

    def _on_a(self, events: int) -> None:
        # a readable: a -> b moves; a writable: what b sent can go on.
        self._step(self._dirs[0] if events & _READ else None,
                   self._dirs[1] if events & _WRITE else None)

    def _on_b(self, events: int) -> None:
        self._step(self._dirs[1] if events & _READ else None,
                   self._dirs[0] if events & _WRITE else None)

    def close(self) -> None:
        """Stops relaying and runs `on_close` (on the loop's thread; once)."""
        if self._closed:
            return
        self._closed = True
        for sock in (self._a, self._b):
            self._loop.unwatch(sock)
        for d in self._dirs:
            d.close()
        self._on_close()

    def _step(self, *ready: _Direction | None) -> None:
        """Pumps the directions an event concerns, then watches what each waits for."""
        if self._closed:
            return
        try:
            for d in ready:
                if d is not None:
                    d.pump()
        except OSError:
            self.close()  # either side went away; closing tells the other
            return
        if all(d.done for d in self._dirs):
            self.close()
            return
        for i, (sock, callback) in enumerate(((self._a, self._on_a), (self._b, self._on_b))):
            events = self._dirs[0].wants(sock) | self._dirs[1].wants(sock)
            if events == self._events[i]:
                continue  # as watched already: the usual case, nothing to ask the loop
            self._events[i] = events
            if events:
                self._loop.watch(sock, events, callback)
            else:
                self._loop.unwatch(sock)
