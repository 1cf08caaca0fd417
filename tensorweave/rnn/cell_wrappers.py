"""Cells made of cells: MultiRNNCell (stacked layers) and the wrappers
DropoutWrapper, ResidualWrapper and DeviceWrapper.

As in TF 1.x, a wrapper adds no variable scope of its own (a wrapped
BasicLSTMCell's variables stay `rnn/basic_lstm_cell/...`), while MultiRNNCell
puts layer i under `multi_rnn_cell/cell_<i>/`.

Example:
    >>> cells = [tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(64),
    ...                                        output_keep_prob=0.8) for _ in range(2)]
    >>> stack = tf.nn.rnn_cell.MultiRNNCell(cells)
    >>> outputs, (s0, s1) = tf.nn.dynamic_rnn(stack, x, dtype=tf.float32)
"""
from __future__ import annotations

import numbers
from typing import Any, Callable

from tensorweave.framework.func_graph import assert_same_structure, flatten, pack_sequence_as
from tensorweave.framework.graph_defaults import device as _device
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, dimension_value
from tensorweave.ops.array.join_ops import concat, split
from tensorweave.ops.math.binary_ops import add
from tensorweave.ops.nn.layer_ops import dropout
from tensorweave.rnn.cell_base import LSTMStateTuple, RNNCell, check_cell, flatten_sizes
from tensorweave.state.variable_scope import variable_scope

__all__ = ["MultiRNNCell", "DropoutWrapper", "ResidualWrapper", "DeviceWrapper"]


def _prepare_cell(cell: Any, inputs_shape: TensorShape, dtype: Any) -> None:
    # Cells that build ahead get their variables now; others (custom cells making
    # variables in call) are built on their first call, which dynamic_rnn runs once
    # outside its loop for exactly that reason.
    if hasattr(cell, "_prepare") and cell._builds_ahead():
        cell._prepare(inputs_shape, dtype)


def _output_shape(batch: Any, size: Any) -> TensorShape:
    leaf = flatten_sizes(size)[0]
    return TensorShape([batch]).concatenate(as_shape([leaf] if isinstance(leaf, int) else leaf))


class MultiRNNCell(RNNCell):
    """Layers of cells: layer i's output is layer i+1's input; the state is the
    tuple of the layers' states.

    Args:
        cells: a non-empty list of cells (distinct objects: one shared cell object
            would share its weights across layers).
        state_is_tuple: tuple of states, or (deprecated) all concatenated.

    Raises:
        TypeError: `cells` is not a list or tuple, or one of them is not a cell.
        ValueError: empty `cells`, or state_is_tuple=False with a tuple state.

    Example:
        >>> cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(32) for _ in range(3)])
    """

    def __init__(self, cells: Any, state_is_tuple: bool = True) -> None:
        super().__init__()
        if not isinstance(cells, (list, tuple)):
            raise TypeError(f"MultiRNNCell: cells must be a list or tuple, but saw: {cells!r}")
        if not cells:
            raise ValueError("MultiRNNCell: must specify at least one cell")
        for i, c in enumerate(cells):
            check_cell(c, "MultiRNNCell", f"cells[{i}]")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple:
            nested = [i for i, c in enumerate(cells) if len(flatten_sizes(c.state_size)) > 1]
            if nested:
                raise ValueError(f"MultiRNNCell: some cells return tuples of states (cells "
                                 f"{nested}), but the flag state_is_tuple is not set; pass "
                                 "state_is_tuple=True")

    @property
    def state_size(self) -> Any:
        if self._state_is_tuple:
            return tuple(c.state_size for c in self._cells)
        return sum(flatten_sizes(c.state_size)[0] for c in self._cells)

    output_size = property(lambda self: self._cells[-1].output_size)

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        if not self._state_is_tuple:
            return super().zero_state(batch_size, dtype)
        with name_scope(type(self).__name__ + "ZeroState"):
            return tuple(c.zero_state(batch_size, dtype) for c in self._cells)

    def _builds_ahead(self) -> bool:
        return all(hasattr(c, "_builds_ahead") and c._builds_ahead() for c in self._cells)

    def build(self, inputs_shape: TensorShape) -> None:
        shape = inputs_shape
        batch = dimension_value(inputs_shape[0]) if inputs_shape.ndims else None
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                _prepare_cell(cell, shape, self._dtype)
            shape = _output_shape(batch, cell.output_size)

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        if self._state_is_tuple:
            if not isinstance(state, (list, tuple)) or len(state) != len(self._cells):
                raise ValueError(f"MultiRNNCell: expected state to be a tuple of length "
                                 f"{len(self._cells)} (one per cell), but received: {state!r}")
            states = list(state)
        else:
            sizes = [flatten_sizes(c.state_size)[0] for c in self._cells]
            states = split(state, sizes, axis=1)
        cur = inputs
        new_states = []
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                cur, s = cell(cur, states[i])
            new_states.append(s)
        return cur, tuple(new_states) if self._state_is_tuple else concat(new_states, 1)


class _Wrapper(RNNCell):
    """A cell around another cell: sizes, zero_state and building are the inner cell's."""

    def __init__(self, cell: Any) -> None:
        super().__init__()
        check_cell(cell, type(self).__name__)
        self._cell = cell

    wrapped_cell = property(lambda self: self._cell)
    state_size = property(lambda self: self._cell.state_size)
    output_size = property(lambda self: self._cell.output_size)

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with name_scope(type(self).__name__ + "ZeroState"):
            return self._cell.zero_state(batch_size, dtype)

    def _prepare(self, inputs_shape: TensorShape, dtype: Any) -> None:
        _prepare_cell(self._cell, inputs_shape, dtype)

    def _builds_ahead(self) -> bool:
        return hasattr(self._cell, "_builds_ahead") and self._cell._builds_ahead()

    @property
    def variables(self) -> list[Any]:
        return list(getattr(self._cell, "variables", []))

    @property
    def trainable_variables(self) -> list[Any]:
        return list(getattr(self._cell, "trainable_variables", []))


def _is_one(p: Any) -> bool:
    return isinstance(p, numbers.Real) and float(p) == 1.0


def _check_keep_prob(name: str, p: Any) -> None:
    if isinstance(p, numbers.Real) and not 0.0 < float(p) <= 1.0:
        raise ValueError(f"DropoutWrapper: parameter {name} must be between 0 and 1: {p!r}")


def _default_state_filter(substate: Any) -> Any:
    # TF's default: never drop an LSTM's cell state c, only its output h.
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _map_filtered(visit: Callable[[Any], Any], s: Any, fn: Callable[[Any], Any]) -> Any:
    """Applies `fn` to the leaves of `s` that `visit` (top-down, TF's traverse
    semantics: False stops, True descends, a structure of bools picks children) selects."""
    r = visit(s)
    if isinstance(r, bool):
        if not r:
            return s
        if isinstance(s, (list, tuple)):
            items = [_map_filtered(visit, x, fn) for x in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return fn(s)
    assert_same_structure(r, s, "dropout_state_filter_visitor's result", "state")
    items = [(_map_filtered(visit, x, fn) if isinstance(x, (list, tuple)) else fn(x))
             if flag else x for flag, x in zip(r, s)]
    return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)


class DropoutWrapper(_Wrapper):
    """Dropout on a cell's inputs, outputs and (filtered) state.

    A keep probability of exactly 1 (a Python number) adds no op; a tensor always
    applies dropout. By default the state filter leaves an LSTM's `c` alone and
    drops its `h`.

    Args:
        cell: the cell to wrap.
        input_keep_prob, output_keep_prob, state_keep_prob: keep probabilities (float
            in (0, 1] or scalar tensors).
        variational_recurrent: the same mask at every step; not supported.
        seed: op-level seed (leaf k gets seed + k).
        dropout_state_filter_visitor: substate -> bool (or structure of bools).

    Raises:
        TypeError: `cell` is not a cell.
        ValueError: a constant keep probability outside (0, 1].
        NotImplementedError: variational_recurrent=True.

    Example:
        >>> cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(64),
        ...                                      output_keep_prob=keep_prob)
    """

    def __init__(self, cell: Any, input_keep_prob: Any = 1.0, output_keep_prob: Any = 1.0,
                 state_keep_prob: Any = 1.0, variational_recurrent: bool = False,
                 input_size: Any = None, dtype: Any = None, seed: int | None = None,
                 dropout_state_filter_visitor: Callable[[Any], Any] | None = None) -> None:
        super().__init__(cell)
        for name, p in (("input_keep_prob", input_keep_prob),
                        ("output_keep_prob", output_keep_prob),
                        ("state_keep_prob", state_keep_prob)):
            _check_keep_prob(name, p)
        if variational_recurrent:
            raise NotImplementedError("DropoutWrapper: variational_recurrent=True is not "
                                      "supported; use per-step dropout (the default)")
        self._input_keep_prob = input_keep_prob
        self._output_keep_prob = output_keep_prob
        self._state_keep_prob = state_keep_prob
        self._seed = seed
        self._state_filter = dropout_state_filter_visitor or _default_state_filter

    def _drop(self, values: Any, keep_prob: Any, salt: int) -> Any:
        leaves = flatten(values)
        out = [dropout(v, keep_prob=keep_prob,
                       seed=None if self._seed is None else self._seed + salt + k)
               for k, v in enumerate(leaves)]
        return pack_sequence_as(values, out)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        if not _is_one(self._input_keep_prob):
            inputs = self._drop(inputs, self._input_keep_prob, 0)
        output, new_state = self._cell(inputs, state, scope=scope)
        if not _is_one(self._state_keep_prob):
            count = [1000]

            def drop_one(t: Any) -> Any:
                count[0] += 1
                return self._drop(t, self._state_keep_prob, count[0])
            new_state = _map_filtered(self._state_filter, new_state, drop_one)
        if not _is_one(self._output_keep_prob):
            output = self._drop(output, self._output_keep_prob, 2000)
        return output, new_state


def _add_residual(inputs: Any, outputs: Any) -> Any:
    assert_same_structure(inputs, outputs, "ResidualWrapper inputs", "cell outputs")
    res = []
    for x, y in zip(flatten(inputs), flatten(outputs)):
        if isinstance(x, Tensor) and isinstance(y, Tensor) and \
                not x.shape.is_compatible_with(y.shape):
            raise ValueError(f"ResidualWrapper: inputs {x.name} of shape {x.shape} and cell "
                             f"outputs {y.name} of shape {y.shape} must have compatible shapes "
                             "to be added; make the cell's num_units equal the input depth")
        res.append(add(x, y))
    return pack_sequence_as(outputs, res)


class ResidualWrapper(_Wrapper):
    """The cell's output plus its input (`residual_fn(inputs, outputs)` when given).

    Raises:
        ValueError: inputs and outputs of incompatible shapes (at call time).

    Example:
        >>> cell = tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.GRUCell(depth))
    """

    def __init__(self, cell: Any, residual_fn: Callable[[Any, Any], Any] | None = None) -> None:
        super().__init__(cell)
        self._residual_fn = residual_fn or _add_residual

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        output, new_state = self._cell(inputs, state, scope=scope)
        return self._residual_fn(inputs, output), new_state


class DeviceWrapper(_Wrapper):
    """Runs the cell (and creates its zero state and variables) on `device`.

    Example:
        >>> cell = tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.LSTMCell(64), "/cpu:0")
    """

    def __init__(self, cell: Any, device: Any) -> None:
        super().__init__(cell)
        self._device_spec = device

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with name_scope(type(self).__name__ + "ZeroState"), _device(self._device_spec):
            return self._cell.zero_state(batch_size, dtype)

    def _prepare(self, inputs_shape: TensorShape, dtype: Any) -> None:
        with _device(self._device_spec):
            _prepare_cell(self._cell, inputs_shape, dtype)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        with _device(self._device_spec):
            return self._cell(inputs, state, scope=scope)

