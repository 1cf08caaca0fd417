"""Functional loops: the "While" op, its gradient op "WhileGrad", and `tf.while_loop`.

`tf.while_loop` traces `cond` and `body` into FuncGraphs (see
`tensorweave.framework.func_graph`) held in the attrs of one "While" op; the
op's kernel calls them through the device's function library, so a loop runs in
one kernel call.

It also holds the helpers the functional control-flow ops share (cond_ops,
scan_ops): densifying and zero gradients, kernel results, output-shape attrs,
replay of recorded values.

Example:
    >>> i = tf.while_loop(lambda i: i < 10, lambda i: i + 1, [tf.constant(0)])
"""
from __future__ import annotations

import builtins
import contextlib
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.func_graph import (
    FuncGraph, assert_same_structure, copy_func_body, flatten, func_graph_from_py_func,
    pack_sequence_as, recording_view)
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.op_def import symbolic_gradients
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, plain_dims
from tensorweave.kernels.tensor_array_value import REPLAYING
from tensorweave.ops.array import stop_gradient, zeros_like
from tensorweave.ops.math import math_ops
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.composite_values import from_flows, to_flows
from tensorweave.ops.tensor_array.tensor_array_ops import zeros_flow

# ---- shared helpers of the family (formerly util.py) ----
_pytuple = builtins.tuple  # the family's package exports tf's `tuple` (assert_ops)


def _shapes_attr(shapes: Sequence[TensorShape]) -> list[Any]:
    return [plain_dims(s) for s in shapes]


def _kernel_result(values: Sequence[Any]) -> Any:
    # The executor unpacks kernels with several outputs; one output is returned bare.
    if len(values) == 1:
        return values[0]
    return _pytuple(values)


def _differentiable(t: Tensor) -> bool:
    # variant: a TensorArray's flow, whose gradient is a gradient TensorArray
    dt = t.dtype.base_dtype
    return dt.is_floating or dt.is_complex or dt == _dt.variant


def _zeros_grad(t: Tensor) -> Tensor:
    """A zero gradient for `t` (for a TensorArray flow: a gradient array with
    nothing written)."""
    if t.dtype.base_dtype == _dt.variant:
        return zeros_flow(t)
    return zeros_like(t)


def _densify(x: Any) -> Any:
    if x is None or isinstance(x, Tensor):
        return x
    if isinstance(x, IndexedSlices):
        # Function outputs are dense tensors: scatter the slices into a full gradient.
        assert x.dense_shape is not None  # gradients of function inputs carry it
        return math_ops.unsorted_segment_sum(x.values, x.indices, x.dense_shape[0])
    return convert_to_tensor(x)


@contextlib.contextmanager
def replaying(step: Any) -> Iterator[None]:
    """Marks `step` while a gradient kernel re-runs forward ops (a loop body, a cond
    branch): TensorArray reads in them are replays, not second reads (TF 1.x's
    clear_after_read)."""
    step.__dict__[REPLAYING] = step.__dict__.get(REPLAYING, 0) + 1
    try:
        yield
    finally:
        step.__dict__[REPLAYING] -= 1


def _check_step(step: Any, op_name: str) -> None:
    if step.cancelled is not None:
        raise step.cancelled
    remaining = step.remaining()
    if remaining is not None and remaining <= 0:
        raise errors.DeadlineExceededError(None, None, f"Timed out inside loop {op_name!r}.")


# ==== While =========================================================================
while_op = define_op("While", inputs=("input*", "max_iter*"),
                     attrs={"cond": REQUIRED, "body": REQUIRED, "T": [], "output_shapes": [],
                            "parallel_iterations": 10},
                     stateful=True)


@while_op.shape
def _(inputs: list[Tensor], max_iter: list[Tensor], *, cond: FuncGraph, body: FuncGraph,
      T: list, output_shapes: list, parallel_iterations: int) -> Any:
    if len(body.inputs) != len(inputs) or len(body.outputs) != len(inputs):
        raise ValueError(f"While body {body.name!r} must take and return {len(inputs)} values; "
                         f"it takes {len(body.inputs)} and returns {len(body.outputs)}")
    if len(cond.inputs) != len(inputs) or len(cond.outputs) != 1:
        raise ValueError(f"While cond {cond.name!r} must take {len(inputs)} values and return "
                         f"one bool; it takes {len(cond.inputs)} and returns "
                         f"{len(cond.outputs)}")
    return [(_dt.as_dtype(t), as_shape(s)) for t, s in zip(T, output_shapes)]


_TAPES_ATTR = "_tw_while_tapes"  # per-step storage of loop states for WhileGrad


@while_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, inputs: list, max_iter: list, *, cond: FuncGraph, body: FuncGraph,
      T: list, output_shapes: list, parallel_iterations: int) -> Any:
    record = any(c.type == "WhileGrad" for t in ctx.op._outputs for c in t._consumers)
    states = _run_loop(ctx, step, list(inputs), max_iter, cond, body, record)
    if record:
        # The gradient op of this loop reads the per-iteration states in the same step
        # instead of recomputing them (recomputing would repeat side effects).
        step.__dict__.setdefault(_TAPES_ATTR, {})[id(ctx.op)] = states
    return _kernel_result(states[-1][:len(body.outputs)])


def _run_loop(ctx: Any, step: Any, values: list, max_iter: list, cond: FuncGraph,
              body: FuncGraph, record: bool) -> list[list[Any]]:
    """Runs the loop; with `record`, returns every iteration's state, each followed by
    the values of the body's stateful ops in that iteration (see recording_view)."""
    limit = int(np.asarray(max_iter[0])) if max_iter else None
    fn: Any = recording_view(body) if record else body
    n = len(body.outputs)
    states = [values]
    i = 0
    while limit is None or i < limit:
        _check_step(step, ctx.name)
        (c,) = ctx.call_function(cond, values, step)
        c = np.asarray(c)
        if c.size != 1:
            raise errors.InvalidArgumentError(
                None, None, f"The cond of while loop {ctx.name!r} must return a scalar bool, "
                f"got shape {c.shape}")
        if not bool(c.reshape(())):
            break
        out = list(ctx.call_function(fn, values, step))
        values = out[:n]
        if record:
            states[-1] = states[-1] + out[n:]  # recorded values belong to the iteration
            states.append(values)
        else:
            states = [values]
        i += 1
    return states


def _shape_leq(output: TensorShape, invariant: TensorShape) -> bool:
    """True if `output` is at least as specific as `invariant` (fits it)."""
    if invariant.ndims is None:
        return True
    if output.ndims is None or output.ndims != invariant.ndims:
        return False
    return all(i is None or o == i for o, i in zip(output.as_list(), invariant.as_list()))


def _invariants(flat_vars: list[Tensor], shape_invariants: Any, single: bool,
                structure: Any) -> list[TensorShape]:
    """Each loop variable's shape invariant (its own shape where none is given)."""
    if shape_invariants is None:
        return [v.shape for v in flat_vars]
    inv_struct = [shape_invariants] if single else shape_invariants
    invariants = []
    for v, s in zip(flat_vars, flatten_shapes(inv_struct, structure)):
        s = v.shape if s is None else as_shape(s)
        if not _shape_leq(v.shape, s):
            raise ValueError(f"The shape invariant {s} is not compatible with the initial "
                             f"shape {v.shape} of loop variable {v.name}")
        invariants.append(s)
    return invariants


def _body_result(body_g: FuncGraph, structure: Any, single: bool, flat_vars: list[Tensor],
                 invariants: list[TensorShape]) -> list[Tensor]:
    """The body's outputs, flat, checked against the loop variables: same structure,
    dtypes, and shapes within the invariants (each error names the variable)."""
    result = body_g.structured_outputs
    if single or (isinstance(structure, (list, _pytuple)) and len(structure) == 1
                  and not isinstance(result, (list, _pytuple))):
        result = [result]
    try:
        assert_same_structure(structure if not single else [0], result, "loop_vars",
                              "body output")
    except ValueError as e:
        raise ValueError(f"body of tf.while_loop must return the same structure as loop_vars: "
                         f"{e}") from None
    res_flat = flatten(result)
    for v, out, inv in zip(flat_vars, res_flat, invariants):
        if not isinstance(out, Tensor):
            raise TypeError(f"body of tf.while_loop returned {out!r} for loop variable {v.name}; "
                            "loop variables must be tensors")
        if out.dtype.base_dtype != v.dtype.base_dtype:
            raise TypeError(f"Loop variable {v.name} enters the loop as {v.dtype.name} but the "
                            f"body returns {out.dtype.base_dtype.name} ({out.name})")
        if not _shape_leq(out.shape, inv):
            raise ValueError(
                f"Input tensor '{v.name}' enters the loop with shape {inv}, but has shape "
                f"{out.shape} after one iteration. To allow the shape to vary across "
                "iterations, use the `shape_invariants` argument of tf.while_loop to specify "
                "a less-specific shape.")
    return list(res_flat)


def _share_captures(cond_g: FuncGraph, body_g: FuncGraph, n: int) -> list[Tensor]:
    """Gives cond and body the same captured tensors, in one order, as extra inputs after
    the `n` loop variables; the body passes them through as extra loop variables.
    Returns those outer tensors."""
    union: list[Tensor] = []
    for fg in (cond_g, body_g):
        for outer, _ in fg.captures:
            if outer not in union:
                union.append(outer)
    for fg in (cond_g, body_g):
        for outer in union:
            fg.capture(outer)
        caps = dict(fg.captures)
        fg.inputs = fg.inputs[:n] + [caps[t] for t in union]
    body_g.outputs = body_g.outputs + body_g.inputs[n:]
    return union


def _create_while(base: str, cond_g: FuncGraph, body_g: FuncGraph, inputs: list[Tensor],
                  shapes: list[TensorShape], maximum_iterations: Any,
                  parallel_iterations: int) -> Operation:
    """The While op over finished cond/body graphs (the bodies join the graph's library)."""
    g = get_default_graph()
    max_iter: list[Tensor] = []
    if maximum_iterations is not None:
        max_iter = [convert_to_tensor(maximum_iterations, name="maximum_iterations")]
        if not max_iter[0].dtype.base_dtype.is_integer:
            raise TypeError(f"maximum_iterations must be an integer, got {max_iter[0].name} "
                            f"of dtype {max_iter[0].dtype.name}")
    ctrl = [c for c in cond_g.outer_control_inputs + body_g.outer_control_inputs
            if c.graph is g]
    with g.control_dependencies(ctrl):
        op = g.create_op("While", [inputs, max_iter], {
            "cond": cond_g, "body": body_g, "T": [t.dtype.base_dtype for t in inputs],
            "output_shapes": _shapes_attr(shapes),
            "parallel_iterations": int(parallel_iterations)}, name=base)
    g._functions[cond_g.name] = cond_g
    g._functions[body_g.name] = body_g
    return op


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10,
               back_prop: bool = True, swap_memory: bool = False,
               name: str | None = None, maximum_iterations: Any = None,
               return_same_structure: bool = False) -> Any:
    """`tf.while_loop`: repeats `body` while `cond` holds; one "While" op.

    `cond` and `body` are called with the loop variables (unpacked when
    `loop_vars` is a list/tuple) and traced once. `body` returns the next loop
    variables in the same structure. A loop variable's shape may change only
    within its entry of `shape_invariants`.

    Args:
        loop_vars: a (nested) structure of tensors, tf.TensorArrays (carried as
            their flows; body and caller get TensorArrays) or convertible values.
        shape_invariants: same structure, of TensorShapes (None: keep the
            variable's own shape).
        maximum_iterations: optional int or int tensor bounding iterations.

    Returns:
        The final loop variables, structured as `loop_vars` (TF1: a one-element
        list comes back unwrapped unless `return_same_structure`).

    Raises:
        ValueError: a loop variable changes shape beyond its invariant (named),
            or `body` returns a different structure.
        TypeError: `body` changes a loop variable's dtype (named).

    Example:
        >>> i, total = tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i),
        ...                          [tf.constant(0), tf.constant(0)])
    """
    if not callable(cond) or not callable(body):
        raise TypeError(f"cond and body of tf.while_loop must be callable, got {cond!r} and "
                        f"{body!r}")
    g = get_default_graph()
    base = name or "while"
    single = not isinstance(loop_vars, (list, _pytuple, dict))
    # TensorArrays (registered composite values) ride through the loop as their flows;
    # body and caller get TensorArrays again (TF's while_loop does the same).
    ta_template = [loop_vars] if single else loop_vars
    structure = to_flows(ta_template)
    flat_vars = [convert_to_tensor(v) for v in flatten(structure)]
    if not flat_vars:
        raise ValueError("tf.while_loop needs at least one loop variable")
    invariants = _invariants(flat_vars, shape_invariants, single, structure)
    specs = [(v.dtype.base_dtype, s) for v, s in zip(flat_vars, invariants)]
    ta_packer = ta_template if not single else [loop_vars]

    def call(fn: Callable[..., Any]) -> Callable[..., Any]:
        def traced(*args: Any) -> Any:
            packed = pack_sequence_as(ta_packer, from_flows(ta_packer, list(args)))
            if single:
                return to_flows(fn(packed[0]))
            if isinstance(packed, dict):
                return to_flows(fn(packed))
            return to_flows(fn(*packed))
        return traced

    cond_g = func_graph_from_py_func(base + "_cond", call(cond), specs, g)
    body_g = func_graph_from_py_func(base + "_body", call(body), specs, g)
    if len(cond_g.outputs) != 1 or cond_g.outputs[0].dtype.base_dtype != _dt.bool:
        raise TypeError(f"cond of tf.while_loop must return one bool scalar tensor, got "
                        f"{cond_g.structured_outputs!r}")
    body_g.outputs = _body_result(body_g, structure, single, flat_vars, invariants)
    n = len(flat_vars)
    union = _share_captures(cond_g, body_g, n)
    cond_g._finish()
    body_g._finish()
    op = _create_while(base, cond_g, body_g, flat_vars + union,
                       list(invariants) + [t.shape for t in union], maximum_iterations,
                       parallel_iterations)
    outs = op.outputs[:n]
    if not back_prop:
        outs = [stop_gradient(t) for t in outs]
    packed = pack_sequence_as(ta_packer, from_flows(ta_packer, outs))
    if single:
        return packed[0]
    if not return_same_structure and isinstance(packed, (list, _pytuple)) and len(packed) == 1:
        return packed[0]
    return packed


def flatten_shapes(inv_struct: Any, structure: Any) -> list[Any]:
    """Shape invariants flattened along `structure` (a TensorShape/list is one leaf)."""
    def walk(s: Any, inv: Any) -> list[Any]:
        if isinstance(s, dict):
            return [x for k in sorted(s) for x in walk(s[k], inv[k])]
        if isinstance(s, (list, _pytuple)):
            if len(inv) != len(s):
                raise ValueError(f"shape_invariants {inv_struct!r} do not match the structure "
                                 f"of loop_vars {structure!r}")
            return [x for a, b in zip(s, inv) for x in walk(a, b)]
        return [inv]
    return walk(structure, inv_struct)


# ---- While gradient ------------------------------------------------------------------
# WhileGrad replays the loop backwards: it takes the per-iteration states the
# forward While recorded in this step (or recomputes them when the forward ran in
# another step) and applies the body's gradient function once per iteration.
while_grad_op = define_op("WhileGrad", inputs=("input*", "max_iter*", "outputs*", "grads*"),
                          attrs={"cond": REQUIRED, "body": REQUIRED, "body_grad": REQUIRED,
                                 "grad_index": [], "forward": "", "T": [],
                                 "output_shapes": []},
                          stateful=True)


@while_grad_op.shape
def _(inputs: list, max_iter: list, outputs: list, grads: list, *, cond: FuncGraph,
      body: FuncGraph, body_grad: FuncGraph, grad_index: list, forward: str, T: list,
      output_shapes: list) -> Any:
    return [(_dt.as_dtype(t), as_shape(s)) for t, s in zip(T, output_shapes)]


@while_grad_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, inputs: list, max_iter: list, outputs: list, grads: list, *,
      cond: FuncGraph, body: FuncGraph, body_grad: FuncGraph, grad_index: list, forward: str,
      T: list, output_shapes: list) -> Any:
    fwd = ctx.op.inputs[len(inputs) + len(max_iter)].op  # the forward While op
    with replaying(step):
        states = step.__dict__.get(_TAPES_ATTR, {}).get(id(fwd))
        if states is None:
            states = _run_loop(ctx, step, list(inputs), max_iter, cond, body, True)
        g = [np.asarray(x) for x in grads]
        for k in range(len(states) - 2, -1, -1):
            _check_step(step, ctx.name)
            g = [np.asarray(x) for x in
                 ctx.call_function(body_grad, list(states[k]) + g, step)]
            # states[k] is the iteration's inputs followed by its recorded stateful values
    return _kernel_result(g)


while_grad_op.no_gradient()


@while_op.gradient
def _(op: Operation, *grads: Any) -> Any:
    body_g: FuncGraph = op.get_attr("body")
    cond_g: FuncGraph = op.get_attr("cond")
    n_in = len(body_g.inputs)
    inputs = list(op.inputs[:n_in])
    max_iter = list(op.inputs[n_in:])
    grad_index = [i for i, t in enumerate(inputs) if _differentiable(t)]
    if not grad_index or all(grads[i] is None for i in grad_index):
        return [None] * len(op.inputs)
    grads_in = [_densify(grads[i]) if grads[i] is not None
                else _zeros_grad(op.outputs[i]) for i in grad_index]
    g = get_default_graph()
    recorded = recording_view(body_g).extra
    specs = [(t.dtype.base_dtype, s) for t, s in zip(
        inputs, [op.outputs[i].shape for i in range(n_in)])] + \
        [(t.dtype.base_dtype, t.shape) for t in recorded] + \
        [(t.dtype.base_dtype, op.outputs[i].shape) for i, t in
         zip(grad_index, [inputs[i] for i in grad_index])]
    n_rec = len(recorded)

    def grad_body(*args: Any) -> list[Any]:
        xs = list(args[:n_in])
        outs = copy_func_body(body_g, xs,
                              replace=dict(zip(recorded, args[n_in:n_in + n_rec])))
        dxs = symbolic_gradients([outs[i] for i in grad_index], [xs[i] for i in grad_index],
                        grad_ys=list(args[n_in + n_rec:]))
        return [_densify(d) if d is not None else _zeros_grad(xs[i])
                for d, i in zip(dxs, grad_index)]

    body_grad = func_graph_from_py_func(body_g.name + "_grad", grad_body, specs, g)
    if body_grad.captures:
        names = [t.name for t, _ in body_grad.captures]
        raise ValueError(f"Gradient body of while loop {op.name!r} captured outer tensors "
                         f"{names}; this is a tensorweave bug, please report it")
    body_grad._finish()
    grad_op = g.create_op("WhileGrad", [inputs, max_iter, [op.outputs[0]], grads_in], {
        "cond": cond_g, "body": body_g, "body_grad": body_grad, "grad_index": grad_index,
        "forward": op.name, "T": [inputs[i].dtype.base_dtype for i in grad_index],
        "output_shapes": _shapes_attr([inputs[i].shape for i in grad_index])},
        name=op.name.rsplit("/", 1)[-1] + "_grad")
    g._functions[body_grad.name] = body_grad
    out: list[Any] = [None] * len(op.inputs)
    for pos, i in enumerate(grad_index):
        out[i] = grad_op.outputs[pos]
    return out
