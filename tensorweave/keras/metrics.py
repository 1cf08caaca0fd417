"""`tf.keras.metrics`: per-example metric functions `fn(y_true, y_pred)` for `compile`.

`metrics=["accuracy"]` picks the accuracy that fits the loss: sparse categorical
for integer targets, categorical for one-hot, binary for one output unit.

Example:
    >>> model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.keras import losses
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Tensor:
    """mean(y_true == (y_pred > threshold)) over the last axis."""
    y_pred = convert_to_tensor(y_pred)
    y_true = math_ops.cast(convert_to_tensor(y_true), y_pred.dtype.base_dtype)
    hits = math_ops.equal(y_true, math_ops.cast(math_ops.greater(y_pred, threshold),
                                                y_pred.dtype.base_dtype))
    return math_ops.reduce_mean(math_ops.cast(hits, _dt.float32), axis=-1)


def categorical_accuracy(y_true: Any, y_pred: Any) -> Tensor:
    """1.0 where argmax(y_true) == argmax(y_pred), per example."""
    hits = math_ops.equal(math_ops.argmax(y_true, axis=-1), math_ops.argmax(y_pred, axis=-1))
    return math_ops.cast(hits, _dt.float32)


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Tensor:
    """1.0 where the class id y_true == argmax(y_pred), per example."""
    y_pred = convert_to_tensor(y_pred)
    ids = convert_to_tensor(y_true)
    if ids.shape.ndims is not None and ids.shape.ndims == y_pred.shape.ndims:
        ids = array_ops.squeeze(ids, [-1])
    hits = math_ops.equal(math_ops.cast(ids, _dt.int64), math_ops.argmax(y_pred, axis=-1))
    return math_ops.cast(hits, _dt.float32)


mse = mean_squared_error = losses.mean_squared_error
mae = mean_absolute_error = losses.mean_absolute_error

_BY_NAME: dict[str, Callable[..., Tensor]] = {
    "binary_accuracy": binary_accuracy, "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "mse": mean_squared_error, "mean_squared_error": mean_squared_error,
    "mae": mean_absolute_error, "mean_absolute_error": mean_absolute_error}


def accuracy_for(loss_fn: Any, output_units: int | None) -> Callable[..., Tensor]:
    """The accuracy Keras means by "accuracy" for this loss and output size."""
    if loss_fn is losses.sparse_categorical_crossentropy:
        return sparse_categorical_accuracy
    if loss_fn is losses.binary_crossentropy or output_units == 1:
        return binary_accuracy
    return categorical_accuracy


def get(identifier: Any) -> Callable[..., Tensor]:
    """A metric function from its name or a callable ("accuracy" is resolved by compile).

    Raises:
        ValueError: for an unknown name.
    """
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            raise ValueError(f"Unknown metric function: {identifier!r}; use 'accuracy', one "
                             f"of {sorted(_BY_NAME)} or a callable(y_true, y_pred).")
        return fn
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric function identifier: {identifier!r}")
