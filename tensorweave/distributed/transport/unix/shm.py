"""Shared-memory rings: big tensors between tasks of one machine without the socket.

A same-host link (unix.py) carries its frames on a Unix socket; a 1.6 MB weight
pushed that way is copied into the kernel by the sender and out of it by the
receiver, in socket-buffer-sized pieces that need both processes awake at
once (on a 2-core machine that also runs a spinning BLAS thread, that is most
of the ~0.3 ms such a tensor took). Here each direction of a link has a ring
in a memfd that both processes map: the sender copies a big tensor into its
ring and the frame carries only where (`TensorHeader.shared_at`); the reader
hands the op that receives it an array over the ring's own bytes, freed when
that array (and every view of it) dies. One memcpy, no kernel buffers, and the
reader needs the CPU only once the frame's head came.

The ring is single-producer (the connection's writer, under its lock) and
single-consumer (the connection's one reader thread): the only shared state is
the reader's running count of freed bytes, one aligned 8-byte word at the start
of the mapping (x86-64 and AArch64 store it whole), which moves over what was
freed in ring order (an array still alive holds back the bytes after it). A
tensor that does not fit now (ring full, over half of it, or held by arrays
someone keeps) goes in the frame as before, so the writer never waits.

The memfd travels once per connection, with SCM_RIGHTS, in `offer`/`accept`
right after the link's handshake; TENSORWEAVE_SHM_RING_BYTES (default 16 MiB; 0: off)
sizes each direction's ring. Pages are touched only as the ring fills.

Example:
    >>> a, b = socket.socketpair(socket.AF_UNIX)
    >>> out = offer(a, 1 << 20)                  # the writer's side
    >>> inbox = accept(b)                        # the reader's side, same memory
    >>> at = out.put(memoryview(b"x" * 100_000))
    >>> got = inbox.lend(at, 100_000)           # the ring's bytes, until `got` dies
"""
from __future__ import annotations

import collections
import mmap
import os
import socket
import struct
import threading
import weakref
from typing import Any

import numpy as np

from tensorweave.distributed.transport.sidechannel import peek

__all__ = ["HELLO", "MIN_BYTES", "Ring", "accept", "offer", "offered"]

HELLO = b"TWSHM\x00\x01"           # + <Q> capacity; the memfd rides along when > 0
_HELLO = struct.Struct("<7sQ")
_HEAD = 64                         # the consumer's freed-bytes count, on its own line
_ALIGN = 64
# Tensors from this size on go through the ring: below it the copy into the frame
# costs less than the ring's bookkeeping.
MIN_BYTES = 128 << 10


class Ring:
    """One direction's ring: `put` on the writing side, `lend` on the reading side.

    Args:
        mapping: the memfd mapped whole (`mapped`); the ring lives as long as it.
        capacity: bytes of payload space (the mapping has a 64-byte head too).
    """

    def __init__(self, mapping: mmap.mmap, capacity: int) -> None:
        self.capacity = capacity
        self._map = mapping  # unmapped when the ring is collected, never under a reader
        self._view = memoryview(mapping)
        self._freed = self._view[:8].cast("Q")
        # Copies go through NumPy, which lets go of the GIL while it copies: a reader
        # thread copying 1.6 MB out must not hold up the thread that runs the step.
        self._bytes = np.frombuffer(mapping, np.uint8, capacity, _HEAD)
        self._head = 0  # the writer's running count of bytes handed out
        self._floor = 0  # where the writer last found the ring empty: all before is free
        # The reader's side: what it handed out, in ring order, [position, end, done];
        # the freed count advances over the done ones at the front.
        self._out: collections.deque[list[Any]] = collections.deque()
        self._out_lock = threading.Lock()

    @classmethod
    def mapped(cls, fd: int, capacity: int) -> "Ring":
        """The ring in memfd `fd` (the caller still closes `fd`).

        Raises:
            ValueError: if the memfd is smaller than the capacity says.
        """
        if os.fstat(fd).st_size < _HEAD + capacity:
            raise ValueError(f"a {capacity}-byte ring was offered in a memfd of "
                             f"{os.fstat(fd).st_size} bytes")
        return cls(mmap.mmap(fd, _HEAD + capacity), capacity)

    def put(self, payload: memoryview) -> int | None:
        """Copies `payload` (a flat byte view) in; its position, or None when it does
        not fit now (send it in the frame instead)."""
        n = payload.nbytes
        size = -(-n // _ALIGN) * _ALIGN
        if size > self.capacity // 2:
            return None
        at = self._head
        offset = at % self.capacity
        freed = self._freed[0]
        # No room before the end, or the ring is empty: start the next lap. Starting over
        # when empty keeps reusing the front, whose lines the last tensors left in cache
        # (a step pushes the same sizes again; cycling through the whole ring would miss
        # the cache on every copy).
        if offset and (offset + size > self.capacity or freed == at):
            if freed == at:
                self._floor = at + self.capacity - offset
            at += self.capacity - offset
            offset = 0
        # The bytes about to be written held position at - capacity of the last lap:
        # they must have been read (or never written: before the floor).
        if at + size - max(freed, self._floor) > self.capacity:
            return None
        np.copyto(self._bytes[offset:offset + n], np.frombuffer(payload, np.uint8))
        self._head = at + size
        return at

    def lend(self, at: int, n: int) -> np.ndarray:
        """The `n` bytes `put` placed at `at`, as a writable uint8 array over the ring
        itself (no copy). They are freed when that array and every view made from it
        are gone (NumPy's views keep it as their base); until then the writer places
        around them, or in frames once the ring is full.

        Raises:
            ValueError: if the position lies outside what the ring can hold.
        """
        entry = self._hand_out(at, n)
        offset = at % self.capacity
        lease = np.frombuffer(self._view[_HEAD + offset:_HEAD + offset + n], np.uint8)
        weakref.finalize(lease, self._done, entry).atexit = False
        return lease

    def _hand_out(self, at: int, n: int) -> list[Any]:
        offset = at % self.capacity
        if at < 0 or offset + n > self.capacity:
            raise ValueError(f"a frame points at {n} bytes at ring position {at}, outside "
                             f"the {self.capacity}-byte ring")
        entry = [at, at + -(-n // _ALIGN) * _ALIGN, False]
        with self._out_lock:
            self._out.append(entry)
        return entry

    def _done(self, entry: list[Any]) -> None:
        # Runs in the reader's thread or wherever the last view of a lent array died.
        with self._out_lock:
            entry[2] = True
            out = self._out
            while out and out[0][2]:
                self._freed[0] = out.popleft()[1]


def offer(sock: socket.socket, capacity: int) -> Ring | None:
    """Sends this side's hello (and its ring's memfd); returns the ring to write into.

    With `capacity` 0, or where the system gives no memfd or cannot map it, the
    hello says "no ring" and this side's tensors all travel in frames."""
    ring, fd = None, -1
    if capacity:
        try:
            fd = os.memfd_create("tensorweave-ring", os.MFD_CLOEXEC)
            os.ftruncate(fd, _HEAD + capacity)
            ring = Ring.mapped(fd, capacity)
        except OSError:
            ring = None
    try:
        if ring is None:
            sock.sendall(_HELLO.pack(HELLO, 0))
        else:
            socket.send_fds(sock, [_HELLO.pack(HELLO, capacity)], [fd])
    finally:
        if fd >= 0:
            os.close(fd)
    return ring


def offered(sock: socket.socket) -> bool:
    """Whether the next bytes on `sock` are a hello (peeks; blocks until it can tell).
    A frame never starts like one: its first byte is its kind, 1 to 4."""
    # part of a hello: the rest is on its way (bounded by the handshake timeout)
    return peek(sock, len(HELLO), lambda seen: HELLO.startswith(seen)) == HELLO


def accept(sock: socket.socket) -> Ring | None:
    """Reads the peer's hello; the ring to read from (None: the peer has none).

    Raises:
        ValueError: if the bytes are not a hello, or a ring came without its memfd.
    """
    data, fds, _, _ = socket.recv_fds(sock, _HELLO.size, 1)
    try:
        while data and len(data) < _HELLO.size:
            more = sock.recv(_HELLO.size - len(data))
            if not more:
                break
            data += more
        if len(data) != _HELLO.size or not data.startswith(HELLO):
            raise ValueError(f"expected a shared-memory hello, got {data[:16]!r}")
        capacity = _HELLO.unpack(data)[1]
        if not capacity:
            return None
        if not fds:
            raise ValueError("the peer offered a shared-memory ring without its memfd")
        return Ring.mapped(fds[0], capacity)
    finally:
        for fd in fds:
            os.close(fd)
