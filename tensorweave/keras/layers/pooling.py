"""Keras pooling: Max/AveragePooling1D and 2D, and their global forms.

Example:
    >>> h = tf.keras.layers.MaxPooling2D((2, 2), (2, 2), padding="same")(h)
"""
from __future__ import annotations

from typing import Any

from tensorweave.keras.engine.base_layer import Layer
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.keras.layers.layer_utils import (
    conv_output_length, nhwc, normalize_data_format, normalize_padding, normalize_tuple)
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn import pool_ops


class _Pooling2D(Layer):
    _pool: Any = None

    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pool_size = normalize_tuple(pool_size, 2, "pool_size")
        self.strides = normalize_tuple(strides if strides is not None else self.pool_size, 2,
                                       "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)

    def call(self, inputs: Any) -> Any:
        if inputs.shape.ndims is not None and inputs.shape.ndims != 4:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim=4, found ndim={inputs.shape.ndims}.")
        return type(self)._pool(inputs, ksize=list(self.pool_size),
                                strides=list(self.strides), padding=self.padding,
                                data_format=nhwc(self.data_format))

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        first = self.data_format == "channels_first"
        space = dims[2:] if first else dims[1:3]
        out = [conv_output_length(s, k, self.padding, st)
               for s, k, st in zip(space, self.pool_size, self.strides)]
        return TensorShape(dims[:2] + out if first else dims[:1] + out + dims[3:])

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding.lower(), "data_format": self.data_format}


class MaxPooling2D(_Pooling2D):
    """Max over `pool_size` windows moved by `strides` (default: pool_size).

    Example:
        >>> tf.keras.layers.MaxPooling2D(pool_size=2)(x)     # halves height and width
    """

    _pool = staticmethod(pool_ops.max_pool)


class AveragePooling2D(_Pooling2D):
    """Mean over `pool_size` windows (SAME padding averages only the real inputs)."""

    _pool = staticmethod(pool_ops.avg_pool)


class _GlobalPooling2D(Layer):
    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0], dims[1] if self.data_format == "channels_first"
                            else dims[3]])

    def _axes(self) -> list[int]:
        return [1, 2] if self.data_format == "channels_last" else [2, 3]


class GlobalAveragePooling2D(_GlobalPooling2D):
    """Mean over height and width: [batch, h, w, c] -> [batch, c]."""

    def call(self, inputs: Any) -> Any:
        return math_ops.reduce_mean(inputs, axis=self._axes())


class GlobalMaxPooling2D(_GlobalPooling2D):
    """Max over height and width: [batch, h, w, c] -> [batch, c]."""

    def call(self, inputs: Any) -> Any:
        return math_ops.reduce_max(inputs, axis=self._axes())


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D


class _Pooling1D(Layer):
    _pool: Any = None

    def __init__(self, pool_size: int = 2, strides: int | None = None, padding: str = "valid",
                 data_format: str = "channels_last", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pool_size = normalize_tuple(pool_size, 1, "pool_size")
        self.strides = normalize_tuple(strides if strides is not None else self.pool_size, 1,
                                       "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)

    def call(self, inputs: Any) -> Any:
        if inputs.shape.ndims is not None and inputs.shape.ndims != 3:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim=3, found ndim={inputs.shape.ndims}.")
        axis = 1 if self.data_format == "channels_last" else 2   # a unit height, as TF does
        out = type(self)._pool(array_ops.expand_dims(inputs, axis),
                               ksize=[1, self.pool_size[0]], strides=[1, self.strides[0]],
                               padding=self.padding, data_format=nhwc(self.data_format))
        return array_ops.squeeze(out, [axis])

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        first = self.data_format == "channels_first"
        steps = conv_output_length(dims[2] if first else dims[1], self.pool_size[0],
                                   self.padding, self.strides[0])
        return TensorShape([dims[0], dims[1], steps] if first else [dims[0], steps, dims[2]])


class MaxPooling1D(_Pooling1D):
    """Max over windows of `pool_size` steps: [batch, steps, channels]."""

    _pool = staticmethod(pool_ops.max_pool)


class AveragePooling1D(_Pooling1D):
    """Mean over windows of `pool_size` steps: [batch, steps, channels]."""

    _pool = staticmethod(pool_ops.avg_pool)


class _GlobalPooling1D(Layer):
    def __init__(self, data_format: str = "channels_last", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        # [batch, steps, channels], or [batch, channels, steps] for channels_first.
        self._steps_axis = 1 if self.data_format == "channels_last" else 2

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0], dims[3 - self._steps_axis]])


class GlobalAveragePooling1D(_GlobalPooling1D):
    """Mean over the steps: [batch, steps, channels] -> [batch, channels]; with a mask
    (Embedding(mask_zero=True)), the mean over the unmasked steps."""

    supports_masking = True

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None

    def call(self, inputs: Any, mask: Any = None) -> Any:
        axis = self._steps_axis
        if mask is None:
            return math_ops.reduce_mean(inputs, axis=axis)
        weights = array_ops.expand_dims(math_ops.cast(mask, inputs.dtype.base_dtype),
                                        3 - axis)  # the channels axis
        total = math_ops.reduce_sum(math_ops.multiply(inputs, weights), axis=axis)
        return math_ops.divide(total, math_ops.maximum(
            math_ops.reduce_sum(weights, axis=axis), 1e-7))


class GlobalMaxPooling1D(_GlobalPooling1D):
    """Max over the steps: [batch, steps, channels] -> [batch, channels]."""

    def call(self, inputs: Any) -> Any:
        return math_ops.reduce_max(inputs, axis=self._steps_axis)


MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D
