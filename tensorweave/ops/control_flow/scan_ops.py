"""The FunctionalScan op that `tf.map_fn`, `tf.scan`, `tf.foldl` and `tf.foldr`
(`tensorweave/higher_order.py`) and `dynamic_rnn` build on, its gradient op, and
`functional_scan`, which builds one.

Construction. TensorFlow builds these from a `tf.while_loop` that reads the
elements from a TensorArray and writes the results into another one. Our
`while_loop` carries only dense tensors, and its gradient keeps every
iteration's loop state: accumulating the stacked result in a loop variable
(a one-hot mask add, or a `dynamic_update_slice`-like write) would copy the
whole `[n, ...]` result every step and keep `n` copies of it for the backward
pass, i.e. O(n^2) time and memory.

So all four are one functional op, "FunctionalScan", built the same way as
"While" (its body traced into a FuncGraph and called through the device's
function library):

- inputs: the initial carries (the accumulator; none for map_fn), the elems
  (sliced along dim 0 by the kernel, no copy) and the tensors `fn` captures;
- the body maps (carries, one slice of every elem, captures) to (new carries,
  per-step outputs);
- outputs: the final carries and the per-step outputs stacked along dim 0 into
  a buffer allocated once (written in place; reversed scans write row i at
  step n-1-i).

Its gradient op, "FunctionalScanGrad", walks the steps backwards calling the
body's gradient function once per step (like "WhileGrad"): it reuses the
carries the forward op recorded in the same `Session.run` (only the carries
and the values of the body's random ops, so O(n * carry size), nothing for
map_fn), writes each step's elem gradient into row i of one buffer, and sums
the gradients of captured tensors. Forward and backward are O(n) body calls
and O(n) memory beyond what the results take.

Neither op has a TensorFlow name: exporting a graph that uses them for
TensorFlow (`tf_graph_compat`) leaves them out, unlike TF's While/TensorArray
form. `parallel_iterations` and `swap_memory` are accepted and recorded but
the steps run one after another.

Example:
    >>> squares = tf.map_fn(lambda x: x * x, tf.constant([1.0, 2.0, 3.0]))
    >>> sums = tf.scan(lambda a, x: a + x, tf.constant([1, 2, 3]))   # [1, 3, 6]
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.func_graph import (FuncGraph, copy_func_body,
                                              flatten, func_graph_from_py_func,
                                              recording_view)
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.op_def import symbolic_gradients
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, dimension_value
from tensorweave.ops.array import stop_gradient
from tensorweave.ops.control_flow.while_ops import (_densify, _differentiable, _kernel_result,
                                               _shapes_attr, _zeros_grad, replaying)
from tensorweave.ops.control_flow.while_ops import _check_step, _shape_leq

# Per-step carries (and recorded random values) the forward op keeps for its gradient
# op in the same step; keyed by id(op) like While's tapes.
_TAPES_ATTR = "_tw_scan_tapes"


# ==== FunctionalScan ================================================================
scan_op = define_op("FunctionalScan", inputs=("init*", "elems*", "captures*"),
                    attrs={"body": REQUIRED, "reverse": False, "T": [], "output_shapes": [],
                           "parallel_iterations": 10},
                    stateful=True)  # the body may hold random ops or read variables


@scan_op.shape
def _(init: list[Tensor], elems: list[Tensor], captures: list[Tensor], *, body: FuncGraph,
      reverse: bool, T: list, output_shapes: list, parallel_iterations: int) -> Any:
    n_args = len(init) + len(elems) + len(captures)
    if len(body.inputs) != n_args or len(body.outputs) < len(init):
        raise ValueError(f"FunctionalScan body {body.name!r} must take {n_args} values and "
                         f"return at least {len(init)}; it takes {len(body.inputs)} and "
                         f"returns {len(body.outputs)}")
    return [(_dt.as_dtype(t), as_shape(s)) for t, s in zip(T, output_shapes)]


def _num_steps(name: str, elems: Sequence[Any]) -> int:
    """The common first dimension of the elems, checked at run time."""
    firsts = []
    for e in elems:
        if np.ndim(e) < 1:
            raise errors.InvalidArgumentError(
                None, None, f"Elements of elems of {name!r} must be 1+ dimensional, got a "
                "scalar")
        firsts.append(np.shape(e)[0])
    if len(set(firsts)) > 1:
        raise errors.InvalidArgumentError(
            None, None, f"Elements of elems of {name!r} must have the same first dimension; "
            f"got sizes {firsts}")
    return int(firsts[0])


def _slices(elems: Sequence[Any], i: int) -> list[Any]:
    # Plain indexing: a view for rows, and for a 1-D tensor the scalar form the
    # runtime uses (np.float32, bytes for strings).
    return [np.asarray(e)[i] for e in elems]


def _empty_stack(body: FuncGraph, j: int, dtype: Any) -> np.ndarray:
    # With no step run there is no output to take the element shape from: use the
    # traced one (unknown dimensions become 0, the stack is empty either way).
    s = body.outputs[j].shape
    dims = [] if s.ndims is None else [d or 0 for d in s.as_list()]
    return np.empty([0] + dims, dtype=_dt.as_dtype(dtype).as_numpy_dtype)


def _run_scan(ctx: Any, step: Any, init: list, elems: list, captures: list, body: FuncGraph,
              reverse: bool, T: list, record: bool) -> tuple[list, list, list[list]]:
    """Runs every step. Returns the final carries, the stacked outputs and, with
    `record`, per step its input carries followed by its recorded random values."""
    n = _num_steps(ctx.name, elems)
    nc = len(init)
    no = len(body.outputs) - nc
    fn: Any = recording_view(body) if record else body
    carry = list(init)
    stacked: list[Any] = [None] * no
    tape: list[list] = []
    for k in range(n):
        _check_step(step, ctx.name)
        i = n - 1 - k if reverse else k
        out = list(ctx.call_function(fn, carry + _slices(elems, i) + list(captures), step))
        if record:
            tape.append(carry + out[nc + no:])
        carry = out[:nc]
        for j in range(no):
            v = out[nc + j]
            v_shape = np.shape(v)
            buf = stacked[j]
            if buf is None:
                # Strings are numpy object arrays: a fixed-width buffer would truncate.
                kind = np.asarray(v).dtype
                buf = stacked[j] = np.empty((n,) + v_shape,
                                            dtype=object if kind.kind in "OSU" else kind)
            elif buf.shape[1:] != v_shape:
                raise errors.InvalidArgumentError(
                    None, None, f"Output {j} of the function of {ctx.name!r} has shape "
                    f"{list(v_shape)} at element {i} but {list(buf.shape[1:])} before; "
                    "all per-element outputs must have the same shape to be stacked")
            buf[i, ...] = v
    for j in range(no):
        if stacked[j] is None:
            stacked[j] = _empty_stack(body, nc + j, T[nc + j])
    return carry, stacked, tape


@scan_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, init: list, elems: list, captures: list, *, body: FuncGraph,
      reverse: bool, T: list, output_shapes: list, parallel_iterations: int) -> Any:
    record = any(c.type == "FunctionalScanGrad" for t in ctx.op._outputs for c in t._consumers)
    carry, stacked, tape = _run_scan(ctx, step, list(init), list(elems), list(captures), body,
                                     reverse, T, record)
    if record:
        step.__dict__.setdefault(_TAPES_ATTR, {})[id(ctx.op)] = tape
    return _kernel_result(carry + stacked)


# ---- FunctionalScan gradient ---------------------------------------------------------
scan_grad_op = define_op(
    "FunctionalScanGrad", inputs=("init*", "elems*", "captures*", "forward*", "grads*"),
    attrs={"body": REQUIRED, "body_grad": REQUIRED, "reverse": False, "fwd_T": [],
           "carry_index": [], "elem_index": [], "capture_index": [], "out_index": [],
           "T": [], "output_shapes": []},
    stateful=True)


@scan_grad_op.shape
def _(init: list, elems: list, captures: list, forward: list, grads: list, *,
      body: FuncGraph, body_grad: FuncGraph, reverse: bool, fwd_T: list, carry_index: list,
      elem_index: list, capture_index: list, out_index: list, T: list,
      output_shapes: list) -> Any:
    return [(_dt.as_dtype(t), as_shape(s)) for t, s in zip(T, output_shapes)]


@scan_grad_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, init: list, elems: list, captures: list, forward: list,
      grads: list, *, body: FuncGraph, body_grad: FuncGraph, reverse: bool, fwd_T: list,
      carry_index: list, elem_index: list, capture_index: list, out_index: list, T: list,
      output_shapes: list) -> Any:
    with replaying(step):
        return _scan_backward(ctx, step, init, elems, captures, grads, body, body_grad,
                              reverse, fwd_T, carry_index, elem_index, capture_index)


def _scan_backward(ctx: Any, step: Any, init: list, elems: list, captures: list,
                   grads: list, body: FuncGraph, body_grad: FuncGraph, reverse: bool,
                   fwd_T: list, carry_index: list, elem_index: list,
                   capture_index: list) -> Any:
    fwd = ctx.op.inputs[len(init) + len(elems) + len(captures)].op
    tape = step.__dict__.get(_TAPES_ATTR, {}).get(id(fwd))
    if tape is None:  # the forward op ran in another step: recompute its carries
        _, _, tape = _run_scan(ctx, step, list(init), list(elems), list(captures), body,
                               reverse, fwd_T, True)
    n = len(tape)
    nc = len(init)
    g_carry = [np.asarray(x) for x in grads[:len(carry_index)]]
    g_out = [np.asarray(x) for x in grads[len(carry_index):]]
    d_elems = [np.zeros(np.shape(elems[e]), dtype=np.asarray(elems[e]).dtype)
               for e in elem_index]
    d_caps = [np.zeros(np.shape(captures[c]), dtype=np.asarray(captures[c]).dtype)
              for c in capture_index]
    n_dc, n_de = len(carry_index), len(elem_index)
    for k in range(n - 1, -1, -1):
        _check_step(step, ctx.name)
        i = n - 1 - k if reverse else k
        rec = tape[k]
        args = (rec[:nc] + _slices(elems, i) + list(captures) + rec[nc:]
                + g_carry + [g[i] for g in g_out])
        res = [np.asarray(x) for x in ctx.call_function(body_grad, args, step)]
        g_carry = res[:n_dc]
        for m in range(n_de):
            d_elems[m][i] = res[n_dc + m]
        for m in range(len(capture_index)):
            d_caps[m] = d_caps[m] + res[n_dc + n_de + m]
    return _kernel_result(g_carry + d_elems + d_caps)


scan_grad_op.no_gradient()


def _grad_body(op: Operation, body_g: FuncGraph, carry_shapes: list[Any],
               carry_index: list[int], out_index: list[int], elem_index: list[int],
               capture_index: list[int]) -> FuncGraph:
    """The body's gradient function, traced once: (body inputs, recorded values, output
    grads) -> grads of the differentiable carries, elems and captures of one step."""
    g = get_default_graph()
    nc, ne = op.get_attr("N_init"), op.get_attr("N_elems")
    recorded = recording_view(body_g).extra
    n_in = len(body_g.inputs)
    n_rec = len(recorded)
    specs = [(t.dtype.base_dtype, t.shape) for t in body_g.inputs] + \
        [(t.dtype.base_dtype, t.shape) for t in recorded] + \
        [(body_g.outputs[c].dtype.base_dtype, s) for c, s in zip(carry_index, carry_shapes)] + \
        [(body_g.outputs[nc + j].dtype.base_dtype, body_g.outputs[nc + j].shape)
         for j in out_index]

    def grad_body(*args: Any) -> list[Any]:
        xs = list(args[:n_in])
        outs = copy_func_body(body_g, xs,
                              replace=dict(zip(recorded, args[n_in:n_in + n_rec])))
        ys = [outs[c] for c in carry_index] + [outs[nc + j] for j in out_index]
        wrt = [xs[c] for c in carry_index] + [xs[nc + e] for e in elem_index] + \
            [xs[nc + ne + c] for c in capture_index]
        ds = symbolic_gradients(ys, wrt, grad_ys=list(args[n_in + n_rec:]))
        return [_densify(d) if d is not None else _zeros_grad(x) for d, x in zip(ds, wrt)]

    body_grad = func_graph_from_py_func(body_g.name + "_grad", grad_body, specs, g)
    if body_grad.captures:
        names = [t.name for t, _ in body_grad.captures]
        raise ValueError(f"Gradient body of {op.name!r} captured outer tensors {names}; "
                         "this is a tensorweave bug, please report it")
    body_grad._finish()
    return body_grad


@scan_op.gradient
def _(op: Operation, *grads: Any) -> Any:
    body_g: FuncGraph = op.get_attr("body")
    nc = op.get_attr("N_init")
    ne = op.get_attr("N_elems")
    nk = op.get_attr("N_captures")
    no = len(op.outputs) - nc
    inputs = list(op.inputs)
    init, elems, caps = inputs[:nc], inputs[nc:nc + ne], inputs[nc + ne:]
    carry_index = [c for c in range(nc) if _differentiable(init[c])]
    out_index = [j for j in range(no) if _differentiable(op.outputs[nc + j])]
    elem_index = [e for e in range(ne) if _differentiable(elems[e])]
    capture_index = [c for c in range(nk) if _differentiable(caps[c])]
    wrt_count = len(carry_index) + len(elem_index) + len(capture_index)
    if (wrt_count == 0 or not (carry_index or out_index)
            or all(grads[c] is None for c in carry_index)
            and all(grads[nc + j] is None for j in out_index)):
        return [None] * len(inputs)
    g_in = [_densify(grads[c]) if grads[c] is not None else _zeros_grad(op.outputs[c])
            for c in carry_index] + \
           [_densify(grads[nc + j]) if grads[nc + j] is not None
            else _zeros_grad(op.outputs[nc + j]) for j in out_index]
    g = get_default_graph()
    body_grad = _grad_body(op, body_g, [init[c].shape for c in carry_index], carry_index,
                           out_index, elem_index, capture_index)
    wrt_inputs = [init[c] for c in carry_index] + [elems[e] for e in elem_index] + \
        [caps[c] for c in capture_index]
    grad_op = g.create_op("FunctionalScanGrad", [init, elems, caps, [op.outputs[0]], g_in], {
        "body": body_g, "body_grad": body_grad, "reverse": op.get_attr("reverse"),
        "fwd_T": op.get_attr("T"), "carry_index": carry_index, "elem_index": elem_index,
        "capture_index": capture_index, "out_index": out_index,
        "T": [t.dtype.base_dtype for t in wrt_inputs],
        "output_shapes": _shapes_attr([t.shape for t in wrt_inputs])},
        name=op.name.rsplit("/", 1)[-1] + "_grad")
    g._functions[body_grad.name] = body_grad
    out: list[Any] = [None] * len(inputs)
    positions = carry_index + [nc + e for e in elem_index] + [nc + ne + c for c in capture_index]
    for pos, i in enumerate(positions):
        out[i] = grad_op.outputs[pos]
    return out


# ==== graph construction =============================================================
StepFn = Callable[[list[Tensor], list[Tensor]], tuple[list[Any], list[Any]]]


def flat_elems(elems: Any, what: str) -> list[Tensor]:
    """The elems' leaves as tensors; static ranks and first dimensions checked.

    Example:
        >>> xs = flat_elems((a, {"b": b}), "tf.map_fn")   # [a, b]
    """
    flat = [convert_to_tensor(e, name="elems") for e in flatten(elems)]
    if not flat:
        raise ValueError(f"{what}: elems must contain at least one tensor, got {elems!r}")
    for e in flat:
        if e.shape.ndims is not None and e.shape.ndims < 1:
            raise ValueError(f"{what}: elements in elems must be 1+ dimensional; "
                             f"{e.name} has shape {e.shape}")
    known = [(e.name, dimension_value(e.shape[0])) for e in flat
             if e.shape.ndims is not None and e.shape.as_list()[0] is not None]
    if len({d for _, d in known}) > 1:
        sizes = ", ".join(f"{n}: {d}" for n, d in known)
        raise ValueError(f"{what}: all elems must have the same first dimension size; got "
                         f"{sizes}")
    return flat


def static_length(elems_flat: Sequence[Tensor]) -> int | None:
    """The elems' first dimension when some elem knows it statically, else None.

    Example:
        >>> static_length([tf.zeros([4, 2])])
        4
    """
    for e in elems_flat:
        if e.shape.ndims is not None:
            first = e.shape.as_list()[0]
            if first is not None:
                return int(first)
    return None


def functional_scan(base: str, step_fn: StepFn, init_flat: list[Tensor],
                     elems_flat: list[Tensor], reverse: bool, parallel_iterations: int,
                     back_prop: bool, infer_shape: bool) -> tuple[list[Tensor], list[Tensor]]:
    """Builds one FunctionalScan op; returns (final carries, stacked outputs).

    `step_fn(carries, slices)` returns (new carries, per-step outputs), flat
    lists; it is traced once into the body. `tf.map_fn`/`scan`/`foldl`/`foldr`
    (`tensorweave/higher_order.py`) and `dynamic_rnn` build on it.

    Example:
        >>> finals, stacked = functional_scan("cumsum", lambda c, x: ([c[0] + x[0]],
        ...     [c[0] + x[0]]), [tf.constant(0.0)], [xs], False, 10, True, True)
    """
    g = get_default_graph()
    nc = len(init_flat)
    specs = [(t.dtype.base_dtype, t.shape) for t in init_flat] + \
        [(e.dtype.base_dtype, e.shape[1:] if e.shape.ndims is not None else TensorShape(None))
         for e in elems_flat]

    def traced(*args: Any) -> list[Any]:
        new_carry, outs = step_fn(list(args[:nc]), list(args[nc:]))
        return list(new_carry) + list(outs)

    body = func_graph_from_py_func(base + "_body", traced, specs, g)
    leaves = flatten(body.structured_outputs)
    if len(body.outputs) != len(leaves):
        raise TypeError(f"The function of {base!r} must return only tensors (or values "
                        f"convertible to tensors); got {body.structured_outputs!r}")
    for t, out in zip(init_flat, body.outputs[:nc]):
        if out.dtype.base_dtype != t.dtype.base_dtype:
            raise TypeError(f"The accumulator {t.name} of {base!r} is "
                            f"{t.dtype.base_dtype.name} but the function returns "
                            f"{out.dtype.base_dtype.name} ({out.name}) for it")
        if not _shape_leq(out.shape, t.shape):
            raise ValueError(f"The accumulator {t.name} of {base!r} has shape {t.shape} but "
                             f"the function returns shape {out.shape} for it; the "
                             "accumulator's shape must not change between elements")
    step_shapes = [t.shape for t in body.outputs[nc:]]
    body._finish()
    n_args = nc + len(elems_flat)
    captures = [outer for outer, _ in body.captures]
    assert len(body.inputs) == n_args + len(captures)
    ctrl = [c for c in body.outer_control_inputs if c.graph is g]
    n_static = static_length(elems_flat)
    stacked_shapes = [TensorShape([n_static]).concatenate(s) if infer_shape
                      else TensorShape(None) for s in step_shapes]
    out_dtypes = [t.dtype.base_dtype for t in body.outputs]
    with g.control_dependencies(ctrl):
        op = g.create_op("FunctionalScan", [init_flat, elems_flat, captures], {
            "body": body, "reverse": bool(reverse), "T": out_dtypes,
            "output_shapes": _shapes_attr([t.shape for t in init_flat] + stacked_shapes),
            "parallel_iterations": int(parallel_iterations)}, name=base)
    g._functions[body.name] = body
    outs = list(op.outputs)
    if not back_prop:
        outs = [stop_gradient(t) for t in outs]
    return outs[:nc], outs[nc:]
