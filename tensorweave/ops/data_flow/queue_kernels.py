"""Queue ops (TF1 names and attrs): FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue,
QueueEnqueue[Many], QueueDequeue[Many|UpTo], QueueClose, QueueSize, QueueIsClosed.

The queue op itself is a "context" kernel returning the `QueueResource` from its
device's ResourceMgr, keyed by (container, shared_name or node name); every
other op takes it by reference, so the placer puts them on the queue's device.
Enqueue and dequeue are async kernels that wait on the resource (see
waiting) instead of blocking a thread.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.kernels.queue_resource import (
    PaddingFIFOQueueResource, PriorityQueueResource, QueueResource, RandomShuffleQueueResource,
    private_queue_name)
from tensorweave.runtime.waiting import run_attempt

_QUEUE_ATTRS = {"component_types": REQUIRED, "shapes": None, "capacity": -1,
                "container": "", "shared_name": ""}


def _handle_shape(**attrs: Any) -> Any:
    return _dt.string._as_ref, TensorShape([2])


def _check_handle(handle: Tensor, op_type: str) -> None:
    if not handle.dtype.is_ref_dtype:
        raise TypeError(f"{op_type} needs a queue reference (queue.queue_ref) as its first "
                        f"input, but {handle.name} has dtype {handle.dtype.name}.")


def _lookup(ctx: Any, kind: type[QueueResource], container: str, shared_name: str,
            make: Callable[[str], QueueResource], component_types: list[Any],
            capacity: int, shapes: Any) -> QueueResource:
    key = shared_name or ctx.name
    q = ctx.resources.lookup_or_create(container, key,
                                       lambda: make(shared_name or private_queue_name(ctx.name)))
    if type(q) is not kind:
        raise errors.InvalidArgumentError(
            None, None, f"Resource {container or '<default>'}/{key} exists but is a "
            f"{type(q).__name__}, not a {kind.__name__}. Use another shared_name.")
    if [d.base_dtype for d in q.dtypes] != [d.base_dtype for d in component_types]:
        raise errors.InvalidArgumentError(
            None, None, f"Shared queue '{q.name}' has component types "
            f"{[d.name for d in q.dtypes]} but requested component types were "
            f"{[d.name for d in component_types]}. Use another shared_name.")
    want_capacity = capacity if capacity >= 0 else float("inf")
    if q.capacity != want_capacity:
        raise errors.InvalidArgumentError(
            None, None, f"Shared queue '{q.name}' has capacity {q.capacity} but requested "
            f"capacity was {want_capacity}. Use another shared_name.")
    want_shapes = None if not shapes else [None if s is None else list(s) for s in shapes]
    if q.shapes != want_shapes:
        raise errors.InvalidArgumentError(
            None, None, f"Shared queue '{q.name}' has component shapes {q.shapes or []} but "
            f"requested component shapes were {want_shapes or []}. Use another shared_name.")
    return q


# ---- the queue ops -----------------------------------------------------------------
fifo_queue_op = define_op("FIFOQueue", attrs=dict(_QUEUE_ATTRS), stateful=True)
fifo_queue_op.shape(_handle_shape)


@fifo_queue_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, component_types: list[Any], shapes: Any, capacity: int,
      container: str, shared_name: str) -> QueueResource:
    return _lookup(ctx, QueueResource, container, shared_name,
                   lambda n: QueueResource(n, component_types, shapes, capacity),
                   component_types, capacity, shapes)


fifo_queue_op.no_gradient()

padding_queue_op = define_op("PaddingFIFOQueue", attrs=dict(_QUEUE_ATTRS), stateful=True)
padding_queue_op.shape(_handle_shape)


@padding_queue_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, component_types: list[Any], shapes: Any, capacity: int,
      container: str, shared_name: str) -> QueueResource:
    return _lookup(ctx, PaddingFIFOQueueResource, container, shared_name,
                   lambda n: PaddingFIFOQueueResource(n, component_types, shapes, capacity),
                   component_types, capacity, shapes)


padding_queue_op.no_gradient()

shuffle_queue_op = define_op("RandomShuffleQueue", attrs=dict(
    _QUEUE_ATTRS, min_after_dequeue=0, seed=0, seed2=0), stateful=True)
shuffle_queue_op.shape(_handle_shape)


@shuffle_queue_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, component_types: list[Any], shapes: Any, capacity: int,
      container: str, shared_name: str, min_after_dequeue: int, seed: int,
      seed2: int) -> QueueResource:
    q = _lookup(ctx, RandomShuffleQueueResource, container, shared_name,
                lambda n: RandomShuffleQueueResource(n, component_types, shapes, capacity,
                                                     min_after_dequeue, seed, seed2),
                component_types, capacity, shapes)
    assert isinstance(q, RandomShuffleQueueResource)
    if q.min_after_dequeue != min_after_dequeue:
        raise errors.InvalidArgumentError(
            None, None, f"Shared queue '{q.name}' has min_after_dequeue {q.min_after_dequeue} "
            f"but requested min_after_dequeue was {min_after_dequeue}. Use another "
            "shared_name.")
    # (0, 0) asks for no particular seeds, so it shares any queue (as TF's kernel).
    if (seed or seed2) and q.seeds != (seed or 0, seed2 or 0):
        raise errors.InvalidArgumentError(
            None, None, f"Shared queue '{q.name}' has random seeds {q.seeds} but requested "
            f"random seeds were {(seed or 0, seed2 or 0)}. Use another shared_name.")
    return q


shuffle_queue_op.no_gradient()


priority_queue_op = define_op("PriorityQueue", attrs=dict(_QUEUE_ATTRS), stateful=True)
priority_queue_op.shape(_handle_shape)


@priority_queue_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, component_types: list[Any], shapes: Any, capacity: int,
      container: str, shared_name: str) -> QueueResource:
    # The attrs describe the values; every element also carries its int64 priority first.
    types = [_dt.int64] + list(component_types)
    full_shapes = [[]] + [list(s) for s in shapes] if shapes else None
    return _lookup(ctx, PriorityQueueResource, container, shared_name,
                   lambda n: PriorityQueueResource(n, types, full_shapes, capacity),
                   types, capacity, full_shapes)


priority_queue_op.no_gradient()


# ---- enqueue -----------------------------------------------------------------------
def _enqueue_op(op_type: str, many: bool) -> Any:
    op = define_op(op_type, inputs=("&handle", "components*"), attrs={"timeout_ms": -1},
                   stateful=True)

    @op.shape
    def _(handle: Tensor, components: list[Tensor], **attrs: Any) -> list:
        _check_handle(handle, op_type)
        return []

    @op.kernel("CPU", kind="async")
    def _(ctx: Any, step: Any, done: Any, q: QueueResource, components: list[Any],
          **attrs: Any) -> None:
        elements = q.check_elements(components, many)
        run_attempt(q, step, done, q.enqueue_payload(elements))

    op.no_gradient()
    return op


enqueue_op = _enqueue_op("QueueEnqueue", many=False)
enqueue_many_op = _enqueue_op("QueueEnqueueMany", many=True)


# ---- dequeue -----------------------------------------------------------------------
def _outputs(component_types: list[Any]) -> list:
    return [(_dt.as_dtype(d).base_dtype, TensorShape(None)) for d in component_types]


dequeue_op = define_op("QueueDequeue", inputs=("&handle",),
                       attrs={"component_types": REQUIRED, "timeout_ms": -1}, stateful=True)


@dequeue_op.shape
def _(handle: Tensor, *, component_types: list[Any], timeout_ms: int) -> list:
    _check_handle(handle, "QueueDequeue")
    return _outputs(component_types)


@dequeue_op.kernel("CPU", kind="async")
def _(ctx: Any, step: Any, done: Any, q: QueueResource, *, component_types: list[Any],
      timeout_ms: int) -> None:
    run_attempt(q, step, done, q.take(1, many=False, up_to=False))


dequeue_op.no_gradient()


def _dequeue_n_op(op_type: str, up_to: bool) -> Any:
    op = define_op(op_type, inputs=("&handle", "n"),
                   attrs={"component_types": REQUIRED, "timeout_ms": -1}, stateful=True)

    @op.shape
    def _(handle: Tensor, n: Tensor, *, component_types: list[Any], timeout_ms: int) -> list:
        _check_handle(handle, op_type)
        if not n.dtype.base_dtype.is_integer:
            raise TypeError(f"{op_type} needs an integer n, got {n.name} of dtype "
                            f"{n.dtype.name}")
        return _outputs(component_types)

    @op.kernel("CPU", kind="async")
    def _(ctx: Any, step: Any, done: Any, q: QueueResource, n: Any, *,
          component_types: list[Any], timeout_ms: int) -> None:
        count = int(n)
        if count < 0:
            raise errors.InvalidArgumentError(
                None, None, f"{op_type} requested {count} < 0 elements from "
                f"{q.type_name} '{q.name}'; n must be non-negative.")
        run_attempt(q, step, done, q.take(count, many=True, up_to=up_to))

    op.no_gradient()
    return op


dequeue_many_op = _dequeue_n_op("QueueDequeueMany", up_to=False)
dequeue_up_to_op = _dequeue_n_op("QueueDequeueUpTo", up_to=True)


# ---- close, size, is_closed ----------------------------------------------------------
close_op = define_op("QueueClose", inputs=("&handle",),
                     attrs={"cancel_pending_enqueues": False}, stateful=True)


@close_op.shape
def _(handle: Tensor, *, cancel_pending_enqueues: bool) -> list:
    _check_handle(handle, "QueueClose")
    return []


@close_op.kernel("CPU")
def _(q: QueueResource, *, cancel_pending_enqueues: bool) -> None:
    q.close(cancel_pending_enqueues)


close_op.no_gradient()

def _query_op(op_type: str, dtype: Any, read: Any) -> None:
    """A stateless-looking read of a queue's state (size, closed)."""
    op = define_op(op_type, inputs=("&handle",), stateful=True)

    @op.shape
    def _(handle: Tensor) -> Any:
        _check_handle(handle, op_type)
        return dtype, TensorShape([])

    op.kernel("CPU")(read)
    op.no_gradient()


_query_op("QueueSize", _dt.int32, lambda q: np.int32(q.size()))
_query_op("QueueIsClosed", _dt.bool, lambda q: np.bool_(q.is_closed()))


# ---- RefSelect: one reference out of several (QueueBase.from_list) ------------------
ref_select_op = define_op("RefSelect", inputs=("index", "&inputs*"), stateful=True)


@ref_select_op.shape
def _(index: Tensor, inputs: list[Tensor]) -> Any:
    if index.shape.ndims not in (None, 0):
        raise ValueError(f"RefSelect: index must be a scalar, got {index.name} with shape "
                         f"{index.shape}.")
    if not inputs or any(t.dtype != inputs[0].dtype for t in inputs):
        raise TypeError(f"RefSelect needs references of one dtype, got "
                        f"{[t.dtype.name for t in inputs]}.")
    return inputs[0].dtype, inputs[0].shape


@ref_select_op.kernel("CPU")
def _(index: Any, inputs: list[Any]) -> Any:
    i = int(np.asarray(index))
    if not 0 <= i < len(inputs):
        raise errors.InvalidArgumentError(
            None, None, f"RefSelect: index {i} is not in [0, {len(inputs)}) (the number of "
            "references to choose from).")
    return inputs[i]


ref_select_op.no_gradient()
