"""Set and ordering array ops: setdiff1d (ListDiff), unique_with_counts
(UniqueWithCounts), and the sort / argsort composites.

ListDiff and UniqueWithCounts are ops as in TF, with no gradient; sort and argsort
are built on `tf.nn.top_k` with transposes, as TF 1.13's sort_ops (TF has no sort op).

Example:
    >>> out, idx = tf.setdiff1d([1, 2, 3, 4], [2, 4])   # out = [1, 3], idx = [0, 2]
    >>> tf.sort([3, 1, 2])                              # -> [1, 2, 3]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import constant, constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.op_outputs import op_result
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value

from tensorweave.ops.array.fill_ops import transpose
from tensorweave.ops.array.shape_ops import shape
from tensorweave.ops.array.unique_ops import unique_op
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn.topk_ops import top_k


def _vector(what: str, arg: str, t: Tensor) -> None:
    if t.shape.ndims not in (None, 1):
        raise ValueError(f"{what}: {arg} must be a vector, got shape {t.shape} ({t.name}).")


def _kernel_vector(what: str, arg: str, v: Any) -> np.ndarray:
    v = np.asarray(v)
    if v.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"{what}: {arg} must be a vector, got "
                                          f"shape {list(v.shape)}")
    return v


# ---- ListDiff ------------------------------------------------------------------------
list_diff_op = define_op("ListDiff", inputs=("x", "y"), attrs={"out_idx": _dt.int32})


@list_diff_op.shape
def _(x: Tensor, y: Tensor, *, out_idx: Any) -> Any:
    _vector("setdiff1d", "x", x)
    _vector("setdiff1d", "y", y)
    if x.dtype.base_dtype != y.dtype.base_dtype:
        raise TypeError(f"setdiff1d: x ({x.name}, {x.dtype.base_dtype.name}) and y "
                        f"({y.name}, {y.dtype.base_dtype.name}) must have one dtype.")
    return [(x.dtype.base_dtype, TensorShape([None])),
            (_dt.as_dtype(out_idx), TensorShape([None]))]


@list_diff_op.kernel("CPU")
def _(x: Any, y: Any, *, out_idx: Any) -> Any:
    x = _kernel_vector("setdiff1d", "x", x)
    y = _kernel_vector("setdiff1d", "y", y)
    if x.dtype == object:  # strings: hash them rather than sort mixed bytes objects
        ys = set(y.tolist())
        keep = np.fromiter((v not in ys for v in x.tolist()), bool, x.size)
    else:
        keep = ~np.isin(x, y)
    idx = np.flatnonzero(keep).astype(_dt.as_dtype(out_idx).as_numpy_dtype)
    return x[keep], idx


list_diff_op.no_gradient()


def setdiff1d(x: Any, y: Any, index_dtype: Any = _dt.int32, name: str | None = None
              ) -> tuple[Tensor, Tensor]:
    """`tf.setdiff1d` (ListDiff): the entries of `x` not in `y`, in `x`'s order (with
    repeats), and their positions in `x`.

    Example:
        >>> out, idx = tf.setdiff1d([1, 2, 3, 4, 2], [2])  # out = [1, 3, 4], idx = [0, 2, 3]
    """
    xt = convert_to_tensor(x, name="x")
    yt = convert_to_tensor(y, dtype=xt.dtype.base_dtype, name="y")
    return op_result(create_op("ListDiff", [xt, yt], {"out_idx": _dt.as_dtype(index_dtype)},
                             name))


# ---- UniqueWithCounts ----------------------------------------------------------------
unique_with_counts_op = define_op("UniqueWithCounts", inputs=("x",),
                                  attrs={"out_idx": _dt.int32})


@unique_with_counts_op.shape
def _(x: Tensor, *, out_idx: Any) -> Any:
    _vector("unique_with_counts", "x", x)
    it = _dt.as_dtype(out_idx)
    return [(x.dtype.base_dtype, TensorShape([None])), (it, x.shape),
            (it, TensorShape([None]))]


@unique_with_counts_op.kernel("CPU")
def _(x: Any, *, out_idx: Any) -> Any:
    # Unique's kernel owns the first-appearance order; counts are a bincount of idx.
    y, idx = unique_op.kernels["CPU"].fn(x, out_idx=out_idx)
    count = np.bincount(idx.astype(np.intp), minlength=len(y)).astype(idx.dtype)
    return y, idx, count


unique_with_counts_op.no_gradient()


def unique_with_counts(x: Any, out_idx: Any = _dt.int32, name: str | None = None
                       ) -> tuple[Tensor, Tensor, Tensor]:
    """`tf.unique_with_counts`: (distinct values y in order of first appearance, idx with
    x == gather(y, idx), count of each y in x).

    Example:
        >>> y, idx, count = tf.unique_with_counts([1, 1, 2, 4, 4, 4])
        >>> # y = [1, 2, 4], idx = [0, 0, 1, 2, 2, 2], count = [2, 1, 3]
    """
    xt = convert_to_tensor(x, name="x")
    return op_result(create_op("UniqueWithCounts", [xt], {"out_idx": _dt.as_dtype(out_idx)},
                             name))


# ---- sort / argsort ------------------------------------------------------------------
_DIRECTIONS = ("ASCENDING", "DESCENDING")


def _sort_or_argsort(values: Any, axis: Any, direction: str, return_argsort: bool) -> Tensor:
    if direction not in _DIRECTIONS:
        raise ValueError(f"sort: direction must be one of {', '.join(_DIRECTIONS)}, got "
                         f"{direction!r}.")
    axis_t = convert_to_tensor(axis, name="axis")
    a = constant_value(axis_t)
    if axis_t.shape.ndims != 0 or a is None:
        raise ValueError(f"sort: axis must be a constant scalar, got {axis!r}.")
    v = convert_to_tensor(values, name="values")
    if direction == "ASCENDING":
        # top_k ranks largest first; sorting -values ascends (ties keep the lower index).
        out = _descending(math_ops.negative(v), int(a), return_argsort)
        return out if return_argsort else math_ops.negative(out)
    return _descending(v, int(a), return_argsort)


def _descending(v: Tensor, axis: int, return_argsort: bool) -> Tensor:
    r = v.shape.ndims
    if r is not None:
        if r == 0:
            raise ValueError(f"sort: values must have rank >= 1, got a scalar ({v.name}).")
        if not -r <= axis < r:
            raise ValueError(f"sort: axis {axis} is out of range for values {v.name} of rank "
                             f"{r}; it must be in [{-r}, {r}).")
        axis %= r
    elif axis != -1:
        raise ValueError(f"sort: values {v.name} has unknown rank; only axis=-1 is supported "
                         "then (give the placeholder a shape).")
    perm = None
    if r is not None and axis != r - 1:
        # Swap `axis` with the last one: the swap is its own inverse on the way back.
        perm = list(range(r))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        v = transpose(v, constant(np.asarray(perm, np.int32), name="transposition"))
    last = dimension_value(v.shape[-1]) if v.shape.ndims else None
    k = last if last is not None else shape(v)[-1]
    vals, idx = top_k(v, k)
    out = idx if return_argsort else vals
    return out if perm is None else transpose(out, constant(np.asarray(perm, np.int32)))


def sort(values: Any, axis: Any = -1, direction: str = "ASCENDING", name: str | None = None
         ) -> Tensor:
    """`tf.sort`: `values` sorted along `axis` (a constant), ascending or descending.

    Example:
        >>> tf.sort([[3, 1, 2]], direction="DESCENDING")  # -> [[3, 2, 1]]
    """
    with name_scope(name, "sort") as _:
        return _sort_or_argsort(values, axis, direction, return_argsort=False)


def argsort(values: Any, axis: Any = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None) -> Tensor:
    """`tf.argsort`: int32 indices that sort `values` along `axis`.

    The order is always stable (ties keep the lower index first), so `stable` is
    accepted and ignored, as in TF.

    Example:
        >>> tf.argsort([3, 1, 2])  # -> [1, 2, 0]
    """
    del stable  # top_k already breaks ties by index
    with name_scope(name, "argsort") as _:
        return _sort_or_argsort(values, axis, direction, return_argsort=True)


__all__ = ["setdiff1d", "unique_with_counts", "sort", "argsort"]
