"""`tf.layers.dense`, `dropout`, `flatten` and their classes (TF1 names and defaults).

Example:
    >>> h = tf.layers.dense(x, 128, activation=tf.nn.relu)        # dense/kernel:0
    >>> h = tf.layers.dropout(h, rate=0.4, training=is_training)
"""
from __future__ import annotations

from typing import Any

from tensorweave.keras.layers import core as keras_core
from tensorweave.layers.base import Layer
from tensorweave.state.init_ops import Zeros

_ZEROS = Zeros()  # shared default, as TF1 signatures have it


class Dense(keras_core.Dense, Layer):
    """`tf.layers.Dense`: Keras's Dense with variable-scope variables.

    Example:
        >>> layer = tf.layers.Dense(10, name="logits"); y = layer(x)
    """

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = None, bias_initializer: Any = _ZEROS,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(units, activation, use_bias, kernel_initializer, bias_initializer,
                         kernel_regularizer, bias_regularizer, activity_regularizer,
                         kernel_constraint, bias_constraint, trainable=trainable, name=name,
                         **kwargs)


def dense(inputs: Any, units: int, activation: Any = None, use_bias: bool = True,
          kernel_initializer: Any = None, bias_initializer: Any = _ZEROS,
          kernel_regularizer: Any = None, bias_regularizer: Any = None,
          activity_regularizer: Any = None, kernel_constraint: Any = None,
          bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
          reuse: Any = None) -> Any:
    """`tf.layers.dense`: a fully connected layer, `activation(inputs @ kernel + bias)`.

    Args:
        inputs: a tensor with a known last dimension.
        units: output size.
        name: the variable scope ("dense", "dense_1", ... by default).
        reuse: True / tf.AUTO_REUSE to reuse the variables of a layer of that name.

    Example:
        >>> logits = tf.layers.dense(h, 10, name="logits")
    """
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                  trainable=trainable, name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs)


class Dropout(keras_core.Dropout, Layer):
    """`tf.layers.Dropout(rate=0.5)`: inference (training=False) unless told otherwise."""

    def __init__(self, rate: float = 0.5, noise_shape: Any = None, seed: int | None = None,
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__(rate=rate, noise_shape=noise_shape, seed=seed, name=name, **kwargs)

    def call(self, inputs: Any, training: Any = False) -> Any:
        return super().call(inputs, training=training)


def dropout(inputs: Any, rate: float = 0.5, noise_shape: Any = None, seed: int | None = None,
            training: Any = False, name: str | None = None) -> Any:
    """`tf.layers.dropout`: drops `rate` of the inputs when `training` (bool or tensor).

    Example:
        >>> h = tf.layers.dropout(h, rate=0.4, training=mode == tf.estimator.ModeKeys.TRAIN)
    """
    layer = Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)
    return layer.apply(inputs, training=training)


class Flatten(keras_core.Flatten, Layer):
    """`tf.layers.Flatten`: [batch, ...] -> [batch, product of the rest]."""


def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Any:
    """`tf.layers.flatten`. Example: `tf.layers.flatten(pool2)` -> [batch, 7 * 7 * 64]."""
    return Flatten(name=name, data_format=data_format).apply(inputs)
