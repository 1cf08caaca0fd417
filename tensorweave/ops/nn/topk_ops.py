"""Ranking ops: top_k (with gradient) and in_top_k (for accuracy metrics).

Example:
    >>> values, indices = tf.nn.top_k(logits, k=5)
    >>> correct = tf.nn.in_top_k(logits, labels, 1)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.ops.op_author import define_op
from tensorweave.framework.op_outputs import op_result
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.nn.nn_ops import create

# ---- TopKV2 ------------------------------------------------------------------------
top_k_op = define_op("TopKV2", inputs=("input", "k"), attrs={"sorted": True})
top_k_grad_op = define_op("TopKV2Grad", inputs=("values_grad", "indices", "input"))


@top_k_op.shape
def _(x: Tensor, k: Tensor, *, sorted: bool) -> Any:
    if not x.dtype.base_dtype.is_numeric:
        raise TypeError(f"top_k needs a numeric input, but {x.name} has dtype "
                        f"{x.dtype.base_dtype.name}.")
    kv: Any = constant_value(k)
    if x.shape.ndims == 0:
        raise ValueError(f"top_k needs an input of rank >= 1, got scalar {x.name}.")
    if kv is not None:
        kv = int(kv)
        last = dimension_value(x.shape[-1]) if x.shape.ndims else None
        if kv < 0 or (last is not None and kv > last):
            raise ValueError(f"top_k: k ({kv}) must be in [0, {last}], the size of the last "
                             f"dimension of {x.name} (shape {x.shape}).")
    shape = TensorShape(None) if x.shape.ndims is None else \
        x.shape[:-1].concatenate([kv])
    return [(x.dtype.base_dtype, shape), (_dt.int32, shape)]


@top_k_op.kernel("CPU")
def _(x: np.ndarray, k: Any, *, sorted: bool) -> Any:
    k = int(k)
    if not 0 <= k <= x.shape[-1]:
        raise ValueError(f"input must have at least k={k} columns, has shape {x.shape}")
    # A stable sort of the negated values keeps the lower index first among ties (as TF).
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


@top_k_op.gradient
def _(op: Operation, *grads: Any) -> list[Any]:
    g_values = grads[0][0] if len(grads) == 1 else grads[0]
    return [create("TopKV2Grad", [g_values, op.outputs[1], op.inputs[0]]).outputs[0], None]


@top_k_grad_op.shape
def _(g: Tensor, idx: Tensor, x: Tensor) -> Any:
    return g.dtype.base_dtype, x.shape


@top_k_grad_op.kernel("CPU")
def _(g: np.ndarray, idx: np.ndarray, x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.shape, dtype=g.dtype)
    np.put_along_axis(out, idx.astype(np.intp), g, axis=-1)
    return out


top_k_grad_op.no_gradient()  # second derivatives of top_k are not supported


def top_k(input: Any, k: Any = 1, sorted: bool = True, name: str | None = None
          ) -> tuple[Tensor, Tensor]:
    """`tf.nn.top_k`: the k largest entries of the last dimension and their indices.

    Returns:
        (values, indices), each of shape input.shape[:-1] + [k]; indices are int32.
        Ties go to the lower index.

    Example:
        >>> v, i = tf.nn.top_k([[1.0, 3.0, 2.0]], k=2)  # -> [[3., 2.]], [[1, 2]]
    """
    x = convert_to_tensor(input, name="input")
    kt = convert_to_tensor(k, dtype=_dt.int32, name="k")
    return op_result(create("TopKV2", [x, kt], {"sorted": bool(sorted)}, name=name))


# ---- InTopK ------------------------------------------------------------------------
in_top_k_op = define_op("InTopK", inputs=("predictions", "targets"), attrs={"k": 1})


@in_top_k_op.shape
def _(p: Tensor, t: Tensor, *, k: int) -> Any:
    if p.shape.ndims not in (None, 2) or t.shape.ndims not in (None, 1):
        raise ValueError(f"in_top_k needs predictions of shape [batch, classes] and targets "
                         f"of shape [batch], got {p.shape} ({p.name}) and {t.shape} "
                         f"({t.name}).")
    if t.dtype.base_dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"in_top_k: targets must be int32 or int64, but {t.name} has dtype "
                        f"{t.dtype.base_dtype.name}.")
    batch = TensorShape([p.shape[0] if p.shape.ndims else None]).merge_with(
        TensorShape([t.shape[0] if t.shape.ndims else None]))
    return _dt.bool, batch


@in_top_k_op.kernel("CPU")
def _(p: np.ndarray, t: np.ndarray, *, k: int) -> np.ndarray:
    n, classes = p.shape
    valid = (t >= 0) & (t < classes)
    target = p[np.arange(n), np.where(valid, t, 0)]
    # Ties with the target count in its favour: only strictly larger entries rank above.
    above = np.sum(p > target[:, None], axis=1)
    return valid & np.isfinite(target) & (above < k)


in_top_k_op.no_gradient()


def in_top_k(predictions: Any, targets: Any, k: int, name: str | None = None) -> Tensor:
    """`tf.nn.in_top_k`: whether each target class is among the k highest predictions.

    Out-of-range targets and non-finite predictions give False.

    Example:
        >>> acc = tf.reduce_mean(tf.cast(tf.nn.in_top_k(logits, labels, 1), tf.float32))
    """
    p = convert_to_tensor(predictions, name="predictions")
    t = convert_to_tensor(targets, name="targets")
    return create("InTopK", [p, t], {"k": int(k)}, name=name).outputs[0]
