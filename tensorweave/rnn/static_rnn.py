"""`tf.nn.static_rnn` and `tf.nn.static_bidirectional_rnn` (also tf.contrib.rnn's):
the cell unrolled over a Python list of step inputs, one copy of its ops per step,
with TF 1.x's scopes ("rnn", "bidirectional_rnn/fw", ".../bw") and sequence_length
semantics (outputs past a row's length are zero, its state is carried through).

Example:
    >>> steps = tf.unstack(x, axis=1)                # x: [batch, time, depth]
    >>> outputs, state = tf.nn.static_rnn(tf.nn.rnn_cell.BasicLSTMCell(32), steps,
    ...                                   dtype=tf.float32)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.func_graph import flatten, pack_sequence_as
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.join_ops import concat, stack, unstack
from tensorweave.ops.array.sequence_ops import reverse_sequence
from tensorweave.ops.math.binary_ops import greater_equal
from tensorweave.ops.math.cwise_ops import cast
from tensorweave.rnn import rnn_util as util
from tensorweave.rnn.cell_base import check_cell
from tensorweave.state.variable_scope import variable_scope

__all__ = ["static_rnn", "static_bidirectional_rnn"]


def static_rnn(cell: Any, inputs: Any, initial_state: Any = None, dtype: Any = None,
               sequence_length: Any = None, scope: Any = None) -> tuple[list[Any], Any]:
    """Unrolls `cell` over a Python list of step inputs (one graph copy per step).

    Args:
        cell: an RNNCell.
        inputs: a list of `[batch, depth]` tensors (or nested structures), one per step.
        initial_state: a state structured like `cell.state_size`; default zeros.
        dtype: the zero state's dtype (needed without initial_state).
        sequence_length: int vector [batch]; past a row's length its outputs are zero
            and its state is carried through.
        scope: variable scope (default "rnn").

    Returns:
        `(outputs, state)`: the list of per-step outputs and the final state.

    Raises:
        TypeError: `cell` is not a cell or `inputs` not a list.
        ValueError: empty inputs, a step input not of rank 2+ with known depth, a
            state not matching `cell.state_size`, or no dtype and no initial_state.

    Example:
        >>> steps = tf.unstack(x, axis=1)            # x: [batch, time, depth]
        >>> outputs, state = tf.nn.static_rnn(tf.nn.rnn_cell.GRUCell(32), steps,
        ...                                   dtype=tf.float32)
    """
    check_cell(cell, "static_rnn")
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"static_rnn: inputs must be a list of [batch, depth] tensors, one per "
                        f"step, got {inputs!r}; for a [batch, time, depth] tensor use "
                        "tf.unstack(x, axis=1), or tf.nn.dynamic_rnn")
    if not inputs:
        raise ValueError("static_rnn: inputs must not be empty")
    with variable_scope(scope or "rnn") as varscope:
        first = util.flat_tensors(inputs[0], "inputs[0]", "static_rnn")
        for x in first:
            util.check_step_input(x, "static_rnn", "inputs[0]", 2, "[batch, depth]")
        batch = util.batch_size_of(first, 0)
        state = util.checked_initial_state(cell, initial_state, batch, dtype, "static_rnn")
        seq = util.checked_sequence_length(sequence_length, "static_rnn")
        outputs = []
        for t, x in enumerate(inputs):
            if t > 0:
                varscope.reuse_variables()  # as TF: custom cells' get_variable reuses
            out, new_state = cell(x, state)
            if seq is not None:
                done = greater_equal(t, seq)
                out = pack_sequence_as(out, util.masked(done, None, flatten(out)))
                new_state = pack_sequence_as(new_state, util.masked(done, flatten(state),
                                                                flatten(new_state)))
            state = new_state
            outputs.append(out)
        return outputs, state


def _reverse_steps(steps: list[Any], lengths: Tensor | None) -> list[Any]:
    """A list of step inputs reversed in time (per row up to its length, if given)."""
    if lengths is None:
        return list(reversed(steps))
    flat_steps = [flatten(s) for s in steps]
    columns = []
    for k in range(len(flat_steps[0])):
        seq = stack([fs[k] for fs in flat_steps])  # [time, batch, ...]
        rev = reverse_sequence(seq, cast(lengths, _dt.int64), seq_axis=0, batch_axis=1)
        columns.append(unstack(rev, num=len(steps)))
    return [pack_sequence_as(steps[t], [col[t] for col in columns]) for t in range(len(steps))]


def static_bidirectional_rnn(cell_fw: Any, cell_bw: Any, inputs: Any,
                             initial_state_fw: Any = None, initial_state_bw: Any = None,
                             dtype: Any = None, sequence_length: Any = None,
                             scope: Any = None) -> tuple[list[Any], Any, Any]:
    """Forward and backward static_rnn over the same steps; each step's outputs
    concatenated (forward first) along the last axis.

    Args:
        cell_fw, cell_bw: the two cells (variables under "<scope>/fw", "<scope>/bw").
        inputs: a list of `[batch, depth]` tensors.
        initial_state_fw, initial_state_bw, dtype, sequence_length: as static_rnn;
            the backward cell reads each row reversed within its length.
        scope: variable scope (default "bidirectional_rnn").

    Returns:
        `(outputs, output_state_fw, output_state_bw)`.

    Raises:
        TypeError, ValueError: as static_rnn, naming the cell at fault.

    Example:
        >>> outs, s_fw, s_bw = tf.nn.static_bidirectional_rnn(
        ...     tf.nn.rnn_cell.LSTMCell(32), tf.nn.rnn_cell.LSTMCell(32), steps,
        ...     dtype=tf.float32)                     # each output [batch, 64]
    """
    check_cell(cell_fw, "static_bidirectional_rnn", "cell_fw")
    check_cell(cell_bw, "static_bidirectional_rnn", "cell_bw")
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError(f"static_bidirectional_rnn: inputs must be a non-empty list of step "
                        f"tensors, got {inputs!r}")
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                          sequence_length, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            lengths = util.checked_sequence_length(sequence_length, "static_bidirectional_rnn")
            rev_out, state_bw = static_rnn(cell_bw, _reverse_steps(list(inputs), lengths),
                                           initial_state_bw, dtype, lengths, scope=bw_scope)
    out_bw = _reverse_steps(rev_out, lengths)
    outputs = [pack_sequence_as(f, [concat([a, b], 1) for a, b in zip(flatten(f), flatten(b))])
               for f, b in zip(out_fw, out_bw)]
    return outputs, state_fw, state_bw
