"""Counting metrics: true/false positives/negatives, precision, recall, AUC.

Labels and predictions are booleans (cast) for the counts; AUC takes predictions in
[0, 1] and counts the confusion matrix at `num_thresholds` thresholds in four local
variables of shape [num_thresholds].

Example:
    >>> prec, prec_op = tf.metrics.precision(labels, predicted_classes)
    >>> auc, auc_op = tf.metrics.auc(labels, probabilities)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant, convert_to_tensor
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.metrics.metric_utils import (
    add_to, broadcast_weights, check_same_shape, metric_variable,
    remove_squeezable_dimensions, safe_div)
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.control_flow.assert_ops import assert_greater_equal, assert_less_equal
from tensorweave.ops.math import math_ops
from tensorweave.ops.state import state_ops
from tensorweave.state.variable_scope import variable_scope


def _bool_pair(labels: Any, predictions: Any, what: str) -> tuple[Tensor, Tensor]:
    labels = math_ops.cast(convert_to_tensor(labels, name="labels"), _dt.bool)
    predictions = math_ops.cast(convert_to_tensor(predictions, name="predictions"), _dt.bool)
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    check_same_shape(what, labels, predictions)
    return labels, predictions


def _count_condition(values: Tensor, weights: Any, metrics_collections: Any,
                     updates_collections: Any) -> tuple[Tensor, Tensor]:
    """Sums (weighted) true `values` into a local variable `count`."""
    values = math_ops.cast(values, _dt.float32)
    count = metric_variable([], _dt.float32, name="count")
    if weights is not None:
        values = math_ops.multiply(values, broadcast_weights(weights, values))
    value = identity(count, name="value")
    update_op = state_ops.assign_add(count, math_ops.reduce_sum(values))
    add_to(metrics_collections, value)
    add_to(updates_collections, update_op)
    return value, update_op


def _counter(default_name: str, want_label: bool, want_pred: bool) -> Any:
    def metric(labels: Any, predictions: Any, weights: Any = None,
               metrics_collections: Any = None, updates_collections: Any = None,
               name: str | None = None) -> tuple[Tensor, Tensor]:
        with variable_scope(name, default_name, [predictions, labels, weights]):
            lab, pred = _bool_pair(labels, predictions, default_name)
            lab = lab if want_label else math_ops.logical_not(lab)
            pred = pred if want_pred else math_ops.logical_not(pred)
            return _count_condition(math_ops.logical_and(lab, pred), weights,
                                    metrics_collections, updates_collections)
    metric.__name__ = default_name
    metric.__doc__ = (f"`tf.metrics.{default_name}`: the (weighted) count of examples with "
                      f"label {want_label} and prediction {want_pred}; (value, update_op).")
    return metric


true_positives = _counter("true_positives", True, True)
false_positives = _counter("false_positives", False, True)
false_negatives = _counter("false_negatives", True, False)
true_negatives = _counter("true_negatives", False, False)


def _ratio(name: str | None, default: str, labels: Any, predictions: Any, weights: Any,
           other: Any, metrics_collections: Any, updates_collections: Any
           ) -> tuple[Tensor, Tensor]:
    """tp / (tp + other), where other counts false positives or false negatives."""
    with variable_scope(name, default, [predictions, labels, weights]):
        lab, pred = _bool_pair(labels, predictions, default)
        tp, tp_op = true_positives(lab, pred, weights, None, None, name=None)
        o, o_op = other(lab, pred, weights, None, None, name=None)
        value = safe_div(tp, math_ops.add(tp, o), name="value")
        update_op = safe_div(tp_op, math_ops.add(tp_op, o_op), name="update_op")
    add_to(metrics_collections, value)
    add_to(updates_collections, update_op)
    return value, update_op


def precision(labels: Any, predictions: Any, weights: Any = None,
              metrics_collections: Any = None, updates_collections: Any = None,
              name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.precision`: tp / (tp + fp) so far (0 when nothing was predicted true).

    Example:
        >>> p, p_op = tf.metrics.precision(labels=[1, 0, 1], predictions=[1, 1, 0])  # 0.5
    """
    return _ratio(name, "precision", labels, predictions, weights, false_positives,
                  metrics_collections, updates_collections)


def recall(labels: Any, predictions: Any, weights: Any = None,
           metrics_collections: Any = None, updates_collections: Any = None,
           name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.recall`: tp / (tp + fn) so far (0 when no label was true).

    Example:
        >>> r, r_op = tf.metrics.recall(labels=[1, 0, 1], predictions=[1, 1, 0])  # 0.5
    """
    return _ratio(name, "recall", labels, predictions, weights, false_negatives,
                  metrics_collections, updates_collections)


def _thresholds(num_thresholds: int, thresholds: Any) -> list[float]:
    if thresholds is not None:
        return [float(t) for t in thresholds]
    if num_thresholds < 2:
        raise ValueError(f"auc: num_thresholds must be > 1, got {num_thresholds}.")
    eps = 1e-7
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - eps] + inner + [1.0 + eps]


def confusion_matrix_at_thresholds(labels: Any, predictions: Any, thresholds: list[float],
                                   weights: Any = None, includes: Any = None
                                   ) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """Counts tp, fn, tn, fp for `predictions > threshold` at each threshold.

    Args:
        includes: which of "tp", "fn", "tn", "fp" to count (all by default).

    Returns:
        ({"tp": ..., "fn": ..., "tn": ..., "fp": ...} variable values,
         the same keys -> their update ops), each of shape [len(thresholds)].
    """
    predictions = math_ops.cast(convert_to_tensor(predictions, name="predictions"),
                                _dt.float32)
    labels = math_ops.cast(convert_to_tensor(labels, name="labels"), _dt.bool)
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    check_same_shape("auc", labels, predictions)
    checks = [assert_greater_equal(predictions, 0.0, message="predictions must be in [0, 1]"),
              assert_less_equal(predictions, 1.0, message="predictions must be in [0, 1]")]
    with get_default_graph().control_dependencies(checks):
        predictions = identity(predictions)
    n = len(thresholds)
    preds_2d = array_ops.reshape(predictions, [1, -1])
    thresh = array_ops.reshape(constant(thresholds, dtype=_dt.float32), [n, 1])
    pred_pos = math_ops.greater(preds_2d, thresh)             # [n, num_predictions]
    label_pos = array_ops.tile(array_ops.reshape(labels, [1, -1]), [n, 1])
    w = None
    if weights is not None:
        w = array_ops.reshape(broadcast_weights(weights, predictions), [1, -1])
    cases = {"tp": (label_pos, pred_pos), "fn": (label_pos, math_ops.logical_not(pred_pos)),
             "tn": (math_ops.logical_not(label_pos), math_ops.logical_not(pred_pos)),
             "fp": (math_ops.logical_not(label_pos), pred_pos)}
    names = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives",
             "fp": "false_positives"}
    values, updates = {}, {}
    for key, (a, b) in cases.items():
        if includes is not None and key not in includes:
            continue
        var = metric_variable([n], _dt.float32, name=names[key])
        hits = math_ops.cast(math_ops.logical_and(a, b), _dt.float32)
        if w is not None:
            hits = math_ops.multiply(hits, w)
        values[key] = var.value()
        updates[key] = state_ops.assign_add(var, math_ops.reduce_sum(hits, axis=1))
    return values, updates


def _area(tp: Tensor, fn: Tensor, tn: Tensor, fp: Tensor, n: int, curve: str,
          summation_method: str, name: str) -> Tensor:
    eps = 1.0e-6
    rec = math_ops.divide(math_ops.add(tp, eps), math_ops.add(math_ops.add(tp, fn), eps))
    if curve == "ROC":
        x = math_ops.divide(fp, math_ops.add(math_ops.add(fp, tn), eps))
        y = rec
    else:
        x = rec
        y = math_ops.divide(math_ops.add(tp, eps), math_ops.add(math_ops.add(tp, fp), eps))
    dx = math_ops.subtract(x[:n - 1], x[1:])
    if summation_method == "minoring":
        height = math_ops.minimum(y[:n - 1], y[1:])
    elif summation_method == "majoring":
        height = math_ops.maximum(y[:n - 1], y[1:])
    else:
        height = math_ops.divide(math_ops.add(y[:n - 1], y[1:]), 2.0)
    return math_ops.reduce_sum(math_ops.multiply(dx, height), name=name)


def _interpolated_pr_auc(tp: Tensor, fp: Tensor, fn: Tensor, n: int, name: str) -> Tensor:
    """PR-AUC with precision interpolated between thresholds (Davis & Goadrich, 2006)."""
    dtp = math_ops.subtract(tp[:n - 1], tp[1:])
    p = math_ops.add(tp, fp)
    dp = math_ops.maximum(math_ops.subtract(p[:n - 1], p[1:]), 0.0)
    slope = safe_div(dtp, dp, name="prec_slope")
    intercept = math_ops.subtract(tp[1:], math_ops.multiply(slope, p[1:]))
    both = math_ops.logical_and(math_ops.greater(p[:n - 1], 0.0), math_ops.greater(p[1:], 0.0))
    ratio = math_ops.where(both, safe_div(p[:n - 1], math_ops.maximum(p[1:], 0.0), "ratio"),
                           array_ops.ones_like(p[1:]))
    term = math_ops.multiply(slope, math_ops.add(
        dtp, math_ops.multiply(intercept, math_ops.log(ratio))))
    return math_ops.reduce_sum(safe_div(term, math_ops.maximum(
        math_ops.add(tp[1:], fn[1:]), 0.0), "recall_relative_area"), name=name)


def auc(labels: Any, predictions: Any, weights: Any = None, num_thresholds: int = 200,
        metrics_collections: Any = None, updates_collections: Any = None,
        curve: str = "ROC", name: str | None = None,
        summation_method: str = "trapezoidal", thresholds: Any = None
        ) -> tuple[Tensor, Tensor]:
    """`tf.metrics.auc`: area under the ROC (or PR) curve, by a Riemann sum over thresholds.

    Args:
        labels: booleans (or 0/1) of the predictions' shape.
        predictions: probabilities in [0, 1] (checked when the update runs).
        num_thresholds: how many thresholds, spread evenly over [0, 1].
        curve: "ROC" or "PR".
        summation_method: "trapezoidal", "careful_interpolation" (interpolated PR
            for curve="PR", trapezoidal for ROC), "minoring" or "majoring".
        thresholds: explicit thresholds instead of num_thresholds.

    Raises:
        ValueError: for an unknown curve or summation method.

    Example:
        >>> auc, auc_op = tf.metrics.auc(labels=y, predictions=tf.sigmoid(logits))
    """
    if curve not in ("ROC", "PR"):
        raise ValueError(f"auc: curve must be 'ROC' or 'PR', got {curve!r}.")
    methods = ("trapezoidal", "careful_interpolation", "minoring", "majoring")
    if summation_method not in methods:
        raise ValueError(f"Invalid summation_method: {summation_method!r}; use one of "
                         f"{methods}.")
    with variable_scope(name, "auc", [labels, predictions, weights]):
        ths = _thresholds(num_thresholds, thresholds)
        n = len(ths)
        values, updates = confusion_matrix_at_thresholds(labels, predictions, ths, weights)

        def area(c: dict[str, Tensor], out: str) -> Tensor:
            if curve == "PR" and summation_method == "careful_interpolation":
                return _interpolated_pr_auc(c["tp"], c["fp"], c["fn"], n, out)
            return _area(c["tp"], c["fn"], c["tn"], c["fp"], n, curve, summation_method, out)

        value = area(values, "value")
        update_op = area(updates, "update_op")
    add_to(metrics_collections, value)
    add_to(updates_collections, update_op)
    return value, update_op


def _at_thresholds(default: str, keys: tuple[str, ...], combine: Any,
                   scope: str | None = None) -> Any:
    def metric(labels: Any, predictions: Any, thresholds: Any, weights: Any = None,
               metrics_collections: Any = None, updates_collections: Any = None,
               name: str | None = None) -> tuple[Tensor, Tensor]:
        with variable_scope(name, scope or default, [predictions, labels, weights]):
            values, updates = confusion_matrix_at_thresholds(
                labels, predictions, [float(t) for t in thresholds], weights, keys)
            value = combine(values, "value")
            update_op = combine(updates, "update_op")
        add_to(metrics_collections, value)
        add_to(updates_collections, update_op)
        return value, update_op
    metric.__name__ = default
    return metric


def _precision(c: dict[str, Tensor], name: str) -> Tensor:
    return math_ops.divide(c["tp"], math_ops.add(math_ops.add(c["tp"], c["fp"]), 1e-7),
                           name=name)


def _recall(c: dict[str, Tensor], name: str) -> Tensor:
    return math_ops.divide(c["tp"], math_ops.add(math_ops.add(c["tp"], c["fn"]), 1e-7),
                           name=name)


precision_at_thresholds = _at_thresholds("precision_at_thresholds", ("tp", "fp"), _precision)
precision_at_thresholds.__doc__ = (
    "`tf.metrics.precision_at_thresholds`: tp / (tp + fp + 1e-7) for "
    "`predictions > t` at each threshold t; (value, update_op) of shape [len(thresholds)].")
recall_at_thresholds = _at_thresholds("recall_at_thresholds", ("tp", "fn"), _recall)
recall_at_thresholds.__doc__ = (
    "`tf.metrics.recall_at_thresholds`: tp / (tp + fn + 1e-7) for `predictions > t` at "
    "each threshold t; (value, update_op) of shape [len(thresholds)].")


def _count_at(key: str, default: str) -> Any:
    # TF 1.x names their scopes without "_at_thresholds" ("false_negatives/...").
    fn = _at_thresholds(default, (key,), lambda c, name: identity(c[key], name=name),
                        scope=default.split("_at_")[0])
    fn.__doc__ = (f"`tf.metrics.{default}`: the (weighted) {default.split('_at')[0]} for "
                  "`predictions > t` at each threshold t; (value, update_op).")
    return fn


true_positives_at_thresholds = _count_at("tp", "true_positives_at_thresholds")
false_positives_at_thresholds = _count_at("fp", "false_positives_at_thresholds")
true_negatives_at_thresholds = _count_at("tn", "true_negatives_at_thresholds")
false_negatives_at_thresholds = _count_at("fn", "false_negatives_at_thresholds")


def _operating_point_thresholds(num_thresholds: int) -> list[float]:
    if num_thresholds < 2:
        raise ValueError(f"num_thresholds must be > 1, got {num_thresholds}.")
    eps = 1e-7
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - eps] + inner + [1.0 - eps]


def _at_operating_point(default: str, target_name: str, target: float, labels: Any,
                        predictions: Any, weights: Any, num_thresholds: int,
                        metrics_collections: Any, updates_collections: Any,
                        name: str | None, pick: Any) -> tuple[Tensor, Tensor]:
    if not 0.0 <= float(target) <= 1.0:
        raise ValueError(f"`{target_name}` must be in the range [0, 1], got {target!r}.")
    with variable_scope(name, default, [predictions, labels, weights]):
        values, updates = confusion_matrix_at_thresholds(
            labels, predictions, _operating_point_thresholds(num_thresholds), weights)
        value = pick(values, "value")
        update_op = pick(updates, "update_op")
    add_to(metrics_collections, value)
    add_to(updates_collections, update_op)
    return value, update_op


def sensitivity_at_specificity(labels: Any, predictions: Any, specificity: float,
                               weights: Any = None, num_thresholds: int = 200,
                               metrics_collections: Any = None,
                               updates_collections: Any = None,
                               name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.sensitivity_at_specificity`: the recall at the threshold whose
    specificity is closest to `specificity` (the first such threshold).

    Raises:
        ValueError: for a specificity outside [0, 1].

    Example:
        >>> s, s_op = tf.metrics.sensitivity_at_specificity(labels, probs, 0.9)
    """
    def pick(c: dict[str, Tensor], out: str) -> Tensor:
        eps = 1e-7
        spec = math_ops.divide(c["tn"], math_ops.add(math_ops.add(c["tn"], c["fp"]), eps))
        i = math_ops.argmin(math_ops.abs(math_ops.subtract(spec, specificity)), 0)
        tp, fn = array_ops.gather(c["tp"], i), array_ops.gather(c["fn"], i)
        return math_ops.divide(tp, math_ops.add(math_ops.add(tp, fn), eps), name=out)
    return _at_operating_point("sensitivity_at_specificity", "specificity", specificity,
                               labels, predictions, weights, num_thresholds,
                               metrics_collections, updates_collections, name, pick)


def specificity_at_sensitivity(labels: Any, predictions: Any, sensitivity: float,
                               weights: Any = None, num_thresholds: int = 200,
                               metrics_collections: Any = None,
                               updates_collections: Any = None,
                               name: str | None = None) -> tuple[Tensor, Tensor]:
    """`tf.metrics.specificity_at_sensitivity`: the specificity at the threshold whose
    sensitivity is closest to `sensitivity` (the last such threshold, as TF).

    Raises:
        ValueError: for a sensitivity outside [0, 1].

    Example:
        >>> s, s_op = tf.metrics.specificity_at_sensitivity(labels, probs, 0.9)
    """
    def pick(c: dict[str, Tensor], out: str) -> Tensor:
        eps = 1e-7
        sens = math_ops.divide(c["tp"], math_ops.add(math_ops.add(c["tp"], c["fn"]), eps))
        gap = math_ops.abs(math_ops.subtract(sens, sensitivity))
        closest = math_ops.equal(gap, math_ops.reduce_min(gap))
        steps = math_ops.cast(array_ops.range(array_ops.size(gap)), _dt.float32)
        i = math_ops.cast(math_ops.reduce_max(math_ops.multiply(
            math_ops.cast(closest, _dt.float32), steps)), _dt.int32)
        tn, fp = array_ops.gather(c["tn"], i), array_ops.gather(c["fp"], i)
        return math_ops.divide(tn, math_ops.add(math_ops.add(tn, fp), eps), name=out)
    return _at_operating_point("specificity_at_sensitivity", "sensitivity", sensitivity,
                               labels, predictions, weights, num_thresholds,
                               metrics_collections, updates_collections, name, pick)
