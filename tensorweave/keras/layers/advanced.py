"""Keras activation layers (ReLU, LeakyReLU, ELU, Softmax) and reshaping layers
(ZeroPadding2D, UpSampling2D, Permute, RepeatVector).

Example:
    >>> h = tf.keras.layers.LeakyReLU(alpha=0.2)(h)
    >>> h = tf.keras.layers.UpSampling2D(size=2)(h)      # nearest neighbour
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.keras import activations
from tensorweave.keras.engine.base_layer import Layer
from tensorweave.keras.layers.layer_utils import normalize_data_format, normalize_tuple
from tensorweave.ops import array as array_ops
from tensorweave.ops.nn import nn_ops


class ReLU(Layer):
    """max(x, 0), optionally capped at `max_value` or leaky with `negative_slope`."""

    _keeps_shape = True

    def __init__(self, max_value: float | None = None, negative_slope: float = 0.0,
                 threshold: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold

    def call(self, inputs: Any) -> Any:
        return activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)


class LeakyReLU(Layer):
    """x where positive, alpha * x elsewhere (alpha 0.3 by default, as Keras)."""

    _keeps_shape = True

    def __init__(self, alpha: float = 0.3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs: Any) -> Any:
        return nn_ops.leaky_relu(inputs, alpha=self.alpha)


class ELU(Layer):
    """x where positive, alpha * (exp(x) - 1) elsewhere."""

    _keeps_shape = True

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs: Any) -> Any:
        return activations.elu(inputs, self.alpha)


class Softmax(Layer):
    """Softmax over `axis` (the last by default)."""

    _keeps_shape = True

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs: Any) -> Any:
        return nn_ops.softmax(inputs, axis=self.axis)


def _spatial_axes(data_format: str) -> tuple[int, int]:
    return (1, 2) if data_format == "channels_last" else (2, 3)


class ZeroPadding2D(Layer):
    """Adds rows and columns of zeros: padding=1, (ph, pw) or ((top, bottom), (left, right))."""

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(padding, int) or (len(padding) == 2 and isinstance(padding[0], int)):
            ph, pw = normalize_tuple(padding, 2, "padding")
            pairs = ((ph, ph), (pw, pw))
        else:
            (t, b), (left, r) = (normalize_tuple(padding[0], 2, "padding"),
                                 normalize_tuple(padding[1], 2, "padding"))
            pairs = ((t, b), (left, r))
        self.padding: tuple[tuple[int, int], tuple[int, int]] = pairs
        self.data_format = normalize_data_format(data_format)

    def call(self, inputs: Any) -> Any:
        pads = [[0, 0]] * 4
        for axis, pair in zip(_spatial_axes(self.data_format), self.padding):
            pads[axis] = list(pair)
        return array_ops.pad(inputs, pads)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        for axis, (a, b) in zip(_spatial_axes(self.data_format), self.padding):
            d = dims[axis]
            dims[axis] = None if d is None else d + a + b
        return TensorShape(dims)


class UpSampling2D(Layer):
    """Repeats rows and columns `size` times (nearest-neighbour upsampling).

    Raises:
        ValueError: for interpolation other than "nearest".
    """

    def __init__(self, size: Any = (2, 2), data_format: str | None = None,
                 interpolation: str = "nearest", **kwargs: Any) -> None:
        if interpolation != "nearest":
            raise ValueError(f"UpSampling2D: interpolation={interpolation!r} is not "
                             "supported; use 'nearest'.")
        super().__init__(**kwargs)
        self.size = normalize_tuple(size, 2, "size")
        self.data_format = normalize_data_format(data_format)

    def call(self, inputs: Any) -> Any:
        x = inputs
        for axis, times in zip(_spatial_axes(self.data_format), self.size):
            x = _repeat(x, axis, times)
        x.set_shape(self.compute_output_shape(inputs.shape))
        return x

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        for axis, times in zip(_spatial_axes(self.data_format), self.size):
            d = dims[axis]
            dims[axis] = None if d is None else d * times
        return TensorShape(dims)


def _repeat(x: Any, axis: int, times: int) -> Any:
    """Each slice along `axis` repeated `times` times in place (a, a, b, b, ...)."""
    if times == 1:
        return x
    expanded = array_ops.expand_dims(x, axis + 1)
    tiled = array_ops.tile(expanded, [times if i == axis + 1 else 1 for i in range(5)])
    shape = array_ops.shape(x)
    new = [shape[i] * times if i == axis else shape[i] for i in range(4)]
    return array_ops.reshape(tiled, array_ops.stack(new))


class Permute(Layer):
    """Permutes the non-batch axes: dims=(2, 1) swaps the two axes after the batch."""

    def __init__(self, dims: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Invalid permutation `dims` for Permute layer: {dims!r}; it "
                             "must hold 1..n, each once (0 is the batch axis).")

    def call(self, inputs: Any) -> Any:
        return array_ops.transpose(inputs, [0, *self.dims])

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0]] + [dims[d] for d in self.dims])


class RepeatVector(Layer):
    """[batch, features] -> [batch, n, features]."""

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n = int(n)

    def call(self, inputs: Any) -> Any:
        return array_ops.tile(array_ops.expand_dims(inputs, 1), [1, self.n, 1])

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0], self.n, dims[1]])
