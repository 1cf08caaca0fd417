"""KvStamp: an EmbeddingVariable's rows take the global step of their update.

DeepRec's GlobalStepEvict retires, at each save, the ids whose last update in the
backward pass is more than `steps_to_live` global steps old. The optimizer's update of
an EmbeddingVariable is a plain SparseApply* kernel on its buffer rows (see
kv_variable_ops), so the step is stamped by this op, run after the update on the same
rows with the global step the update saw (the optimizer wires it; see
`Optimizer.apply_gradients`). Row 0 (ids not admitted) is never stamped.

Example:
    >>> kv_stamp(ev_ref, grad.indices, global_step)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.ops.state.kv_variable_ops import as_embedding

__all__ = ["kv_stamp"]

kv_stamp_op = define_op("KvStamp", inputs=("&ref", "rows", "global_step"), stateful=True)


@kv_stamp_op.shape
def _(ref: Tensor, rows: Tensor, global_step: Tensor) -> list:
    return []


@kv_stamp_op.kernel("CPU")
def _(ref: Any, rows: Any, global_step: Any) -> None:
    res = as_embedding(ref, "KvStamp")
    step = int(np.asarray(global_step))
    if step < 0:
        return
    rows = np.asarray(rows, np.int64).reshape(-1)
    # The index's lock, not the update gate (as KvGather): versions are bookkeeping a
    # checkpoint may take from either side of the step.
    with res.index.lock:
        versions = res.index.versions
        rows = rows[(rows > 0) & (rows < len(versions))]
        versions[rows] = np.maximum(versions[rows], step)


kv_stamp_op.no_gradient()


def kv_stamp(ref: Tensor, rows: Tensor, global_step: Tensor,
             name: str = "KvStamp") -> Operation:
    """Stamps `rows` (buffer rows, as a lookup's gradient names them) with `global_step`
    (an int64 scalar; a negative step stamps nothing)."""
    if global_step.dtype.base_dtype != _dt.int64:
        raise TypeError(f"KvStamp: global_step must be int64, got {global_step.dtype.name}")
    return create_op("KvStamp", [ref, rows, global_step], None, name=name)
