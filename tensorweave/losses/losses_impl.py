"""`tf.losses` (TF1): weighted, reduced losses collected in `GraphKeys.LOSSES`.

Every loss computes per-element losses, multiplies them by `weights` (a scalar or
a tensor broadcastable to the losses), reduces them with a `Reduction` (TF1's
default divides the weighted sum by the number of non-zero weights) and adds the
result to the `loss_collection`, from which `get_total_loss` sums them.

Example:
    >>> loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    >>> total = tf.losses.get_total_loss()  # + regularization losses
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.convert import constant, constant_value, convert_to_tensor
from tensorweave.framework.graph import GraphKeys, add_to_collection, get_collection, name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import broadcast_shapes, dimension_value
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn import xent_ops
from tensorweave.ops.array.core_ops import identity


class Reduction:
    """How a loss turns weighted per-element losses into its result.

    Example:
        >>> tf.losses.mean_squared_error(y, p, reduction=tf.losses.Reduction.SUM)
    """

    NONE = "none"                      # the weighted losses, unreduced
    SUM = "weighted_sum"               # sum of weighted losses
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"  # sum / number of elements
    MEAN = "weighted_mean"             # sum / sum of (broadcast) weights
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"  # sum / #non-zero weights
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction key {key!r}; use one of {cls.all()} "
                             "(tf.losses.Reduction.SUM, ...).")


def _safe_div(num: Tensor, den: Tensor) -> Tensor:
    """num / den, or 0 where den is 0 (all weights zero gives a zero loss, not NaN)."""
    zero = array_ops.zeros_like(den)
    safe_den = math_ops.where(math_ops.equal(den, zero), array_ops.ones_like(den), den)
    return math_ops.where(math_ops.greater(den, zero), math_ops.divide(num, safe_den),
                          array_ops.zeros_like(num))


def _broadcast_weights(weights: Tensor, losses: Tensor) -> Tensor:
    """`weights` broadcast to the losses' shape (checked statically where known)."""
    try:
        out = broadcast_shapes(losses.shape, weights.shape)
    except ValueError:
        out = None
    if out is None or (out.ndims is not None and losses.shape.ndims is not None and
                       not losses.shape.is_compatible_with(out)):
        raise ValueError(f"weights can not be broadcast to values: weights {weights.name} has "
                         f"shape {weights.shape} and the losses {losses.name} have shape "
                         f"{losses.shape}. Use a scalar, or a shape whose dimensions are 1 or "
                         "equal to the losses'.")
    value = constant_value(weights)
    if value is not None and np.ndim(value) == 0:
        return weights  # a scalar broadcasts by itself in every op below
    return math_ops.multiply(weights, array_ops.ones_like(losses))


def _num_present(losses: Tensor, weights: Tensor) -> Tensor:
    """How many losses have a non-zero weight (weights broadcast to the losses)."""
    nonzero = math_ops.cast(math_ops.not_equal(weights, 0), losses.dtype.base_dtype)
    return math_ops.reduce_sum(math_ops.multiply(nonzero, array_ops.ones_like(losses)))


def _num_elements(losses: Tensor) -> Tensor:
    n = losses.shape.num_elements()
    if n is not None:
        return constant(np.asarray(n, dtype=losses.dtype.as_numpy_dtype), name="num_elements")
    return math_ops.cast(array_ops.size(losses), losses.dtype.base_dtype)


def compute_weighted_loss(losses: Any, weights: Any = 1.0, scope: str | None = None,
                          loss_collection: str | None = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.compute_weighted_loss`: weights, reduces and collects `losses`.

    Args:
        losses: per-element losses (floating point).
        weights: a scalar, or a tensor broadcastable to `losses`.
        loss_collection: where the result is added (None: nowhere).
        reduction: a `tf.losses.Reduction`; SUM_BY_NONZERO_WEIGHTS by default.

    Returns:
        A scalar, or the weighted losses for `Reduction.NONE`.

    Example:
        >>> tf.losses.compute_weighted_loss([1.0, 3.0], weights=[1.0, 0.0])  # -> 1.0
    """
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss", [losses, weights]):
        losses = convert_to_tensor(losses, name="losses")
        if not losses.dtype.base_dtype.is_floating:
            raise TypeError(f"losses must be floating point, but {losses.name} has dtype "
                            f"{losses.dtype.base_dtype.name}.")
        dtype = losses.dtype.base_dtype
        weights = math_ops.cast(convert_to_tensor(weights, name="weights"), dtype)
        weights = _broadcast_weights(weights, losses)
        weighted = math_ops.multiply(losses, weights)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            total = math_ops.reduce_sum(weighted)
            if reduction == Reduction.SUM:
                loss = total
            elif reduction == Reduction.MEAN:
                loss = _safe_div(total, math_ops.reduce_sum(
                    math_ops.multiply(weights, array_ops.ones_like(losses))))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_div(total, _num_elements(losses))
            else:
                loss = _safe_div(total, _num_present(losses, weights))
        loss = identity(loss, name="value")  # TF1's name for a loss: <scope>/value
        add_loss(loss, loss_collection)
        return loss


def _check_pair(what: str, labels: Tensor, predictions: Tensor) -> None:
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(f"{what}: shapes of predictions {predictions.shape} "
                         f"({predictions.name}) and labels {labels.shape} ({labels.name}) "
                         "are incompatible; they must be equal.")


def pairwise_loss(name: str, labels: Any, predictions: Any, weights: Any, scope: str | None,
                   loss_collection: str | None, reduction: str,
                   elementwise: Any) -> Tensor:
    """A loss of `elementwise(predictions, labels)`, weighted and reduced."""
    with name_scope(scope, name, [predictions, labels, weights]) as s:
        predictions = convert_to_tensor(predictions, name="predictions")
        labels = math_ops.cast(convert_to_tensor(labels, name="labels"),
                               predictions.dtype.base_dtype)
        _check_pair(name, labels, predictions)
        return compute_weighted_loss(elementwise(predictions, labels), weights, s,
                                     loss_collection, reduction)


def mean_squared_error(labels: Any, predictions: Any, weights: Any = 1.0,
                       scope: str | None = None,
                       loss_collection: str | None = GraphKeys.LOSSES,
                       reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.mean_squared_error`: weighted (predictions - labels) ** 2, reduced.

    Example:
        >>> tf.losses.mean_squared_error(labels=[1.0, 2.0], predictions=[1.0, 4.0])  # -> 2.0
    """
    return pairwise_loss("mean_squared_error", labels, predictions, weights, scope,
                          loss_collection, reduction, math_ops.squared_difference)


def absolute_difference(labels: Any, predictions: Any, weights: Any = 1.0,
                        scope: str | None = None,
                        loss_collection: str | None = GraphKeys.LOSSES,
                        reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.absolute_difference`: weighted |predictions - labels|, reduced.

    Example:
        >>> tf.losses.absolute_difference(labels=[1.0, 2.0], predictions=[1.0, 4.0])  # -> 1.0
    """
    return pairwise_loss("absolute_difference", labels, predictions, weights, scope,
                          loss_collection, reduction,
                          lambda p, y: math_ops.abs(math_ops.subtract(p, y)))


def softmax_cross_entropy(onehot_labels: Any, logits: Any, weights: Any = 1.0,
                          label_smoothing: float = 0, scope: str | None = None,
                          loss_collection: str | None = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.softmax_cross_entropy`: softmax cross-entropy per example, weighted.

    Args:
        onehot_labels: [batch, num_classes] target distributions.
        logits: [batch, num_classes] unscaled log-probabilities.
        weights: a scalar or a [batch] tensor of per-example weights.
        label_smoothing: if > 0, labels become labels * (1 - s) + s / num_classes.

    Example:
        >>> tf.losses.softmax_cross_entropy(tf.one_hot(y, 10), logits)
    """
    with name_scope(scope, "softmax_cross_entropy_loss", [logits, onehot_labels, weights]) as s:
        logits = convert_to_tensor(logits, name="logits")
        labels = math_ops.cast(convert_to_tensor(onehot_labels, name="onehot_labels"),
                               logits.dtype.base_dtype)
        _check_pair("softmax_cross_entropy", labels, logits)
        if label_smoothing:
            n = dimension_value(logits.shape[-1]) if logits.shape.ndims else None
            n = (constant(np.asarray(n, logits.dtype.as_numpy_dtype)) if n is not None else
                 math_ops.cast(array_ops.shape(labels)[-1], logits.dtype.base_dtype))
            labels = math_ops.add(math_ops.multiply(labels, 1.0 - float(label_smoothing)),
                                  math_ops.divide(float(label_smoothing), n))
        losses = xent_ops.softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                               name="xentropy")
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def sparse_softmax_cross_entropy(labels: Any, logits: Any, weights: Any = 1.0,
                                 scope: str | None = None,
                                 loss_collection: str | None = GraphKeys.LOSSES,
                                 reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.sparse_softmax_cross_entropy`: cross-entropy against class indices.

    Args:
        labels: [batch] int32/int64 class indices in [0, num_classes).
        logits: [batch, num_classes].
        weights: a scalar or a [batch] tensor.

    Example:
        >>> tf.losses.sparse_softmax_cross_entropy(labels=[1, 0], logits=logits)
    """
    with name_scope(scope, "sparse_softmax_cross_entropy_loss", [logits, labels, weights]) as s:
        losses = xent_ops.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels: Any, logits: Any, weights: Any = 1.0,
                          label_smoothing: float = 0, scope: str | None = None,
                          loss_collection: str | None = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`tf.losses.sigmoid_cross_entropy`: elementwise logistic loss, weighted.

    With label_smoothing s, labels become labels * (1 - s) + 0.5 * s.

    Example:
        >>> tf.losses.sigmoid_cross_entropy([[1.0, 0.0]], [[2.0, -1.0]])
    """
    with name_scope(scope, "sigmoid_cross_entropy_loss",
                    [logits, multi_class_labels, weights]) as s:
        logits = convert_to_tensor(logits, name="logits")
        labels = math_ops.cast(convert_to_tensor(multi_class_labels, name="labels"),
                               logits.dtype.base_dtype)
        _check_pair("sigmoid_cross_entropy", labels, logits)
        if label_smoothing:
            labels = math_ops.add(math_ops.multiply(labels, 1.0 - float(label_smoothing)),
                                  0.5 * float(label_smoothing))
        losses = xent_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        return compute_weighted_loss(losses, weights, s, loss_collection, reduction)


# ---- the loss collections -----------------------------------------------------------
def add_loss(loss: Tensor, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """`tf.losses.add_loss`: adds an externally defined loss to `loss_collection`."""
    if loss_collection:
        add_to_collection(loss_collection, loss)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES
               ) -> list[Tensor]:
    """`tf.losses.get_losses`: the losses in `loss_collection` (filtered by name scope)."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Tensor]:
    """`tf.losses.get_regularization_losses`: the REGULARIZATION_LOSSES collection."""
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: str | None = None,
                            name: str = "total_regularization_loss") -> Tensor:
    """`tf.losses.get_regularization_loss`: their sum, or 0.0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant(0.0, name=name)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: str | None = None) -> Tensor:
    """`tf.losses.get_total_loss`: the sum of all losses (and regularization losses).

    Raises:
        ValueError: if there are no losses to sum.

    Example:
        >>> tf.losses.mean_squared_error(y, p)
        >>> train_op = opt.minimize(tf.losses.get_total_loss())
    """
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("get_total_loss: no losses found in the LOSSES (or "
                         "REGULARIZATION_LOSSES) collection; build a tf.losses.* loss first "
                         "or add one with tf.losses.add_loss.")
    dtype = losses[0].dtype.base_dtype
    return math_ops.add_n([math_ops.cast(t, dtype) if t.dtype.base_dtype != dtype else t
                           for t in losses], name=name)


