"""Queues and accumulators: `tf.FIFOQueue`, `tf.RandomShuffleQueue`,
`tf.PaddingFIFOQueue`, `tf.ConditionalAccumulator`, `tf.SparseConditionalAccumulator`.

A queue is a resource on the device its op is placed on, shared by every
session running there (every client of a ps task when it is named with
`shared_name`, or by node name). Dequeue blocks while the queue is empty and
enqueue while it is full, without holding a thread; closing the queue, closing
the session or a `RunOptions(timeout_in_ms=...)` deadline wakes them.

Example:
    >>> q = tf.FIFOQueue(3, [tf.float32], shapes=[[]])
    >>> with tf.Session() as sess:
    ...     sess.run(q.enqueue_many([[1.0, 2.0]]))
    ...     sess.run(q.dequeue())
    1.0
"""
from __future__ import annotations

import hashlib
from typing import Any, Sequence

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph import Graph, get_default_graph
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, plain_dims
from tensorweave.ops.data_flow import queue_kernels  # noqa: F401 - registers the ops
from tensorweave.ops.data_flow.accumulator_ops import (
    ConditionalAccumulator, ConditionalAccumulatorBase, SparseConditionalAccumulator)
from tensorweave.framework.body_handles import handle_for_default_graph
from tensorweave.ops.random.random_ops import get_seed


def _basename(name: str) -> str:
    return name.rsplit("/", 1)[-1]


class QueueBase:
    """A queue of tuples of tensors; see FIFOQueue and RandomShuffleQueue.

    Args:
        dtypes: component dtypes.
        shapes: per-component shapes (or None when unknown).
        names: optional component names; then enqueue takes and dequeue returns dicts.
        queue_ref: the queue op's reference output.
    """

    def __init__(self, dtypes: Sequence[Any], shapes: Sequence[Any] | None,
                 names: Sequence[str] | None, queue_ref: Tensor) -> None:
        self._dtypes = [_dt.as_dtype(d).base_dtype for d in dtypes]
        self._shapes = [as_shape(s) for s in shapes] if shapes is not None else \
            [TensorShape(None) for _ in self._dtypes]
        self._names = list(names) if names is not None else None
        self._queue_ref = queue_ref
        self._body_refs: dict[Graph, Tensor] = {}

    @property
    def queue_ref(self) -> Tensor:
        return self._queue_ref

    @property
    def name(self) -> str:
        return self._queue_ref.op.name

    @property
    def dtypes(self) -> list[_dt.DType]:
        return list(self._dtypes)

    @property
    def shapes(self) -> list[TensorShape]:
        return list(self._shapes)

    @property
    def names(self) -> list[str] | None:
        return None if self._names is None else list(self._names)

    def _graph_and_handle(self) -> tuple[Graph, Tensor]:
        """Where this queue's ops go, and the handle they take there.

        Ops go into the default graph when it is a cond/while body inside the
        queue's graph (`tf.cond(p, lambda: q.enqueue(x), tf.no_op)` must enqueue when
        the branch runs, not once outside it), with the body's own handle on the same
        queue (framework/body_handles.py).
        """
        return handle_for_default_graph(
            self._queue_ref, self._body_refs, {"FIFOQueue", "PaddingFIFOQueue",
                                               "RandomShuffleQueue", "PriorityQueue"},
            f"Queue {self.name} (use the queue itself rather than QueueBase.from_list)")

    @staticmethod
    def from_list(index: Any, queues: Sequence["QueueBase"]) -> "QueueBase":
        """The queue `queues[index]`, chosen when the ops run (`index` may be a tensor).

        Raises:
            TypeError: `queues` is not a list of queues with the same dtypes and names.

        Example:
            >>> q = tf.QueueBase.from_list(task_index, [q0, q1])
            >>> enq = q.enqueue([x])
        """
        if not queues or not isinstance(queues, list) or \
                not all(isinstance(q, QueueBase) for q in queues):
            raise TypeError(f"A list of queues expected, got {queues!r}.")
        dtypes = queues[0].dtypes
        if any(q.dtypes != dtypes for q in queues[1:]):
            raise TypeError("Queues do not have matching component dtypes: "
                            f"{[[d.name for d in q.dtypes] for q in queues]}.")
        names = queues[0].names
        if any(q.names != names for q in queues[1:]):
            raise TypeError(f"Queues do not have matching component names: "
                            f"{[q.names for q in queues]}.")
        shapes = []
        for per_queue in zip(*[q.shapes for q in queues]):
            common = per_queue[0]
            for other in per_queue[1:]:
                if common.ndims is None or other.ndims != common.ndims:
                    common = TensorShape(None)
                else:
                    common = TensorShape([a if a == b else None for a, b in
                                          zip(common.as_list(), other.as_list())])
            shapes.append(common)
        g = get_default_graph()
        with g.as_default():
            index_t = convert_to_tensor(index, dtype=_dt.int32, name="index")
            ref = g.create_op("RefSelect", [index_t, [q.queue_ref for q in queues]], {},
                              name="RefSelect").outputs[0]
        return QueueBase(dtypes, shapes, names, ref)

    # ---- enqueue -----------------------------------------------------------------
    def _components(self, vals: Any, many: bool) -> list[Tensor]:
        if self._names is not None:
            if not isinstance(vals, dict):
                raise ValueError(f"Queue {self.name} has names {self._names}, so you must "
                                 f"enqueue a dictionary with those keys, not {vals!r}.")
            if sorted(vals) != sorted(self._names):
                raise ValueError(f"Keys {sorted(vals)} do not match names of Queue "
                                 f"{self.name}: its names are {sorted(self._names)}.")
            vals = [vals[k] for k in self._names]
        elif isinstance(vals, dict):
            raise ValueError(f"Queue {self.name} must have names to enqueue a dictionary: "
                             "enqueue a list, or create the queue with names=....")
        elif not isinstance(vals, (list, tuple)):
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Queue {self.name} expects {len(self._dtypes)} components "
                             f"({[d.name for d in self._dtypes]}), got {len(vals)}.")
        tensors = []
        for i, (v, dt, shape) in enumerate(zip(vals, self._dtypes, self._shapes)):
            t = convert_to_tensor(v, dtype=dt, name=f"component_{i}")
            elem = t.shape
            if many:
                elem = TensorShape(None) if t.shape.ndims is None else \
                    TensorShape(t.shape.as_list()[1:])
                if t.shape.ndims == 0:
                    raise ValueError(f"enqueue_many needs component {i} ({t.name}) to have a "
                                     "leading batch dimension, but it is a scalar.")
            if not shape.is_compatible_with(elem):
                raise ValueError(f"Shape {elem} of component {i} ({t.name}) is incompatible "
                                 f"with the queue {self.name}'s shape {shape}.")
            tensors.append(t)
        if many:
            lead = {t.shape.as_list()[0] for t in tensors if t.shape.ndims}
            lead.discard(None)
            if len(lead) > 1:
                raise ValueError(f"enqueue_many to queue {self.name} needs one batch size for "
                                 f"all components, got {[t.shape for t in tensors]}.")
        return tensors

    def enqueue(self, vals: Any, name: str | None = None) -> Operation:
        """An op that adds one element; it waits while the queue is full.

        Raises:
            ValueError: if `vals` does not match the queue's components.

        Example:
            >>> sess.run(q.enqueue([1.0]))
        """
        g, handle = self._graph_and_handle()
        with g.as_default():
            comps = self._components(vals, many=False)
            return g.create_op("QueueEnqueue", [handle, comps], {},
                               name=name or f"{_basename(self.name)}_enqueue")

    def enqueue_many(self, vals: Any, name: str | None = None) -> Operation:
        """An op that adds the slices along dimension 0 of `vals`, one element at a time.

        Example:
            >>> sess.run(q.enqueue_many([[1.0, 2.0, 3.0]]))
        """
        g, handle = self._graph_and_handle()
        with g.as_default():
            comps = self._components(vals, many=True)
            return g.create_op("QueueEnqueueMany", [handle, comps], {},
                               name=name or f"{_basename(self.name)}_EnqueueMany")

    # ---- dequeue -----------------------------------------------------------------
    def _wrap(self, op: Operation, lead: list[Any] | None) -> Any:
        outs = list(op.outputs)
        for t, shape in zip(outs, self._shapes):
            if shape.ndims is not None:
                t.set_shape(shape if lead is None else TensorShape(lead + shape.as_list()))
            elif lead is not None:
                t.set_shape(TensorShape(None))
        if self._names is not None:
            return dict(zip(self._names, outs))
        return outs[0] if len(outs) == 1 else outs

    def dequeue(self, name: str | None = None) -> Any:
        """One element; waits while the queue is empty.

        Raises (at run time):
            tf.errors.OutOfRangeError: the queue is closed and empty.

        Example:
            >>> x = q.dequeue()
        """
        g, handle = self._graph_and_handle()
        op = g.create_op(
            "QueueDequeue", [handle], {"component_types": self._dtypes},
            name=name or f"{_basename(self.name)}_Dequeue")
        return self._wrap(op, None)

    def _dequeue_n(self, op_type: str, n: Any, name: str | None, default: str) -> Any:
        g, handle = self._graph_and_handle()
        with g.as_default():
            n_t = convert_to_tensor(n, dtype=_dt.int32, name="n")
            op = g.create_op(op_type, [handle, n_t], {"component_types": self._dtypes},
                             name=name or f"{_basename(self.name)}_{default}")
        static_n = constant_value(n_t) if op_type == "QueueDequeueMany" else None
        return self._wrap(op, [None if static_n is None else int(static_n)])

    def dequeue_many(self, n: Any, name: str | None = None) -> Any:
        """`n` elements stacked along a new dimension 0; waits until `n` are available.

        Raises (at run time):
            tf.errors.OutOfRangeError: the queue is closed with fewer than `n` left.

        Example:
            >>> batch = q.dequeue_many(32)
        """
        return self._dequeue_n("QueueDequeueMany", n, name, "DequeueMany")

    def dequeue_up_to(self, n: Any, name: str | None = None) -> Any:
        """Like dequeue_many, but a closed queue gives its last (< n) elements.

        Example:
            >>> batch = q.dequeue_up_to(32)
        """
        return self._dequeue_n("QueueDequeueUpTo", n, name, "DequeueUpTo")

    # ---- state -------------------------------------------------------------------
    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None
              ) -> Operation:
        """An op that closes the queue: later enqueues fail with CancelledError, and
        dequeues fail with OutOfRangeError once too few elements remain.

        Args:
            cancel_pending_enqueues: also fail enqueues already waiting for space.
        """
        g, handle = self._graph_and_handle()
        return g.create_op(
            "QueueClose", [handle],
            {"cancel_pending_enqueues": bool(cancel_pending_enqueues)},
            name=name or f"{_basename(self.name)}_Close")

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements in the queue (int32 scalar)."""
        g, handle = self._graph_and_handle()
        return g.create_op(
            "QueueSize", [handle], {},
            name=name or f"{_basename(self.name)}_Size").outputs[0]

    def is_closed(self, name: str | None = None) -> Tensor:
        """True once the queue is closed (bool scalar)."""
        g, handle = self._graph_and_handle()
        return g.create_op(
            "QueueIsClosed", [handle], {},
            name=name or f"{_basename(self.name)}_IsClosed").outputs[0]


def _queue_attrs(capacity: int, dtypes: Any, shapes: Any, shared_name: str | None) -> tuple:
    if isinstance(dtypes, (_dt.DType, str)) or not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes]
    dtypes = [_dt.as_dtype(d).base_dtype for d in dtypes]
    if shapes is not None:
        if isinstance(shapes, TensorShape):
            shapes = [shapes]
        if not isinstance(shapes, (list, tuple)):
            raise TypeError(f"A queue's shapes must be a TensorShape or a list of them, got "
                            f"{shapes!r}.")
        if all(d is None or isinstance(d, int) for d in shapes):
            # One shape, as TF reads it: [2, 3] is one [2, 3] shape, () one scalar shape.
            shapes = [shapes]
        shapes = [as_shape(s) for s in shapes]
        if len(shapes) != len(dtypes):
            raise ValueError(f"A queue needs one shape per dtype: got {len(dtypes)} dtypes "
                             f"and {len(shapes)} shapes ({shapes}).")
    attrs = {"component_types": dtypes, "capacity": int(capacity),
             "shapes": None if shapes is None else [plain_dims(s) for s in shapes],
             "shared_name": shared_name or ""}
    return dtypes, shapes, attrs


class FIFOQueue(QueueBase):
    """A queue that dequeues elements in first-in first-out order.

    Args:
        capacity: the most elements it holds; enqueues wait beyond that.
        dtypes: component dtypes (one DType or a list).
        shapes: optional per-component shapes (gives dequeue static shapes).
        names: optional component names (enqueue/dequeue use dicts).
        shared_name: share the queue under this name across sessions.
        name: the op name.

    Example:
        >>> q = tf.FIFOQueue(10, [tf.int32, tf.float32], shapes=[[], [2]])
        >>> enq = q.enqueue([1, [0.5, 0.5]])
        >>> i, x = q.dequeue()
    """

    _op_type = "FIFOQueue"

    def __init__(self, capacity: int, dtypes: Any, shapes: Any = None,
                 names: Sequence[str] | None = None, shared_name: str | None = None,
                 name: str = "fifo_queue") -> None:
        dtypes, shapes, attrs = _queue_attrs(capacity, dtypes, shapes, shared_name)
        ref = get_default_graph().create_op(self._op_type, [], attrs, name=name).outputs[0]
        super().__init__(dtypes, shapes, names, ref)


class PaddingFIFOQueue(FIFOQueue):
    """A FIFOQueue whose dequeue_many zero-pads components to the batch's largest shape.

    `shapes` is required; use None for dimensions that vary.

    Example:
        >>> q = tf.PaddingFIFOQueue(10, [tf.int32], shapes=[[None]])
    """

    _op_type = "PaddingFIFOQueue"

    def __init__(self, capacity: int, dtypes: Any, shapes: Any,
                 names: Sequence[str] | None = None, shared_name: str | None = None,
                 name: str = "padding_fifo_queue") -> None:
        if shapes is None:
            raise ValueError("When providing partial shapes, a list of shapes must be "
                             "provided: PaddingFIFOQueue needs shapes (use None for "
                             "dimensions that vary between elements).")
        super().__init__(capacity, dtypes, shapes, names, shared_name, name)


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues a random element, keeping `min_after_dequeue` in reserve.

    Until the queue is closed, a dequeue waits until more than `min_after_dequeue`
    elements are present, which keeps the shuffle well mixed.

    Args:
        capacity: the most elements it holds.
        min_after_dequeue: elements left after a dequeue (ignored once closed).
        dtypes, shapes, names, shared_name, name: as for FIFOQueue.
        seed: op seed; with the graph seed it makes the order reproducible.

    Example:
        >>> q = tf.RandomShuffleQueue(100, 10, [tf.float32], shapes=[[]], seed=1)
    """

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes: Any, shapes: Any = None,
                 names: Sequence[str] | None = None, seed: int | None = None,
                 shared_name: str | None = None, name: str = "random_shuffle_queue") -> None:
        dtypes, shapes, attrs = _queue_attrs(capacity, dtypes, shapes, shared_name)
        seed1, seed2 = get_seed(seed)
        if seed is None and seed1 is not None and shared_name:
            # Graph seed but no op seed: seed2 must not depend on how many ops came
            # before, or two definitions of one shared queue would disagree. TF
            # derives it from the graph seed and the shared name, so do we.
            digest = hashlib.md5((str(seed1) + shared_name).encode("utf-8")).hexdigest()
            seed2 = int(digest[:8], 16) & 0x7FFFFFFF
        attrs.update(min_after_dequeue=int(min_after_dequeue), seed=seed1 or 0, seed2=seed2 or 0)
        ref = get_default_graph().create_op("RandomShuffleQueue", [], attrs,
                                            name=name).outputs[0]
        super().__init__(dtypes, shapes, names, ref)


class PriorityQueue(QueueBase):
    """A queue that dequeues the element with the smallest priority first.

    Every enqueued element starts with its priority, an int64 scalar (a vector with
    `enqueue_many`); dequeues return it first too. Equal priorities leave in the
    order they came.

    Args:
        capacity: the most elements it holds.
        types: the dtypes of the values after the priority.
        shapes: their shapes (needed for dequeue_many), or None.
        names, shared_name, name: as for FIFOQueue.

    Example:
        >>> q = tf.PriorityQueue(10, [tf.string], shapes=[[]])
        >>> enq = q.enqueue([tf.constant(3, tf.int64), "c"])
        >>> priority, value = q.dequeue()
    """

    def __init__(self, capacity: int, types: Any, shapes: Any = None,
                 names: Sequence[str] | None = None, shared_name: str | None = None,
                 name: str = "priority_queue") -> None:
        types, shapes, attrs = _queue_attrs(capacity, types, shapes, shared_name)
        attrs["shapes"] = attrs["shapes"] or []  # a required attr of TF's PriorityQueue
        ref = get_default_graph().create_op("PriorityQueue", [], attrs, name=name).outputs[0]
        super().__init__([_dt.int64] + types,
                         None if shapes is None else [TensorShape([])] + shapes, names, ref)


__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "PriorityQueue",
           "ConditionalAccumulatorBase", "ConditionalAccumulator",
           "SparseConditionalAccumulator"]
