"""Core Keras layers: Dense, Activation, Dropout, Flatten, Reshape, Lambda.

Example:
    >>> h = tf.keras.layers.Dense(128, activation="relu")(x)     # dense/kernel:0
    >>> h = tf.keras.layers.Dropout(0.4)(h, training=True)
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.keras import activations, initializers, regularizers
from tensorweave.keras.engine.base_layer import Layer
from tensorweave.keras.layers.layer_utils import (
    normalize_data_format, smart_cond, static_bool)
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn import layer_ops


def _product(dims: list[int | None]) -> int | None:
    """The product of the dimensions, or None if one is unknown."""
    out = 1
    for d in dims:
        if d is None:
            return None
        out *= int(d)
    return out


def _cast_inputs(x: Tensor, dtype: _dt.DType | None) -> Tensor:
    if dtype is not None and x.dtype.base_dtype != dtype:
        return math_ops.cast(x, dtype)
    return x


class Dense(Layer):
    """`activation(inputs @ kernel + bias)` over the last axis of the inputs.

    Args:
        units: size of the output's last dimension.
        activation: a name ("relu") or a callable; None is linear.
        use_bias: whether to add a bias.
        kernel_initializer, bias_initializer: initializers (glorot_uniform, zeros).
        kernel_regularizer, bias_regularizer: weight penalties added to `losses`.

    Example:
        >>> tf.keras.layers.Dense(10, input_shape=(64,))
    """

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.supports_masking = True
        if int(units) <= 0:
            raise ValueError(f"Dense: units must be a positive integer, got {units!r}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        if shape.ndims is not None and shape.ndims < 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected min_ndim=2, found ndim={shape.ndims}.")
        last = shape[-1] if shape.ndims else None
        last = getattr(last, "value", last)
        if last is None:
            raise ValueError(f"The last dimension of the inputs to `Dense` ({self.name}) "
                             f"should be defined. Found `None` (input shape {shape}).")
        self.kernel = self.add_weight("kernel", [int(last), self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = (self.add_weight("bias", [self.units], initializer=self.bias_initializer,
                                     regularizer=self.bias_regularizer,
                                     constraint=self.bias_constraint)
                     if self.use_bias else None)
        super().build(input_shape)

    def call(self, inputs: Any) -> Any:
        x = _cast_inputs(inputs, self.dtype)
        rank = x.shape.ndims
        if rank is not None and rank > 2:
            # [..., in] -> [-1, in] @ kernel -> [..., units]
            flat = array_ops.reshape(x, [-1, int(self.kernel.shape[0])])
            out = math_ops.matmul(flat, self.kernel)
            out_shape = array_ops.concat([array_ops.shape(x)[:-1], [self.units]], 0)
            out = array_ops.reshape(out, out_shape)
            out.set_shape(x.shape[:-1].concatenate([self.units]))
        else:
            out = math_ops.matmul(x, self.kernel)
        if self.bias is not None:
            out = layer_ops.bias_add(out, self.bias)
        return self.activation(out)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape)
        if shape.ndims is None or shape.ndims < 2 or shape.as_list()[-1] is None:
            raise ValueError(f"The innermost dimension of input_shape must be defined, but "
                             f"saw: {shape}")
        return shape[:-1].concatenate([self.units])

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias}


class Activation(Layer):
    """Applies an activation function. Example: `tf.keras.layers.Activation("relu")`."""

    _keeps_shape = True
    supports_masking = True

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs: Any) -> Any:
        return self.activation(inputs)


class Dropout(Layer):
    """Drops a `rate` share of the inputs while training (kept ones scaled up).

    When `training` is not given, the Keras learning phase decides (False unless
    fed); with training=False the inputs pass through unchanged.

    Example:
        >>> h = tf.keras.layers.Dropout(0.4)(h, training=mode == "train")
    """

    _keeps_shape = True
    supports_masking = True

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(rate, Tensor):  # a tensor rate (a placeholder) is checked by tf.nn
            if not 0.0 <= float(rate) <= 1.0:
                raise ValueError(f"Dropout: rate must be in [0, 1], got {rate!r}.")
            rate = float(rate)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def _noise_shape(self, x: Tensor) -> Any:
        if self.noise_shape is None:
            return None
        dims = [array_ops.shape(x)[i] if d is None else d
                for i, d in enumerate(self.noise_shape)]
        return array_ops.stack(dims)

    def call(self, inputs: Any, training: Any = None) -> Any:
        if (not isinstance(self.rate, Tensor) and self.rate == 0.0) \
                or static_bool(training) is False:
            return identity(inputs)

        def dropped() -> Any:
            return layer_ops.dropout(inputs, rate=self.rate,
                                     noise_shape=self._noise_shape(inputs), seed=self.seed)

        out = smart_cond(training, dropped, lambda: identity(inputs))
        out.set_shape(inputs.shape)
        return out

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


class Flatten(Layer):
    """Flattens all but the batch dimension: [batch, d1, d2, ...] -> [batch, d1*d2*...].

    Example:
        >>> tf.keras.layers.Flatten()(images).shape.as_list()     # [None, 784]
    """

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0] if dims else None, _product(dims[1:])])

    def call(self, inputs: Any) -> Any:
        x = inputs
        rank = x.shape.ndims
        if self.data_format == "channels_first" and rank is not None and rank > 2:
            x = array_ops.transpose(x, [0] + list(range(2, rank)) + [1])
        dims = x.shape.as_list()[1:] if rank is not None else None
        if dims is not None and all(d is not None for d in dims):
            out = array_ops.reshape(x, [-1, int(np.prod(dims, dtype=np.int64))])
            out.set_shape([x.shape[0] if rank else None, int(np.prod(dims, dtype=np.int64))])
            return out
        out = array_ops.reshape(x, array_ops.stack([array_ops.shape(x)[0], -1]))
        if rank is not None:
            out.set_shape([x.shape[0] if rank else None, None])
        return out


class Reshape(Layer):
    """Reshapes each example to `target_shape` (the batch dimension is kept).

    Example:
        >>> tf.keras.layers.Reshape((28, 28, 1), input_shape=(784,))
    """

    def __init__(self, target_shape: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(1 for d in self.target_shape if d == -1) > 1:
            raise ValueError(f"Reshape {self.name}: target_shape {self.target_shape} may hold "
                             "at most one -1.")

    def call(self, inputs: Any) -> Any:
        known = [d for d in self.target_shape if d != -1]
        if -1 not in self.target_shape:
            out = array_ops.reshape(inputs, [-1, *self.target_shape])
        else:
            batch = array_ops.shape(inputs)[:1]
            out = array_ops.reshape(inputs, array_ops.concat([batch, list(self.target_shape)],
                                                             0))
        dims = inputs.shape.as_list()[1:] if inputs.shape.ndims is not None else None
        target = list(self.target_shape)
        if -1 in target and dims is not None and all(d is not None for d in dims):
            target[target.index(-1)] = int(np.prod(dims)) // max(1, int(np.prod(known)))
        out.set_shape([inputs.shape[0] if inputs.shape.ndims else None]
                      + [None if d == -1 else d for d in target])
        return out

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        target: list[int | None] = list(self.target_shape)
        if -1 in target:
            total = _product(dims[1:])
            known = _product([d for d in target if d != -1]) or 1
            target[target.index(-1)] = total // known if total is not None else None
        return TensorShape([dims[0]] + target)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "target_shape": self.target_shape}


class Lambda(Layer):
    """Wraps a function of tensors as a layer. Example: `Lambda(lambda x: x * 2)`."""

    def __init__(self, function: Callable[..., Any], output_shape: Any = None,
                 mask: Any = None, arguments: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        # TF 1.x's order. output_shape is not needed: the ops give the static shape.
        super().__init__(**kwargs)
        self.function, self.arguments = function, dict(arguments or {})
        self.mask = mask

    def call(self, inputs: Any) -> Any:
        return self.function(inputs, **self.arguments)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """TF's: `mask(inputs, mask)` when callable, else the fixed `mask` given."""
        if callable(self.mask):
            return self.mask(inputs, mask)
        if self.mask is not None:
            return self.mask
        return super().compute_mask(inputs, mask)


class Masking(Layer):
    """Masks the time steps whose features all equal `mask_value` (for recurrent layers).

    Example:
        >>> h = tf.keras.layers.Masking(mask_value=0.0)(padded_features)
    """

    _keeps_shape = True
    supports_masking = True

    def __init__(self, mask_value: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return math_ops.reduce_any(math_ops.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs: Any) -> Any:
        keep = self.compute_mask(inputs)
        return math_ops.multiply(inputs, math_ops.cast(array_ops.expand_dims(keep, -1),
                                                       inputs.dtype.base_dtype))
