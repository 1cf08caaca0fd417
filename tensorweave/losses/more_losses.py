"""More `tf.losses`: log_loss, hinge_loss, huber_loss, cosine_distance.

Each computes per-element losses and hands them to `compute_weighted_loss`
(weights, the reduction, and the LOSSES collection), as TF 1.x does.

Example:
    >>> tf.losses.log_loss(labels=[1.0, 0.0], predictions=[0.9, 0.2])
    >>> tf.losses.huber_loss(labels=y, predictions=p, delta=1.0)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.graph import GraphKeys
from tensorweave.framework.tensor import Tensor
from tensorweave.losses.losses_impl import Reduction, pairwise_loss
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn import nn_ops

_DEFAULT = Reduction.SUM_BY_NONZERO_WEIGHTS


def log_loss(labels: Any, predictions: Any, weights: Any = 1.0, epsilon: float = 1e-7,
             scope: str | None = None, loss_collection: str | None = GraphKeys.LOSSES,
             reduction: str = _DEFAULT) -> Tensor:
    """`tf.losses.log_loss`: -y log(p + eps) - (1 - y) log(1 - p + eps), weighted.

    Args:
        labels: targets in [0, 1], the predictions' shape.
        predictions: probabilities in [0, 1].
        epsilon: keeps the logarithms finite at 0 and 1.

    Raises:
        ValueError: if the shapes are incompatible (naming both).

    Example:
        >>> tf.losses.log_loss([1.0, 0.0], [0.5, 0.5])   # -> log(2) ~ 0.693
    """
    def elementwise(p: Tensor, y: Tensor) -> Tensor:
        pos = math_ops.multiply(y, math_ops.log(math_ops.add(p, epsilon)))
        neg = math_ops.multiply(math_ops.subtract(1.0, y),
                                math_ops.log(math_ops.add(math_ops.subtract(1.0, p), epsilon)))
        return math_ops.negative(math_ops.add(pos, neg))
    return pairwise_loss("log_loss", labels, predictions, weights, scope, loss_collection,
                          reduction, elementwise)


def hinge_loss(labels: Any, logits: Any, weights: Any = 1.0, scope: str | None = None,
               loss_collection: str | None = GraphKeys.LOSSES,
               reduction: str = _DEFAULT) -> Tensor:
    """`tf.losses.hinge_loss`: relu(1 - (2y - 1) * logits) for 0/1 labels, weighted.

    Example:
        >>> tf.losses.hinge_loss(labels=[1.0, 0.0], logits=[0.5, -2.0])   # -> 0.25
    """
    def elementwise(z: Tensor, y: Tensor) -> Tensor:
        signed = math_ops.subtract(math_ops.multiply(y, 2.0), 1.0)
        return nn_ops.relu(math_ops.subtract(1.0, math_ops.multiply(signed, z)))
    return pairwise_loss("hinge_loss", labels, logits, weights, scope, loss_collection,
                          reduction, elementwise)


def huber_loss(labels: Any, predictions: Any, weights: Any = 1.0, delta: float = 1.0,
               scope: str | None = None, loss_collection: str | None = GraphKeys.LOSSES,
               reduction: str = _DEFAULT) -> Tensor:
    """`tf.losses.huber_loss`: 0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta).

    Example:
        >>> tf.losses.huber_loss(labels=[0.0, 0.0], predictions=[0.5, 3.0])  # (0.125+2.5)/2
    """
    def elementwise(p: Tensor, y: Tensor) -> Tensor:
        err = math_ops.abs(math_ops.subtract(p, y))
        quadratic = math_ops.minimum(err, delta)
        linear = math_ops.subtract(err, quadratic)
        return math_ops.add(math_ops.multiply(0.5, math_ops.square(quadratic)),
                            math_ops.multiply(delta, linear))
    return pairwise_loss("huber_loss", labels, predictions, weights, scope, loss_collection,
                          reduction, elementwise)


def cosine_distance(labels: Any, predictions: Any, axis: int | None = None,
                    weights: Any = 1.0, scope: str | None = None,
                    loss_collection: str | None = GraphKeys.LOSSES,
                    reduction: str = _DEFAULT, dim: int | None = None) -> Tensor:
    """`tf.losses.cosine_distance`: 1 - sum(labels * predictions, axis) (unit vectors).

    Raises:
        ValueError: if no `axis` is given.

    Example:
        >>> tf.losses.cosine_distance([[1.0, 0.0]], [[0.0, 1.0]], axis=1)   # -> 1.0
    """
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("cosine_distance: you must specify `axis` (the vectors' axis).")

    def elementwise(p: Tensor, y: Tensor) -> Tensor:
        dots = math_ops.reduce_sum(math_ops.multiply(y, p), axis=axis, keepdims=True)
        return math_ops.subtract(array_ops.ones_like(dots), dots)
    return pairwise_loss("cosine_distance_loss", labels, predictions, weights, scope,
                          loss_collection, reduction, elementwise)
