"""Helpers shared by the functional control-flow ops (If in `cond_ops`,
While in `while_ops`): attr encoding, kernel results, gradient values.
"""
from __future__ import annotations

import builtins
import contextlib
from typing import Any, Iterator, Sequence

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, plain_dims
from tensorweave.ops.math import math_ops
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.ops.array.array_ops import zeros_like
from tensorweave.ops.tensor_array.tensor_array_ops import zeros_flow
from tensorweave.kernels.tensor_array_value import REPLAYING

_pytuple = builtins.tuple  # control_flow_ops defines tf's `tuple`


def _shapes_attr(shapes: Sequence[TensorShape]) -> list[Any]:
    return [plain_dims(s) for s in shapes]


def _kernel_result(values: Sequence[Any]) -> Any:
    # The executor unpacks kernels with several outputs; one output is returned bare.
    if len(values) == 1:
        return values[0]
    return _pytuple(values)


def _differentiable(t: Tensor) -> bool:
    # variant: a TensorArray's flow, whose gradient is a gradient TensorArray
    dt = t.dtype.base_dtype
    return dt.is_floating or dt.is_complex or dt == _dt.variant


def _zeros_grad(t: Tensor) -> Tensor:
    """A zero gradient for `t` (for a TensorArray flow: a gradient array with
    nothing written)."""
    if t.dtype.base_dtype == _dt.variant:
        return zeros_flow(t)
    return zeros_like(t)


def _densify(x: Any) -> Any:
    if x is None or isinstance(x, Tensor):
        return x
    if isinstance(x, IndexedSlices):
        # Function outputs are dense tensors: scatter the slices into a full gradient.
        assert x.dense_shape is not None  # gradients of function inputs carry it
        return math_ops.unsorted_segment_sum(x.values, x.indices, x.dense_shape[0])
    return convert_to_tensor(x)


@contextlib.contextmanager
def replaying(step: Any) -> Iterator[None]:
    """Marks `step` while a gradient kernel re-runs forward ops (a loop body, a cond
    branch): TensorArray reads in them are replays, not second reads (TF 1.x's
    clear_after_read)."""
    step.__dict__[REPLAYING] = step.__dict__.get(REPLAYING, 0) + 1
    try:
        yield
    finally:
        step.__dict__[REPLAYING] -= 1
