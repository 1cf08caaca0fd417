"""The TF 1.x cells: BasicRNNCell, BasicLSTMCell, LSTMCell and GRUCell.

Variable names, shapes, initializers and gate order are TF 1.x's
(rnn_cell_impl), so checkpoints carry over both ways (d: input depth, n: units):

- BasicRNNCell: kernel [d+n, n], bias [n] (zeros);
- BasicLSTMCell: kernel [d+n, 4n], bias [4n] (zeros); gates i, j, f, o;
- LSTMCell: kernel [d+p, 4n], bias [4n]; w_f_diag, w_i_diag, w_o_diag [n] with
  peepholes; projection/kernel [n, p] with num_proj p (else p = n);
- GRUCell: gates/kernel [d+n, 2n], gates/bias [2n] (ones); candidate/kernel
  [d+n, n], candidate/bias [n] (zeros).

Kernels default to the scope's initializer, else glorot_uniform (get_variable's).

Example:
    >>> cell = tf.nn.rnn_cell.LSTMCell(128, use_peepholes=True, num_proj=64)
    >>> outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.array.join_ops import concat, split
from tensorweave.ops.math.binary_ops import add, multiply, subtract
from tensorweave.ops.math.clip_ops import clip_by_value
from tensorweave.ops.math.matmul_ops import matmul
from tensorweave.ops.math.unary_ops import sigmoid, tanh
from tensorweave.ops.nn.layer_ops import bias_add
from tensorweave.rnn.cell_base import LSTMStateTuple, RNNCell
from tensorweave.state import init_ops
from tensorweave.state.variable_scope import variable_scope

__all__ = ["BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell"]


def _input_depth(cell: RNNCell, inputs_shape: TensorShape) -> int:
    depth = dimension_value(inputs_shape[-1]) if inputs_shape.ndims else None
    if depth is None:
        raise ValueError(f"{type(cell).__name__}: expected inputs.shape[-1] to be known, saw "
                         f"shape: {inputs_shape}; set the input depth with "
                         "x.set_shape([None, depth]) or a placeholder of shape [None, depth]")
    return int(depth)


def _check_units(cell: str, num_units: Any) -> int:
    num_units = dimension_value(num_units)  # TF 1.x code passes x.shape[-1] as it is
    if isinstance(num_units, bool) or not isinstance(num_units, int) or num_units <= 0:
        raise ValueError(f"{cell}: num_units must be a positive int, got {num_units!r}")
    return num_units


class BasicRNNCell(RNNCell):
    """`output = new_state = activation(W [inputs, state] + b)`.

    Args:
        num_units: the state (and output) size.
        activation: default tanh.

    Example:
        >>> cell = tf.nn.rnn_cell.BasicRNNCell(32)
    """

    def __init__(self, num_units: int, activation: Callable[..., Any] | None = None,
                 reuse: Any = None, name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = _check_units("BasicRNNCell", num_units)
        self._activation = activation or tanh

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape: TensorShape) -> None:
        d = _input_depth(self, inputs_shape)
        self._kernel = self.add_variable("kernel", [d + self._num_units, self._num_units])
        self._bias = self.add_variable("bias", [self._num_units],
                                       initializer=init_ops.zeros_initializer())

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        out = self._activation(bias_add(matmul(concat([inputs, state], 1), self._kernel),
                                        self._bias))
        return out, out


class BasicLSTMCell(RNNCell):
    """The LSTM of Zaremba et al.: no peepholes, no projection, `forget_bias` added
    to the forget gate.

    Args:
        num_units: the cell (and output) size.
        forget_bias: added to the forget gate's pre-activation (1.0 helps early training).
        state_is_tuple: state is LSTMStateTuple(c, h); else c and h concatenated.
        activation: default tanh.

    Example:
        >>> cell = tf.nn.rnn_cell.BasicLSTMCell(64, forget_bias=1.0)
        >>> outputs, (c, h) = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    """

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Callable[..., Any] | None = None, reuse: Any = None,
                 name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = _check_units("BasicLSTMCell", num_units)
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or tanh

    @property
    def state_size(self) -> Any:
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape: TensorShape) -> None:
        d = _input_depth(self, inputs_shape)
        n = self._num_units
        self._kernel = self.add_variable("kernel", [d + n, 4 * n])
        self._bias = self.add_variable("bias", [4 * n], initializer=init_ops.zeros_initializer())

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = split(state, 2, axis=1)
        gates = bias_add(matmul(concat([inputs, h], 1), self._kernel), self._bias)
        i, j, f, o = split(gates, 4, axis=1)  # TF's order: input, new input, forget, output
        new_c = add(multiply(c, sigmoid(add(f, self._forget_bias))),
                    multiply(sigmoid(i), self._activation(j)))
        new_h = multiply(self._activation(new_c), sigmoid(o))
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple \
            else concat([new_c, new_h], 1)
        return new_h, new_state


class LSTMCell(RNNCell):
    """The full LSTM: optional peepholes, cell clipping and an output projection.

    Args:
        num_units: the cell size.
        use_peepholes: diagonal peephole connections (w_f_diag, w_i_diag, w_o_diag).
        cell_clip: clip the cell state to [-cell_clip, cell_clip].
        initializer: for the kernel, peepholes and projection.
        num_proj: project the output (and h) to this size.
        proj_clip: clip the projected output to [-proj_clip, proj_clip].
        num_unit_shards, num_proj_shards: TF's deprecated sharding; only None or 1.
        forget_bias: added to the forget gate's pre-activation.
        state_is_tuple: LSTMStateTuple(c, m) or their concatenation.
        activation: default tanh.

    Raises:
        ValueError: sharding asked for (use a partitioner on the variable scope).

    Example:
        >>> cell = tf.nn.rnn_cell.LSTMCell(128, use_peepholes=True, cell_clip=3.0,
        ...                                num_proj=64, proj_clip=1.0)
    """

    def __init__(self, num_units: int, use_peepholes: bool = False,
                 cell_clip: float | None = None, initializer: Any = None,
                 num_proj: int | None = None, proj_clip: float | None = None,
                 num_unit_shards: int | None = None, num_proj_shards: int | None = None,
                 forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Callable[..., Any] | None = None, reuse: Any = None,
                 name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        if (num_unit_shards or 1) != 1 or (num_proj_shards or 1) != 1:
            raise ValueError("LSTMCell: num_unit_shards/num_proj_shards are not supported (TF "
                             "deprecated them); give the variable scope a partitioner instead")
        self._num_units = _check_units("LSTMCell", num_units)
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or tanh

    @property
    def state_size(self) -> Any:
        m = self._num_proj or self._num_units
        return LSTMStateTuple(self._num_units, m) if self._state_is_tuple \
            else self._num_units + m

    output_size = property(lambda self: self._num_proj or self._num_units)

    def build(self, inputs_shape: TensorShape) -> None:
        d = _input_depth(self, inputs_shape)
        n, init = self._num_units, self._initializer
        h_depth = self._num_proj or n
        self._kernel = self.add_variable("kernel", [d + h_depth, 4 * n], initializer=init)
        self._bias = self.add_variable("bias", [4 * n], initializer=init_ops.zeros_initializer())
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", [n], initializer=init)
            self._w_i_diag = self.add_variable("w_i_diag", [n], initializer=init)
            self._w_o_diag = self.add_variable("w_o_diag", [n], initializer=init)
        if self._num_proj is not None:
            with variable_scope("projection"):
                self._proj_kernel = self.add_variable("kernel", [n, self._num_proj],
                                                      initializer=init)

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev, m_prev = split(state, [self._num_units, self._num_proj or self._num_units],
                                   axis=1)
        gates = bias_add(matmul(concat([inputs, m_prev], 1), self._kernel), self._bias)
        i, j, f, o = split(gates, 4, axis=1)
        act = self._activation
        if self._use_peepholes:
            c = add(multiply(sigmoid(add(add(f, self._forget_bias),
                                         multiply(self._w_f_diag, c_prev))), c_prev),
                    multiply(sigmoid(add(i, multiply(self._w_i_diag, c_prev))), act(j)))
        else:
            c = add(multiply(sigmoid(add(f, self._forget_bias)), c_prev),
                    multiply(sigmoid(i), act(j)))
        if self._cell_clip is not None:
            c = clip_by_value(c, -self._cell_clip, self._cell_clip)
        o_in = add(o, multiply(self._w_o_diag, c)) if self._use_peepholes else o
        m = multiply(sigmoid(o_in), act(c))
        if self._num_proj is not None:
            m = matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else concat([c, m], 1)
        return m, new_state


class GRUCell(RNNCell):
    """Gated recurrent unit (Cho et al. 2014): reset and update gates, then a candidate.

    Args:
        num_units: the state (and output) size.
        activation: of the candidate; default tanh.
        kernel_initializer: for both kernels (default: the scope's, else glorot_uniform).
        bias_initializer: for both biases (default: gates 1.0, candidate 0.0).

    Example:
        >>> cell = tf.nn.rnn_cell.GRUCell(64)
    """

    def __init__(self, num_units: int, activation: Callable[..., Any] | None = None,
                 reuse: Any = None, kernel_initializer: Any = None,
                 bias_initializer: Any = None, name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = _check_units("GRUCell", num_units)
        self._activation = activation or tanh
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape: TensorShape) -> None:
        d = _input_depth(self, inputs_shape)
        n, b_init = self._num_units, self._bias_initializer
        with variable_scope("gates"):
            self._gate_kernel = self.add_variable("kernel", [d + n, 2 * n],
                                                  initializer=self._kernel_initializer)
            self._gate_bias = self.add_variable(
                "bias", [2 * n], initializer=b_init or init_ops.constant_initializer(1.0))
        with variable_scope("candidate"):
            self._candidate_kernel = self.add_variable("kernel", [d + n, n],
                                                       initializer=self._kernel_initializer)
            self._candidate_bias = self.add_variable(
                "bias", [n], initializer=b_init or init_ops.zeros_initializer())

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        gates = sigmoid(bias_add(matmul(concat([inputs, state], 1), self._gate_kernel),
                                 self._gate_bias))
        r, u = split(gates, 2, axis=1)
        cand = self._activation(bias_add(
            matmul(concat([inputs, multiply(r, state)], 1), self._candidate_kernel),
            self._candidate_bias))
        new_h = add(multiply(u, state), multiply(subtract(1.0, u), cand))
        return new_h, new_h
