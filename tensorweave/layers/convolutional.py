"""`tf.layers` convolution and pooling: conv1d/2d, conv2d_transpose, max/average pooling
1d/2d, and their classes.

Example:
    >>> h = tf.layers.conv2d(images, 32, [5, 5], padding="same", activation=tf.nn.relu)
    >>> h = tf.layers.max_pooling2d(h, pool_size=[2, 2], strides=2)
"""
from __future__ import annotations

from typing import Any

from tensorweave.keras.layers import convolutional as keras_conv
from tensorweave.keras.layers import convolutional_more as keras_conv_more
from tensorweave.keras.layers import pooling as keras_pool
from tensorweave.layers.base import Layer
from tensorweave.state.init_ops import Zeros

_ZEROS = Zeros()  # shared default, as TF1 signatures have it


class Conv2D(keras_conv.Conv2D, Layer):
    """`tf.layers.Conv2D`: Keras's Conv2D with variable-scope variables."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str = "channels_last",
                 dilation_rate: Any = (1, 1), activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = None, bias_initializer: Any = _ZEROS,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         activation, use_bias, kernel_initializer, bias_initializer,
                         kernel_regularizer, bias_regularizer, activity_regularizer,
                         kernel_constraint, bias_constraint, trainable=trainable, name=name,
                         **kwargs)


def conv2d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
           padding: str = "valid", data_format: str = "channels_last",
           dilation_rate: Any = (1, 1), activation: Any = None, use_bias: bool = True,
           kernel_initializer: Any = None, bias_initializer: Any = _ZEROS,
           kernel_regularizer: Any = None, bias_regularizer: Any = None,
           activity_regularizer: Any = None, kernel_constraint: Any = None,
           bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
           reuse: Any = None) -> Any:
    """`tf.layers.conv2d`: 2-D convolution plus bias and activation.

    Args:
        inputs: [batch, height, width, channels] (or NCHW with channels_first).
        filters: output channels; kernel_size, strides: int or pair.
        padding: "valid" or "same".
        name, reuse: the variable scope and whether to reuse it.

    Example:
        >>> conv1 = tf.layers.conv2d(x, filters=32, kernel_size=5, padding="same")
    """
    layer = Conv2D(filters, kernel_size, strides=strides, padding=padding,
                   data_format=data_format, dilation_rate=dilation_rate,
                   activation=activation, use_bias=use_bias,
                   kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                   kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                   activity_regularizer=activity_regularizer,
                   kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                   trainable=trainable, name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs)


class MaxPooling2D(keras_pool.MaxPooling2D, Layer):
    """`tf.layers.MaxPooling2D(pool_size, strides, padding='valid')`."""

    def __init__(self, pool_size: Any, strides: Any, padding: str = "valid",
                 data_format: str = "channels_last", name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, name=name, **kwargs)


class AveragePooling2D(keras_pool.AveragePooling2D, Layer):
    """`tf.layers.AveragePooling2D(pool_size, strides, padding='valid')`."""

    def __init__(self, pool_size: Any, strides: Any, padding: str = "valid",
                 data_format: str = "channels_last", name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, name=name, **kwargs)


def max_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: str | None = None) -> Any:
    """`tf.layers.max_pooling2d`. Example: `tf.layers.max_pooling2d(h, [2, 2], 2)`."""
    return MaxPooling2D(pool_size, strides, padding, data_format, name=name).apply(inputs)


def average_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: str | None = None) -> Any:
    """`tf.layers.average_pooling2d`. Example: `tf.layers.average_pooling2d(h, 2, 2)`."""
    return AveragePooling2D(pool_size, strides, padding, data_format, name=name).apply(inputs)


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
Convolution2D = Conv2D


class Conv1D(keras_conv_more.Conv1D, Layer):
    """`tf.layers.Conv1D`: Keras's Conv1D with variable-scope variables."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: str = "channels_last",
                 dilation_rate: Any = 1, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = None, bias_initializer: Any = _ZEROS,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True,
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, **kwargs)


def conv1d(inputs: Any, filters: int, kernel_size: Any, strides: Any = 1,
           padding: str = "valid", data_format: str = "channels_last", dilation_rate: Any = 1,
           activation: Any = None, use_bias: bool = True, kernel_initializer: Any = None,
           bias_initializer: Any = _ZEROS, kernel_regularizer: Any = None,
           bias_regularizer: Any = None, activity_regularizer: Any = None,
           kernel_constraint: Any = None, bias_constraint: Any = None, trainable: bool = True,
           name: str | None = None, reuse: Any = None) -> Any:
    """`tf.layers.conv1d`: 1-D convolution over [batch, steps, channels].

    Example:
        >>> h = tf.layers.conv1d(sequences, filters=16, kernel_size=3, padding="same")
    """
    layer = Conv1D(filters, kernel_size, strides, padding, data_format, dilation_rate,
                   activation, use_bias, kernel_initializer, bias_initializer,
                   trainable=trainable, name=name, kernel_regularizer=kernel_regularizer,
                   bias_regularizer=bias_regularizer,
                   activity_regularizer=activity_regularizer,
                   kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                   _scope=name, _reuse=reuse)
    return layer.apply(inputs)


class Conv2DTranspose(keras_conv_more.Conv2DTranspose, Layer):
    """`tf.layers.Conv2DTranspose`: Keras's Conv2DTranspose with variable-scope variables."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str = "channels_last",
                 activation: Any = None, use_bias: bool = True, kernel_initializer: Any = None,
                 bias_initializer: Any = _ZEROS,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True,
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format=data_format,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, **kwargs)


def conv2d_transpose(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: str = "channels_last",
                     activation: Any = None, use_bias: bool = True,
                     kernel_initializer: Any = None, bias_initializer: Any = _ZEROS,
                     kernel_regularizer: Any = None, bias_regularizer: Any = None,
                     activity_regularizer: Any = None, kernel_constraint: Any = None,
                     bias_constraint: Any = None, trainable: bool = True,
                     name: str | None = None, reuse: Any = None) -> Any:
    """`tf.layers.conv2d_transpose`: transposed convolution ("deconvolution").

    Example:
        >>> up = tf.layers.conv2d_transpose(h, 64, 5, strides=2, padding="same")
    """
    layer = Conv2DTranspose(filters, kernel_size, strides, padding, data_format, activation,
                            use_bias, kernel_initializer, bias_initializer,
                            trainable=trainable, name=name,
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer,
                            kernel_constraint=kernel_constraint,
                            bias_constraint=bias_constraint, _scope=name, _reuse=reuse)
    return layer.apply(inputs)


class MaxPooling1D(keras_pool.MaxPooling1D, Layer):
    """`tf.layers.MaxPooling1D(pool_size, strides, padding='valid')`."""

    def __init__(self, pool_size: Any, strides: Any, padding: str = "valid",
                 data_format: str = "channels_last", name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, name=name, **kwargs)


class AveragePooling1D(keras_pool.AveragePooling1D, Layer):
    """`tf.layers.AveragePooling1D(pool_size, strides, padding='valid')`."""

    def __init__(self, pool_size: Any, strides: Any, padding: str = "valid",
                 data_format: str = "channels_last", name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, name=name, **kwargs)


def max_pooling1d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: str | None = None) -> Any:
    """`tf.layers.max_pooling1d`. Example: `tf.layers.max_pooling1d(h, 2, 2)`."""
    return MaxPooling1D(pool_size, strides, padding, data_format, name=name).apply(inputs)


def average_pooling1d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: str | None = None) -> Any:
    """`tf.layers.average_pooling1d`. Example: `tf.layers.average_pooling1d(h, 2, 2)`."""
    return AveragePooling1D(pool_size, strides, padding, data_format, name=name).apply(inputs)


MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
Convolution1D = Conv1D
Convolution2DTranspose = Deconvolution2D = Deconv2D = Conv2DTranspose
