"""What every `tf.metrics` function shares: local metric variables, weights, collections.

A metric keeps running totals in local variables (collections LOCAL_VARIABLES and
METRIC_VARIABLES, not trainable, initialized by `tf.local_variables_initializer()`),
and returns a (value, update_op) pair: `value` reads the totals, running
`update_op` adds a batch to them and gives the metric including that batch.

Example:
    >>> total = metric_variable([], tf.float32, name="total")
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, add_to_collections
from tensorweave.framework.tensor import Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.state.variables import Variable


def metric_variable(shape: Any, dtype: Any, validate_shape: bool = True,
                    name: str | None = None) -> Variable:
    """A zero-initialized local variable that a metric accumulates into.

    Example:
        >>> count = metric_variable([], tf.float32, name="count")   # "<scope>/count:0"
    """
    dt = _dt.as_dtype(dtype).base_dtype
    dims = list(shape)
    return Variable(lambda: array_ops.zeros(dims, dt), trainable=False,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
                    validate_shape=validate_shape, name=name)


def add_to(collections: Any, value: Any) -> None:
    """Adds `value` to each collection named (None or [] adds nowhere)."""
    if collections:
        add_to_collections(list(collections) if not isinstance(collections, str)
                           else [collections], value)


def safe_div(num: Any, den: Any, name: str) -> Tensor:
    """num / den, or 0 where den <= 0 (an empty metric reads 0, not NaN)."""
    den = convert_to_tensor(den)
    num = convert_to_tensor(num, dtype=den.dtype.base_dtype)
    positive = math_ops.greater(den, 0)
    safe = math_ops.where(positive, den, array_ops.ones_like(den))
    return math_ops.where(positive, math_ops.divide(num, safe), array_ops.zeros_like(num),
                          name=name)


def remove_squeezable_dimensions(labels: Tensor, predictions: Tensor
                                 ) -> tuple[Tensor, Tensor]:
    """Drops a trailing size-1 dimension from whichever of the two has one extra."""
    lr, pr = labels.shape.ndims, predictions.shape.ndims
    if lr is not None and pr is not None:
        if lr == pr + 1 and labels.shape.as_list()[-1] in (1, None):
            labels = array_ops.squeeze(labels, [-1])
        elif pr == lr + 1 and predictions.shape.as_list()[-1] in (1, None):
            predictions = array_ops.squeeze(predictions, [-1])
    return labels, predictions


def check_same_shape(what: str, labels: Tensor, predictions: Tensor) -> None:
    """Raises ValueError naming both tensors if their static shapes cannot match."""
    if not labels.shape.is_compatible_with(predictions.shape):
        raise ValueError(f"{what}: shapes of labels {labels.shape} ({labels.name}) and "
                         f"predictions {predictions.shape} ({predictions.name}) are "
                         "incompatible; they must be equal (a trailing 1 is squeezed).")


def broadcast_weights(weights: Any, values: Tensor) -> Tensor:
    """`weights` (scalar or broadcastable to `values`) as float32 of the values' shape.

    Raises:
        ValueError: if the static shapes cannot broadcast, naming both.
    """
    w = math_ops.cast(convert_to_tensor(weights, name="weights"), _dt.float32)
    ws, vs = w.shape, values.shape
    if ws.ndims is not None and vs.ndims is not None and ws.ndims > 0:
        if ws.ndims > vs.ndims or any(
                a is not None and b is not None and a not in (1, b)
                for a, b in zip(ws.as_list()[::-1], vs.as_list()[::-1])):
            raise ValueError(f"weights can not be broadcast to values: weights {w.name} has "
                             f"shape {ws} and values {values.name} have shape {vs}. Use a "
                             "scalar or a shape whose dimensions are 1 or equal to the "
                             "values'.")
    return math_ops.multiply(w, array_ops.ones_like(values, dtype=_dt.float32))
