"""`tf.nn.raw_rnn`: an RNN whose every step's input, finish flags, state and
emitted output are chosen by the caller's `loop_fn` (TF 1.x's primitive for custom
decoders and attention loops).

Built as TF builds it: a `tf.while_loop` carrying time, the per-row finished flags,
the next input, one `tf.TensorArray` per emitted leaf (written at each step), the cell
state and the caller's loop state. Rows already finished emit zeros and keep their
state. The cell's variables are made in the model's graph before the loop body is
traced (as `dynamic_rnn` does), and the body reuses them.

Example:
    >>> inputs_ta = tf.TensorArray(tf.float32, size=max_time).unstack(x)  # x: [T, B, D]
    >>> def loop_fn(time, cell_output, cell_state, loop_state):
    ...     emit = cell_output
    ...     state = cell.zero_state(batch, tf.float32) if cell_output is None else cell_state
    ...     finished = time >= lengths
    ...     nxt = tf.cond(tf.reduce_all(finished), lambda: tf.zeros([batch, D]),
    ...                   lambda: inputs_ta.read(time))
    ...     return finished, nxt, state, emit, None
    >>> outputs_ta, final_state, _ = tf.nn.raw_rnn(cell, loop_fn)
    >>> outputs = outputs_ta.stack()                                      # [T, B, H]
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.func_graph import assert_same_structure, flatten, pack_sequence_as
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, dimension_value
from tensorweave.ops.array.fill_ops import zeros
from tensorweave.ops.array.join_ops import concat
from tensorweave.ops.array.shape_ops import shape as _shape
from tensorweave.ops.control_flow.while_ops import while_loop
from tensorweave.ops.math.binary_ops import logical_or
from tensorweave.ops.math.reduce_ops import reduce_all
from tensorweave.ops.math.unary_ops import logical_not
from tensorweave.rnn.cell_base import check_cell
from tensorweave.rnn.rnn_ops import _check_no_new_variables
from tensorweave.rnn.rnn_util import masked
from tensorweave.state.variable_scope import variable_scope
from tensorweave.data_flow.tensor_array import TensorArray

__all__ = ["raw_rnn"]


def _size_shape(size: Any) -> TensorShape:
    """A cell/emit size (int, TensorShape, list, or a shape tensor) as a static shape."""
    if isinstance(size, Tensor):
        return TensorShape([None] * (dimension_value(size.shape[0]) or 0)) \
            if size.shape.ndims == 1 and dimension_value(size.shape[0]) is not None \
            else TensorShape(None)
    if isinstance(size, int):
        return TensorShape([size])
    return as_shape(size)


def _batched(batch: Any, size: Any) -> Any:
    """[batch] + size, as a list when both are static, else a shape tensor."""
    if isinstance(size, Tensor):
        return concat([[batch] if not isinstance(batch, Tensor) else [batch], size], 0)
    dims = _size_shape(size).as_list()
    return [batch] + dims


def _make_variables(cell: Any, inputs: Any, flat_input: list[Tensor], state: Any) -> None:
    """Creates the cell's variables in the model's graph before the loop is traced."""
    if hasattr(cell, "_prepare") and cell._builds_ahead():
        cell._prepare(flat_input[0].shape, flat_input[0].dtype.base_dtype)
    else:  # one step outside the loop (its ops never run) makes them
        cell(inputs, state)


def _static_batch(flat_input: list[Tensor]) -> int | None:
    """The batch size the inputs agree on, None when none of them knows it."""
    static_batch: int | None = None
    for x in flat_input:
        b = dimension_value(x.shape[0]) if x.shape.ndims else None
        if b is not None:
            if static_batch is not None and b != static_batch:
                raise ValueError(f"raw_rnn: the inputs from loop_fn disagree on the "
                                 f"batch size: {static_batch} and {b} ({x.name})")
            static_batch = b
    return static_batch


def _check_initial_state(cell: Any, initial_state: Any) -> None:
    """The first loop_fn call's state must exist and match `cell.state_size`."""
    if initial_state is None:
        raise ValueError("raw_rnn: loop_fn must return the initial cell state as "
                         "next_cell_state when called with time=0")
    try:
        assert_same_structure(cell.state_size, initial_state, "cell.state_size",
                              "initial_state")
    except ValueError as e:
        raise ValueError(f"raw_rnn: the initial state from loop_fn does not match "
                         f"cell.state_size: {e}") from None


def _emit_spec(emit_structure: Any, cell: Any, flat_state: list[Tensor]
               ) -> tuple[Any, list[Any], list[Any]]:
    """(structure, per-leaf size, per-leaf dtype) of what each step emits: the first
    loop_fn call's `emit_output` (None: the cell's `output_size`, in the state's dtype)."""
    if emit_structure is None:
        sizes = flatten(cell.output_size)
        return cell.output_size, sizes, [flat_state[0].dtype.base_dtype] * len(sizes)
    flat_emit = [convert_to_tensor(e) for e in flatten(emit_structure)]
    return (emit_structure,
            [e.shape if e.shape.is_fully_defined() else _shape(e) for e in flat_emit],
            [e.dtype.base_dtype for e in flat_emit])


def raw_rnn(cell: Any, loop_fn: Callable[..., Any], parallel_iterations: int | None = None,
            swap_memory: bool = False, scope: Any = None) -> tuple[Any, Any, Any]:
    """Runs `cell` in a while loop driven by `loop_fn`.

    `loop_fn(time, cell_output, cell_state, loop_state)` returns
    `(finished, next_input, next_cell_state, emit_output, next_loop_state)`; it is
    first called with `time=0` and None for the rest, where `next_cell_state` is the
    initial state and `emit_output` (None: the cell's `output_size`) gives the emitted
    structure, each leaf WITHOUT its batch dimension.

    Args:
        cell: an RNNCell.
        loop_fn: the callable above.
        parallel_iterations, swap_memory: passed to `tf.while_loop`.
        scope: variable scope (default "rnn").

    Returns:
        `(emit_ta, final_state, final_loop_state)`: TensorArrays (structured like the
        emit structure) holding `[batch] + size` per step, the final cell state, and the
        final loop state (None when the first call returned None for it).

    Raises:
        TypeError: `cell` is not a cell, or `loop_fn` is not callable.
        ValueError: the initial state does not match `cell.state_size`, or a later
            call of `loop_fn` returns a different structure.

    Example:
        >>> emit_ta, state, _ = tf.nn.raw_rnn(tf.nn.rnn_cell.GRUCell(8), loop_fn)
        >>> outputs = emit_ta.stack()
    """
    check_cell(cell, "raw_rnn")
    if not callable(loop_fn):
        raise TypeError(f"loop_fn must be a callable, got {loop_fn!r}")
    with variable_scope(scope or "rnn") as varscope:
        time = convert_to_tensor(0, dtype=_dt.int32, name="time")
        finished, next_input, initial_state, emit_structure, init_loop_state = \
            loop_fn(time, None, None, None)
        flat_input = [convert_to_tensor(x) for x in flatten(next_input)]
        next_input = pack_sequence_as(next_input, flat_input)
        loop_state = init_loop_state if init_loop_state is not None else \
            convert_to_tensor(0, dtype=_dt.int32)
        static_batch = _static_batch(flat_input)
        batch: Any = static_batch if static_batch is not None else _shape(flat_input[0])[0]
        _check_initial_state(cell, initial_state)
        flat_state = [convert_to_tensor(s) for s in flatten(initial_state)]
        state = pack_sequence_as(initial_state, flat_state)
        emit_structure, sizes, dtypes = _emit_spec(emit_structure, cell, flat_state)
        emit_ta = pack_sequence_as(emit_structure, [
            TensorArray(dt, size=0, dynamic_size=True, name=f"rnn_output_{i}",
                        element_shape=TensorShape([static_batch]).concatenate(
                            _size_shape(sz)))
            for i, (dt, sz) in enumerate(zip(dtypes, sizes))])
        zero_emit = [zeros(_batched(batch, sz), dt) for sz, dt in zip(sizes, dtypes)]
        _make_variables(cell, next_input, flat_input, state)

        def cond(time: Any, elements_finished: Any, *_: Any) -> Any:
            return logical_not(reduce_all(elements_finished))

        def body(time: Any, elements_finished: Any, current_input: Any, emit_ta: Any,
                 state: Any, loop_state: Any) -> Any:
            with variable_scope(varscope, reuse=True, auxiliary_name_scope=False):
                output, cell_state = cell(current_input, state)
                _check_no_new_variables(cell, "raw_rnn")
            next_time = time + 1
            fin, nxt, next_state, emit, next_loop_state = loop_fn(
                next_time, output, cell_state, loop_state)
            assert_same_structure(state, next_state, "cell state", "next_cell_state")
            assert_same_structure(current_input, nxt, "input", "next_input")
            emit = emit if emit is not None else output
            assert_same_structure(emit_ta, emit, "emit structure", "emit_output")
            if next_loop_state is None:
                next_loop_state = loop_state
            # Finished rows emit zeros and keep their state (rank-0 leaves are taken).
            emit_flat = _copy_through(elements_finished, zero_emit, flatten(emit))
            state_flat = _copy_through(elements_finished, flatten(state),
                                       flatten(next_state))
            tas = [ta.write(time, e) for ta, e in zip(flatten(emit_ta), emit_flat)]
            return (next_time, logical_or(elements_finished, fin), nxt,
                    pack_sequence_as(emit_ta, tas), pack_sequence_as(state, state_flat),
                    next_loop_state)

        out = while_loop(cond, body, [time, finished, next_input, emit_ta, state, loop_state],
                         parallel_iterations=parallel_iterations or 32,
                         swap_memory=swap_memory)
        emit_ta, final_state, final_loop_state = out[-3:]
        return emit_ta, final_state, (None if init_loop_state is None else final_loop_state)


def _copy_through(done: Tensor, current: list[Any], candidate: list[Any]) -> list[Any]:
    out = []
    for cur, cand in zip(current, candidate):
        cand = convert_to_tensor(cand)
        if cur.shape.ndims == 0:
            out.append(cand)
        else:
            out.append(masked(done, [cur], [cand])[0])
    return out
