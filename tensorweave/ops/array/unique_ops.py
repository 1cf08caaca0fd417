"""Unique: the distinct elements of a vector, in order of first appearance.

`embedding_lookup_sparse` looks each distinct id up once, then maps entries back
through `idx`.

Example:
    >>> y, idx = tf.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])
    >>> # y = [1, 2, 4, 7, 8], idx = [0, 0, 1, 2, 2, 2, 3, 4, 4]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.op_outputs import op_result
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape


unique_op = define_op("Unique", inputs=("x",), attrs={"out_idx": _dt.int32})


@unique_op.shape
def _(x: Tensor, *, out_idx: Any) -> Any:
    if x.shape.ndims not in (None, 1):
        raise ValueError(f"unique: x must be a vector, got shape {x.shape} ({x.name})")
    return [(x.dtype.base_dtype, TensorShape([None])), (_dt.as_dtype(out_idx), x.shape)]


@unique_op.kernel("CPU")
def _(x: Any, *, out_idx: Any) -> Any:
    x = np.asarray(x)
    if x.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"unique: x must be a vector, got "
                                          f"shape {list(x.shape)}")
    idx_dtype = _dt.as_dtype(out_idx).as_numpy_dtype
    if x.dtype.kind in "iub" and x.size:  # ids: one stable sort, no np.unique
        return _unique_sorted(x, idx_dtype)
    _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # np.unique sorts; TF keeps first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return x[first[order]], rank[inverse.reshape(-1)].astype(idx_dtype)


def _unique_sorted(x: np.ndarray, idx_dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """Unique of a non-empty integer vector, in order of first appearance."""
    order = x.argsort(kind="stable")  # methods, not np.* wrappers: ~0.5 us a call less
    ordered = x[order]
    new = np.empty(x.size, bool)  # where a distinct value starts in sorted order
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    firsts = order[new]  # first appearance of each distinct value (stable sort)
    by_first = firsts.argsort()
    rank = np.empty(by_first.size, np.int64)
    rank[by_first] = np.arange(by_first.size)
    idx = np.empty(x.size, idx_dtype)
    idx[order] = rank[new.cumsum() - 1]
    return x[firsts[by_first]], idx


unique_op.no_gradient()


def unique(x: Any, out_idx: Any = _dt.int32, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.unique`: (distinct values y, idx with x == gather(y, idx)).

    Example:
        >>> y, idx = tf.unique(tf.constant([3, 1, 3]))   # y = [3, 1], idx = [0, 1, 0]
    """
    x = convert_to_tensor(x, name="x")
    return op_result(create_op("Unique", [x], {"out_idx": _dt.as_dtype(out_idx)}, name))
