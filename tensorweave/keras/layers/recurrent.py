"""Keras recurrent layers: SimpleRNN, LSTM, GRU (TF 1.x defaults), unrolled over time.

The time steps are unrolled in the graph, so the inputs' number of steps must be
known when the layer is called (e.g. `Embedding(..., input_length=T)` or a
placeholder of shape [None, T, features]). Weights and gate order follow TF's
Keras, so checkpoints carry over: kernel [features, k*units], recurrent_kernel
[units, k*units], bias [k*units] (LSTM gates i, f, c, o; GRU z, r, h), named
`lstm/kernel:0` as TF 1.x's Keras names them (TF 2's adds a cell scope,
`lstm/lstm_cell/kernel:0`).

Example:
    >>> h = tf.keras.layers.Embedding(1000, 32, input_length=20)(word_ids)
    >>> h = tf.keras.layers.LSTM(64)(h)                       # [batch, 64]
    >>> seq, state_h, state_c = tf.keras.layers.LSTM(8, return_sequences=True,
    ...                                              return_state=True)(h_seq)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.keras import activations, initializers, regularizers
from tensorweave.keras.engine.base_layer import Layer
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops


# TF 1.x's LSTM/GRU parameters after bias_initializer (and LSTM's unit_forget_bias).
_RNN_TAIL = ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
             "activity_regularizer", "kernel_constraint", "recurrent_constraint",
             "bias_constraint", "dropout", "recurrent_dropout", "implementation",
             "return_sequences", "return_state", "go_backwards", "stateful", "unroll")


def _rnn_positional(args: tuple[Any, ...], kwargs: dict[str, Any],
                    with_reset_after: bool) -> dict[str, Any]:
    """Positional arguments past bias_initializer named as TF 1.x's LSTM/GRU name them."""
    names = _RNN_TAIL + (("reset_after",) if with_reset_after else ())
    if len(args) > len(names):
        raise TypeError(f"too many positional arguments ({len(args)} after "
                        f"bias_initializer; TF takes {names})")
    for name, value in zip(names, args):
        if name in kwargs:
            raise TypeError(f"got multiple values for argument {name!r}")
        kwargs[name] = value
    return kwargs


class _Recurrent(Layer):
    """What the three layers share: weights, unrolling, sequences and states."""

    _gates = 1
    _states = 1
    supports_masking = True

    def __init__(self, units: int, activation: Any = "tanh", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, recurrent_constraint: Any = None,
                 bias_constraint: Any = None, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False, stateful: bool = False,
                 unroll: bool = False, **kwargs: Any) -> None:
        # TF 1.x's SimpleRNN order; LSTM and GRU insert their own parameters as TF does.
        if dropout or recurrent_dropout or stateful:
            raise ValueError(f"{type(self).__name__}: dropout, recurrent_dropout and stateful "
                             "are not supported; apply a Dropout layer to the inputs instead.")
        if any(c is not None for c in
               (kernel_constraint, recurrent_constraint, bias_constraint)):
            raise ValueError(f"{type(self).__name__}: weight constraints are not supported "
                             "(tensorweave's optimizers do not apply them).")
        kwargs.pop("implementation", None)   # a speed hint only; the result is the same
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards = go_backwards

    def _bias_shape(self) -> list[int]:
        return [self._gates * self.units]

    def _bias_init(self) -> Any:
        return self.bias_initializer

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        features = shape.as_list()[-1] if shape.ndims == 3 else None
        if features is None:
            raise ValueError(f"Input 0 of layer {self.name} must be [batch, timesteps, "
                             f"features] with known features; got shape {shape}.")
        width = self._gates * self.units
        self.kernel = self.add_weight("kernel", [features, width],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", [self.units, width],
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer)
        self.bias = (self.add_weight("bias", self._bias_shape(), initializer=self._bias_init(),
                                     regularizer=self.bias_regularizer)
                     if self.use_bias else None)
        self.built = True

    def _step(self, x_proj: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        raise TypeError(f"{type(self).__name__} is abstract; use SimpleRNN, LSTM or GRU.")

    def _input_projection(self, x: Tensor) -> Tensor:
        """x @ kernel (+ the input bias) for all steps at once: [batch, T, gates*units]."""
        steps = x.shape.as_list()[1]
        flat = array_ops.reshape(x, [-1, self.kernel.shape.as_list()[0]])
        proj = math_ops.matmul(flat, self.kernel)
        if self.bias is not None:
            proj = math_ops.add(proj, self._input_bias())
        return array_ops.reshape(proj, array_ops.stack(
            [array_ops.shape(x)[0], steps, self._gates * self.units]))

    def _input_bias(self) -> Any:
        return self.bias

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        out = mask if self.return_sequences else None
        return [out] + [None] * self._states if self.return_state else out

    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             initial_state: Any = None) -> Any:  # TF 1.x's order
        steps = inputs.shape.as_list()[1] if inputs.shape.ndims == 3 else None
        if steps is None:
            raise ValueError(f"{self.name}: the number of time steps must be known (the "
                             f"layers are unrolled); got input shape {inputs.shape}. Give "
                             "Embedding an input_length or the Input a fixed length.")
        x = math_ops.cast(inputs, self.dtype) if inputs.dtype.base_dtype != self.dtype \
            else inputs
        proj = array_ops.unstack(self._input_projection(x), steps, axis=1)
        keep = (array_ops.unstack(math_ops.cast(mask, "bool"), steps, axis=1)
                if mask is not None else [None] * steps)
        if self.go_backwards:
            proj, keep = proj[::-1], keep[::-1]
        states = self._initial_states(x, initial_state)
        outputs: list[Tensor] = []
        for x_t, keep_t in zip(proj, keep):
            h, new_states = self._step(x_t, states)
            if keep_t is not None:
                # A masked step keeps the states and repeats the last output (Keras).
                prev = outputs[-1] if outputs else array_ops.zeros_like(h)
                h = math_ops.where(keep_t, h, prev)
                new_states = [math_ops.where(keep_t, n, o) for n, o in zip(new_states, states)]
            states = new_states
            outputs.append(h)
        out = array_ops.stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        return [out] + states if self.return_state else out

    def _initial_states(self, x: Tensor, given: Any) -> list[Tensor]:
        if given is not None:
            given = list(given) if isinstance(given, (list, tuple)) else [given]
            if len(given) != self._states:
                raise ValueError(f"{self.name} expects {self._states} initial state(s), got "
                                 f"{len(given)}.")
            return given
        zeros = array_ops.fill(array_ops.stack([array_ops.shape(x)[0], self.units]),
                               math_ops.cast(0.0, self.dtype))
        return [zeros] * self._states

    def compute_output_shape(self, input_shape: Any) -> Any:
        dims = TensorShape(input_shape).as_list()
        out = TensorShape([dims[0], dims[1], self.units] if self.return_sequences
                          else [dims[0], self.units])
        if self.return_state:
            return [out] + [TensorShape([dims[0], self.units])] * self._states
        return out


class SimpleRNN(_Recurrent):
    """h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)."""

    def _step(self, x_proj: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        h = self.activation(math_ops.add(x_proj, math_ops.matmul(states[0],
                                                                 self.recurrent_kernel)))
        return h, [h]


class LSTM(_Recurrent):
    """Long short-term memory; TF 1.x's defaults (recurrent_activation="hard_sigmoid",
    unit_forget_bias=True: the forget gate's bias starts at 1)."""

    _gates = 4
    _states = 2

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "hard_sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, *args: Any, **kwargs: Any) -> None:
        # TF 1.x's order: after bias_initializer, unit_forget_bias, then (as *args)
        # kernel_regularizer ... bias_constraint, dropout, recurrent_dropout,
        # implementation, return_sequences ... unroll.
        super().__init__(units, activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer,
                         **_rnn_positional(args, kwargs, with_reset_after=False))
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias

    def _bias_init(self) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, units = self.bias_initializer, self.units

        def init(shape: Any, dtype: Any = None, partition_info: Any = None) -> Any:
            parts = [base([units], dtype=dtype), array_ops.ones([units], dtype=dtype),
                     base([2 * units], dtype=dtype)]
            return array_ops.concat(parts, 0)
        return init

    def _step(self, x_proj: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        h_prev, c_prev = states
        z = math_ops.add(x_proj, math_ops.matmul(h_prev, self.recurrent_kernel))
        zi, zf, zc, zo = array_ops.split(z, 4, axis=1)
        i, f = self.recurrent_activation(zi), self.recurrent_activation(zf)
        c = math_ops.add(math_ops.multiply(f, c_prev),
                         math_ops.multiply(i, self.activation(zc)))
        h = math_ops.multiply(self.recurrent_activation(zo), self.activation(c))
        return h, [h, c]


class GRU(_Recurrent):
    """Gated recurrent unit; TF 1.x's defaults (recurrent_activation="hard_sigmoid",
    reset_after=False). reset_after=True (TF 2's default) keeps a second, recurrent
    bias and applies the reset gate after the recurrent matmul."""

    _gates = 3

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "hard_sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 *args: Any, **kwargs: Any) -> None:
        # TF 1.x's order: after bias_initializer, (as *args) kernel_regularizer ...
        # unroll as for LSTM, then reset_after.
        rest = _rnn_positional(args, kwargs, with_reset_after=True)
        reset_after = bool(rest.pop("reset_after", False))
        super().__init__(units, activation, use_bias, kernel_initializer,
                         recurrent_initializer, bias_initializer, **rest)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = reset_after

    def _bias_shape(self) -> list[int]:
        return [2, 3 * self.units] if self.reset_after else [3 * self.units]

    def _input_bias(self) -> Any:
        return convert_to_tensor(self.bias)[0] if self.reset_after else self.bias

    def _step(self, x_proj: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        h_prev = states[0]
        u = self.units
        xz, xr, xh = array_ops.split(x_proj, 3, axis=1)
        rk = convert_to_tensor(self.recurrent_kernel)
        if self.reset_after:
            inner = math_ops.matmul(h_prev, rk)
            if self.bias is not None:
                inner = math_ops.add(inner, convert_to_tensor(self.bias)[1])
            hz, hr, hh = array_ops.split(inner, 3, axis=1)
            z = self.recurrent_activation(math_ops.add(xz, hz))
            r = self.recurrent_activation(math_ops.add(xr, hr))
            cand = self.activation(math_ops.add(xh, math_ops.multiply(r, hh)))
        else:
            z = self.recurrent_activation(math_ops.add(xz, math_ops.matmul(h_prev,
                                                                           rk[:, :u])))
            r = self.recurrent_activation(math_ops.add(xr, math_ops.matmul(h_prev,
                                                                           rk[:, u:2 * u])))
            cand = self.activation(math_ops.add(xh, math_ops.matmul(
                math_ops.multiply(r, h_prev), rk[:, 2 * u:])))
        h = math_ops.add(math_ops.multiply(z, h_prev),
                         math_ops.multiply(math_ops.subtract(1.0, z), cand))
        return h, [h]
