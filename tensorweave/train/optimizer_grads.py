"""Gradient plumbing of `tf.train.Optimizer`: GATE_GRAPH gating, duplicate indices,
the variables a callable loss reads.

Example:
    >>> values, indices = deduplicate_indexed_rows(grad.values, grad.indices)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array import core_ops
from tensorweave.ops.array.shape_ops import size
from tensorweave.ops.array.unique_ops import unique
from tensorweave.ops.math.math_ops import unsorted_segment_sum


def deduplicate_indexed_rows(values: Tensor, indices: Tensor) -> tuple[Tensor, Tensor]:
    """(rows summed per distinct index, the distinct indices), as TF's optimizer."""
    unique_indices, new_positions = unique(indices)
    summed = unsorted_segment_sum(values, new_positions, size(unique_indices))
    return summed, unique_indices


def gate_all(grads: list[Any]) -> list[Any]:
    """GATE_GRAPH: every gradient is released only after all are computed."""
    deps = []
    for g in grads:
        if isinstance(g, IndexedSlices):
            deps += [g.values, g.indices]
        elif g is not None:
            deps.append(g)
    if not deps:
        return grads
    graph = deps[0].graph
    out: list[Any] = []
    with graph.control_dependencies(deps):
        for g in grads:
            if g is None:
                out.append(None)
            elif isinstance(g, IndexedSlices):
                out.append(IndexedSlices(core_ops.identity(g.values),
                                         core_ops.identity(g.indices), g.dense_shape))
            else:
                out.append(core_ops.identity(g))
    return out


def variables_read_by(loss: Tensor, candidates: list[Any]) -> list[Any]:
    """The `candidates` whose storage `loss` depends on, in `candidates`' order (what
    TF's GradientTape watches when a callable loss is given)."""
    wanted = {id(v.op): v for v in candidates}
    found: set[int] = set()
    seen: set[int] = set()
    todo = [loss.op]
    while todo:
        op = todo.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if id(op) in wanted:
            found.add(id(op))
        todo.extend(t.op for t in op.inputs)
        todo.extend(op.control_inputs)
    return [v for v in candidates if id(v.op) in found]


__all__ = ["deduplicate_indexed_rows", "gate_all", "variables_read_by"]
