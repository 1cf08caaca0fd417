"""Frames on a stream socket: the wire of the `unix` transport.

A frame is a fixed head `<BBHqI>` (kind, service, method or error code, call or
step id, envelope length), an `rpc_pb2.Envelope` (the message and one
TensorHeader per tensor), then each tensor's raw bytes. `Conn.send` writes a
frame under a lock straight from the arrays' memory; `Conn.read` reads one:
runs of small tensors with one read into one buffer their arrays share, big
ones each into its own pooled buffer. `Runners` are the long-lived threads
that run the calls that block.
"""
from __future__ import annotations

import io
import socket
import struct
import threading
import time
from typing import Any, Callable, Sequence

from tensorweave.distributed.protocol.rpc_pb2 import Envelope
from tensorweave.distributed.transport import codec, limits
from tensorweave.distributed.transport.unix import shm
from tensorweave.distributed.transport.base import Tensors
from tensorweave.framework import errors
from tensorweave.framework.proto.wire import varint

HEAD = struct.Struct("<BBHqI")
REQUEST, REPLY, ERROR, PUSH = 1, 2, 3, 4
_SOCK_BUF = 4 << 20
_JOIN_MAX = 256 << 10   # frames up to this size go out in one sendall of one joined buffer
_UNSPLIT = 1 << 62
_IOV_MAX = 1024  # buffers per sendmsg (Linux's UIO_MAXIOV)
# Tensors up to this size that follow each other in a frame are read with one read
# into one buffer that their arrays share (views: no allocation or read per tensor);
# bigger ones each into their own pooled buffer, so a small tensor never pins a big one.
_SHARED_READ_MAX = 64 << 10
# What this process's connections did (bench/step_breakdown reads it): frames, bytes
# (those that went through a shared-memory ring included, and counted apart too),
# seconds spent encoding and sending, and seconds reading a frame once its head arrived.
STATS = {"frames_out": 0, "bytes_out": 0, "ring_bytes_out": 0, "send_s": 0.0,
         "frames_in": 0, "bytes_in": 0, "ring_bytes_in": 0, "recv_s": 0.0}


def tune(sock: socket.socket) -> None:
    """Big kernel buffers: a 1-2 MB tensor goes out in one or two writes."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCK_BUF)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SOCK_BUF)


def _entry(body: bytes, tag: int = 0x12) -> bytes:
    """A length-delimited field of an Envelope: `tensors` (field 2) by default."""
    return bytes((tag,)) + varint(len(body)) + body


# Serialized Envelope entries of the numeric headers seen: a step sends the same few
# (dtype, shape) every time, and building TensorHeader messages cost ~1 us a tensor.
_ENTRIES: dict[tuple[int, tuple[int, ...], int], bytes] = {}


def _numeric_entry(enum: int, shape: tuple[int, ...], nbytes: int) -> bytes:
    key = (enum, shape, nbytes)
    entry = _ENTRIES.get(key)
    if entry is None:
        if len(_ENTRIES) >= 4096:
            _ENTRIES.clear()
        entry = _ENTRIES[key] = _entry(codec.TensorHeader(
            dtype=enum, shape=shape, nbytes=nbytes).SerializeToString())
    return entry


class Conn:
    """One connected socket: framed writes under a lock, framed reads by one thread.

    Args:
        sock: the connected socket.
        out_ring: where this side puts its big tensors (shm.py), if the link has rings.
        in_ring: where the peer puts its big tensors.
    """

    def __init__(self, sock: socket.socket, out_ring: shm.Ring | None = None,
                 in_ring: shm.Ring | None = None) -> None:
        self.sock = sock
        self.out_ring, self.in_ring = out_ring, in_ring
        self._wlock = threading.Lock()
        self._raw = _ProbingIO(sock)
        self._rfile = io.BufferedReader(self._raw, 1 << 16)
        # What a peer may announce (transport/limits.py), read once per connection.
        self._max_envelope = limits.max_message_bytes()
        self._max_tensor = limits.max_tensor_bytes()

    def send(self, kind: int, service: int, method: int, ident: int, message: bytes,
             tensors: Sequence[Any] = ()) -> None:
        self.send_many([(kind, service, method, ident, message, tensors)])

    def send_many(self, frames: Sequence[tuple[int, int, int, int, bytes, Sequence[Any]]]
                  ) -> None:
        """Writes `frames` (kind, service, method, ident, message, tensors) in order, as
        one write when they are small: the peer's reader wakes up once for all of them."""
        started = time.perf_counter()
        encoded = [self._parts(f[5]) for f in frames]
        with self._wlock:
            views: list[Any] = []
            size = in_ring = 0
            for (kind, service, method, ident, message, _), parts in zip(frames, encoded):
                head, payload, ringed = self._frame(kind, service, method, ident, message,
                                                    parts)
                views.append(head)
                views.extend(payload)
                in_ring += ringed
                size += len(head) + sum(c.nbytes for c in payload)
            if size <= _JOIN_MAX:
                self.sock.sendall(b"".join(views) if len(views) > 1 else views[0])
            else:  # one gathering write per kernel buffer-full, straight from the arrays
                _send_gathered(self.sock, [memoryview(v) for v in views])
        STATS["frames_out"] += len(frames)
        STATS["bytes_out"] += size + in_ring
        STATS["ring_bytes_out"] += in_ring
        STATS["send_s"] += time.perf_counter() - started

    def _parts(self, tensors: Sequence[Any]) -> list[tuple[bytes | None, Any, list[Any]]]:
        """Per tensor: its Envelope entry (serialized TensorHeader) when known now, or
        (dtype enum, shape, nbytes) when it may go through the ring (placed under the
        lock, in frame order, as the reader frees in that order); its payload chunks."""
        ring = self.out_ring
        parts: list[tuple[bytes | None, Any, list[Any]]] = []
        for t in tensors:
            fast = codec.wire_view(t)
            if fast is not None:
                enum, view = fast
                if ring is not None and view.nbytes >= shm.MIN_BYTES:
                    parts.append((None, (enum, t.shape, view.nbytes), [view]))
                else:
                    parts.append((_numeric_entry(enum, t.shape, view.nbytes), None, [view]))
                continue
            header, chunks = codec.encode(t, _UNSPLIT)
            header.num_chunks = 0
            parts.append((_entry(header.SerializeToString()), None, chunks))
        return parts

    def _frame(self, kind: int, service: int, method: int, ident: int, message: bytes,
               parts: list[tuple[bytes | None, Any, list[Any]]]
               ) -> tuple[bytes, list[Any], int]:
        """A frame's head + envelope, its payload views and the bytes it put in the
        ring (under the write lock: ring places follow the frame order)."""
        ring = self.out_ring
        payload: list[Any] = []
        entries: list[bytes] = [_entry(message, 0x0A)] if message else []
        in_ring = 0
        for entry, placed, chunks in parts:
            if placed is not None:
                at = ring.put(chunks[0])  # type: ignore[union-attr]
                if at is not None:
                    in_ring += placed[2]
                    entries.append(_entry(codec.TensorHeader(
                        dtype=placed[0], shape=placed[1], nbytes=placed[2], shared=True,
                        shared_at=at).SerializeToString()))
                    continue
                entry = _numeric_entry(*placed)  # the ring is full: in the frame
            entries.append(entry)  # type: ignore[arg-type]
            payload.extend(chunks)
        body = b"".join(entries)  # an Envelope: field 1 (message), then 2 (tensors)
        return HEAD.pack(kind, service, method, ident, len(body)) + body, payload, in_ring

    def read(self) -> tuple[int, int, int, int, bytes, Tensors]:
        """The next frame; raises ConnectionError at end of stream."""
        head = self._exactly(HEAD.size)
        started = time.perf_counter()
        kind, service, method, ident, n = HEAD.unpack(head)
        if n > self._max_envelope:
            raise ValueError(f"a frame announces a {n}-byte envelope, more than "
                             f"{limits.ENV_MAX_MESSAGE_BYTES}={self._max_envelope}")
        env = Envelope.FromString(self._exactly(n))
        headers = list(env.tensors)
        # (nbytes, in the ring?) of each, read once: protobuf fields cost per access.
        sizes = [(h.nbytes, h.shared) for h in headers]
        if sizes and max(b for b, _ in sizes) > self._max_tensor:
            raise ValueError(f"a frame announces a tensor over "
                             f"{limits.ENV_MAX_TENSOR_BYTES}={self._max_tensor} bytes")
        tensors = self._read_tensors(headers, sizes)
        STATS["frames_in"] += 1
        STATS["bytes_in"] += HEAD.size + n + sum(b for b, _ in sizes)
        STATS["recv_s"] += time.perf_counter() - started
        return kind, service, method, ident, env.message, tensors

    def _read_tensors(self, headers: list[Any], sizes: list[tuple[int, bool]]) -> list[Any]:
        tensors: list[Any] = []
        i = 0
        while i < len(headers):
            j, total = i, 0
            while j < len(headers) and 0 <= sizes[j][0] <= _SHARED_READ_MAX \
                    and not sizes[j][1]:
                total += sizes[j][0]
                j += 1
            if j > i:
                tensors += self._read_shared(headers[i:j], sizes[i:j], total)
                i = j
            else:
                tensors.append(self._read_one(headers[i]))
                i += 1
        return tensors

    def _read_shared(self, headers: list[Any], sizes: list[tuple[int, bool]],
                     total: int) -> list[Any]:
        raw = bytearray(total)
        if total:
            self._fill(memoryview(raw))
        tensors, offset = [], 0
        for header, (nbytes, _) in zip(headers, sizes):
            t = codec.view_in(raw, offset, header)
            if t is None:  # strings, empty or unaligned: decoded from a copy of the slice
                t = codec.decode(header, [memoryview(raw)[offset:offset + nbytes]])
            tensors.append(t)
            offset += nbytes
        return tensors

    def _read_one(self, header: Any) -> Any:
        if header.shared:
            return self._read_ring(header)
        asm = codec.TensorAssembler(header)
        self._fill(asm.buffer)
        asm.filled = asm.nbytes
        return asm.finish()

    def _read_ring(self, header: Any) -> Any:
        """A tensor the peer put in its ring: an array over the ring's own bytes (freed
        when the array dies), or a copy when its type cannot be viewed there."""
        if self.in_ring is None:
            raise ValueError("a frame points into a shared-memory ring this connection "
                             "does not have")
        STATS["ring_bytes_in"] += header.nbytes
        lease = self.in_ring.lend(header.shared_at, header.nbytes)
        t = codec.view_in(lease, 0, header)  # type: ignore[arg-type]
        if t is None:  # not a numeric type: decoded from the bytes (which are then freed)
            t = codec.decode(header, [lease.data])
        return t

    def has_input(self) -> bool:
        """Whether a frame's bytes are waiting (read ahead here, or in the kernel):
        never blocks. False at the end of the stream too (the next read says which)."""
        self._raw.probe = True
        try:
            return bool(self._rfile.peek(1))
        finally:
            self._raw.probe = False

    def _exactly(self, n: int) -> bytes:
        data = self._rfile.read(n)
        if len(data) != n:
            raise ConnectionError(f"connection closed after {len(data)} of {n} bytes")
        return data

    def _fill(self, view: memoryview) -> None:
        got = 0
        while got < view.nbytes:
            n = self._rfile.readinto(view[got:])
            if not n:
                raise ConnectionError(f"connection closed after {got} of {view.nbytes} bytes")
            got += n

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class _ProbingIO(socket.SocketIO):
    """A socket's reads for Conn's buffered reader; while `probe` is set a read that
    would wait returns None instead, so `Conn.has_input` can ask without blocking
    (the descriptor stays blocking: other threads send on it meanwhile)."""

    probe = False

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock, "rb")
        self._socket = sock

    def readinto(self, b: Any) -> int | None:
        if self.probe:
            try:
                return self._socket.recv_into(b, 0, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return None
        return super().readinto(b)


def _send_gathered(sock: socket.socket, views: list[memoryview]) -> None:
    """Writes every view in order with `sendmsg` (scatter/gather), however many
    calls the kernel needs: one syscall for many tensors instead of one each."""
    views = [v.cast("B") if v.format != "B" or v.ndim != 1 else v for v in views if v.nbytes]
    while views:
        sent = sock.sendmsg(views[:_IOV_MAX])
        while sent:
            first = views[0]
            if sent >= first.nbytes:
                sent -= first.nbytes
                views.pop(0)
            else:
                views[0] = first[sent:]
                sent = 0


class Runners:
    """Long-lived threads for calls that block; grows only when all are busy."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._cond = threading.Condition(threading.Lock())
        self._jobs: list[Callable[[], None]] = []
        self._idle = 0
        self._stopped = False

    def submit(self, job: Callable[[], None]) -> None:
        with self._cond:
            self._jobs.append(job)
            if self._idle:
                self._idle -= 1
                self._cond.notify()
                return
        threading.Thread(target=self._loop, daemon=True, name=self._name).start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._jobs:
                    if self._stopped:
                        return
                    self._idle += 1
                    self._cond.wait()
                job = self._jobs.pop(0)
            job()

    def stop(self) -> None:
        """Idle threads end; busy ones end after their call."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()


def error_frame(e: BaseException) -> tuple[int, bytes]:
    if isinstance(e, errors.OpError):
        return e.error_code, e.message.encode()
    return errors.INTERNAL, f"{type(e).__name__}: {e}".encode()
