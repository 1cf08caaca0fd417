"""Streaming means: `tf.metrics.mean`, accuracy, mean_absolute_error, (root) mean squared error.

Each returns (value, update_op) over two local variables `<name>/total` and
`<name>/count`: update_op adds the (weighted) batch sum and the batch weight.

Example:
    >>> acc, acc_op = tf.metrics.accuracy(labels=y, predictions=tf.argmax(logits, 1))
    >>> sess.run(tf.local_variables_initializer())
    >>> for batch in data: sess.run(acc_op, feed(batch))
    >>> sess.run(acc)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.metrics.metric_utils import (
    add_to, broadcast_weights, check_same_shape, metric_variable,
    remove_squeezable_dimensions, safe_div)
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.math import math_ops
from tensorweave.ops.math.div_no_nan_ops import div_no_nan
from tensorweave.ops.state import state_ops
from tensorweave.state.variable_scope import variable_scope


def mean(values: Any, weights: Any = None, metrics_collections: Any = None,
         updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean`: the (weighted) mean of all `values` seen so far.

    Args:
        values: a tensor of any shape (cast to float32).
        weights: None, a scalar, or a tensor broadcastable to `values`.
        metrics_collections: collections to add the value to.
        updates_collections: collections to add the update op to.
        name: variable scope (default "mean").

    Returns:
        (mean, update_op); both 0 before any value with non-zero weight is seen.

    Example:
        >>> m, m_op = tf.metrics.mean([1.0, 3.0])     # after sess.run(m_op): m -> 2.0
    """
    with variable_scope(name, "mean", [values, weights]):
        values = math_ops.cast(convert_to_tensor(values, name="values"), _dt.float32)
        total = metric_variable([], _dt.float32, name="total")
        count = metric_variable([], _dt.float32, name="count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), _dt.float32)
        else:
            w = broadcast_weights(weights, values)
            values = math_ops.multiply(values, w)
            num_values = math_ops.reduce_sum(w)
        update_total = state_ops.assign_add(total, math_ops.reduce_sum(values))
        with get_default_graph().control_dependencies([values]):
            update_count = state_ops.assign_add(count, num_values)
        # TF 1.x's ops and names: div_no_nan(total, maximum(count, 0)) as "value"
        # and "update_op" (0 while no value with a non-zero weight has been seen).
        value = div_no_nan(total, math_ops.maximum(count, 0.0), name="value")
        update_op = div_no_nan(update_total, math_ops.maximum(update_count, 0.0),
                                        name="update_op")
    add_to(metrics_collections, value)
    add_to(updates_collections, update_op)
    return value, update_op


def _pair(labels: Any, predictions: Any, what: str, cast_to_float: bool
          ) -> tuple[Tensor, Tensor]:
    predictions = convert_to_tensor(predictions, name="predictions")
    labels = convert_to_tensor(labels, name="labels")
    if cast_to_float:
        predictions = math_ops.cast(predictions, _dt.float32)
        labels = math_ops.cast(labels, _dt.float32)
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    check_same_shape(what, labels, predictions)
    return labels, predictions


def accuracy(labels: Any, predictions: Any, weights: Any = None,
             metrics_collections: Any = None, updates_collections: Any = None,
             name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.accuracy`: how often `predictions` equals `labels` (weighted).

    Args:
        labels: ground truth of any shape (class ids, usually).
        predictions: same shape as `labels` (a trailing 1 on either is squeezed);
            cast to the labels' dtype.

    Raises:
        ValueError: if the shapes are incompatible (naming both).

    Example:
        >>> acc, acc_op = tf.metrics.accuracy(labels, tf.argmax(logits, axis=1))
    """
    predictions = convert_to_tensor(predictions, name="predictions")
    labels = convert_to_tensor(labels, name="labels")
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    check_same_shape("accuracy", labels, predictions)
    if labels.dtype.base_dtype != predictions.dtype.base_dtype:
        predictions = math_ops.cast(predictions, labels.dtype.base_dtype)
    is_correct = math_ops.cast(math_ops.equal(predictions, labels), _dt.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections,
                name or "accuracy")


def mean_absolute_error(labels: Any, predictions: Any, weights: Any = None,
                        metrics_collections: Any = None, updates_collections: Any = None,
                        name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_absolute_error`: the running mean of |predictions - labels|.

    Example:
        >>> mae, mae_op = tf.metrics.mean_absolute_error([1.0, 2.0], [2.0, 2.0])  # 0.5
    """
    labels, predictions = _pair(labels, predictions, "mean_absolute_error", True)
    errors = math_ops.abs(math_ops.subtract(predictions, labels))
    return mean(errors, weights, metrics_collections, updates_collections,
                name or "mean_absolute_error")


def mean_squared_error(labels: Any, predictions: Any, weights: Any = None,
                       metrics_collections: Any = None, updates_collections: Any = None,
                       name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_squared_error`: the running mean of (predictions - labels) ** 2.

    Example:
        >>> mse, mse_op = tf.metrics.mean_squared_error([1.0, 2.0], [3.0, 2.0])  # 2.0
    """
    labels, predictions = _pair(labels, predictions, "mean_squared_error", True)
    errors = math_ops.squared_difference(labels, predictions)
    return mean(errors, weights, metrics_collections, updates_collections,
                name or "mean_squared_error")


def root_mean_squared_error(labels: Any, predictions: Any, weights: Any = None,
                            metrics_collections: Any = None, updates_collections: Any = None,
                            name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.root_mean_squared_error`: sqrt of the running mean squared error.

    Example:
        >>> rmse, rmse_op = tf.metrics.root_mean_squared_error([0.0, 0.0], [3.0, 4.0])
    """
    mse, update_mse = mean_squared_error(labels, predictions, weights, None, None,
                                         name or "root_mean_squared_error")
    value = math_ops.sqrt(mse)
    update_op = math_ops.sqrt(update_mse)
    add_to(metrics_collections, value)
    add_to(updates_collections, update_op)
    return value, update_op


def mean_tensor(values: Any, weights: Any = None, metrics_collections: Any = None,
                updates_collections: Any = None, name: str | None = None
                ) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_tensor`: the element-wise running mean of same-shaped tensors.

    Raises:
        ValueError: if `values` has no fully defined static shape.

    Example:
        >>> m, m_op = tf.metrics.mean_tensor([[1.0, 2.0]])
    """
    with variable_scope(name, "mean", [values, weights]):
        values = math_ops.cast(convert_to_tensor(values, name="values"), _dt.float32)
        if not values.shape.is_fully_defined():
            raise ValueError(f"mean_tensor: values {values.name} must have a fully defined "
                             f"shape, got {values.shape}.")
        dims = values.shape.as_list()
        total = metric_variable(dims, _dt.float32, name="total_tensor")
        count = metric_variable(dims, _dt.float32, name="count_tensor")
        num_values = array_ops.ones_like(values)
        if weights is not None:
            w = broadcast_weights(weights, values)
            values = math_ops.multiply(values, w)
            num_values = math_ops.multiply(num_values, w)
        update_total = state_ops.assign_add(total, values)
        update_count = state_ops.assign_add(count, num_values)
        value = safe_div(total, count, name="value")
        update_op = identity(safe_div(update_total, update_count, name="update"),
                             name="update_op")
    add_to(metrics_collections, value)
    add_to(updates_collections, update_op)
    return value, update_op
