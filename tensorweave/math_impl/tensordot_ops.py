"""`tf.tensordot`: contraction over chosen axes, built as TF's Python builds it.

Each operand is transposed (free axes and contracted axes grouped), reshaped to a
matrix, multiplied with MatMul, and the product reshaped to the free dimensions
of `a` followed by those of `b`. Static shapes are used when known, so the
result keeps a static shape; otherwise the sizes are computed at run time. The
gradient comes from Transpose, Reshape and MatMul.

Example:
    >>> a = tf.ones([2, 3, 4]); b = tf.ones([4, 3, 5])
    >>> tf.tensordot(a, b, [[1, 2], [1, 0]]).shape.as_list()
    [2, 5]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.array.fill_ops import transpose
from tensorweave.ops.array.index_ops import gather
from tensorweave.ops.array.join_ops import concat, stack
from tensorweave.ops.array.shape_ops import reshape, shape as _tf_shape
from tensorweave.ops.math.matmul_ops import matmul
from tensorweave.ops.math.reduce_ops import reduce_prod


def _axes_lists(a: Tensor, b: Tensor, axes: Any) -> tuple[list[int], list[int]]:
    """TF's `axes` forms -> (a_axes, b_axes), non-negative.

    Raises:
        ValueError: for a malformed `axes`, one out of range, or unknown ranks.
    """
    if isinstance(axes, Tensor):
        value = constant_value(axes)
        if value is None:
            raise ValueError("tensordot: tensorweave needs `axes` known at graph-build time "
                             "(a Python int or a pair of lists), not a computed tensor.")
        axes = value.tolist()
    if isinstance(axes, np.ndarray):
        axes = axes.tolist()
    ra, rb = a.shape.ndims, b.shape.ndims
    if ra is None or rb is None:
        raise ValueError(f"tensordot: the ranks of {a.name} ({a.shape}) and {b.name} "
                         f"({b.shape}) must be known; set_shape or reshape the inputs.")
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0:
            raise ValueError("'axes' must be at least 0.")
        if n > ra or n > rb:
            raise ValueError(f"'axes' must not be larger than the number of dimensions of "
                             f"tensor {a.name if n > ra else b.name}: axes={n}, shapes "
                             f"{a.shape} and {b.shape}.")
        return list(range(ra - n, ra)), list(range(n))
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise ValueError(f"'axes' must be an integer or have length 2, got {axes!r}.")
    a_axes, b_axes = axes
    a_list = [int(a_axes)] if isinstance(a_axes, (int, np.integer)) else [int(i) for i in a_axes]
    b_list = [int(b_axes)] if isinstance(b_axes, (int, np.integer)) else [int(i) for i in b_axes]
    if len(a_list) != len(b_list):
        raise ValueError(f"Different number of contraction axes 'a' and 'b', {len(a_list)} "
                         f"!= {len(b_list)}.")
    for lst, r, t in ((a_list, ra, a), (b_list, rb, b)):
        for k, i in enumerate(lst):
            if not -r <= i < r:
                raise ValueError(f"tensordot: axis {i} is out of range for {t.name} of shape "
                                 f"{t.shape}.")
            lst[k] = i % r
        if len(set(lst)) != len(lst):
            raise ValueError(f"tensordot: repeated axis in {lst} for {t.name}.")
    return a_list, b_list


def _as_matrix(x: Tensor, axes: list[int], contracted_first: bool
               ) -> tuple[Tensor, Any, list[Any]]:
    """x transposed and reshaped to 2-D; also its free dims (list or int32 tensor)
    and their static sizes."""
    r = x.shape.ndims or 0
    free = [i for i in range(r) if i not in axes]
    perm = axes + free if contracted_first else free + axes
    dims = x.shape.as_list()
    free_static = [dims[i] for i in free]
    if x.shape.is_fully_defined():  # so every size is an int (`or 0` only for mypy)
        free_dims: Any = free_static
        p_free = int(np.prod([d or 0 for d in free_static], dtype=np.int64))
        p_axes = int(np.prod([dims[i] or 0 for i in axes], dtype=np.int64))
        new_shape: Any = [p_axes, p_free] if contracted_first else [p_free, p_axes]
    else:
        s = _tf_shape(x)
        free_dims = gather(s, np.asarray(free, np.int32))
        p_free_t = reduce_prod(free_dims)
        p_axes_t = reduce_prod(gather(s, np.asarray(axes, np.int32)))
        new_shape = stack([p_axes_t, p_free_t] if contracted_first else [p_free_t, p_axes_t])
    moved = x if perm == list(range(r)) else transpose(x, perm)
    return reshape(moved, new_shape), free_dims, free_static


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """`tf.tensordot` / `tf.linalg.tensordot`: sum of products over chosen axes.

    Args:
        a, b: tensors of one dtype with known ranks.
        axes: an int N (last N axes of `a` with first N of `b`), or a pair
            [a_axes, b_axes] of ints or equal-length lists.

    Returns:
        Shape = free dims of `a` (in order) + free dims of `b` (in order).

    Raises:
        ValueError: for malformed axes or contracted dimensions that differ.

    Example:
        >>> tf.tensordot(tf.ones([3]), tf.ones([4]), 0).shape.as_list()   # outer
        [3, 4]
    """
    with name_scope(name, "Tensordot", [a, b, axes]) as scope:
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b", dtype=a.dtype.base_dtype) \
            if not isinstance(b, Tensor) else b
        a_axes, b_axes = _axes_lists(a, b, axes)
        da, db = a.shape.as_list(), b.shape.as_list()
        for i, j in zip(a_axes, b_axes):
            if da[i] is not None and db[j] is not None and da[i] != db[j]:
                raise ValueError(f"tensordot: dimension {i} of {a.name} (shape {a.shape}) is "
                                 f"{da[i]} but dimension {j} of {b.name} (shape {b.shape}) is "
                                 f"{db[j]}; contracted dimensions must be equal.")
        a_mat, a_free, a_static = _as_matrix(a, a_axes, contracted_first=False)
        b_mat, b_free, b_static = _as_matrix(b, b_axes, contracted_first=True)
        product = matmul(a_mat, b_mat)
        if isinstance(a_free, list) and isinstance(b_free, list):
            return reshape(product, a_free + b_free, name=scope)
        parts = [convert_to_tensor(np.asarray(f, np.int32)) if isinstance(f, list) else f
                 for f in (a_free, b_free)]
        out = reshape(product, concat(parts, 0), name=scope)
        out.set_shape(TensorShape(a_static + b_static))
        return out
