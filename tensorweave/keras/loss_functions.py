"""`tf.keras.losses`' per-example loss functions `fn(y_true, y_pred)` (the loss classes
that weight and reduce them are in loss_classes.py; keras/losses.py offers both).

Probabilities are clipped to [1e-7, 1 - 1e-7] before logarithms, as Keras does;
`from_logits=True` uses the stable cross-entropy ops instead.

Example:
    >>> model.compile("adam", loss="sparse_categorical_crossentropy")
    >>> per_example = tf.keras.losses.mean_squared_error(y, p)      # mean over the last axis
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import clip_ops, math_ops
from tensorweave.ops.nn import nn_ops, xent_ops

EPSILON = 1e-7


def _pair(y_true: Any, y_pred: Any) -> tuple[Tensor, Tensor]:
    y_pred = convert_to_tensor(y_pred)
    y_true = math_ops.cast(convert_to_tensor(y_true), y_pred.dtype.base_dtype)
    return y_true, y_pred


def mean_squared_error(y_true: Any, y_pred: Any) -> Tensor:
    """mean((y_pred - y_true) ** 2) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.squared_difference(y_pred, y_true), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Tensor:
    """mean(|y_pred - y_true|) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.abs(math_ops.subtract(y_pred, y_true)), axis=-1)


def _clipped(p: Tensor) -> Tensor:
    return clip_ops.clip_by_value(p, EPSILON, 1.0 - EPSILON)


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                        label_smoothing: float = 0) -> Tensor:
    """Mean binary cross-entropy over the last axis (y_pred: probabilities unless logits);
    `label_smoothing` moves labels towards 0.5: y * (1 - s) + 0.5 * s."""
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        y_true = math_ops.add(math_ops.multiply(y_true, 1.0 - label_smoothing),
                              0.5 * label_smoothing)
    if from_logits:
        each = xent_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = _clipped(y_pred)
        each = math_ops.negative(math_ops.add(
            math_ops.multiply(y_true, math_ops.log(p)),
            math_ops.multiply(math_ops.subtract(1.0, y_true),
                              math_ops.log(math_ops.subtract(1.0, p)))))
    return math_ops.reduce_mean(each, axis=-1)


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                             label_smoothing: float = 0) -> Tensor:
    """-sum(y_true * log(y_pred)) over the last axis, y_true one-hot (or a distribution);
    `label_smoothing` s gives every class s / classes of the mass."""
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        classes = math_ops.cast(array_ops.shape(y_true)[-1], y_true.dtype.base_dtype)
        y_true = math_ops.add(math_ops.multiply(y_true, 1.0 - label_smoothing),
                              math_ops.divide(label_smoothing, classes))
    if from_logits:
        return xent_ops.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    p = math_ops.divide(y_pred, math_ops.reduce_sum(y_pred, axis=-1, keepdims=True))
    return math_ops.negative(math_ops.reduce_sum(
        math_ops.multiply(y_true, math_ops.log(_clipped(p))), axis=-1))


def _class_ids(y_true: Any, y_pred: Tensor) -> Tensor:
    ids = convert_to_tensor(y_true)
    if ids.shape.ndims is not None and y_pred.shape.ndims is not None \
            and ids.shape.ndims == y_pred.shape.ndims:
        ids = array_ops.squeeze(ids, [-1])   # Keras targets of shape [batch, 1]
    return math_ops.cast(ids, _dt.int64)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any,
                                    from_logits: bool = False) -> Tensor:
    """Categorical cross-entropy against integer class ids `y_true`."""
    y_pred = convert_to_tensor(y_pred)
    ids = _class_ids(y_true, y_pred)
    if from_logits:
        return xent_ops.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=y_pred)
    depth = y_pred.shape.as_list()[-1]
    if depth is None:
        raise ValueError(f"sparse_categorical_crossentropy: the number of classes (last "
                         f"dimension of {y_pred.name}, shape {y_pred.shape}) must be known.")
    onehot = array_ops.one_hot(ids, depth, dtype=y_pred.dtype.base_dtype)
    return categorical_crossentropy(onehot, y_pred)


def _signed(y_true: Tensor) -> Tensor:
    # As Keras: labels that are all 0 or 1 are taken as -1 / 1.
    binary = math_ops.cast(math_ops.reduce_all(math_ops.logical_or(
        math_ops.equal(y_true, 0.0), math_ops.equal(y_true, 1.0))), y_true.dtype.base_dtype)
    # binary: 2y - 1, else y (a blend by the scalar flag: Select needs equal shapes)
    return math_ops.add(y_true, math_ops.multiply(binary, math_ops.subtract(y_true, 1.0)))


def hinge(y_true: Any, y_pred: Any) -> Tensor:
    """mean(max(1 - y_true * y_pred, 0)) over the last axis (labels -1/1; 0/1 mapped)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(nn_ops.relu(math_ops.subtract(
        1.0, math_ops.multiply(_signed(y_true), y_pred))), axis=-1)


def squared_hinge(y_true: Any, y_pred: Any) -> Tensor:
    """mean(max(1 - y_true * y_pred, 0) ** 2) over the last axis (0/1 labels mapped)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.square(nn_ops.relu(math_ops.subtract(
        1.0, math_ops.multiply(_signed(y_true), y_pred)))), axis=-1)


def categorical_hinge(y_true: Any, y_pred: Any) -> Tensor:
    """max(0, 1 + (largest wrong-class score) - (true-class score)), y_true one-hot."""
    y_true, y_pred = _pair(y_true, y_pred)
    pos = math_ops.reduce_sum(math_ops.multiply(y_true, y_pred), axis=-1)
    neg = math_ops.reduce_max(math_ops.multiply(math_ops.subtract(1.0, y_true), y_pred),
                              axis=-1)
    return nn_ops.relu(math_ops.add(math_ops.subtract(neg, pos), 1.0))


def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> Tensor:
    """100 * mean(|y_true - y_pred| / max(|y_true|, epsilon)) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    diff = math_ops.divide(math_ops.abs(math_ops.subtract(y_true, y_pred)),
                           math_ops.maximum(math_ops.abs(y_true), EPSILON))
    return math_ops.multiply(100.0, math_ops.reduce_mean(diff, axis=-1))


def mean_squared_logarithmic_error(y_true: Any, y_pred: Any) -> Tensor:
    """mean((log(1 + y_pred) - log(1 + y_true)) ** 2), values clipped at epsilon."""
    y_true, y_pred = _pair(y_true, y_pred)
    first = math_ops.log(math_ops.add(math_ops.maximum(y_pred, EPSILON), 1.0))
    second = math_ops.log(math_ops.add(math_ops.maximum(y_true, EPSILON), 1.0))
    return math_ops.reduce_mean(math_ops.squared_difference(first, second), axis=-1)


def kullback_leibler_divergence(y_true: Any, y_pred: Any) -> Tensor:
    """sum(y_true * log(y_true / y_pred)) over the last axis, both clipped to [eps, 1]."""
    y_true, y_pred = _pair(y_true, y_pred)
    t = clip_ops.clip_by_value(y_true, EPSILON, 1.0)
    p = clip_ops.clip_by_value(y_pred, EPSILON, 1.0)
    return math_ops.reduce_sum(math_ops.multiply(t, math_ops.log(math_ops.divide(t, p))),
                               axis=-1)


def poisson(y_true: Any, y_pred: Any) -> Tensor:
    """mean(y_pred - y_true * log(y_pred + epsilon)) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.subtract(
        y_pred, math_ops.multiply(y_true, math_ops.log(math_ops.add(y_pred, EPSILON)))),
        axis=-1)


def logcosh(y_true: Any, y_pred: Any) -> Tensor:
    """mean(log(cosh(y_pred - y_true))) over the last axis, computed without overflow."""
    y_true, y_pred = _pair(y_true, y_pred)
    x = math_ops.subtract(y_pred, y_true)
    # log(cosh(x)) = x + softplus(-2x) - log(2)
    each = math_ops.subtract(math_ops.add(x, nn_ops.softplus(math_ops.multiply(-2.0, x))),
                             math_ops.log(2.0))
    return math_ops.reduce_mean(each, axis=-1)


def huber_loss(y_true: Any, y_pred: Any, delta: float = 1.0) -> Tensor:
    """0.5 * e ** 2 for |e| <= delta, delta * (|e| - 0.5 * delta) beyond; mean over the
    last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    err = math_ops.abs(math_ops.subtract(y_pred, y_true))
    quad = math_ops.minimum(err, delta)
    each = math_ops.add(math_ops.multiply(0.5, math_ops.square(quad)),
                        math_ops.multiply(delta, math_ops.subtract(err, quad)))
    return math_ops.reduce_mean(each, axis=-1)


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Tensor:
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred)) along `axis`."""
    y_true, y_pred = _pair(y_true, y_pred)

    def unit(v: Tensor) -> Tensor:
        norm = math_ops.sqrt(math_ops.maximum(math_ops.reduce_sum(
            math_ops.square(v), axis=axis, keepdims=True), 1e-12))
        return math_ops.divide(v, norm)
    return math_ops.negative(math_ops.reduce_sum(
        math_ops.multiply(unit(y_true), unit(y_pred)), axis=axis))


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence

_BY_NAME: dict[str, Callable[..., Tensor]] = {
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "binary_crossentropy": binary_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy, "hinge": hinge,
    "squared_hinge": squared_hinge, "categorical_hinge": categorical_hinge,
    "mean_absolute_percentage_error": mean_absolute_percentage_error,
    "mape": mean_absolute_percentage_error,
    "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
    "msle": mean_squared_logarithmic_error,
    "kullback_leibler_divergence": kullback_leibler_divergence,
    "kld": kullback_leibler_divergence, "poisson": poisson, "logcosh": logcosh,
    "huber_loss": huber_loss, "cosine_similarity": cosine_similarity}


def get(identifier: Any) -> Callable[..., Tensor]:
    """A loss function from its name or a callable.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            raise ValueError(f"Unknown loss function: {identifier!r}; use one of "
                             f"{sorted(_BY_NAME)} or a callable(y_true, y_pred).")
        return fn
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier!r}")
