"""`tf.nn.dynamic_rnn` and `tf.nn.bidirectional_dynamic_rnn` (the static forms are
in static_rnn.py), with TF 1.x's scopes ("rnn",
"bidirectional_rnn/fw", ".../bw") and sequence_length semantics: past a row's
length its outputs are zero and its state is carried through unchanged, so the
final state is the state at the row's last valid step.

dynamic_rnn without TensorArray: TF builds it as a while_loop writing each
step's output into a TensorArray. Here the whole loop is one FunctionalScan op
(the op behind tf.scan; see ops/control_flow/scan_ops.py): the time-major
inputs and a time index `range(T)` are the scanned elements, the flattened
state is the carry and the cell's output is the per-step result, stacked into a
buffer allocated once. T may be unknown when the graph is built. Its gradient
op walks the steps backwards once (O(T)), reaching the inputs, the initial
state and the cell's variables (captured by the body).

The cell is traced into the loop body, a separate graph, so its variables must
exist before: cells that create them in `build` (all of tf.nn.rnn_cell) are
built in the outer graph first; any other cell (a custom cell calling
tf.get_variable in `call`) is run once on step 0 outside the loop, which makes
its variables, and while the body is traced `get_variable` looks in the outer
graph's store and scopes, so the body finds them (reuse) as TF's loop does.

Example:
    >>> x = tf.placeholder(tf.float32, [None, None, 8])       # [batch, time, depth]
    >>> lengths = tf.placeholder(tf.int32, [None])
    >>> cell = tf.nn.rnn_cell.BasicLSTMCell(64)
    >>> outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths,
    ...                                    dtype=tf.float32)   # outputs [batch, time, 64]
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.func_graph import flatten, pack_sequence_as
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.array.fill_ops import range as _range
from tensorweave.ops.array.fill_ops import transpose
from tensorweave.ops.array.join_ops import concat
from tensorweave.ops.array.sequence_ops import reverse, reverse_sequence
from tensorweave.ops.array.shape_ops import reshape
from tensorweave.ops.array.shape_ops import shape as _shape
from tensorweave.ops.control_flow.scan_ops import functional_scan
from tensorweave.ops.math.binary_ops import greater_equal
from tensorweave.ops.math.cwise_ops import cast
from tensorweave.rnn import rnn_util as util
from tensorweave.rnn.cell_base import check_cell
from tensorweave.state.variable_scope import variable_scope

__all__ = ["dynamic_rnn", "bidirectional_dynamic_rnn"]

_VARIABLE_OPS = ("VariableV2", "Variable", "VarHandleOp")


# ---- dynamic_rnn ---------------------------------------------------------------
def _check_no_new_variables(cell: Any, where: str) -> None:
    made = [op.name for op in get_default_graph().get_operations() if op.type in _VARIABLE_OPS]
    if made:
        raise ValueError(f"{where}: cell {cell!r} created variables {made} inside the loop "
                         "body, where they cannot live; create them with tf.get_variable (or "
                         "in the cell's build() with add_variable) so the loop finds them in "
                         "the model's graph")


def _build_cell(cell: Any, inputs: Any, flat: list[Tensor], state: Any) -> None:
    """Makes the cell's variables in this (outer) graph before the loop is traced."""
    if hasattr(cell, "_prepare") and cell._builds_ahead():
        cell._prepare(flat[0].shape[1:], flat[0].dtype.base_dtype)
        return
    # Any other cell: one step outside the loop (its ops are never run) makes them.
    cell(pack_sequence_as(inputs, [x[0] for x in flat]), state)


def _dynamic_loop(cell: Any, inputs: Any, flat: list[Tensor], state: Any,
                  seq: Tensor | None, parallel_iterations: int,
                  varscope: Any) -> tuple[list[Tensor], Any, Any]:
    """The FunctionalScan over time; returns (flat stacked outputs, output structure,
    final state). In the body the scope reuses: the variables exist by now."""
    init = flatten(state)
    time = _range(0, _shape(flat[0])[0], name="time")
    out_struct: list[Any] = []

    def step(carry: list[Tensor], xs: list[Tensor]) -> tuple[list[Any], list[Any]]:
        with variable_scope(varscope, reuse=True, auxiliary_name_scope=False):
            out, new_state = cell(pack_sequence_as(inputs, xs[:-1]),
                                  pack_sequence_as(state, carry))
            _check_no_new_variables(cell, "dynamic_rnn")
        if len(flatten(new_state)) != len(carry):
            raise ValueError(f"dynamic_rnn: the cell returned a state {new_state!r} not "
                             f"structured like its input state {state!r}")
        new = [convert_to_tensor(s) for s in flatten(new_state)]
        for old, n in zip(carry, new):
            if not n.shape.is_compatible_with(old.shape):
                raise ValueError(f"dynamic_rnn: the cell returned a state of shape {n.shape} "
                                 f"for one of shape {old.shape}; state shapes must not change "
                                 "between steps")
            n.set_shape(old.shape)
        outs = [convert_to_tensor(o) for o in flatten(out)]
        out_struct.append(out)
        if seq is not None:
            done = greater_equal(xs[-1], seq)
            new = util.masked(done, carry, new)
            outs = util.masked(done, None, outs)
        # The stacked outputs must be tensors of their own (an LSTM's h is also state).
        return new, [identity(o) for o in outs]

    finals, stacked = functional_scan("rnn_loop", step, init, flat + [time], False,
                                       parallel_iterations, True, True)
    return [_with_static_time(_with_batch(o, flat[0]), flat[0]) for o in stacked], \
        out_struct[0], pack_sequence_as(state, finals)


def _with_static_time(out: Tensor, x: Tensor) -> Tensor:
    """`out` [time, batch, ...] with the time and batch sizes its input knows
    statically (TF's dynamic_rnn sets them on its stacked outputs too)."""
    if out.shape.ndims is None or x.shape.ndims is None or x.shape.ndims < 2:
        return out
    known = TensorShape([dimension_value(x.shape[0]), dimension_value(x.shape[1])])
    out.set_shape(known.concatenate(out.shape[2:]).merge_with(out.shape))
    return out


def _with_batch(out: Tensor, x: Tensor) -> Tensor:
    """`out` [time, batch, ...] reshaped to its input's time and batch: with zero steps
    the loop has no output to take an unknown batch size from, and would say 0."""
    rest = out.shape[2:] if out.shape.ndims is not None else TensorShape(None)
    if out.shape.ndims is None or dimension_value(out.shape[1]) is not None or \
            not rest.is_fully_defined():
        return out
    dims = _shape(x)[:2]
    return reshape(out, concat([dims, rest.as_list()], 0))


def _swap_batch_time(x: Tensor) -> Tensor:
    perm = [1, 0] + list(range(2, x.shape.ndims or 2))
    return transpose(x, perm)


def dynamic_rnn(cell: Any, inputs: Any, sequence_length: Any = None, initial_state: Any = None,
                dtype: Any = None, parallel_iterations: int | None = None,
                swap_memory: bool = False, time_major: bool = False,
                scope: Any = None) -> tuple[Any, Any]:
    """Runs `cell` over the time dimension of `inputs` in one loop op.

    Args:
        cell: an RNNCell.
        inputs: `[batch, time, depth]` (or `[time, batch, depth]` with time_major), or a
            nested structure of such tensors; batch and time may be unknown, depth not.
        sequence_length: int vector [batch]: past a row's length its outputs are zero
            and its final state is the state at its last valid step.
        initial_state: a state structured like `cell.state_size`; default zeros.
        dtype: the zero state's dtype (needed without initial_state).
        parallel_iterations, swap_memory: accepted for TF compatibility.
        time_major: layout of inputs and outputs.
        scope: variable scope (default "rnn").

    Returns:
        `(outputs, state)`: outputs `[batch, time, output_size]` (time-major if asked),
        structured like the cell's output; the final state like `cell.state_size`.

    Raises:
        TypeError: `cell` is not a cell; sequence_length not integer.
        ValueError: inputs of rank < 3 or unknown depth, a sequence_length that is not
            a vector, a state not matching `cell.state_size`, no dtype and no
            initial_state, or a cell creating variables inside the loop.

    Example:
        >>> cell = tf.nn.rnn_cell.GRUCell(32)
        >>> outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        >>> logits = tf.layers.dense(state, 10)
    """
    check_cell(cell, "dynamic_rnn")
    layout = "[time, batch, depth]" if time_major else "[batch, time, depth]"
    with variable_scope(scope or "rnn") as varscope:
        flat = util.flat_tensors(inputs, "inputs", "dynamic_rnn")
        for x in flat:
            util.check_step_input(x, "dynamic_rnn", "inputs", 3, layout)
        if not time_major:
            flat = [_swap_batch_time(x) for x in flat]
        seq = util.checked_sequence_length(sequence_length, "dynamic_rnn")
        batch = util.batch_size_of(flat, 1)
        if seq is not None and isinstance(batch, int) and seq.shape.ndims == 1 and \
                dimension_value(seq.shape[0]) not in (None, batch):
            raise ValueError(f"dynamic_rnn: expected shape for sequence_length is [batch_size] "
                             f"= [{batch}], but saw shape: {seq.shape}")
        state = util.checked_initial_state(cell, initial_state, batch, dtype, "dynamic_rnn")
        _build_cell(cell, inputs, flat, state)
        stacked, out_struct, final_state = _dynamic_loop(cell, inputs, flat, state, seq,
                                                         parallel_iterations or 32, varscope)
        if not time_major:
            stacked = [_swap_batch_time(o) for o in stacked]
        return pack_sequence_as(out_struct, stacked), final_state


def bidirectional_dynamic_rnn(cell_fw: Any, cell_bw: Any, inputs: Any,
                              sequence_length: Any = None, initial_state_fw: Any = None,
                              initial_state_bw: Any = None, dtype: Any = None,
                              parallel_iterations: int | None = None, swap_memory: bool = False,
                              time_major: bool = False, scope: Any = None
                              ) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """dynamic_rnn forwards and backwards over the same inputs.

    The backward cell reads each row reversed within its sequence_length (all of it
    without one), and its outputs are reversed back, so both outputs line up in time.

    Args:
        cell_fw, cell_bw: the cells (variables under "<scope>/fw" and "<scope>/bw").
        inputs, sequence_length, dtype, time_major: as dynamic_rnn.
        initial_state_fw, initial_state_bw: the two initial states.
        scope: variable scope (default "bidirectional_rnn").

    Returns:
        `((output_fw, output_bw), (output_state_fw, output_state_bw))`.

    Raises:
        TypeError, ValueError: as dynamic_rnn, naming the cell at fault.

    Example:
        >>> (fw, bw), _ = tf.nn.bidirectional_dynamic_rnn(
        ...     tf.nn.rnn_cell.GRUCell(32), tf.nn.rnn_cell.GRUCell(32), x,
        ...     sequence_length=lengths, dtype=tf.float32)
        >>> both = tf.concat([fw, bw], axis=2)
    """
    check_cell(cell_fw, "bidirectional_dynamic_rnn", "cell_fw")
    check_cell(cell_bw, "bidirectional_dynamic_rnn", "cell_bw")
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)

    def rev(x: Any, lengths: Tensor | None) -> Any:
        leaves = flatten(x)
        if lengths is None:
            out = [reverse(t, [time_axis]) for t in leaves]
        else:
            out = [reverse_sequence(t, cast(lengths, _dt.int64), seq_axis=time_axis,
                                    batch_axis=batch_axis) for t in leaves]
        return pack_sequence_as(x, out)

    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw,
                                           dtype, parallel_iterations, swap_memory,
                                           time_major, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            lengths = util.checked_sequence_length(sequence_length, "bidirectional_dynamic_rnn")
            flat_in = util.flat_tensors(inputs, "inputs", "bidirectional_dynamic_rnn")
            rev_in = rev(pack_sequence_as(inputs, flat_in), lengths)
            rev_out, state_bw = dynamic_rnn(cell_bw, rev_in, lengths, initial_state_bw, dtype,
                                            parallel_iterations, swap_memory, time_major,
                                            scope=bw_scope)
    return (out_fw, rev(rev_out, lengths)), (state_fw, state_bw)
