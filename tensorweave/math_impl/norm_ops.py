"""`tf.norm` / `tf.linalg.norm`: vector and matrix norms, composed as TF 1.x's are.

Vector norms (axis None or an int): 'euclidean'/'fro' (2-norm), 1, 2, np.inf and
any real p > 0. Matrix norms (axis a pair): 'euclidean'/'fro' (Frobenius), 1 (max
column sum), np.inf (max row sum). The gradient comes from the element-wise and
reduction ops it is built from.

Example:
    >>> tf.norm([3.0, 4.0])                          # 5.0
    >>> tf.norm(tf.ones([2, 3]), ord=1, axis=[0, 1])  # 2.0 (max column sum)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.shape_ops import squeeze
from tensorweave.ops.math.binary_ops import multiply, pow as _pow
from tensorweave.ops.math.reduce_ops import reduce_max, reduce_sum
from tensorweave.ops.math.unary_ops import abs as _abs, conj, sqrt

_AXIS_ERROR = "'axis' must be None, an integer, or a tuple of 2 unique integers, got {}"


def _is_real_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None,  # noqa: A002
         keepdims: bool | None = None, name: str | None = None,
         keep_dims: bool | None = None) -> Tensor:
    """`tf.norm`: the `ord`-norm of `tensor` over `axis`.

    Args:
        tensor: float tensor (complex inputs give a complex-typed result whose
            imaginary part is zero: tensorweave has no Real op yet).
        ord: 'euclidean' (default), 'fro', 1, 2, np.inf, or a real p > 0 for vectors;
            'euclidean', 'fro', 1 or np.inf for matrices.
        axis: None (the whole tensor as one vector), an int (vector norms) or a
            pair of ints (matrix norms over those two axes).
        keepdims: keep the normed axes with size 1.
        keep_dims: deprecated alias of keepdims.

    Raises:
        ValueError: for a malformed axis, an unsupported ord (including ord=2 for
            matrices, which needs an SVD tensorweave does not have), or both
            keepdims and keep_dims.

    Example:
        >>> tf.norm(tf.ones([4, 3]), axis=1)              # [sqrt(3)] * 4
        >>> tf.norm(m, ord=np.inf, axis=[-2, -1])          # max row sum per matrix
    """
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    is_matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if is_matrix:
        if not all(isinstance(i, (int, np.integer)) for i in axis) or axis[0] == axis[1]:
            raise ValueError(_AXIS_ERROR.format(axis))
        supported = ["euclidean", "fro", 1, np.inf]
        if ord == 2:
            raise ValueError("'ord'=2 (the spectral norm) is not supported for matrix norms "
                             "in tensorweave; use 'fro', 1 or np.inf.")
        if isinstance(ord, bool) or ord not in supported:
            raise ValueError(f"'ord' must be a supported matrix norm in {supported}, got "
                             f"{ord!r}")
    else:
        if isinstance(axis, (tuple, list)) and len(axis) == 1:
            axis = axis[0]
        if not (axis is None or isinstance(axis, (int, np.integer))):
            raise ValueError(_AXIS_ERROR.format(axis))
        if ord not in ("euclidean", "fro") and (not _is_real_number(ord) or ord <= 0):
            raise ValueError(f"'ord' must be a supported vector norm, got {ord!r}")

    with name_scope(name, "norm", [tensor]):
        x = convert_to_tensor(tensor, name="tensor")
        if is_matrix:
            r = x.shape.ndims
            if r is None:
                raise ValueError(f"norm: matrix norms need a known rank; {x.name} has "
                                 "unknown shape.")
            a0, a1 = (int(i) for i in axis)
            if not (-r <= a0 < r and -r <= a1 < r) or a0 % r == a1 % r:
                raise ValueError(_AXIS_ERROR.format(axis) + f" for a tensor of rank {r}")
            rows, cols = a0 % r, a1 % r
            if ord in ("euclidean", "fro"):
                result = sqrt(reduce_sum(multiply(x, conj(x)), [rows, cols], keepdims=True))
            else:
                # 1: max over columns of column sums; inf: max over rows of row sums.
                sum_axis, max_axis = (rows, cols) if ord == 1 else (cols, rows)
                result = reduce_max(reduce_sum(_abs(x), sum_axis, keepdims=True), max_axis,
                                    keepdims=True)
            if not keep:
                result = squeeze(result, [rows, cols])
            return result
        red: Any = axis if axis is not None else None
        if ord in ("euclidean", "fro", 2):
            result = sqrt(reduce_sum(multiply(x, conj(x)), red, keepdims=keep))
        elif ord == 1:
            result = reduce_sum(_abs(x), red, keepdims=keep)
        elif ord == np.inf:
            result = reduce_max(_abs(x), red, keepdims=keep)
        else:
            p = float(ord)
            total = reduce_sum(_pow(_abs(x), _like(x, p)), red, keepdims=keep)
            result = _pow(total, _like(total, 1.0 / p))
        return result


def _like(t: Tensor, v: float) -> Tensor:
    """A scalar in `t`'s dtype (so pow does not change the dtype)."""
    return convert_to_tensor(np.asarray(v, t.dtype.base_dtype.as_numpy_dtype))
