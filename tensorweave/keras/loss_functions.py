"""`tf.keras.losses`: per-example loss functions `fn(y_true, y_pred)` for `Model.compile`.

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


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False) -> Tensor:
    """Mean binary cross-entropy over the last axis (y_pred: probabilities unless logits)."""
    y_true, y_pred = _pair(y_true, y_pred)
    if from_logits:
        each = xent_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = _clipped(y_pred)
        each = math_ops.negative(math_ops.add(
            math_ops.multiply(y_true, math_ops.log(p)),
            math_ops.multiply(math_ops.subtract(1.0, y_true),
                              math_ops.log(math_ops.subtract(1.0, p)))))
    return math_ops.reduce_mean(each, axis=-1)


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False) -> Tensor:
    """-sum(y_true * log(y_pred)) over the last axis, y_true one-hot (or a distribution)."""
    y_true, y_pred = _pair(y_true, y_pred)
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


def hinge(y_true: Any, y_pred: Any) -> Tensor:
    """mean(max(1 - y_true * y_pred, 0)) over the last axis (labels -1/1; 0/1 mapped)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(nn_ops.relu(math_ops.subtract(
        1.0, math_ops.multiply(y_true, y_pred))), axis=-1)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error

_BY_NAME: dict[str, Callable[..., Tensor]] = {
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "binary_crossentropy": binary_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy, "hinge": hinge}


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
