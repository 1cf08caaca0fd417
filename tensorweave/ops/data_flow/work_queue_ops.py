"""DeepRec's work queue ops: WorkQueueHandleOp, WorkQueueTake, WorkQueueSize, WorkQueueSave,
WorkQueueRestore, WorkQueueRestoreFromFile (the class is `tensorweave/train/work_queue.py`).

The handle op returns the queue's resource (`kernels/work_queue_resource.py`) from its
device's ResourceMgr, made on first use with every epoch laid out: no initializer
has to run, and every worker's graph that names the same queue gets the same resource.
The other ops take the handle by reference, so the placer puts them where the queue
lives (a ps task: `replica_device_setter` places WorkQueueHandleOp as a variable). A
take knows its session (`StepState.session`), which is how slices in flight are
tracked per worker, and given back when the worker restarts or its session closes.

Example:
    >>> h = work_queue_handle([b"a.csv", b"b.csv"], num_epochs=1, shuffle=False,
    ...                       seed=0, seed2=0, shared_name="wq")
    >>> work = work_queue_take(h)          # b"a.csv", then b"b.csv", then OutOfRange
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework import file_access as _files
from tensorweave.framework.checkpoint_format import open_reader
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.kernels.work_queue_resource import Taker, WorkQueueResource
from tensorweave.ops.op_author import REQUIRED, create_op, create_tensor, define_op

log = logging.getLogger("tensorweave.work_queue")

__all__ = ["work_queue_handle", "work_queue_take", "work_queue_size", "work_queue_save",
           "work_queue_restore", "work_queue_restore_from_file"]


def _check_handle(handle: Tensor, op_type: str) -> None:
    if not handle.dtype.is_ref_dtype:
        raise TypeError(f"{op_type} needs a work queue reference (WorkQueueHandleOp's "
                        f"output) as its first input, but {handle.name} has dtype "
                        f"{handle.dtype.name}.")


def _queue(q: Any, op_type: str) -> WorkQueueResource:
    if not isinstance(q, WorkQueueResource):
        raise errors.InvalidArgumentError(
            None, None, f"{op_type} needs a work queue, got a {type(q).__name__}.")
    return q


def _text(v: Any) -> bytes:
    v = v.item() if isinstance(v, np.ndarray) else v
    return v if isinstance(v, bytes) else str(v).encode()


# ---- the handle: the resource, made with every epoch on first use ------------------
handle_op = define_op("WorkQueueHandleOp", attrs={
    "works": REQUIRED, "num_epochs": 1, "shuffle": True, "seed": 0, "seed2": 0,
    "container": "", "shared_name": ""}, stateful=True)


@handle_op.shape
def _(**attrs: Any) -> Any:
    return _dt.string._as_ref, TensorShape([2])


@handle_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, works: list[Any], num_epochs: int, shuffle: bool, seed: int,
      seed2: int, container: str, shared_name: str) -> WorkQueueResource:
    key = shared_name or ctx.name
    slices = [_text(w) for w in works]
    q = ctx.resources.lookup_or_create(container, key, lambda: WorkQueueResource(
        key, slices, num_epochs, shuffle, [seed, seed2] if seed or seed2 else None))
    if not isinstance(q, WorkQueueResource):
        raise errors.InvalidArgumentError(
            None, None, f"Resource {container or '<default>'}/{key} exists but is a "
            f"{type(q).__name__}, not a work queue. Give the WorkQueue another name.")
    if (q.works, q.num_epochs, q.shuffle) != (tuple(slices), num_epochs, shuffle):
        raise errors.InvalidArgumentError(
            None, None, f"Work queue '{key}' exists with {len(q.works)} works, "
            f"{q.num_epochs} epoch(s), shuffle={q.shuffle}, but this graph asks for "
            f"{len(slices)} works, {num_epochs} epoch(s), shuffle={shuffle} (first works "
            f"{list(q.works[:3])} vs {slices[:3]}). Every worker must build the same "
            "WorkQueue; give a different one another name.")
    return q


handle_op.no_gradient()


def work_queue_handle(works: Sequence[bytes], num_epochs: int, shuffle: bool, seed: int,
                      seed2: int, shared_name: str, name: str = "handle") -> Tensor:
    """The reference to the work queue `shared_name` (made on first use)."""
    return create_tensor("WorkQueueHandleOp", [], {
        "works": list(works), "num_epochs": int(num_epochs), "shuffle": bool(shuffle),
        "seed": int(seed), "seed2": int(seed2), "shared_name": shared_name}, name=name)


# ---- take -------------------------------------------------------------------------
take_op = define_op("WorkQueueTake", inputs=("&handle",), attrs={"holds": 1},
                    stateful=True)


@take_op.shape
def _(handle: Tensor, *, holds: int) -> Any:
    _check_handle(handle, "WorkQueueTake")
    return _dt.string, TensorShape([])


@take_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, q: Any, *, holds: int) -> Any:
    session = getattr(step, "session", None)
    if session is None:   # a local session: one taker per take op
        taker = Taker(ctx.name)
    else:
        taker = Taker(f"{session.handle}/{ctx.name}", session.handle, session.task,
                      session.incarnation)
    return np.array(_queue(q, "WorkQueueTake").take(taker, holds), dtype=object)


take_op.no_gradient()


def work_queue_take(handle: Tensor, holds: int = 1, name: str = "take") -> Tensor:
    """The next slice (a string scalar); OutOfRangeError once every slice was taken.

    Args:
        handle: the queue's reference.
        holds: how many slices the taker's pipeline keeps at once: its next take marks
            its oldest one trained (1: the program trains a slice before taking again).
        name: the op's name.
    """
    if int(holds) < 1:
        raise ValueError(f"work_queue_take: holds must be >= 1, got {holds!r}.")
    return create_tensor("WorkQueueTake", [handle], {"holds": int(holds)}, name=name)


# ---- size, save ----------------------------------------------------------------------
size_op = define_op("WorkQueueSize", inputs=("&handle",), stateful=True)


@size_op.shape
def _(handle: Tensor) -> Any:
    _check_handle(handle, "WorkQueueSize")
    return _dt.int64, TensorShape([])


@size_op.kernel("CPU")
def _(q: Any) -> Any:
    return np.int64(_queue(q, "WorkQueueSize").size())


size_op.no_gradient()


def work_queue_size(handle: Tensor, name: str = "size") -> Tensor:
    """How many slices are left to hand out (an int64 scalar)."""
    return create_tensor("WorkQueueSize", [handle], name=name)


save_op = define_op("WorkQueueSave", inputs=("&handle",), stateful=True)


@save_op.shape
def _(handle: Tensor) -> Any:
    _check_handle(handle, "WorkQueueSave")
    return _dt.string, TensorShape([None])


@save_op.kernel("CPU")
def _(q: Any) -> Any:
    return _queue(q, "WorkQueueSave").save()


save_op.no_gradient()


def work_queue_save(handle: Tensor, name: str = "save") -> Tensor:
    """What is left to train, slices in flight first (a string vector)."""
    return create_tensor("WorkQueueSave", [handle], name=name)


# ---- restore: from tensors, or from a checkpoint that may not hold the queue --------
restore_op = define_op("WorkQueueRestore", inputs=("&handle", "digest", "works"),
                       stateful=True)


@restore_op.shape
def _(handle: Tensor, digest: Tensor, works: Tensor) -> list:
    _check_handle(handle, "WorkQueueRestore")
    if digest.dtype.base_dtype != _dt.string or works.dtype.base_dtype != _dt.string:
        raise TypeError(f"WorkQueueRestore needs string digest and works, got "
                        f"{digest.dtype.name} and {works.dtype.name}.")
    return []


@restore_op.kernel("CPU")
def _(q: Any, digest: Any, works: Any) -> None:
    saved = [_text(w) for w in np.asarray(works, dtype=object).reshape(-1)]
    _queue(q, "WorkQueueRestore").restore(_text(digest), saved)


restore_op.no_gradient()


def work_queue_restore(handle: Tensor, digest: Tensor, works: Tensor,
                       name: str = "restore") -> Operation:
    """Puts saved `works` back as what is left, if `digest` says they are this queue's."""
    return create_op("WorkQueueRestore", [handle, digest, works], name=name)


restore_file_op = define_op("WorkQueueRestoreFromFile", inputs=("&handle", "prefix"),
                            attrs={"digest_key": REQUIRED, "works_key": REQUIRED},
                            stateful=True)


@restore_file_op.shape
def _(handle: Tensor, prefix: Tensor, *, digest_key: str, works_key: str) -> list:
    _check_handle(handle, "WorkQueueRestoreFromFile")
    return []


@restore_file_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, q: Any, prefix: Any, *, digest_key: str, works_key: str) -> None:
    queue = _queue(q, "WorkQueueRestoreFromFile")
    path = _files.check_prefix(ctx.library.device.file_policy, _text(prefix).decode(),
                               "read", f"{ctx.type} {ctx.name} on {ctx.device}")
    reader = open_reader(path)
    held = reader.get_variable_to_shape_map()
    if digest_key not in held or works_key not in held:
        # As DeepRec: a checkpoint from before the queue existed restores the model, and
        # the queue starts from its first epoch.
        log.info(
            "Work queue %s is not in checkpoint %s (no %s): it starts from its first "
            "epoch.", queue.name, path, works_key)
        return
    saved = [_text(w) for w in np.asarray(reader.get_tensor(works_key),
                                          dtype=object).reshape(-1)]
    queue.restore(_text(reader.get_tensor(digest_key)), saved)


restore_file_op.no_gradient()


def work_queue_restore_from_file(handle: Tensor, prefix: Tensor, digest_key: str,
                                 works_key: str, name: str = "restore") -> Operation:
    """Restores the queue from the checkpoint at `prefix` (saved under `works_key`, with
    its works' digest under `digest_key`); one without them leaves the queue as made."""
    return create_op("WorkQueueRestoreFromFile", [handle, prefix],
                     {"digest_key": digest_key, "works_key": works_key}, name=name)
