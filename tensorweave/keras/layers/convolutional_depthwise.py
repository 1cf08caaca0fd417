"""Keras DepthwiseConv2D and SeparableConv2D, on the DepthwiseConv2dNative op.

Weights keep TF's names and shapes so checkpoints match: `depthwise_kernel`
[kh, kw, in_channels, depth_multiplier], `pointwise_kernel` [1, 1, in_channels *
depth_multiplier, filters] (SeparableConv2D only) and `bias`.

Example:
    >>> h = tf.keras.layers.DepthwiseConv2D(3, padding="same")(x)            # MobileNet
    >>> h = tf.keras.layers.SeparableConv2D(64, 3, padding="same", activation="relu")(h)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.keras import initializers, regularizers
from tensorweave.keras.layers.convolutional import Conv2D
from tensorweave.keras.layers.layer_utils import conv_output_length, nhwc
from tensorweave.nn_impl import depthwise_conv


def _in_channels(layer: Conv2D, input_shape: Any) -> int:
    shape = TensorShape(input_shape)
    if shape.ndims != 4:
        raise ValueError(f"Input 0 of layer {layer.name} is incompatible with the layer: "
                         f"expected ndim=4, found ndim={shape.ndims} (shape {shape}).")
    channels = shape.as_list()[-1 if layer.data_format == "channels_last" else 1]
    if channels is None:
        raise ValueError(f"The channel dimension of the inputs to {layer.name} should be "
                         f"defined. Found `None` (input shape {shape}).")
    return int(channels)


class SeparableConv2D(Conv2D):
    """A depthwise convolution per input channel, then a 1x1 convolution to `filters`.

    Args:
        filters: output channels of the pointwise step.
        depth_multiplier: depthwise filters per input channel.
        depthwise_*/pointwise_*: initializer, regularizer and constraint of each kernel.
        Others as for Conv2D.

    Example:
        >>> tf.keras.layers.SeparableConv2D(32, (3, 3), depth_multiplier=2, padding="same")
    """

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = (1, 1), depth_multiplier: int = 1,
                 activation: Any = None, use_bias: bool = True,
                 depthwise_initializer: Any = "glorot_uniform",
                 pointwise_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", depthwise_regularizer: Any = None,
                 pointwise_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, depthwise_constraint: Any = None,
                 pointwise_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         activation, use_bias, bias_initializer=bias_initializer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint

    def build(self, input_shape: Any) -> None:
        c = _in_channels(self, input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", list(self.kernel_size) + [c, self.depth_multiplier],
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", [1, 1, c * self.depth_multiplier, self.filters],
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self._add_bias()
        self.built = True

    def call(self, inputs: Any) -> Any:
        fmt = nhwc(self.data_format)
        out = depthwise_conv.separable_conv2d(
            inputs, self.depthwise_kernel, self.pointwise_kernel, strides=list(self.strides),
            padding=self.padding, rate=list(self.dilation_rate), data_format=fmt)
        return self._bias_and_activation(out, fmt)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier}


class DepthwiseConv2D(Conv2D):
    """A separate [kh, kw] filter bank of `depth_multiplier` filters per input channel.

    Example:
        >>> tf.keras.layers.DepthwiseConv2D((3, 3), strides=2, padding="same")
    """

    def __init__(self, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 depth_multiplier: int = 1, data_format: str | None = None,
                 activation: Any = None, use_bias: bool = True,
                 depthwise_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", depthwise_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 depthwise_constraint: Any = None, bias_constraint: Any = None,
                 dilation_rate: Any = (1, 1), **kwargs: Any) -> None:
        # TF 1.x's order; dilation_rate (a later TF addition) comes last, keyword in practice.
        # filters is set at build (in_channels * depth_multiplier); 1 passes the check.
        super().__init__(1, kernel_size, strides, padding, data_format, dilation_rate,
                         activation, use_bias, bias_initializer=bias_initializer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.depthwise_constraint = depthwise_constraint

    def build(self, input_shape: Any) -> None:
        c = _in_channels(self, input_shape)
        self.filters = c * self.depth_multiplier
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", list(self.kernel_size) + [c, self.depth_multiplier],
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self._add_bias()
        self.built = True

    def call(self, inputs: Any) -> Any:
        fmt = nhwc(self.data_format)
        out = depthwise_conv.depthwise_conv2d(inputs, self.depthwise_kernel,
                                             strides=list(self.strides), padding=self.padding,
                                             rate=list(self.dilation_rate), data_format=fmt)
        return self._bias_and_activation(out, fmt)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        first = self.data_format == "channels_first"
        c = dims[1] if first else dims[3]
        space = dims[2:] if first else dims[1:3]
        out = [conv_output_length(s, k, self.padding, st, d) for s, k, st, d in
               zip(space, self.kernel_size, self.strides, self.dilation_rate)]
        ch = None if c is None else c * self.depth_multiplier
        return TensorShape([dims[0], ch] + out if first else [dims[0]] + out + [ch])

    def get_config(self) -> dict[str, Any]:
        config = {**super().get_config(), "depth_multiplier": self.depth_multiplier}
        config.pop("filters", None)
        return config
