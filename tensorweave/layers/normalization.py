"""`tf.layers.batch_normalization` and `tf.layers.BatchNormalization` (TF1).

The moving-average updates go to `tf.GraphKeys.UPDATE_OPS`; run them with the
train op, as TF 1.x programs do:

Example:
    >>> h = tf.layers.batch_normalization(h, training=is_training)
    >>> with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
    ...     train_op = optimizer.minimize(loss)
"""
from __future__ import annotations

from typing import Any

from tensorweave.keras.layers import normalization as keras_norm
from tensorweave.layers.base import Layer
from tensorweave.state.init_ops import Ones, Zeros

_ZEROS = Zeros()  # shared defaults, as TF1 signatures have them
_ONES = Ones()


class BatchNormalization(keras_norm.BatchNormalization, Layer):
    """`tf.layers.BatchNormalization`: inference (training=False) unless told otherwise."""

    def call(self, inputs: Any, training: Any = False) -> Any:
        return super().call(inputs, training=training)


def batch_normalization(inputs: Any, axis: int = -1, momentum: float = 0.99,
                        epsilon: float = 1e-3, center: bool = True, scale: bool = True,
                        beta_initializer: Any = _ZEROS, gamma_initializer: Any = _ONES,
                        moving_mean_initializer: Any = _ZEROS,
                        moving_variance_initializer: Any = _ONES,
                        beta_regularizer: Any = None, gamma_regularizer: Any = None,
                        beta_constraint: Any = None, gamma_constraint: Any = None,
                        training: Any = False, trainable: bool = True, name: str | None = None,
                        reuse: Any = None, renorm: bool = False, renorm_clipping: Any = None,
                        renorm_momentum: float = 0.99, fused: bool | None = None,
                        virtual_batch_size: int | None = None, adjustment: Any = None) -> Any:
    """`tf.layers.batch_normalization`: batch statistics when `training`, moving ones otherwise.

    Args:
        inputs: the tensor to normalize over every axis but `axis`.
        training: a Python bool or a boolean tensor (False by default: inference!).
        momentum, epsilon, center, scale: as for the Keras layer.
        name, reuse: the variable scope and whether to reuse it.

    Raises:
        ValueError: for renorm / virtual_batch_size / adjustment, which are not supported.

    Example:
        >>> h = tf.layers.batch_normalization(h, training=True, name="bn1")
    """
    if renorm_clipping is not None:
        raise ValueError("batch_normalization: renorm_clipping is not supported (renorm is "
                         "not implemented); leave it None.")
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
        fused=fused, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
        trainable=trainable, name=name, _scope=name, _reuse=reuse)
    return layer.apply(inputs, training=training)
