"""`tf.keras.layers.BatchNormalization` in graph mode.

Training normalizes with the batch's mean and variance and adds two updates that
move `moving_mean`/`moving_variance` towards them (`layer.updates`; tf.layers also
puts them in `tf.GraphKeys.UPDATE_OPS`). Inference normalizes with the moving
statistics. When `training` is a tensor both paths are built and it chooses; the
updates then move the statistics only when it is true.

For 4-D inputs normalized over the channel axis TF 1.x uses its fused kernel, whose
moving variance takes the unbiased batch variance (n / (n - 1) times the biased
one); we do the same so moving statistics match TF's.

Example:
    >>> bn = tf.keras.layers.BatchNormalization()
    >>> y = bn(x, training=True)
    >>> train_op = tf.group(opt.minimize(loss), *bn.updates)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.keras import initializers, regularizers
from tensorweave.keras.engine.base_layer import Layer
from tensorweave.keras.layers.layer_utils import smart_cond, static_bool, training_as_float
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn import layer_ops
from tensorweave.ops.state import state_ops
from tensorweave.state.variable_scope_core import get_variable_scope


def batch_normalization(x: Tensor, mean: Tensor, variance: Tensor, offset: Any, scale: Any,
                        epsilon: float) -> Tensor:
    """x * scale / sqrt(variance + epsilon) + (offset - mean * that), as tf.nn computes it."""
    with x.graph.name_scope("batchnorm"):
        inv = math_ops.rsqrt(math_ops.add(variance, epsilon))
        if scale is not None:
            inv = math_ops.multiply(inv, scale)
        shift = math_ops.negative(math_ops.multiply(mean, inv))
        if offset is not None:
            shift = math_ops.add(offset, shift)
        return math_ops.add(math_ops.multiply(x, inv), shift)


class BatchNormalization(Layer):
    """Normalizes each feature over the batch (and spatial axes), then scales and shifts.

    Args:
        axis: the feature axis (-1: channels last; 1 for channels_first images).
        momentum: the moving averages keep `momentum` of their value each update.
        epsilon: added to the variance before the square root.
        center, scale: whether to learn `beta` (offset) and `gamma` (scale).
        *_initializer, *_regularizer: for beta, gamma and the moving statistics.
        fused: None/True to match TF's fused kernel on 4-D inputs (unbiased moving
            variance), False for the plain formula (biased).

    Example:
        >>> y = tf.keras.layers.BatchNormalization(momentum=0.9)(h, training=is_train)
    """

    _keeps_shape = True
    supports_masking = True

    def __init__(self, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", moving_mean_initializer: Any = "zeros",
                 moving_variance_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, renorm: bool = False,
                 renorm_clipping: Any = None, renorm_momentum: float = 0.99,
                 fused: bool | None = None, trainable: bool = True,
                 virtual_batch_size: int | None = None, adjustment: Any = None,
                 name: str | None = None, **kwargs: Any) -> None:
        # TF 1.x's parameter order, renorm_* included, so positional calls bind alike.
        if (renorm or renorm_clipping is not None or virtual_batch_size is not None
                or adjustment is not None):
            raise ValueError(f"BatchNormalization: renorm, renorm_clipping, virtual_batch_size "
                             f"and adjustment are not supported (got renorm={renorm!r}, "
                             f"virtual_batch_size={virtual_batch_size!r}); leave them at "
                             "their defaults.")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.axis = axis
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self.fused = fused
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        if shape.ndims is None:
            raise ValueError(f"Input to {self.name} (BatchNormalization) has undefined rank; "
                             "give the input a static rank.")
        self._rank = shape.ndims
        axis = self.axis if self.axis >= 0 else self.axis + self._rank
        if not 0 <= axis < self._rank:
            raise ValueError(f"Invalid axis {self.axis} for BatchNormalization {self.name} on "
                             f"inputs of rank {self._rank}.")
        self._axis = axis
        dim = shape.as_list()[axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor to {self.name} should have a "
                             f"defined dimension but the layer received an input with shape "
                             f"{shape}.")
        p = [int(dim)]
        self.gamma = (self.add_weight("gamma", p, initializer=self.gamma_initializer,
                                      regularizer=self.gamma_regularizer,
                                      constraint=self.gamma_constraint)
                      if self.scale else None)
        self.beta = (self.add_weight("beta", p, initializer=self.beta_initializer,
                                     regularizer=self.beta_regularizer,
                                     constraint=self.beta_constraint)
                     if self.center else None)
        # As TF's layer: the moving statistics are never partitioned (they are assigned
        # whole), even under a scope whose partitioner splits gamma and beta.
        scope = get_variable_scope()
        partitioner = scope.partitioner
        scope.set_partitioner(None)
        try:
            self.moving_mean = self.add_weight("moving_mean", p, trainable=False,
                                               initializer=self.moving_mean_initializer)
            self.moving_variance = self.add_weight(
                "moving_variance", p, trainable=False,
                initializer=self.moving_variance_initializer)
        finally:
            scope.set_partitioner(partitioner)
        super().build(input_shape)

    def _broadcast(self, v: Any) -> Any:
        """A [C] parameter shaped to broadcast against the inputs along the feature axis."""
        if v is None or self._axis == self._rank - 1:
            return v
        shape = [1] * self._rank
        shape[self._axis] = -1
        return array_ops.reshape(v, shape)

    def _uses_fused_variance(self) -> bool:
        return self.fused is not False and self._rank == 4 and self._axis in (1, 3)

    def call(self, inputs: Any, training: Any = None) -> Any:
        x = inputs
        reduce_axes = [i for i in range(self._rank) if i != self._axis]
        gamma, beta = self._broadcast(self.gamma), self._broadcast(self.beta)

        def inference() -> Tensor:
            return batch_normalization(x, self._broadcast(self.moving_mean),
                                       self._broadcast(self.moving_variance), beta, gamma,
                                       self.epsilon)

        if static_bool(training) is False:
            return inference()
        mean, variance = layer_ops.moments(x, reduce_axes)

        def train() -> Tensor:
            return batch_normalization(x, self._broadcast(mean), self._broadcast(variance),
                                       beta, gamma, self.epsilon)

        out = smart_cond(training, train, inference)
        out.set_shape(x.shape)
        self._add_moving_updates(x, mean, variance, training, reduce_axes)
        return out

    def _add_moving_updates(self, x: Tensor, mean: Tensor, variance: Tensor, training: Any,
                            reduce_axes: list[int]) -> None:
        dtype = x.dtype.base_dtype
        if self._uses_fused_variance():
            n = math_ops.cast(math_ops.divide(array_ops.size(x), array_ops.size(mean)), dtype)
            variance = math_ops.multiply(variance, math_ops.divide(
                n, math_ops.maximum(math_ops.subtract(n, 1.0), 1.0)))
        decay = math_ops.multiply(1.0 - self.momentum, training_as_float(training, dtype))
        updates = []
        for var, value in ((self.moving_mean, mean), (self.moving_variance, variance)):
            delta = math_ops.multiply(math_ops.subtract(var, value), decay)
            updates.append(state_ops.assign_sub(var, delta, name="AssignMovingAvg").op)
        self.add_update(updates, inputs=x)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale}
