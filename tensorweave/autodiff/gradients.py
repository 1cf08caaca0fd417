"""`tf.gradients`: symbolic reverse-mode differentiation over the graph.

Gradients are graph ops built by each op's registered gradient function, so
they run wherever the graph runs (a variable's update on its ps task, say).

Example:
    >>> x = tf.placeholder(tf.float32)
    >>> (dx,) = tf.gradients(x * x, [x])
"""
from __future__ import annotations

import collections
from typing import Any, Sequence

from tensorweave.autodiff import gradient_registry
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import graph as _graph
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.op_def import register_symbolic_gradients
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.math.math_ops import add_n
from tensorweave.ops.array import reshape, stack, unstack
from tensorweave.ops.array import ones_like
from tensorweave.ops.array import concat
from tensorweave.ops.array import zeros_like
from tensorweave.ops.tensor_array.tensor_array_ops import add_flow_grads



def _as_list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _to_tensor(x: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    return convert_to_tensor(x, as_ref=True)


def _differentiable(t: Tensor) -> bool:
    dt = t.dtype.base_dtype
    return dt.is_floating or dt.is_complex


def _carries_gradient(t: Tensor) -> bool:
    # A TensorArray's flow (variant) carries its elements' gradients as a gradient
    # TensorArray; an unused one stays None (its gradient functions take None).
    return _differentiable(t) or t.dtype.base_dtype == _dt.variant


def _between_ops(ys: list[Tensor], xs: list[Tensor], stops: set[int]) -> set[int]:
    """Ops on some path from an x to a y (ids)."""
    reached: set[int] = set()
    stack = [x.op for x in xs]
    while stack:
        op = stack.pop()
        if id(op) in reached:
            continue
        reached.add(id(op))
        for t in op._outputs:
            stack.extend(c for c in t._consumers if id(c) not in reached)
    between: set[int] = set()
    stack = [y.op for y in ys]
    while stack:
        op = stack.pop()
        if id(op) in between or id(op) not in reached:
            continue
        between.add(id(op))
        if id(op) in stops:
            continue
        stack.extend(t.op for t in op._inputs)
    return between


def gradients(ys: Any, xs: Any, grad_ys: Any = None, name: str = "gradients",
              colocate_gradients_with_ops: bool = False, gate_gradients: bool = False,
              aggregation_method: Any = None, stop_gradients: Any = None) -> list[Any]:
    """Symbolic d(sum(ys))/d(x) for each x in `xs`.

    Args:
        ys: a Tensor or list of Tensors to differentiate.
        xs: Tensors or Variables to differentiate with respect to.
        grad_ys: optional initial gradients, one per y (default: ones).
        stop_gradients: Tensors through which no gradient flows.

    Returns:
        One entry per x: a Tensor, an IndexedSlices (e.g. through gather),
        or None when x does not influence ys.

    Raises:
        LookupError: an op on the path has no registered gradient (names it).
        ValueError: a grad_ys entry whose shape or dtype does not match its y.
    """
    ys = [_to_tensor(y) for y in _as_list(ys)]
    xs = [_to_tensor(x) for x in _as_list(xs)]
    grad_ys = [None] * len(ys) if grad_ys is None else _as_list(grad_ys)
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    stop_ops = {id(_to_tensor(s).op) for s in _as_list(stop_gradients or [])}
    g = ys[0].graph
    with g.as_default(), _graph.name_scope(name):
        between = _between_ops(ys, xs, stop_ops)
        pending = _pending_counts(ys, between)
        grads: dict[Tensor, list[Any]] = collections.defaultdict(list)
        for y, gy in zip(ys, grad_ys):
            grads[y].append(_initial_grad(y, gy))
        ready = collections.deque(op for op in {id(y.op): y.op for y in ys}.values()
                                  if pending.get(id(op), 0) == 0)
        done: set[int] = set()
        xset = set(xs)
        while ready:
            op = ready.popleft()
            if id(op) in done:
                continue
            done.add(id(op))
            if id(op) in between and id(op) not in stop_ops:
                _backprop_op(op, grads, xset, colocate_gradients_with_ops)
            for t in op._inputs:
                p = t.op
                if id(p) in between and id(p) not in done:
                    pending[id(p)] -= 1
                    if pending[id(p)] == 0:
                        ready.append(p)
        return [_aggregate(grads.get(x, []), x) for x in xs]


def _pending_counts(ys: list[Tensor], between: set[int]) -> dict[int, int]:
    """For each op in `between`: how many consumer edges (within between) feed it grads."""
    pending: dict[int, int] = collections.defaultdict(int)
    seen: set[int] = set()
    stack = [y.op for y in ys if id(y.op) in between]
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        for t in op._inputs:
            if id(t.op) in between:
                pending[id(t.op)] += 1
                stack.append(t.op)
    return pending


def _initial_grad(y: Tensor, gy: Any) -> Any:
    if gy is None:
        return ones_like(y, name=f"grad_ys_{y.value_index}")
    gy = convert_to_tensor(gy, dtype=y.dtype.base_dtype)
    if not gy.shape.is_compatible_with(y.shape):
        raise ValueError(f"grad_ys shape {gy.shape} is incompatible with y {y.name} of shape "
                         f"{y.shape}")
    return gy


def _backprop_op(op: Operation, grads: dict[Tensor, list[Any]], xset: set[Tensor],
                 colocate: bool) -> None:
    out_grads = [_aggregate(grads.get(t, []), t) for t in op._outputs]
    if all(gr is None for gr in out_grads):
        return
    op_def = op.op_def
    found, grad_fn = gradient_registry.lookup(op)
    if found and grad_fn is None:
        return  # tf.NotDifferentiable
    if not found and op_def.not_differentiable:
        return
    if not found and op_def.grad_fn is None:
        raise LookupError(
            f"No gradient defined for operation '{op.name}' (op type: {op.type}). Register "
            f"one with `@<op>.gradient` in its stanza (defined at {op_def.where}), or mark it "
            "with `.no_gradient()` if it is not differentiable.")
    filled = []
    for t, gr in zip(op._outputs, out_grads):
        if gr is None and _differentiable(t):
            gr = zeros_like(t)
        filled.append(gr)
    scope_cm = op.graph.colocate_with(op) if colocate else _nullcontext()
    with scope_cm, _graph.name_scope(op.name + "_grad"):
        fn = grad_fn if found else op_def.grad_fn
        assert fn is not None  # both None cases returned or raised above
        in_grads = fn(op, *filled)
    in_grads = _as_list(in_grads) if in_grads is not None else [None] * len(op._inputs)
    if len(in_grads) != len(op._inputs):
        raise ValueError(f"Gradient function for {op.type} returned {len(in_grads)} gradients "
                         f"for op '{op.name}' which has {len(op._inputs)} inputs.")
    for t, gr in zip(op._inputs, in_grads):
        if gr is not None and (_carries_gradient(t) or t in xset):
            grads[t].append(gr)


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None


def _aggregate(parts: Sequence[Any], t: Tensor) -> Any:
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    if t.dtype.base_dtype == _dt.variant:
        return add_flow_grads([convert_to_tensor(p) for p in parts])
    if all(isinstance(p, IndexedSlices) for p in parts):
        return IndexedSlices(concat([p.values for p in parts], 0),
                             concat([p.indices for p in parts], 0), parts[0].dense_shape)
    return add_n([convert_to_tensor(p) for p in parts])


def hessians(ys: Any, xs: Any, name: str = "hessians") -> list[Any]:
    """Second derivatives of sum(ys) w.r.t. each x (flattened)."""
    out = []
    for x in _as_list(xs):
        (g,) = gradients(ys, [x])
        flat = reshape(g, [-1])
        rows = [gradients(gi, [x])[0] for gi in unstack(flat)]
        out.append(stack(rows))
    return out


# If/While gradients (in ops, below us) differentiate their bodies through this.
register_symbolic_gradients(gradients)
