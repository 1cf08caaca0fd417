"""The reader resource behind `tf.TFRecordReader` and the other TF1 readers.

A reader lives in its device's ResourceMgr (like a queue) and keeps, across
session.run calls, the work unit (file name) it is reading, where it is in it, and
TF's counters. A read takes the next record of the current work; when there is none
it dequeues the next work unit from a string queue (the filename queue), waiting
without a thread while that queue is empty; when the queue is closed and empty the
read fails with the queue's OutOfRangeError, which ends queue runners cleanly.

Requests (read, read_up_to, reset, serialize/restore) run one at a time in arrival
order, as TF's reader mutex orders them: `tf.train.batch(num_threads=4)` runs one read
op from four threads, and each record goes to exactly one of them.

Subclasses (reader_sources.py) say how a work unit becomes records: `_records(work)`.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from tensorweave.framework import errors
from tensorweave.kernels.queue_resource import QueueResource
from tensorweave.runtime.waiting import DONE, PENDING, Attempt, WaitingResource, run_attempt

Later = list[Callable[[], None]]
_WAIT = object()  # a request is waiting for the filename queue; its callback resumes it


class _Read:
    """One ReaderRead / ReaderReadUpTo: how many records, and those got so far."""

    __slots__ = ("queue", "step", "n", "up_to", "keys", "values", "work")

    def __init__(self, queue: QueueResource, step: Any, n: int, up_to: bool) -> None:
        self.queue, self.step, self.n, self.up_to = queue, step, n, up_to
        self.keys: list[bytes] = []
        self.values: list[bytes] = []
        self.work: Any = _WAIT  # a dequeued work unit (or the dequeue's error), once here


class ReaderResource(WaitingResource):
    """A TF1 reader's state: current work unit, its records, counters.

    Args:
        node_name: the reader op's name (TF names a reader "<Kind> '<node name>'").
        file_policy: the task's file access policy (framework/file_access.py), or None.
    """

    kind = "ReaderBase"
    one_record_per_work = False  # Identity/WholeFile: a work unit ends with its record
    serializable = False  # TF implements SerializeState only for some readers

    def __init__(self, node_name: str, file_policy: Any = None) -> None:
        super().__init__()
        self.name = f"{self.kind} '{node_name}'"
        self.file_policy = file_policy
        self.work_started = self.work_finished = self.produced = 0
        self.work = b""
        self._records: Iterator[tuple[bytes, bytes]] | None = None
        self._waiting: list[Attempt] = []
        self._active: Attempt | None = None
        self._busy = False  # a request is being served (in _drive, or waiting for work)

    # ---- what subclasses provide -------------------------------------------------
    def _records_of(self, work: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The (key, value) records of one work unit. Errors raised before returning
        (a missing file) mean the work never started, as TF's OnWorkStarted."""
        raise NotImplementedError(self.kind)

    # ---- what kernels call ---------------------------------------------------------
    def snapshot(self) -> np.ndarray:
        # Fetching a reader's handle gives TF1's 2-element string vector, as for queues.
        return np.array([b"", self.name.encode()], dtype=object)

    def submit_read(self, step: Any, done: Callable[[Any], None], queue: Any, n: int,
                    up_to: bool) -> None:
        """Files a read of `n` records (up to `n` when `up_to`); `done` gets
        (key, value) scalars for a read, (keys, values) vectors for read_up_to."""
        if not isinstance(queue, QueueResource):
            raise errors.InvalidArgumentError(
                None, None, f"{self.name} reads work from a queue, but its queue input is "
                f"{type(queue).__name__}. Pass a tf.FIFOQueue of strings (e.g. "
                "tf.train.string_input_producer), on the reader's device.")
        if len(queue.dtypes) != 1 or queue.dtypes[0].base_dtype.name != "string":
            raise errors.InvalidArgumentError(
                None, None, f"{self.name} needs a queue with a single string component; "
                f"{queue.type_name} '{queue.name}' has {[d.name for d in queue.dtypes]}.")
        run_attempt(self, step, done, _Read(queue, step, n, up_to))

    def submit_call(self, step: Any, done: Callable[[Any], None], fn: Callable[[], Any]) -> None:
        """Runs `fn()` (reset, serialize, restore) in turn with the reads; done(result)."""
        run_attempt(self, step, done, fn)

    def close_on_reset(self) -> None:
        """Called when the resource container is dropped (session close, reset)."""
        self.cancel_all(errors.CancelledError(
            None, None, f"{self.name} was destroyed (its session was closed or its "
            "container reset) while an op waited on it."))

    # ---- the serial queue of requests ------------------------------------------------
    def _pending_lists(self) -> list[list[Attempt]]:
        return [self._waiting]

    def _start(self, attempt: Attempt, later: Later) -> None:
        attempt.state = PENDING
        self._waiting.append(attempt)
        if not self._busy:
            self._busy = True
            later.append(self._drive)  # outside the lock: it reads files, dequeues

    def _drive(self) -> None:
        """Serves requests one at a time until none is left or one waits for work (the
        filename queue's callback then calls _drive again). Never runs twice at once:
        `_busy` stays set from the first request to the last."""
        while True:
            with self.lock:
                if self._active is None:
                    if not self._waiting:
                        self._busy = False
                        return
                    self._active = self._waiting.pop(0)
                attempt = self._active
            try:
                result = self._serve(attempt)
            except errors.OpError as e:
                result = e
            except Exception as e:  # noqa: BLE001 - a kernel must report, never hang
                result = errors.InternalError(None, None, f"{self.name}: {type(e).__name__}: {e}")
            if result is _WAIT:
                return
            later: Later = []
            with self.lock:
                self._active = None
                attempt.finish(result, later)  # a no-op if its step was cancelled first
            for fn in later:
                fn()

    def _serve(self, attempt: Attempt) -> Any:
        req = attempt.payload
        if not isinstance(req, _Read):
            return req()
        while len(req.keys) < req.n:
            if self._records is None:
                if req.work is _WAIT:
                    if attempt.state == DONE:  # cancelled (session closed, deadline)
                        return None
                    if self._ask_for_work(req) is _WAIT:
                        return _WAIT
                work, req.work = req.work, _WAIT
                if isinstance(work, BaseException):
                    raise work  # the queue is closed and empty: OutOfRangeError
                self._begin(self._work_name(work))  # even if cancelled: keep the work
            if attempt.state == DONE:
                return None
            try:
                key, value = next(self._records)  # type: ignore[arg-type]
            except StopIteration:
                self._finish_work()
                if req.up_to and req.keys:  # TF: read_up_to stops where a work unit ends
                    break
                continue
            except errors.OpError as e:
                self._records = _Failed(e)  # TF retries the same spot, failing again
                raise
            req.keys.append(key)
            req.values.append(value)
            self.produced += 1
            if self.one_record_per_work:
                self._finish_work()
                if req.up_to:
                    break
        if not req.up_to:
            return (np.array(req.keys[0], dtype=object), np.array(req.values[0], dtype=object))
        return (np.array(req.keys, dtype=object).reshape(-1),
                np.array(req.values, dtype=object).reshape(-1))

    def _ask_for_work(self, req: _Read) -> Any:
        """Dequeues a work unit into `req.work`; _WAIT if the queue is empty for now."""
        sync = [True]

        def got(result: Any) -> None:
            with self.lock:
                req.work = result
                if sync[0]:
                    return  # answered at once: _serve goes on in this thread
            self._drive()  # answered later, from the thread that enqueued or closed

        run_attempt(req.queue, req.step, got, req.queue.take(1, many=False, up_to=False))
        with self.lock:
            sync[0] = False
            return req.work

    def _work_name(self, element: Any) -> bytes:
        arr = np.asarray(element, dtype=object)
        if arr.size != 1:
            raise errors.InvalidArgumentError(
                None, None, f"{self.name} expected to dequeue a one-element string tensor, "
                f"got shape {list(arr.shape)}.")
        v = arr.reshape(-1)[0]
        return v if isinstance(v, bytes) else str(v).encode()

    def _begin(self, work: bytes) -> None:
        self.work = work
        self._records = iter(self._records_of(work))  # may raise: work not started (TF)
        self.work_started += 1

    def _finish_work(self) -> None:
        self._records = None
        self.work_finished = self.work_started

    # ---- reset, state ----------------------------------------------------------------
    def reset(self) -> None:
        """Forgets the current work unit and zeroes the counters (TF's ResetLocked)."""
        self.work_started = self.work_finished = self.produced = 0
        self.work = b""
        self._records = None

    def serialize_state(self) -> np.ndarray:
        """TF's ReaderBaseState proto of the counters and current work."""
        if not self.serializable:
            raise errors.UnimplementedError(None, None, "Reader SerializeState")
        fields = [(1, self.work_started), (2, self.work_finished), (3, self.produced)]
        out = b"".join(_varint(tag << 3) + _varint(v) for tag, v in fields if v)
        if self.work:
            out += _varint(4 << 3 | 2) + _varint(len(self.work)) + self.work
        return np.array(out, dtype=object)

    def restore_state(self, state: bytes) -> None:
        """Restores what serialize_state gave; a bad state resets the reader (TF)."""
        if not self.serializable:
            raise errors.UnimplementedError(None, None, "Reader RestoreState")
        try:
            fields = _parse_state(state)
        except ValueError:
            self.reset()
            raise errors.InvalidArgumentError(
                None, None, f"Could not parse state for {self.name}: "
                f"{repr(state)[2:-1][:100]}") from None
        started, finished, produced = (int(fields.get(k, 0)) for k in (1, 2, 3))
        if min(started, finished, produced) < 0 or started > finished:
            self.reset()
            raise errors.InvalidArgumentError(
                None, None, f"Unexpected or inconsistent counters when restoring {self.name}: "
                f"work started {started}, finished {finished}, produced {produced}.")
        self.work_started, self.work_finished, self.produced = started, finished, produced
        self.work = bytes(fields.get(4, b""))
        self._records = None


class _Failed:
    """The records of a work unit whose read failed: like TF, which reads the same spot
    again, every later read fails the same way (until a reset)."""

    def __init__(self, error: errors.OpError) -> None:
        self.error = error

    def __iter__(self) -> "_Failed":
        return self

    def __next__(self) -> tuple[bytes, bytes]:
        raise type(self.error)(None, None, self.error.message)


def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1  # int64 as protobuf writes it
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not b & 0x80:
            return (value - (1 << 64) if value >> 63 else value), pos


def _parse_state(data: bytes) -> dict[int, Any]:
    """The fields of a ReaderBaseState (1-3: int64, 4: bytes); anything else is invalid."""
    fields: dict[int, Any] = {}
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        tag, wire = key >> 3, key & 7
        if tag in (1, 2, 3) and wire == 0:
            fields[tag], pos = _read_varint(data, pos)
        elif tag == 4 and wire == 2:
            n, pos = _read_varint(data, pos)
            if n < 0 or pos + n > len(data):
                raise ValueError("truncated field")
            fields[tag], pos = data[pos:pos + n], pos + n
        else:
            raise ValueError(f"unexpected field {tag} (wire type {wire})")
    return fields


__all__ = ["ReaderResource"]
