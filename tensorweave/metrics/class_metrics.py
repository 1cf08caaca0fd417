"""Per-class metrics: `tf.metrics.mean_per_class_accuracy`, `mean_iou`, `percentage_below`.

Example:
    >>> acc, acc_op = tf.metrics.mean_per_class_accuracy(labels, predictions, num_classes=3)
    >>> iou, iou_op = tf.metrics.mean_iou(labels, predictions, num_classes=2)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant, convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.metrics.metric_utils import (
    add_to, broadcast_weights, check_same_shape, metric_variable,
    remove_squeezable_dimensions, safe_div)
from tensorweave.metrics.metrics_impl import mean
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.state import scatter_ops, state_ops
from tensorweave.state.variable_scope import variable_scope


def _flat_pair(labels: Any, predictions: Any, what: str) -> tuple[Tensor, Tensor]:
    labels = convert_to_tensor(labels, name="labels")
    predictions = convert_to_tensor(predictions, name="predictions")
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    check_same_shape(what, labels, predictions)
    labels = math_ops.cast(array_ops.reshape(labels, [-1]), _dt.int64)
    predictions = math_ops.cast(array_ops.reshape(predictions, [-1]), _dt.int64)
    return labels, predictions


def _flat_weights(weights: Any, labels: Tensor) -> Tensor:
    if weights is None:
        return array_ops.ones_like(labels, dtype=_dt.float32)
    w = convert_to_tensor(weights, name="weights")
    return array_ops.reshape(broadcast_weights(w, math_ops.cast(labels, _dt.float32)), [-1])


def mean_per_class_accuracy(labels: Any, predictions: Any, num_classes: int,
                            weights: Any = None, metrics_collections: Any = None,
                            updates_collections: Any = None, name: str | None = None
                            ) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_per_class_accuracy`: the mean over classes of each class's accuracy.

    Returns:
        (mean accuracy, update_op); as TF 1.x, update_op gives the per-class accuracies.

    Example:
        >>> m, m_op = tf.metrics.mean_per_class_accuracy([0, 1, 1], [0, 1, 0], num_classes=2)
    """
    with variable_scope(name, "mean_accuracy", [predictions, labels, weights]):
        labels, predictions = _flat_pair(labels, predictions, "mean_per_class_accuracy")
        total = metric_variable([num_classes], _dt.float32, name="total")
        count = metric_variable([num_classes], _dt.float32, name="count")
        w = _flat_weights(weights, labels)
        correct = math_ops.multiply(
            math_ops.cast(math_ops.equal(predictions, labels), _dt.float32), w)
        update_total = scatter_ops.scatter_add(total, labels, w)
        update_count = scatter_ops.scatter_add(count, labels, correct)
        value = math_ops.reduce_mean(safe_div(count, total, "per_class"), name="mean_accuracy")
        update_op = safe_div(update_count, update_total, name="update_op")
    add_to(metrics_collections, value)
    add_to(updates_collections, update_op)
    return value, update_op


def _iou(cm: Tensor, num_classes: int, name: str) -> Tensor:
    eye = constant(np.eye(num_classes), dtype=_dt.float64)
    diag = math_ops.reduce_sum(math_ops.multiply(cm, eye), axis=0)
    denominator = math_ops.subtract(math_ops.add(math_ops.reduce_sum(cm, axis=0),
                                                 math_ops.reduce_sum(cm, axis=1)), diag)
    valid = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(denominator, 0.0),
                                              _dt.float64))
    iou = safe_div(diag, denominator, "iou")
    return math_ops.cast(safe_div(math_ops.reduce_sum(iou), valid, "mean_iou"), _dt.float32,
                         name=name)


def mean_iou(labels: Any, predictions: Any, num_classes: int, weights: Any = None,
             metrics_collections: Any = None, updates_collections: Any = None,
             name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.mean_iou`: mean over classes of intersection / union, from a running
    confusion matrix (classes that never occur are left out of the mean).

    Returns:
        (mean IoU, update_op); as TF 1.x, update_op gives the [num_classes, num_classes]
        confusion matrix (rows: labels, columns: predictions).

    Example:
        >>> iou, iou_op = tf.metrics.mean_iou(labels, predicted_classes, num_classes=21)
    """
    with variable_scope(name, "mean_iou", [predictions, labels, weights]):
        labels, predictions = _flat_pair(labels, predictions, "mean_iou")
        total_cm = metric_variable([num_classes, num_classes], _dt.float64,
                                   name="total_confusion_matrix")
        w = math_ops.cast(_flat_weights(weights, labels), _dt.float64)
        cells = math_ops.add(math_ops.multiply(labels, num_classes), predictions)
        batch_cm = math_ops.unsorted_segment_sum(w, cells, num_classes * num_classes)
        update_op = state_ops.assign_add(
            total_cm, array_ops.reshape(batch_cm, [num_classes, num_classes]))
        value = _iou(total_cm.value(), num_classes, "mean_iou")
    add_to(metrics_collections, value)
    add_to(updates_collections, update_op)
    return value, update_op


def percentage_below(values: Any, threshold: float, weights: Any = None,
                     metrics_collections: Any = None, updates_collections: Any = None,
                     name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.percentage_below`: the share of values below `threshold` so far.

    Example:
        >>> p, p_op = tf.metrics.percentage_below([1.0, 5.0, 2.0, 9.0], threshold=3.0)  # 0.5
    """
    is_below = math_ops.cast(math_ops.less(convert_to_tensor(values), threshold), _dt.float32)
    return mean(is_below, weights, metrics_collections, updates_collections,
                name or "percentage_below_threshold")
