"""Keras merge layers: Concatenate, Add, Subtract, Multiply, Average, Maximum, Minimum.

Each takes a list of tensors; the lower-case functions build the layer and call it.

Example:
    >>> both = tf.keras.layers.Concatenate()([left, right])       # along the last axis
    >>> total = tf.keras.layers.add([a, b, c])
"""
from __future__ import annotations

from functools import reduce
from typing import Any

from tensorweave.keras.engine.base_layer import Layer
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops


class _Merge(Layer):
    def _check(self, inputs: Any, least: int = 2) -> list[Any]:
        if not isinstance(inputs, (list, tuple)) or len(inputs) < least:
            raise ValueError(f"A merge layer ({self.name}) should be called on a list of at "
                             f"least {least} inputs. Got: {inputs!r}")
        return list(inputs)

    def _merge(self, inputs: list[Any]) -> Any:
        raise TypeError(f"{type(self).__name__} is an abstract merge layer; use Add, "
                        "Concatenate, ...")

    def call(self, inputs: Any) -> Any:
        return self._merge(self._check(inputs))


class Add(_Merge):
    """Elementwise sum of the inputs."""

    def _merge(self, inputs: list[Any]) -> Any:
        return math_ops.add_n(inputs)


class Subtract(_Merge):
    """inputs[0] - inputs[1] (exactly two inputs)."""

    def _merge(self, inputs: list[Any]) -> Any:
        if len(inputs) != 2:
            raise ValueError(f"A `Subtract` layer ({self.name}) should be called on exactly 2 "
                             f"inputs, got {len(inputs)}.")
        return math_ops.subtract(inputs[0], inputs[1])


class Multiply(_Merge):
    """Elementwise product of the inputs."""

    def _merge(self, inputs: list[Any]) -> Any:
        return reduce(math_ops.multiply, inputs)


class Average(_Merge):
    """Elementwise mean of the inputs."""

    def _merge(self, inputs: list[Any]) -> Any:
        return math_ops.divide(math_ops.add_n(inputs), float(len(inputs)))


class Maximum(_Merge):
    """Elementwise maximum of the inputs."""

    def _merge(self, inputs: list[Any]) -> Any:
        return reduce(math_ops.maximum, inputs)


class Minimum(_Merge):
    """Elementwise minimum of the inputs."""

    def _merge(self, inputs: list[Any]) -> Any:
        return reduce(math_ops.minimum, inputs)


class Concatenate(_Merge):
    """Joins the inputs along `axis` (the last by default).

    Example:
        >>> tf.keras.layers.Concatenate(axis=1)([a, b])
    """

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def _check(self, inputs: Any, least: int = 1) -> list[Any]:
        return super()._check(inputs, least)

    def _merge(self, inputs: list[Any]) -> Any:
        ranks = {t.shape.ndims for t in inputs}
        if len(ranks) > 1 and None not in ranks:
            raise ValueError(f"A `Concatenate` layer ({self.name}) requires inputs with "
                             f"matching shapes except for the concat axis. Got inputs shapes: "
                             f"{[t.shape for t in inputs]}")
        return array_ops.concat(inputs, self.axis)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "axis": self.axis}


def concatenate(inputs: list[Any], axis: int = -1, **kwargs: Any) -> Any:
    """`tf.keras.layers.concatenate`: a Concatenate layer applied to `inputs`."""
    return Concatenate(axis=axis, **kwargs)(inputs)


def add(inputs: list[Any], **kwargs: Any) -> Any:
    return Add(**kwargs)(inputs)


def subtract(inputs: list[Any], **kwargs: Any) -> Any:
    return Subtract(**kwargs)(inputs)


def multiply(inputs: list[Any], **kwargs: Any) -> Any:
    return Multiply(**kwargs)(inputs)


def average(inputs: list[Any], **kwargs: Any) -> Any:
    return Average(**kwargs)(inputs)


def maximum(inputs: list[Any], **kwargs: Any) -> Any:
    return Maximum(**kwargs)(inputs)


def minimum(inputs: list[Any], **kwargs: Any) -> Any:
    return Minimum(**kwargs)(inputs)
