"""Counting ops: Bincount, and the public `invert_permutation`.

`Bincount(arr, size, weights)` counts (or sums `weights` of) each value of the
int32 `arr` in [0, size); values >= size are skipped, negative ones are an
error. An empty `weights` means all ones, and the output has `weights`' dtype,
so an empty int32 `weights` gives int32 counts (what `tf.bincount` passes).
The user-facing `tf.bincount` (size from max(arr), minlength, maxlength) is in
`tensorweave/math_impl/stats_ops.py`.

The InvertPermutation op itself is defined with Transpose (its gradient needs
it) in `tensorweave.ops.array.fill_ops`; `invert_permutation` here is its public
wrapper, adding TF's build-time checks.

Example:
    >>> tf.math.invert_permutation([2, 0, 1])   # [1, 2, 0]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.array import fill_ops as _fill_ops  # noqa: F401 - registers InvertPermutation


# TF's Bincount accepts these weight dtypes; float16 is added because tf.bincount
# with weights is unsorted_segment_sum in TF1 python, which takes half too.
_WEIGHT_DTYPES = (_dt.int32, _dt.int64, _dt.float16, _dt.float32, _dt.float64)

bincount_op = define_op("Bincount", inputs=("arr", "size", "weights"))


@bincount_op.shape
def _(arr: Tensor, size: Tensor, weights: Tensor) -> Any:
    if arr.dtype.base_dtype != _dt.int32:
        raise TypeError(f"Bincount needs an int32 arr, but {arr.name} has dtype "
                        f"{arr.dtype.base_dtype.name}. Use tf.cast(arr, tf.int32).")
    if size.dtype.base_dtype != _dt.int32:
        raise TypeError(f"Bincount needs an int32 size, but {size.name} has dtype "
                        f"{size.dtype.base_dtype.name}.")
    if size.shape.ndims is not None and size.shape.ndims != 0:
        raise ValueError(f"Bincount: size must be a scalar, but {size.name} has shape "
                         f"{size.shape}.")
    dtype = weights.dtype.base_dtype
    if dtype not in _WEIGHT_DTYPES:
        raise TypeError(f"Bincount weights must be one of "
                        f"{', '.join(d.name for d in _WEIGHT_DTYPES)}, but {weights.name} "
                        f"has dtype {dtype.name}.")
    empty = weights.shape.is_fully_defined() and weights.shape.num_elements() == 0
    if not empty and not weights.shape.is_compatible_with(arr.shape):
        raise ValueError(f"Bincount: weights must be empty or have arr's shape, but "
                         f"{weights.name} has shape {weights.shape} and {arr.name} has "
                         f"shape {arr.shape}.")
    n = constant_value(size)
    if n is not None and int(n) < 0:
        raise ValueError(f"Bincount: size must be non-negative, but {size.name} is {int(n)}.")
    return dtype, TensorShape([None if n is None else int(n)])


@bincount_op.kernel("CPU")
def _(arr: Any, size: Any, weights: Any) -> Any:
    arr = np.asarray(arr).reshape(-1)
    weights = np.asarray(weights)
    n = int(size)
    if n < 0:
        raise errors.InvalidArgumentError(None, None, f"Bincount: size must be "
                                          f"non-negative, got {n}.")
    if arr.size and arr.min() < 0:
        raise errors.InvalidArgumentError(
            None, None, f"Bincount: input arr must be non-negative, but it contains "
            f"{int(arr.min())} (at flat index {int(np.argmin(arr))}).")
    if weights.size and weights.size != arr.size:
        raise errors.InvalidArgumentError(
            None, None, f"Bincount: weights must be empty or have arr's {arr.size} "
            f"elements, got {weights.size} (shape {weights.shape}).")
    keep = arr < n  # values >= size are skipped, as TF does
    if not weights.size:
        return np.bincount(arr[keep], minlength=n)[:n].astype(weights.dtype)
    w = weights.reshape(-1)[keep]
    if weights.dtype.kind == "f":
        # np.bincount sums in float64: exact enough, then back to the weights' dtype.
        return np.bincount(arr[keep], weights=w, minlength=n)[:n].astype(weights.dtype)
    out = np.zeros(n, dtype=weights.dtype)  # integer sums stay exact (no float64 detour)
    np.add.at(out, arr[keep], w)
    return out


bincount_op.no_gradient()  # counts are piecewise constant in arr; TF has none either


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    """`tf.invert_permutation` / `tf.math.invert_permutation`: y[x[i]] = i.

    Args:
        x: an int32 or int64 vector holding a permutation of 0..len(x)-1.
        name: a name for the op.

    Returns:
        The inverse permutation, of `x`'s dtype and shape.

    Raises:
        TypeError: if `x` is not int32/int64.
        ValueError: if `x` is not a vector, or is a constant that is not a permutation
            (a fed one fails at run time with InvalidArgumentError).

    Example:
        >>> tf.invert_permutation([3, 4, 0, 2, 1])   # [2, 4, 3, 0, 1]
    """
    t = convert_to_tensor(x, name="x")
    if t.dtype.base_dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"invert_permutation needs an int32/int64 vector, but {t.name} has "
                        f"dtype {t.dtype.base_dtype.name}.")
    if t.shape.ndims is not None and t.shape.ndims != 1:
        raise ValueError(f"invert_permutation needs a vector, but {t.name} has shape "
                         f"{t.shape}.")
    value = constant_value(t)
    if value is not None:
        _check_permutation(t.name, np.asarray(value).reshape(-1))
    return create_tensor("InvertPermutation", [t], name=name or "InvertPermutation")


def _check_permutation(tensor_name: str, p: np.ndarray) -> None:
    n = p.size
    seen = np.zeros(n, dtype=bool)
    for i, v in enumerate(p.tolist()):
        if not 0 <= v < n:
            raise ValueError(f"invert_permutation: {tensor_name}[{i}] = {v} is not between "
                             f"0 and {n}; x must be a permutation of 0..{n - 1}.")
        if seen[v]:
            raise ValueError(f"invert_permutation: {tensor_name}[{i}] = {v} is duplicated; "
                             f"x must be a permutation of 0..{n - 1}.")
        seen[v] = True
