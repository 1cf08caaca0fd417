"""`tf.nn.rnn_cell.RNNCell`, the base of every cell, and `LSTMStateTuple`.

A cell maps `(inputs [batch, depth], state)` to `(output, new_state)`. As in
TF 1.x (where cells are layers), the first call captures a variable scope:
`variable_scope(scope)` when a scope is given, else a fresh
`variable_scope(None, default_name="<snake_case class name>")` under the
current one (so `rnn/basic_lstm_cell`, then `basic_lstm_cell_1` for a second
cell). Variables are made once, in `build`, by `add_variable` (get_variable in
the captured scope); later calls re-enter that scope with reuse, so one cell
object called twice shares its weights and checkpoints carry TF's names.

Building is a separate step for a reason: `dynamic_rnn` runs the cell inside a
traced loop body (a FuncGraph), where a new variable would be made in the body
instead of the model's graph. So the loop builds the cell in the outer graph
first (`_prepare`), and the body only reads the variables (captured).

Example:
    >>> cell = tf.nn.rnn_cell.BasicLSTMCell(64)
    >>> state = cell.zero_state(batch_size=32, dtype=tf.float32)
    >>> output, state = cell(x_t, state)        # rnn vars: basic_lstm_cell/kernel, /bias
"""
from __future__ import annotations

import collections
import re
from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.func_graph import flatten
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.ops.array.fill_ops import zeros
from tensorweave.ops.array.join_ops import stack
from tensorweave.ops.array.shape_ops import shape as _shape
from tensorweave.state.variable_scope import VariableScope, get_variable, variable_scope

__all__ = ["RNNCell", "LSTMStateTuple"]


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """The state of an LSTM with `state_is_tuple=True`: cell state `c`, output `h`.

    Example:
        >>> s = tf.nn.rnn_cell.LSTMStateTuple(c=tf.zeros([2, 4]), h=tf.zeros([2, 4]))
        >>> s.h.shape.as_list()
        [2, 4]
    """
    __slots__ = ()

    @property
    def dtype(self) -> Any:
        (c, h) = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


def _snake_case(name: str) -> str:
    # TF's layer naming: "BasicLSTMCell" -> "basic_lstm_cell".
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def is_cell(obj: Any) -> bool:
    """True for an RNNCell or anything shaped like one (TF's `_like_rnncell`)."""
    return all(hasattr(obj, a) for a in ("output_size", "state_size", "zero_state")) \
        and callable(obj)


def check_cell(cell: Any, where: str, arg: str = "cell") -> None:
    """Raises TypeError naming `cell` when it is not an RNN cell."""
    if not is_cell(cell):
        raise TypeError(f"{where}: {arg} must be an RNNCell (an object with output_size, "
                        f"state_size, zero_state and __call__), got {cell!r} of type "
                        f"{type(cell).__name__}; build one with e.g. "
                        "tf.nn.rnn_cell.BasicLSTMCell(num_units)")


def _batch_dim(batch_size: Any) -> Any:
    """`batch_size` as a static int when it has one, else as a scalar tensor."""
    if isinstance(batch_size, Tensor):
        v = constant_value(batch_size)
        return int(v) if v is not None else batch_size
    return int(batch_size)


def zeros_for_size(batch_size: Any, size: Any, dtype: Any) -> Tensor:
    """A `[batch_size] + size` zero tensor (`size` an int or shape; batch maybe a tensor)."""
    dims = as_shape(size).as_list() if not isinstance(size, int) else [size]
    b = _batch_dim(batch_size)
    shape = [b] + dims if isinstance(b, int) else stack([b] + dims)
    out = zeros(shape, dtype)
    if not isinstance(b, int):
        out.set_shape(TensorShape([None] + dims))
    return out


def _is_size_leaf(s: Any) -> bool:
    return isinstance(s, (int, TensorShape)) or (
        isinstance(s, list) and all(isinstance(d, int) or d is None for d in s))


def flatten_sizes(sizes: Any) -> list[Any]:
    """Leaves of a (nested) state_size; an int, TensorShape or list of dims is a leaf."""
    if _is_size_leaf(sizes):
        return [sizes]
    if isinstance(sizes, (list, tuple)):
        return [leaf for s in sizes for leaf in flatten_sizes(s)]
    return [sizes]


def pack_sizes_as(sizes: Any, flat: list[Any]) -> Any:
    """Rebuilds values `flat` into the nesting of `sizes` (as flatten_sizes reads it)."""
    it = iter(flat)

    def build(s: Any) -> Any:
        if _is_size_leaf(s) or not isinstance(s, (list, tuple)):
            return next(it)
        items = [build(x) for x in s]
        return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
    return build(sizes)


class RNNCell:
    """Abstract RNN cell: subclasses define `state_size`, `output_size`, `call`
    and (for variables) `build`.

    Args:
        trainable: whether the cell's variables are trainable.
        name: the variable scope's base name (default: snake case of the class).
        dtype: the variables' dtype (default: the first inputs' dtype).
        reuse: True or tf.AUTO_REUSE to take existing variables of that scope.

    Example:
        >>> class Doubler(tf.nn.rnn_cell.RNNCell):
        ...     state_size = property(lambda self: 3)
        ...     output_size = property(lambda self: 3)
        ...     def call(self, inputs, state):
        ...         return 2 * inputs + state, 2 * inputs + state
    """

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 reuse: Any = None, **kwargs: Any) -> None:
        self.trainable = trainable
        self._base_name = name or _snake_case(type(self).__name__)
        self._dtype = _dt.as_dtype(dtype) if dtype is not None else None
        self._reuse = reuse
        self._scope: VariableScope | None = None
        self.built = False
        self._variables: list[Any] = []

    # ---- interface -------------------------------------------------------------------
    @property
    def state_size(self) -> Any:
        """An int, TensorShape, or nested tuple of them: the state's per-row sizes."""
        raise NotImplementedError(f"{type(self).__name__} must define state_size")

    @property
    def output_size(self) -> Any:
        """An int or TensorShape (or nested): the output's per-row size."""
        raise NotImplementedError(f"{type(self).__name__} must define output_size")

    def build(self, inputs_shape: TensorShape) -> None:
        """Creates the cell's variables with `add_variable` (no-op by default)."""

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        """One step: returns `(output, new_state)`. Subclasses override it."""
        raise NotImplementedError(f"{type(self).__name__} must define call(inputs, state)")

    # ---- calling -------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._scope.name if self._scope is not None else self._base_name

    @property
    def dtype(self) -> Any:
        return self._dtype

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        """Runs one step in the cell's variable scope, building it on first use.

        Args:
            inputs: `[batch, depth]` tensor (or nested structure of them).
            state: a state structured like `state_size`.
            scope: the variable scope (name or VariableScope) for the first call;
                later calls reuse the captured one.

        Returns:
            `(output, new_state)`.
        """
        with self._entered(scope):
            self._maybe_build(inputs)
            return self.call(inputs, state)

    def _capture_scope(self, scope: Any) -> VariableScope:
        if scope is None and self._reuse:
            scope = self._base_name  # a reusing cell names its scope exactly
        with variable_scope(scope, default_name=self._base_name, reuse=self._reuse) as vs:
            return vs

    def _entered(self, scope: Any) -> Any:
        if self._scope is None:
            self._scope = self._capture_scope(scope)
        return variable_scope(self._scope, reuse=True if self.built else self._reuse)

    def _maybe_build(self, inputs: Any) -> None:
        if self.built:
            return
        first = flatten(inputs)[0]
        if self._dtype is None and hasattr(first, "dtype"):
            self._dtype = _dt.as_dtype(first.dtype).base_dtype
        shape = first.shape if isinstance(first, Tensor) else as_shape(first)
        self.build(shape)
        self.built = True

    def _prepare(self, inputs_shape: TensorShape, dtype: Any) -> None:
        """Builds the cell (its variables) for inputs of `inputs_shape`, in the current
        graph and scope, without running a step; `dynamic_rnn` calls it before
        tracing its loop body."""
        if self._dtype is None:
            self._dtype = _dt.as_dtype(dtype).base_dtype
        with self._entered(None):
            self._maybe_build(inputs_shape)

    def _builds_ahead(self) -> bool:
        """Whether `_prepare` makes every variable the cell will use: true for cells that
        create them in `build` and keep RNNCell.__call__ (all of tf.nn.rnn_cell)."""
        cls = type(self)
        return cls.__call__ is RNNCell.__call__ and cls.build is not RNNCell.build

    # ---- variables -------------------------------------------------------------------
    def add_variable(self, name: str, shape: Any, dtype: Any = None, initializer: Any = None,
                     trainable: bool | None = None, **kwargs: Any) -> Any:
        """`get_variable(name, ...)` in the cell's scope, recorded on the cell.

        Example:
            >>> self._kernel = self.add_variable("kernel", [depth + n, n])
        """
        var = get_variable(name, shape, dtype or self._dtype or _dt.float32,
                           initializer=initializer,
                           trainable=self.trainable if trainable is None else trainable,
                           **kwargs)
        if var not in self._variables:
            self._variables.append(var)
        return var

    add_weight = add_variable

    @property
    def variables(self) -> list[Any]:
        return list(self._variables)

    weights = variables

    @property
    def trainable_variables(self) -> list[Any]:
        return [v for v in self._variables if getattr(v, "trainable", True)] \
            if self.trainable else []

    trainable_weights = trainable_variables

    # ---- state ---------------------------------------------------------------------
    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """All-zero state: `[batch_size, s]` for each leaf `s` of `state_size`.

        Args:
            batch_size: an int or a scalar int tensor.
            dtype: the state's dtype.

        Example:
            >>> tf.nn.rnn_cell.BasicLSTMCell(4).zero_state(2, tf.float32).c.shape.as_list()
            [2, 4]
        """
        with name_scope(type(self).__name__ + "ZeroState"):
            sizes = self.state_size
            flat = [zeros_for_size(batch_size, s, dtype) for s in flatten_sizes(sizes)]
            return pack_sizes_as(sizes, flat)

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None,
                          dtype: Any = None) -> Any:
        """zero_state, taking batch and dtype from `inputs` when given."""
        if inputs is not None:
            x = convert_to_tensor(flatten(inputs)[0])
            b = x.shape.as_list()[0] if x.shape.ndims else None
            batch_size = b if b is not None else _shape(x)[0]
            dtype = dtype or x.dtype.base_dtype
        return self.zero_state(batch_size, dtype)

