"""Argument checks and helpers shared by the RNN functions (rnn_ops, static_rnn)."""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.func_graph import flatten, pack_sequence_as
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.array.fill_ops import zeros_like
from tensorweave.ops.array.shape_ops import shape as _shape
from tensorweave.ops.math.cwise_ops import cast, select
from tensorweave.rnn.cell_base import flatten_sizes


def flat_tensors(structure: Any, what: str, where: str) -> list[Tensor]:
    flat = [convert_to_tensor(x, name=what) for x in flatten(structure)]
    if not flat:
        raise ValueError(f"{where}: {what} must contain at least one tensor, got {structure!r}")
    return flat


def check_step_input(x: Tensor, where: str, what: str, min_rank: int, layout: str) -> None:
    if x.shape.ndims is None or x.shape.ndims < min_rank:
        got = "unknown rank" if x.shape.ndims is None else \
            f"shape {x.shape} (rank {x.shape.ndims})"
        raise ValueError(f"{where}: {what} {x.name} has {got}; it must be {layout}. Give the "
                         "placeholder that shape, or add a batch dimension with "
                         "tf.expand_dims(x, 0)")
    if dimension_value(x.shape[-1]) is None:
        raise ValueError(f"{where}: the depth (last dimension) of {what} {x.name} must be "
                         f"known when the graph is built, got shape {x.shape}; use "
                         "x.set_shape(...) or a placeholder with a fixed last dimension")


def checked_sequence_length(sequence_length: Any, where: str) -> Tensor | None:
    if sequence_length is None:
        return None
    seq = convert_to_tensor(sequence_length, name="sequence_length")
    if not (seq.dtype.is_integer):
        raise TypeError(f"{where}: sequence_length {seq.name} must be an integer vector, got "
                        f"{seq.dtype.base_dtype.name}")
    if seq.shape.ndims not in (None, 1):
        raise ValueError(f"{where}: sequence_length must be a vector of length batch_size, "
                         f"but saw shape: {seq.shape} ({seq.name})")
    return identity(cast(seq, _dt.int32), name="sequence_length")


def batch_size_of(flat: list[Tensor], axis: int) -> Any:
    for x in flat:
        b = dimension_value(x.shape[axis])
        if b is not None:
            return int(b)
    return _shape(flat[0])[axis]


def leaf_matches(size: Any, t: Any) -> bool:
    if isinstance(size, (int, TensorShape)) or isinstance(size, list) and \
            not any(isinstance(d, (list, tuple)) for d in size):
        return not isinstance(t, (list, tuple))
    return isinstance(t, (list, tuple)) and len(t) == len(size) and \
        all(leaf_matches(s, x) for s, x in zip(size, t))


def checked_initial_state(cell: Any, initial_state: Any, batch: Any, dtype: Any,
                          where: str) -> Any:
    """The given state (checked against cell.state_size) or the cell's zero state."""
    if initial_state is None:
        if dtype is None:
            raise ValueError(f"{where}: if there is no initial_state, you must give a dtype "
                             "(e.g. dtype=tf.float32)")
        return cell.zero_state(batch, dtype)
    sizes = cell.state_size
    if not leaf_matches(sizes, initial_state):
        raise ValueError(f"{where}: initial_state does not match the cell's state_size "
                         f"{sizes!r}: got {initial_state!r}; pass cell.zero_state(batch_size, "
                         "dtype) or a structure like it")
    leaves = [convert_to_tensor(s, name="initial_state") for s in flatten(initial_state)]
    for k, (t, size) in enumerate(zip(leaves, flatten_sizes(sizes))):
        want = TensorShape([None]).concatenate(TensorShape([size] if isinstance(size, int)
                                                           else size))
        if not t.shape.is_compatible_with(want):
            raise ValueError(f"{where}: initial_state leaf {k} ({t.name}) has shape {t.shape} "
                             f"but the cell's state size is {size!r}, so [batch, {size}] was "
                             "expected")
    return pack_sequence_as(initial_state, leaves)


def masked(done: Tensor, old: list[Tensor] | None, new: list[Tensor]) -> list[Tensor]:
    """Per row: `old` (zeros when None) where `done`, else `new` (TF's _rnn_step)."""
    olds = old if old is not None else [zeros_like(n) for n in new]
    return [select(done, o, n) for o, n in zip(olds, new)]
