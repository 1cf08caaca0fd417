"""Queue resources: FIFO, random-shuffle and padding-FIFO queues with TF1 blocking rules.

A queue lives in its device's ResourceMgr and is shared by every session that
runs on that device (every client of a ps task). Enqueues wait while the queue
is full, dequeues while it holds too few elements; both make progress one
element at a time, so `enqueue_many` larger than the capacity and
`dequeue_many` larger than the capacity both work, as in TF.

Attempts are served in arrival order: a waiting `dequeue_many(5)` at the head
takes elements before a later `dequeue()` does.
"""
from __future__ import annotations

import collections
import heapq
import itertools
from typing import Any, Callable, cast

import numpy as np

from tensorweave.framework import errors
from tensorweave.runtime.waiting import PENDING, Attempt, WaitingResource

_private_ids = itertools.count()
Later = list[Callable[[], None]]


def private_queue_name(node_name: str) -> str:
    """TF's name for a queue with no shared_name: `_<n>_<node name>`."""
    return f"_{next(_private_ids)}_{node_name}"


class _Take:
    """Payload of a dequeue attempt: how many, whether fewer is fine, what it got so far."""

    __slots__ = ("n", "many", "up_to", "got")

    def __init__(self, n: int, many: bool, up_to: bool) -> None:
        self.n, self.many, self.up_to = n, many, up_to
        self.got: list[tuple[np.ndarray, ...]] = []


class QueueResource(WaitingResource):
    """A bounded queue of tuples of NumPy arrays.

    Args:
        name: the queue's name in messages (shared_name or `_<n>_<node>`).
        dtypes: component dtypes.
        shapes: per-component shape (list of dims, None entries unknown), or None.
        capacity: maximum number of elements; negative means unbounded.
    """

    type_name = "FIFOQueue"
    _pads = False  # PaddingFIFOQueue: dequeue_many pads components of varying shape

    def __init__(self, name: str, dtypes: list[Any], shapes: list[Any] | None,
                 capacity: int) -> None:
        super().__init__()
        self.name = name
        self.dtypes = list(dtypes)
        self.shapes = None if not shapes else [None if s is None else list(s) for s in shapes]
        self.capacity = capacity if capacity >= 0 else float("inf")
        self.closed = False
        self._items: collections.deque[tuple[np.ndarray, ...]] = collections.deque()
        self._enqueues: list[Attempt] = []
        self._dequeues: list[Attempt] = []

    # ---- what kernels call -------------------------------------------------------
    def size(self) -> int:
        with self.lock:
            return len(self._items)

    def is_closed(self) -> bool:
        with self.lock:
            return self.closed

    def snapshot(self) -> np.ndarray:
        # Fetching a queue's handle gives TF1's 2-element string vector.
        return np.array([b"", self.name.encode()], dtype=object)

    def check_elements(self, components: list[np.ndarray], many: bool) -> list[tuple]:
        """Converts enqueue inputs into element tuples, checking dtypes and shapes."""
        if len(components) != len(self.dtypes):
            raise errors.InvalidArgumentError(
                None, None, f"{self.type_name} '{self.name}' takes {len(self.dtypes)} "
                f"components per element, but the enqueue gave {len(components)}.")
        # Private copies: a dequeued value must not alias the producer's array.
        arrays = [np.array(c, dtype=dt.as_numpy_dtype) for c, dt in zip(components, self.dtypes)]
        if not many:
            self._check_shapes([a.shape for a in arrays], None)
            return [tuple(arrays)]
        lengths = {a.shape[0] if a.ndim else None for a in arrays}
        if None in lengths or len(lengths) != 1:
            raise errors.InvalidArgumentError(
                None, None, f"enqueue_many to {self.type_name} '{self.name}' needs components "
                f"with one common leading dimension; got shapes {[a.shape for a in arrays]}.")
        n = cast(int, lengths.pop())
        self._check_shapes([a.shape[1:] for a in arrays], n)
        return [tuple(np.asarray(a[i]) for a in arrays) for i in range(n)]

    def _check_shapes(self, got: list[tuple[int, ...]], batch: int | None) -> None:
        """Each component's element shape against the queue's; `batch` is the
        enqueue_many batch size (TF's message then shows the batch's shapes)."""
        if self.shapes is None:
            return
        lead = [] if batch is None else [batch]
        for i, (want, have) in enumerate(zip(self.shapes, got)):
            if want is not None and not _compatible(want, have):
                raise errors.InvalidArgumentError(
                    None, None, f"Shape mismatch in tuple component {i}. Expected "
                    f"{_fmt(lead + list(want))}, got {_fmt(lead + list(have))} (queue "
                    f"{self.type_name} '{self.name}').")

    def enqueue_payload(self, elements: list[tuple]) -> collections.deque:
        return collections.deque(elements)

    def close(self, cancel_pending_enqueues: bool) -> None:
        later: Later = []
        with self.lock:
            self.closed = True
            if cancel_pending_enqueues:
                for a in self._enqueues:
                    a.finish(errors.CancelledError(
                        None, None, f"{self.type_name} '{self.name}' is closed."), later)
                self._enqueues.clear()
            self._progress(later)
        for fn in later:
            fn()

    def close_on_reset(self) -> None:
        """Called when the resource container is dropped (session close, reset)."""
        self.cancel_all(errors.CancelledError(
            None, None, f"{self.type_name} '{self.name}' was destroyed (its session was "
            "closed or its container reset) while an op waited on it."))

    # ---- attempts ----------------------------------------------------------------
    def _pending_lists(self) -> list[list[Attempt]]:
        return [self._enqueues, self._dequeues]

    def _start(self, attempt: Attempt, later: Later) -> None:
        is_take = isinstance(attempt.payload, _Take)
        if not is_take and self.closed:
            attempt.finish(errors.CancelledError(
                None, None, f"{self.type_name} '{self.name}' is closed."), later)
            return
        attempt.state = PENDING
        (self._dequeues if is_take else self._enqueues).append(attempt)
        self._progress(later)

    def _on_cancelled(self, attempt: Attempt, later: Later) -> None:
        # A cancelled dequeue_many gives back what it already took, at the front.
        if isinstance(attempt.payload, _Take) and attempt.payload.got:
            self._items.extendleft(reversed(attempt.payload.got))
            attempt.payload.got = []
            self._progress(later)

    def _progress(self, later: Later) -> None:
        """Moves elements until nothing can move, then settles waits a close made hopeless."""
        while True:
            moved = self._fill(later) | self._drain(later)
            if moved:
                continue
            if not (self.closed and self._dequeues):
                return
            self._fail_head(later)

    def _fill(self, later: Later) -> bool:
        moved = False
        while self._enqueues:
            head = self._enqueues[0]
            pending: collections.deque = head.payload
            while pending and len(self._items) < self.capacity:
                self._items.append(pending.popleft())
                moved = True
            if pending:
                return moved
            self._enqueues.pop(0)
            head.finish(None, later)
            moved = True
        return moved

    def _drain(self, later: Later) -> bool:
        moved = False
        while self._dequeues:
            head = self._dequeues[0]
            take: _Take = head.payload
            while len(take.got) < take.n and self._available() > 0:
                take.got.append(self._pop())
                moved = True
            if len(take.got) < take.n:
                return moved
            self._dequeues.pop(0)
            head.finish(self._result(take), later)
            moved = True
        return moved

    def _fail_head(self, later: Later) -> None:
        """The queue is closed and the head dequeue can never be satisfied."""
        head = self._dequeues.pop(0)
        take: _Take = head.payload
        if take.up_to and take.got:
            head.finish(self._result(take), later)
            return
        requested = take.n
        self._items.extendleft(reversed(take.got))  # later waiters may use these
        take.got = []
        head.finish(errors.OutOfRangeError(
            None, None, f"{self.type_name} '{self.name}' is closed and has insufficient "
            f"elements (requested {requested}, current size {len(self._items)})"), later)

    def _available(self) -> int:
        """How many elements a dequeue may take now."""
        return len(self._items)

    def _pop(self) -> tuple[np.ndarray, ...]:
        return self._items.popleft()

    def _result(self, take: _Take) -> Any:
        if not take.many:
            elem = take.got[0]
            return elem[0] if len(elem) == 1 else elem
        batch = tuple(self._stack(i, [e[i] for e in take.got]) for i in range(len(self.dtypes)))
        return batch[0] if len(batch) == 1 else batch

    def _stack(self, i: int, parts: list[np.ndarray]) -> np.ndarray:
        dt = self.dtypes[i].as_numpy_dtype
        if not parts:
            shape = self.shapes[i] if self.shapes is not None else None
            if shape is None or (any(d is None for d in shape) and not self._pads):
                raise errors.InvalidArgumentError(
                    None, None, f"{self.type_name} '{self.name}' cannot produce an empty batch "
                    f"of component {i}: DequeueMany and DequeueUpTo require the components to "
                    "have specified shapes. Pass `shapes`.")
            # A padding queue's unknown dimensions are 0 in an empty batch (as TF's).
            return np.zeros([0] + [d or 0 for d in shape], dtype=dt)
        if len({p.shape for p in parts}) != 1:
            raise errors.InvalidArgumentError(
                None, None, f"{self.type_name} '{self.name}': cannot batch component {i}, the "
                f"elements have different shapes {sorted({p.shape for p in parts})}. Give the "
                "queue fixed `shapes`, or use a PaddingFIFOQueue (dynamic_pad=True).")
        return np.stack(parts).astype(dt, copy=False)

    def take(self, n: int, many: bool, up_to: bool) -> _Take:
        return _Take(n, many, up_to)


class RandomShuffleQueueResource(QueueResource):
    """Dequeues a uniformly random element, keeping `min_after_dequeue` unless closed."""

    type_name = "RandomShuffleQueue"

    def __init__(self, name: str, dtypes: list[Any], shapes: list[Any] | None, capacity: int,
                 min_after_dequeue: int, seed: int | None, seed2: int | None) -> None:
        super().__init__(name, dtypes, shapes, capacity)
        self.min_after_dequeue = min_after_dequeue
        self.seeds = (seed or 0, seed2 or 0)
        # Seeded queues shuffle reproducibly (TF1): the pair (seed, seed2) picks the stream.
        self._rng = np.random.default_rng(
            None if not seed and not seed2 else [seed or 0, seed2 or 0])

    def _available(self) -> int:
        if self.closed:
            return len(self._items)
        return max(0, len(self._items) - self.min_after_dequeue)

    def _pop(self) -> tuple[np.ndarray, ...]:
        i = int(self._rng.integers(len(self._items)))
        # Swap the chosen element to the end of the deque and pop it: O(1) per dequeue.
        self._items[i], self._items[-1] = self._items[-1], self._items[i]
        return self._items.pop()


class PaddingFIFOQueueResource(QueueResource):
    """A FIFO queue whose dequeue_many pads each component to the batch's largest shape."""

    type_name = "PaddingFIFOQueue"
    _pads = True

    def _stack(self, i: int, parts: list[np.ndarray]) -> np.ndarray:
        if not parts or len({p.shape for p in parts}) == 1:
            return super()._stack(i, parts)
        dt = self.dtypes[i].as_numpy_dtype
        full = np.max(np.array([p.shape for p in parts]), axis=0)
        out = np.zeros((len(parts),) + tuple(int(d) for d in full), dtype=dt)
        if np.dtype(dt) == object:  # tf.string pads with b"" (TF's default for strings)
            out[...] = b""
        for j, p in enumerate(parts):
            out[(j,) + tuple(slice(0, d) for d in p.shape)] = p
        return out


class _PriorityItems:
    """The elements of a PriorityQueue: a heap on (priority, arrival), so equal
    priorities leave in the order they came. Offers the deque operations the queue
    uses (append, popleft, extendleft, len)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, tuple[np.ndarray, ...]]] = []
        self._seq = itertools.count()

    def append(self, elem: tuple[np.ndarray, ...]) -> None:
        heapq.heappush(self._heap, (int(elem[0]), next(self._seq), elem))

    def extendleft(self, elems: Any) -> None:
        # Elements given back by a cancelled dequeue go back in priority order.
        for elem in elems:
            self.append(elem)

    def popleft(self) -> tuple[np.ndarray, ...]:
        return heapq.heappop(self._heap)[2]

    def __len__(self) -> int:
        return len(self._heap)


class PriorityQueueResource(QueueResource):
    """Dequeues the element with the smallest priority (component 0, an int64 scalar)."""

    type_name = "PriorityQueue"

    def __init__(self, name: str, dtypes: list[Any], shapes: list[Any] | None,
                 capacity: int) -> None:
        super().__init__(name, dtypes, shapes, capacity)
        self._items = _PriorityItems()  # type: ignore[assignment]


def _compatible(want: list[Any], have: tuple[int, ...]) -> bool:
    return len(want) == len(have) and all(w is None or w == h for w, h in zip(want, have))


def _fmt(shape: list[Any]) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


__all__ = ["QueueResource", "RandomShuffleQueueResource", "PaddingFIFOQueueResource",
           "PriorityQueueResource",
           "private_queue_name"]
