"""Keras layer wrappers: TimeDistributed and Bidirectional.

Example:
    >>> h = tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(8))(seq)   # per step
    >>> h = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(16))(seq)     # [b, 32]
"""
from __future__ import annotations

import copy
from typing import Any

from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.keras.engine.base_layer import Layer
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops


class TimeDistributed(Layer):
    """Applies `layer` to every time step of [batch, steps, ...] (one set of weights).

    Raises:
        ValueError: if the wrapped object is not a Keras layer.
    """

    supports_masking = True

    def __init__(self, layer: Layer, **kwargs: Any) -> None:
        if not isinstance(layer, Layer):
            raise ValueError(f"TimeDistributed wraps a Keras layer; got {layer!r}.")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape: Any) -> None:
        # The wrapped layer's weights live in this layer's scope ("time_distributed/kernel").
        dims = TensorShape(input_shape).as_list()
        if len(dims) < 3:
            raise ValueError(f"TimeDistributed needs inputs of rank >= 3 ([batch, steps, "
                             f"...]); got shape {dims}.")
        if not self.layer.built:
            self.layer._maybe_build_for_shape(TensorShape([None] + dims[2:]), self.dtype)
        self.built = True

    def call(self, inputs: Any, training: Any = None) -> Any:
        shape = inputs.shape.as_list()
        dyn = array_ops.shape(inputs)
        # [batch, steps, rest...] -> [batch * steps, rest...]
        merged = array_ops.reshape(inputs, array_ops.concat([[-1], dyn[2:]], 0))
        merged.set_shape([None] + shape[2:])
        kwargs = {"training": training} if "training" in self.layer._call_args else {}
        out = self.layer(merged, **kwargs)
        out_dyn = array_ops.shape(out)
        result = array_ops.reshape(out, array_ops.concat([dyn[:2], out_dyn[1:]], 0))
        result.set_shape(shape[:2] + out.shape.as_list()[1:])
        return result

    @property
    def trainable_weights(self) -> list[Any]:
        return self.layer.trainable_weights if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Any]:
        return self.layer.non_trainable_weights if self.trainable else self.layer.weights

    @property
    def updates(self) -> list[Any]:
        return self.layer.updates

    @property
    def losses(self) -> list[Any]:
        return self.layer.losses


class Bidirectional(Layer):
    """Runs a recurrent layer forwards and a copy of it backwards and merges the two.

    Args:
        layer: a recurrent layer (SimpleRNN, LSTM, GRU).
        merge_mode: "concat" (default), "sum", "mul", "ave", or None for a list.

    Raises:
        ValueError: for an unknown merge_mode or a layer without `go_backwards`.
    """

    _MODES = ("concat", "sum", "mul", "ave", None)

    def __init__(self, layer: Layer, merge_mode: str | None = "concat", **kwargs: Any) -> None:
        if merge_mode not in self._MODES:
            raise ValueError(f"Invalid merge mode {merge_mode!r}; use one of {self._MODES}.")
        if not hasattr(layer, "go_backwards"):
            raise ValueError(f"Bidirectional wraps a recurrent layer; got {layer!r}.")
        if getattr(layer, "return_state", False):
            raise ValueError("Bidirectional: return_state=True is not supported.")
        super().__init__(**kwargs)
        self.forward_layer = layer
        self.backward_layer = copy.copy(layer)
        base = layer.name
        for wrapped, direction in ((self.forward_layer, "forward"),
                                   (self.backward_layer, "backward")):
            wrapped._name = f"{direction}_{base}"
            wrapped.built = False
            wrapped._trainable_weights, wrapped._non_trainable_weights = [], []
            wrapped._updates, wrapped._losses, wrapped._inbound_nodes = [], [], []
        self.backward_layer.go_backwards = not layer.go_backwards
        self.merge_mode = merge_mode

    supports_masking = True

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return mask if getattr(self.forward_layer, "return_sequences", False) else None

    def call(self, inputs: Any, training: Any = None) -> Any:
        # The wrapped layers see the inputs' mask themselves (it rides on the tensor).
        forward = self.forward_layer(inputs)
        backward = self.backward_layer(inputs)
        if getattr(self.forward_layer, "return_sequences", False):
            backward = _reverse_steps(backward)
        if self.merge_mode == "concat":
            return array_ops.concat([forward, backward], -1)
        if self.merge_mode == "sum":
            return math_ops.add(forward, backward)
        if self.merge_mode == "mul":
            return math_ops.multiply(forward, backward)
        if self.merge_mode == "ave":
            return math_ops.divide(math_ops.add(forward, backward), 2.0)
        return [forward, backward]

    @property
    def trainable_weights(self) -> list[Any]:
        if not self.trainable:
            return []
        return self.forward_layer.trainable_weights + self.backward_layer.trainable_weights

    @property
    def non_trainable_weights(self) -> list[Any]:
        layers = (self.forward_layer, self.backward_layer)
        if not self.trainable:
            return [w for la in layers for w in la.weights]
        return [w for la in layers for w in la.non_trainable_weights]

    def compute_output_shape(self, input_shape: Any) -> Any:
        one = TensorShape(self.forward_layer.compute_output_shape(input_shape))
        if self.merge_mode == "concat":
            dims = one.as_list()
            dims[-1] = None if dims[-1] is None else 2 * dims[-1]
            return TensorShape(dims)
        return [one, one] if self.merge_mode is None else one


def _reverse_steps(x: Any) -> Any:
    """x with its time axis (1) reversed, so the backward outputs line up with the forward."""
    steps = x.shape.as_list()[1]
    return array_ops.stack(array_ops.unstack(x, steps, axis=1)[::-1], axis=1)
