"""`tf.layers.separable_conv2d` and `tf.layers.SeparableConv2D` (TF1), on variable scopes.

Variables are `<name>/depthwise_kernel`, `<name>/pointwise_kernel` and `<name>/bias`,
as TF1 names them, so checkpoints match.

Example:
    >>> h = tf.layers.separable_conv2d(x, 64, 3, padding="same", activation=tf.nn.relu)
"""
from __future__ import annotations

from typing import Any

from tensorweave.keras.layers import convolutional_depthwise as keras_dw
from tensorweave.layers.base import Layer
from tensorweave.state.init_ops import Zeros

_ZEROS = Zeros()  # shared default, as TF1 signatures have it


class SeparableConv2D(keras_dw.SeparableConv2D, Layer):
    """`tf.layers.SeparableConv2D`: Keras's SeparableConv2D with variable-scope variables."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str = "channels_last",
                 dilation_rate: Any = (1, 1), depth_multiplier: int = 1,
                 activation: Any = None, use_bias: bool = True,
                 depthwise_initializer: Any = None, pointwise_initializer: Any = None,
                 bias_initializer: Any = _ZEROS, depthwise_regularizer: Any = None,
                 pointwise_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, depthwise_constraint: Any = None,
                 pointwise_constraint: Any = None, bias_constraint: Any = None,
                 trainable: bool = True, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         depth_multiplier, activation, use_bias, depthwise_initializer,
                         pointwise_initializer, bias_initializer, depthwise_regularizer,
                         pointwise_regularizer, bias_regularizer, activity_regularizer,
                         depthwise_constraint, pointwise_constraint, bias_constraint,
                         trainable=trainable, name=name, **kwargs)


def separable_conv2d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: str = "channels_last",
                     dilation_rate: Any = (1, 1), depth_multiplier: int = 1,
                     activation: Any = None, use_bias: bool = True,
                     depthwise_initializer: Any = None, pointwise_initializer: Any = None,
                     bias_initializer: Any = _ZEROS, depthwise_regularizer: Any = None,
                     pointwise_regularizer: Any = None, bias_regularizer: Any = None,
                     activity_regularizer: Any = None, depthwise_constraint: Any = None,
                     pointwise_constraint: Any = None, bias_constraint: Any = None,
                     trainable: bool = True, name: str | None = None, reuse: Any = None
                     ) -> Any:
    """`tf.layers.separable_conv2d`: depthwise then pointwise convolution, bias, activation.

    Args:
        inputs: [batch, height, width, channels] (or NCHW with channels_first).
        filters: output channels; kernel_size, strides, dilation_rate: int or pair.
        depth_multiplier: depthwise filters per input channel.
        name, reuse: the variable scope and whether to reuse it.

    Example:
        >>> h = tf.layers.separable_conv2d(h, 128, [3, 3], depth_multiplier=1, name="sep1")
    """
    layer = SeparableConv2D(
        filters, kernel_size, strides=strides, padding=padding, data_format=data_format,
        dilation_rate=dilation_rate, depth_multiplier=depth_multiplier, activation=activation,
        use_bias=use_bias, depthwise_initializer=depthwise_initializer,
        pointwise_initializer=pointwise_initializer, bias_initializer=bias_initializer,
        depthwise_regularizer=depthwise_regularizer,
        pointwise_regularizer=pointwise_regularizer, bias_regularizer=bias_regularizer,
        activity_regularizer=activity_regularizer, depthwise_constraint=depthwise_constraint,
        pointwise_constraint=pointwise_constraint, bias_constraint=bias_constraint,
        trainable=trainable, name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs)


SeparableConvolution2D = SeparableConv2D
