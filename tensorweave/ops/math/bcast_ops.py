"""Broadcast shapes as tensors: `tf.broadcast_dynamic_shape` (BroadcastArgs), TF's
BroadcastGradientArgs, and `tf.broadcast_static_shape`.

Our own gradients sum a broadcast gradient back with one op (SumToShape); TF
builds the same from BroadcastGradientArgs + Sum + Reshape, which is also how
our graphs are written for TF (tf_lowering.py) and how TF-written training
graphs arrive here, so both ops exist with TF's semantics.

Example:
    >>> tf.broadcast_dynamic_shape(tf.constant([2, 1, 5]), tf.constant([3, 1]))  # [2, 3, 5]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_op, create_tensor, define_op
from tensorweave.framework.op_outputs import op_result
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, broadcast_shapes


def _shapes(op_name: str, s0: Any, s1: Any) -> tuple[list[int], list[int], list[int]]:
    """The two shapes left-padded with 1s to one rank, and their broadcast shape."""
    a, b = np.asarray(s0), np.asarray(s1)
    for name, v in (("s0", a), ("s1", b)):
        if v.ndim != 1:
            raise errors.InvalidArgumentError(
                None, None, f"{op_name}: {name} must be a shape vector (rank 1) but has "
                f"shape {list(v.shape)}")
    n = max(a.size, b.size)
    x = [1] * (n - a.size) + [int(d) for d in a]
    y = [1] * (n - b.size) + [int(d) for d in b]
    out = []
    for i, (p, q) in enumerate(zip(x, y)):
        if p != q and 1 not in (p, q):
            raise errors.InvalidArgumentError(
                None, None, f"{op_name}: incompatible shapes {a.tolist()} and {b.tolist()}: "
                f"dimension {i} (after left-padding with 1s) is {p} in one and {q} in the "
                "other; dimensions must be equal or 1 to broadcast")
        out.append(q if p == 1 else p)
    return x, y, out


# ---- BroadcastArgs ---------------------------------------------------------------------
broadcast_args_op = define_op("BroadcastArgs", inputs=("s0", "s1"))


@broadcast_args_op.shape
def _(s0: Tensor, s1: Tensor) -> Any:
    n0, n1 = s0.shape.num_elements(), s1.shape.num_elements()
    rank = max(n0, n1) if n0 is not None and n1 is not None else None
    return s0.dtype.base_dtype, TensorShape([rank])


@broadcast_args_op.kernel("CPU")
def _(s0: Any, s1: Any) -> Any:
    return np.asarray(_shapes("BroadcastArgs", s0, s1)[2], dtype=np.asarray(s0).dtype)


broadcast_args_op.no_gradient()


# ---- BroadcastGradientArgs -------------------------------------------------------------
bcast_grad_args_op = define_op("BroadcastGradientArgs", inputs=("s0", "s1"))


@bcast_grad_args_op.shape
def _(s0: Tensor, s1: Tensor) -> Any:
    t = s0.dtype.base_dtype
    return [(t, TensorShape([None])), (t, TensorShape([None]))]


@bcast_grad_args_op.kernel("CPU")
def _(s0: Any, s1: Any) -> Any:
    x, y, out = _shapes("BroadcastGradientArgs", s0, s1)
    dtype = np.asarray(s0).dtype
    if np.array_equal(s0, s1):  # nothing was broadcast
        return np.zeros(0, dtype), np.zeros(0, dtype)
    # An input's gradient sums over the dims it was stretched along; a dim of 1 in
    # both is listed for both, as TF lists it (summing over it changes nothing).
    r0 = [i for i, (p, o) in enumerate(zip(x, out)) if p == 1 and (o != 1 or y[i] == 1)]
    r1 = [i for i, (q, o) in enumerate(zip(y, out)) if q == 1 and (o != 1 or x[i] == 1)]
    return np.asarray(r0, dtype=dtype), np.asarray(r1, dtype=dtype)


bcast_grad_args_op.no_gradient()


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Tensor:
    """`tf.broadcast_dynamic_shape`: the broadcast of two shape vectors, as a tensor.

    Example:
        >>> tf.broadcast_dynamic_shape(tf.shape(a), tf.shape(b))
    """
    x = convert_to_tensor(shape_x)
    y = convert_to_tensor(shape_y, dtype=x.dtype)
    return create_tensor("BroadcastArgs", [x, y], {},
                         name="BroadcastArgs")


def broadcast_gradient_args(s0: Any, s1: Any, name: str | None = None
                            ) -> tuple[Tensor, Tensor]:
    """The axes each of two broadcast operands' gradients sums over (TF's op).

    Example:
        >>> r0, r1 = broadcast_gradient_args([2, 3, 5], [3, 1])   # [], [0, 2]
    """
    x = convert_to_tensor(s0)
    y = convert_to_tensor(s1, dtype=x.dtype)
    op = create_op("BroadcastGradientArgs", [x, y], {},
                   name=name or "BroadcastGradientArgs")
    return op_result(op)


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """`tf.broadcast_static_shape`: the broadcast of two TensorShapes (None where unknown).

    Raises:
        ValueError: when the shapes cannot broadcast, naming both.

    Example:
        >>> tf.broadcast_static_shape(tf.TensorShape([2, 1]), tf.TensorShape([3]))  # [2, 3]
    """
    return broadcast_shapes(as_shape(shape_x), as_shape(shape_y))


__all__ = ["broadcast_dynamic_shape", "broadcast_gradient_args", "broadcast_static_shape"]
