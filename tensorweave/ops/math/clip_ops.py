"""Clipping: `tf.clip_by_value`, `tf.clip_by_norm`, `tf.global_norm`,
`tf.clip_by_global_norm` (dense tensors and IndexedSlices), and TF's fused `ClipByValue`
op (`tf.raw_ops.ClipByValue` in TF): a GraphDef holding it imports, runs and
differentiates. `tf.clip_by_value` itself builds Minimum and Maximum, as TF 1.x does, so
its graphs are node for node TF's.

Example:
    >>> grads, norm = tf.clip_by_global_norm([g1, g2], 5.0)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor import Operation
from tensorweave.ops.math.binary_ops import greater, less, logical_or, maximum, minimum, multiply
from tensorweave.ops.math.cwise_ops import (
    _is_numeric, cast, check_dtype, check_same_dtype, ones_like_internal, select, sum_to_shape,
    zeros_like_internal)
from tensorweave.ops.math.math_ops import _identity, add_n
from tensorweave.ops.math.reduce_ops import reduce_sum
from tensorweave.ops.math.unary_ops import reciprocal, sqrt, square
from tensorweave.ops.op_author import define_op

clip_by_value_op = define_op("ClipByValue", inputs=("t", "clip_value_min", "clip_value_max"))


@clip_by_value_op.shape
def _(t: Tensor, lo: Tensor, hi: Tensor) -> Any:
    check_dtype("ClipByValue", t, _is_numeric)
    for bound in (lo, hi):
        check_same_dtype("ClipByValue", t, bound)
        if bound.shape.ndims not in (None, 0) and not bound.shape.is_compatible_with(t.shape):
            raise ValueError(f"ClipByValue: {bound.name} has shape {bound.shape}; a clip bound "
                             f"is a scalar or has the shape of {t.name} ({t.shape}).")
    return t.dtype.base_dtype, t.shape


@clip_by_value_op.kernel("CPU")
def _(t: Any, lo: Any, hi: Any) -> Any:
    for what, bound in (("clip_value_min", lo), ("clip_value_max", hi)):
        if np.ndim(bound) and np.shape(bound) != np.shape(t):
            raise errors.InvalidArgumentError(
                None, None, f"ClipByValue: {what} must be a scalar or have the shape of t "
                f"{list(np.shape(t))}, got {list(np.shape(bound))}.")
    # As TF's kernel: min with the upper bound first, so where min > max the result is min.
    return np.maximum(np.minimum(t, hi), lo)


@clip_by_value_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # As TF: the gradient goes to t where it was inside the bounds, else to the bound
    # that clipped it (summed down to the bound's shape).
    t, lo, hi = op.inputs
    below, above = less(t, lo), greater(t, hi)
    zeros = zeros_like_internal(grad)
    return [select(logical_or(below, above), zeros, grad),
            sum_to_shape(select(below, grad, zeros), lo),
            sum_to_shape(select(above, grad, zeros), hi)]


def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any,
                  name: str | None = None) -> Any:
    """`tf.clip_by_value`: min(max(t, clip_value_min), clip_value_max) element-wise.

    Example:
        >>> tf.clip_by_value([-2.0, 0.5, 3.0], 0.0, 1.0)   # [0.0, 0.5, 1.0]
    """
    if isinstance(t, IndexedSlices):
        return IndexedSlices(clip_by_value(t.values, clip_value_min, clip_value_max, name),
                             t.indices, t.dense_shape)
    # As TF: clip_by_value/Minimum (with /Minimum/y), then the Maximum named after the scope.
    with name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        t = convert_to_tensor(t, name="t")
        out = maximum(minimum(t, clip_value_max), clip_value_min, name=scope)
    if not out.shape.is_compatible_with(t.shape):
        raise ValueError(f"clip_by_value: the clip bounds broadcast {t.name} of shape "
                         f"{t.shape} to {out.shape}; bounds must not change the shape.")
    return out


def _values(t: Any) -> Tensor:
    return t.values if isinstance(t, IndexedSlices) else convert_to_tensor(t)


def global_norm(t_list: Any, name: str | None = None) -> Tensor:
    """`tf.global_norm`: sqrt(sum of squares of all elements of all tensors); None skipped.

    Example:
        >>> tf.global_norm([tf.constant([3.0]), tf.constant([4.0])])   # 5.0
    """
    if isinstance(t_list, (Tensor, IndexedSlices)):
        raise TypeError("global_norm expects a list of tensors, got a single tensor "
                        f"{t_list.name}; wrap it in a list.")
    values = [_values(t) for t in t_list if t is not None]
    if not values:
        raise ValueError("global_norm needs at least one non-None tensor.")
    dtype = values[0].dtype.base_dtype
    parts = [cast(reduce_sum(square(v)), dtype) for v in values]
    return sqrt(add_n(parts), name=name or "global_norm")


def clip_by_global_norm(t_list: Any, clip_norm: Any, use_norm: Any = None,
                        name: str | None = None) -> tuple[list[Any], Tensor]:
    """`tf.clip_by_global_norm`: scales all tensors by clip_norm / max(global_norm, clip_norm).

    None entries stay None; IndexedSlices keep their indices. Returns
    `(clipped_list, global_norm)`. An inf/nan norm gives nan outputs (as TF).

    Example:
        >>> grads, norm = tf.clip_by_global_norm([g1, g2], 5.0)
    """
    if isinstance(t_list, (Tensor, IndexedSlices)) or not hasattr(t_list, "__iter__"):
        raise TypeError(f"clip_by_global_norm expects a list of tensors, got {t_list!r}.")
    t_list = list(t_list)
    norm = global_norm(t_list) if use_norm is None else convert_to_tensor(use_norm)
    dtype = norm.dtype.base_dtype
    clip = convert_to_tensor(clip_norm, dtype=dtype) if not isinstance(clip_norm, Tensor) \
        else clip_norm
    scale = multiply(clip, minimum(reciprocal(norm), reciprocal(clip)))
    out: list[Any] = []
    for t in t_list:
        if t is None:
            out.append(None)
            continue
        v = _values(t)
        scaled = _identity(multiply(v, cast(scale, v.dtype.base_dtype)),
                           name=(name or "clip_by_global_norm") + "/clipped")
        out.append(IndexedSlices(scaled, t.indices, t.dense_shape)
                   if isinstance(t, IndexedSlices) else scaled)
    return out, norm


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Any:
    """`tf.clip_by_norm`: t * clip_norm / max(l2norm(t, axes), clip_norm).

    Example:
        >>> tf.clip_by_norm([3.0, 4.0], 1.0)   # [0.6, 0.8]
    """
    if isinstance(t, IndexedSlices):
        return IndexedSlices(clip_by_norm(t.values, clip_norm, axes, name), t.indices,
                             t.dense_shape)
    # TF 1.x's graph and names: clip_by_norm/mul, /Sum, /Greater, two Selects around
    # /Sqrt (so a zero norm has a finite gradient), /mul_1, /Maximum, /truediv, and an
    # Identity named after the scope.
    with name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        values = convert_to_tensor(t, name="t")
        l2sum = reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        l2sum_safe = select(pred, l2sum, ones_like_internal(l2sum))
        l2norm = select(pred, sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        return _identity(intermediate / maximum(l2norm, clip_norm), name=scope)
