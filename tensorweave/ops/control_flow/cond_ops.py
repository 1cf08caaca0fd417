"""Functional conditionals: the "If" op (with its gradient), `tf.cond` and `tf.case`.

`tf.cond` traces both Python functions into FuncGraphs (see
`tensorweave.framework.func_graph`) held in the attrs of one "If" op; the op's
kernel calls the taken branch through the device's function library, so only
that branch runs.

Example:
    >>> x = tf.placeholder(tf.float32, [])
    >>> y = tf.cond(x > 0, lambda: x * 2.0, lambda: -x)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.func_graph import (FuncGraph, assert_same_structure, copy_func_body,
                                              flatten, func_graph_from_py_func,
                                              pack_sequence_as)
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.op_def import symbolic_gradients
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.ops.control_flow.assert_ops import Assert
from tensorweave.framework.composite_values import from_flows, is_composite_value, to_flows
from tensorweave.ops.control_flow.while_ops import (_densify, _differentiable, _kernel_result,
                                               _pytuple, _shapes_attr, _zeros_grad,
                                               replaying)
from tensorweave.ops.math import math_ops
from tensorweave.framework.graph import control_dependencies


def _most_specific_common(a: TensorShape, b: TensorShape) -> TensorShape:
    """The most specific shape both `a` and `b` satisfy (what If can promise)."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


# ==== If ============================================================================
if_op = define_op("If", inputs=("cond", "input*"),
                  attrs={"then_branch": REQUIRED, "else_branch": REQUIRED, "Tin": [],
                         "Tout": [], "output_shapes": []},
                  stateful=True)


@if_op.shape
def _(cond: Tensor, inputs: list[Tensor], *, then_branch: FuncGraph, else_branch: FuncGraph,
      Tin: list, Tout: list, output_shapes: list) -> Any:
    if cond.shape.ndims not in (None, 0):
        raise ValueError(f"The predicate of If must be a scalar, got {cond.name} with shape "
                         f"{cond.shape}")
    for branch in (then_branch, else_branch):
        if len(branch.inputs) != len(inputs):
            raise ValueError(f"If branch {branch.name!r} takes {len(branch.inputs)} inputs but "
                             f"the op has {len(inputs)}")
    return [(_dt.as_dtype(t), as_shape(s)) for t, s in zip(Tout, output_shapes)]


@if_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, cond: Any, inputs: list, *, then_branch: FuncGraph,
      else_branch: FuncGraph, Tin: list, Tout: list, output_shapes: list) -> Any:
    pred = np.asarray(cond)
    if pred.size != 1:
        raise errors.InvalidArgumentError(
            None, None, f"The predicate of If must be a scalar, got a value of shape "
            f"{pred.shape}")
    branch = then_branch if bool(pred.reshape(())) else else_branch
    if getattr(branch, _REPLAYS, False):  # a gradient branch re-running forward ops
        with replaying(step):
            return _kernel_result(ctx.call_function(branch, list(inputs), step))
    return _kernel_result(ctx.call_function(branch, list(inputs), step))


_REPLAYS = "_tw_replays_forward"


@if_op.gradient
def _(op: Operation, *grads: Any) -> Any:
    then_b: FuncGraph = op.get_attr("then_branch")
    else_b: FuncGraph = op.get_attr("else_branch")
    inputs = list(op.inputs[1:])
    live = [i for i, g in enumerate(grads) if g is not None]
    if not live:
        return [None] * len(op.inputs)
    grads_live = [_densify(grads[i]) for i in live]
    g = get_default_graph()
    specs = [(t.dtype.base_dtype, t.shape) for t in inputs] + \
        [(gr.dtype.base_dtype, gr.shape) for gr in grads_live]
    diff = [i for i, t in enumerate(inputs) if _differentiable(t)]

    def grad_fn(branch: FuncGraph) -> Callable[..., Any]:
        def body(*args: Any) -> list[Any]:
            xs = list(args[:len(inputs)])
            outs = copy_func_body(branch, xs)
            ys = [outs[i] for i in live]
            dxs = symbolic_gradients(ys, [xs[i] for i in diff], grad_ys=list(args[len(inputs):]))
            return [_densify(d) for d in dxs]
        return body

    then_g = func_graph_from_py_func(then_b.name + "_grad", grad_fn(then_b), specs, g)
    else_g = func_graph_from_py_func(else_b.name + "_grad", grad_fn(else_b), specs, g)
    setattr(then_g, _REPLAYS, True)
    setattr(else_g, _REPLAYS, True)
    # A None gradient in one branch must be a zero in that branch if the other has one.
    then_res = flatten(then_g.structured_outputs)
    else_res = flatten(else_g.structured_outputs)
    keep: list[int] = []
    for k, (a, b) in enumerate(zip(then_res, else_res)):
        if a is None and b is None:
            continue
        keep.append(k)
    then_g.outputs = [_or_zeros(then_g, then_res[k], then_g.inputs[diff[k]]) for k in keep]
    else_g.outputs = [_or_zeros(else_g, else_res[k], else_g.inputs[diff[k]]) for k in keep]
    results = _build_if(op.inputs[0], then_g, else_g, [gr for gr in grads_live],
                        name=op.name.rsplit("/", 1)[-1] + "_grad", extra_inputs=inputs)
    out: list[Any] = [None] * len(op.inputs)
    for pos, k in enumerate(keep):
        out[1 + diff[k]] = results[pos]
    return out


def _or_zeros(fg: FuncGraph, value: Any, like: Tensor) -> Tensor:
    if value is not None:
        return value
    with fg.as_default():
        return _zeros_grad(like)


def _build_if(pred: Tensor, then_g: FuncGraph, else_g: FuncGraph, explicit: list[Tensor],
              name: str, extra_inputs: Sequence[Tensor] = ()) -> list[Tensor]:
    """Creates the If op; branch inputs are `extra_inputs + explicit` then captures.

    Both branches get a placeholder for every capture of either, in one shared
    order, because the op passes one argument list to whichever branch runs.
    """
    n_args = len(extra_inputs) + len(explicit)
    union: list[Tensor] = []
    for fg in (then_g, else_g):
        for outer, _ in fg.captures:
            if outer not in union:
                union.append(outer)
    for fg in (then_g, else_g):
        for outer in union:
            fg.capture(outer)
        caps = dict(fg.captures)
        fg.inputs = fg.inputs[:n_args] + [caps[t] for t in union]
        fg._finish()
    for a, b in zip(then_g.outputs, else_g.outputs):
        if a.dtype.base_dtype != b.dtype.base_dtype:
            raise TypeError(f"If branches {then_g.name!r} and {else_g.name!r} return "
                            f"{a.dtype.name} ({a.name}) and {b.dtype.name} ({b.name})")
    shapes = [_most_specific_common(a.shape, b.shape)
              for a, b in zip(then_g.outputs, else_g.outputs)]
    inputs = list(extra_inputs) + list(explicit) + union
    g = get_default_graph()
    ctrl = [c for c in then_g.outer_control_inputs + else_g.outer_control_inputs
            if c.graph is g]
    with g.control_dependencies(ctrl):
        op = g.create_op("If", [pred, inputs], {
            "then_branch": then_g, "else_branch": else_g,
            "Tin": [t.dtype.base_dtype for t in inputs],
            "Tout": [t.dtype.base_dtype for t in then_g.outputs],
            "output_shapes": _shapes_attr(shapes)}, name=name)
    g._functions[then_g.name] = then_g
    g._functions[else_g.name] = else_g
    return op.outputs if op.outputs else [op]  # type: ignore[list-item] # no outputs: the op


def _check_branch_outputs(then_g: FuncGraph, else_g: FuncGraph) -> None:
    def describe(fg: FuncGraph) -> str:
        return repr(_describe(fg.structured_outputs))
    try:
        assert_same_structure(then_g.structured_outputs, else_g.structured_outputs,
                              "true_fn output", "false_fn output")
    except ValueError:
        raise ValueError(
            "true_fn and false_fn must return the same nested structure of values; true_fn "
            f"returned {describe(then_g)} and false_fn returned {describe(else_g)}") from None
    for a, b in zip(flatten(then_g.structured_outputs), flatten(else_g.structured_outputs)):
        kind_a = "op" if not isinstance(a, Tensor) else a.dtype.base_dtype.name
        kind_b = "op" if not isinstance(b, Tensor) else b.dtype.base_dtype.name
        if kind_a != kind_b:
            raise TypeError(
                "true_fn and false_fn must return values of the same dtypes; true_fn returned "
                f"{describe(then_g)} and false_fn returned {describe(else_g)} (mismatch: "
                f"{kind_a} vs {kind_b})")


def _describe(structure: Any) -> Any:
    leaves = []
    for x in flatten(structure):
        if isinstance(x, Tensor):
            leaves.append(f"{x.dtype.base_dtype.name}{x.shape}")
        elif x is None:
            leaves.append("None")
        else:
            leaves.append(f"op:{x.type}")
    return pack_sequence_as(structure, leaves) \
        if isinstance(structure, (list, _pytuple, dict)) else leaves[0]


def cond(pred: Any, true_fn: Callable[[], Any] | None = None,
         false_fn: Callable[[], Any] | None = None, strict: bool = False,
         name: str | None = None, fn1: Callable[[], Any] | None = None,
         fn2: Callable[[], Any] | None = None) -> Any:
    """`tf.cond`: `true_fn()` if `pred` else `false_fn()`; only the taken branch runs.

    Both functions are traced into function bodies at graph-build time and must
    return the same nested structure of tensors (same dtypes). An Operation
    returned in a position yields the If op itself there (running it runs the
    branch). Unless `strict`, a one-element list/tuple result is unpacked (TF1).

    Raises:
        TypeError: `pred` is a Python bool, a fn is not callable, or the branches
            return different dtypes (both named).
        ValueError: the branches return different structures (both shown).

    Example:
        >>> x = tf.placeholder(tf.float32, [])
        >>> y = tf.cond(x < 0.0, lambda: -x, lambda: x)   # abs(x)
    """
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if isinstance(pred, (bool, np.bool_)):
        raise TypeError(f"pred must not be a Python bool (got {pred!r}); use an if statement, "
                        "or tf.constant(pred) to build a graph branch.")
    if not callable(true_fn):
        raise TypeError(f"true_fn must be callable, got {true_fn!r}")
    if not callable(false_fn):
        raise TypeError(f"false_fn must be callable, got {false_fn!r}")
    g = get_default_graph()
    pred_t = convert_to_tensor(pred)
    if pred_t.dtype.base_dtype != _dt.bool:
        raise TypeError(f"pred of tf.cond must be a bool tensor, got {pred_t.name} of dtype "
                        f"{pred_t.dtype.name}")
    if pred_t.shape.ndims not in (None, 0):
        raise ValueError(f"pred of tf.cond must be a scalar, got {pred_t.name} with shape "
                         f"{pred_t.shape}")
    base = name or "cond"
    # TensorArrays (registered composite values) leave the branches as their flows and
    # come back as TensorArrays (sharing the true branch's settings), as in TF's cond.
    returned: list[Any] = []

    def flows_of(fn: Callable[[], Any]) -> Callable[[], Any]:
        def traced() -> Any:
            r = fn()
            returned.append(r)
            return to_flows(r)
        return traced

    then_g = func_graph_from_py_func(base + "_true", flows_of(true_fn), [], g)
    else_g = func_graph_from_py_func(base + "_false", flows_of(false_fn), [], g)
    _check_branch_outputs(then_g, else_g)
    results = _build_if(pred_t, then_g, else_g, [], name=base)
    out = _restructure(then_g.structured_outputs, results)
    if returned and any(is_composite_value(x) for x in flatten(returned[0])):
        rebuilt = from_flows(returned[0], flatten(out))
        out = pack_sequence_as(returned[0], rebuilt) \
            if isinstance(returned[0], (list, _pytuple, dict)) else rebuilt[0]
    if not strict and isinstance(out, (list, _pytuple)) and len(out) == 1:
        return out[0]
    return out


def _restructure(structure: Any, results: list[Any]) -> Any:
    """Functional-op outputs placed back where the body returned tensors; ops -> the op."""
    op = results[0] if results and isinstance(results[0], Operation) else results[0].op \
        if results else None
    tensors = iter(r for r in results if isinstance(r, Tensor))
    leaves = [next(tensors) if isinstance(x, Tensor) else op for x in flatten(structure)]
    if isinstance(structure, (list, _pytuple, dict)):
        return pack_sequence_as(structure, leaves)
    return leaves[0]


def case(pred_fn_pairs: Any, default: Callable[[], Any] | None = None,
         exclusive: bool = False, strict: bool = False, name: str = "case") -> Any:
    """`tf.case`: the fn of the first true predicate, else `default()` (nested conds).

    Args:
        pred_fn_pairs: list of (bool scalar tensor, callable) pairs, or a dict.
        default: called when no predicate holds; if None, the last pair's fn is
            the default (TF1 behaviour).
        exclusive: if True, asserts at run time that at most one predicate holds.

    Example:
        >>> r = tf.case([(x < 0, lambda: -1), (x > 0, lambda: 1)], default=lambda: 0)
    """
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) \
        else list(pred_fn_pairs)
    for p in pairs:
        if not (isinstance(p, _pytuple) and len(p) == 2 and callable(p[1])):
            raise TypeError(f"Each entry of pred_fn_pairs must be a (predicate, callable) "
                            f"tuple, got {p!r}")
    if not pairs:
        if default is None:
            raise ValueError("tf.case needs at least one pred_fn pair or a default")
        return default()
    if default is None:
        *pairs, (_, default) = pairs
        if not pairs:
            return default()
    with get_default_graph().name_scope(name):
        preds = [convert_to_tensor(p) for p, _ in pairs]
        ctrl: list[Any] = []
        if exclusive and len(preds) > 1:
            count = math_ops.add_n([math_ops.cast(p, _dt.int32) for p in preds])
            ctrl = [Assert(math_ops.less_equal(count, 1),
                           ["Input error: exclusive=True: more than 1 conditions "
                            f"({[p.name for p in preds]}) evaluated as True:"] + preds,
                           name="exclusive_check")]

        def build(i: int) -> Any:
            if i == len(pairs):
                return default()
            return cond(preds[i], pairs[i][1], lambda: build(i + 1), strict=strict,
                        name=f"case_{i}")

        with control_dependencies(ctrl):
            return build(0)
