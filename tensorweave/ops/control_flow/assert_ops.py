"""Grouping (`tf.group`, `tf.tuple`), assertions (`tf.Assert`, `tf.assert_*`) and `tf.Print`.

Example:
    >>> check = tf.Assert(x > 0, ["x must be positive, got", x])
    >>> train_op = tf.group(update_w, update_b)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.func_graph import flatten
from tensorweave.framework.graph import get_default_graph
from tensorweave.ops.op_author import create_op, create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.array.core_ops import no_op
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.math import math_ops
from tensorweave.ops import array as array_ops


# ==== grouping ======================================================================
def _flat_ops(inputs: Any) -> list[Operation]:
    ops: list[Operation] = []
    for x in flatten(list(inputs)):
        if x is None:
            continue
        elem = x._as_graph_element() if hasattr(x, "_as_graph_element") else x
        op = elem.op if isinstance(elem, Tensor) else elem
        if not isinstance(op, Operation):
            if hasattr(x, "op") and isinstance(x.op, Operation):
                op = x.op
            else:
                raise TypeError(f"tf.group/tf.tuple expect Tensors or Operations, got {x!r}")
        if op not in ops:
            ops.append(op)
    return ops


def group(*inputs: Any, name: str | None = None) -> Operation:
    """`tf.group`: a NoOp that runs after all `inputs` (tensors, ops or variables).

    Example:
        >>> train_op = tf.group(update_w, update_b)
    """
    ops = _flat_ops(inputs)
    g = ops[0].graph if ops else get_default_graph()
    with g.as_default(), g.control_dependencies(ops):
        return no_op(name=name or "group_deps")


def tuple(tensors: Sequence[Any], name: str | None = None,  # noqa: A001 - TF's name
          control_inputs: Sequence[Any] | None = None) -> list[Any]:
    """`tf.tuple`: the same tensors, each available only once all of them (and
    `control_inputs`) are computed.

    Example:
        >>> a2, b2 = tf.tuple([a, b])
    """
    tensors = list(tensors)
    present = [t for t in tensors if t is not None]
    g = get_default_graph()
    with g.name_scope(name or "tuple"):
        gate = group(*(present + list(control_inputs or [])), name="control_dependency")
        out: list[Any] = []
        with g.control_dependencies([gate]):
            for t in tensors:
                if t is None:
                    out.append(None)
                elif isinstance(t, Operation):
                    out.append(group(t, gate))
                else:
                    out.append(identity(t))
        return out


# ==== Assert ========================================================================
assert_op = define_op("Assert", inputs=("condition", "data*"), attrs={"summarize": 3},
                      stateful=True)


@assert_op.shape
def _(condition: Tensor, data: list, *, summarize: int) -> Any:
    if condition.dtype.base_dtype != _dt.bool:
        raise TypeError(f"The condition of Assert must be bool, got {condition.name} of dtype "
                        f"{condition.dtype.name}")
    return []


def _format(value: Any, summarize: int) -> str:
    arr = np.asarray(value)
    if arr.dtype == object:
        flat = [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                for v in arr.reshape(-1)]
        if arr.ndim == 0:
            return flat[0]
    else:
        flat = [str(v) for v in arr.reshape(-1).tolist()]
        if arr.ndim == 0:
            return flat[0]
    n = len(flat) if summarize is None or summarize < 0 else summarize
    shown = " ".join(flat[:n]) + ("..." if len(flat) > n else "")
    return f"[{shown}]"


@assert_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, condition: Any, data: list, *, summarize: int) -> None:
    if np.all(np.asarray(condition)):
        return None
    text = " ".join(_format(d, summarize) for d in data)
    raise errors.InvalidArgumentError(None, None, f"assertion failed: {text}")


assert_op.no_gradient()


def Assert(condition: Any, data: Sequence[Any], summarize: int | None = None,  # noqa: N802
           name: str | None = None) -> Operation:
    """`tf.Assert`: raises InvalidArgumentError at run time, printing `data`, if
    `condition` is false. Returns the Assert op (use it as a control dependency).

    Example:
        >>> check = tf.Assert(x > 0, ["x must be positive, got", x])
        >>> with tf.control_dependencies([check]):
        ...     y = tf.sqrt(x)
    """
    c = convert_to_tensor(condition)
    values = [convert_to_tensor(d) for d in data]
    return create_op(
        "Assert", [c, values], {"summarize": 3 if summarize is None else int(summarize)},
        name=name or "Assert")


def _static_fail(message: Any, data_desc: str) -> None:
    msg = f"{message}. " if message else ""
    raise errors.InvalidArgumentError(None, None, f"{msg}{data_desc}")


def _math() -> Any:
    return math_ops


def _binary_assert(x: Any, y: Any, np_check: Callable[[Any, Any], Any], op_name: str,
                   desc: str, data: Any, summarize: int | None, message: Any,
                   name: str | None) -> Operation:
    with get_default_graph().name_scope(name or op_name):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype=x.dtype)
        xv, yv = constant_value(x), constant_value(y)
        if data is None:
            data = [message or "Condition x " + desc + " y did not hold element-wise:",
                    f"x (name = {x.name}) = ", x, f"y (name = {y.name}) = ", y]
        elif message is not None:
            data = [message] + list(data)
        if xv is not None and yv is not None:
            ok = bool(np.all(np_check(np.asarray(xv), np.asarray(yv))))
            if not ok:
                _static_fail(message, f"Condition x {desc} y did not hold element-wise: "
                             f"x (name = {x.name}) = {_format(xv, summarize or 3)}, "
                             f"y (name = {y.name}) = {_format(yv, summarize or 3)}")
        m = _math()
        fn = {"assert_equal": m.equal, "assert_less": m.less,
              "assert_less_equal": m.less_equal, "assert_greater": m.greater,
              "assert_greater_equal": m.greater_equal,
              "assert_none_equal": m.not_equal}[op_name]
        condition = m.reduce_all(fn(x, y))
        return Assert(condition, data, summarize=summarize)


def assert_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                 message: Any = None, name: str | None = None) -> Operation:
    """`tf.assert_equal`: asserts `x == y` element-wise (statically when both are known).

    Example:
        >>> with tf.control_dependencies([tf.assert_equal(tf.shape(a)[0], tf.shape(b)[0])]):
        ...     total = a + b
    """
    return _binary_assert(x, y, np.equal, "assert_equal", "==", data, summarize, message, name)


def assert_none_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                      message: Any = None, name: str | None = None) -> Operation:
    """`tf.assert_none_equal`: asserts `x != y` element-wise."""
    return _binary_assert(x, y, np.not_equal, "assert_none_equal", "!=", data, summarize,
                          message, name)


def assert_less(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                message: Any = None, name: str | None = None) -> Operation:
    """`tf.assert_less`: asserts `x < y` element-wise."""
    return _binary_assert(x, y, np.less, "assert_less", "<", data, summarize, message, name)


def assert_less_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                      message: Any = None, name: str | None = None) -> Operation:
    """`tf.assert_less_equal`: asserts `x <= y` element-wise."""
    return _binary_assert(x, y, np.less_equal, "assert_less_equal", "<=", data, summarize,
                          message, name)


def assert_greater(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                   message: Any = None, name: str | None = None) -> Operation:
    """`tf.assert_greater`: asserts `x > y` element-wise."""
    return _binary_assert(x, y, np.greater, "assert_greater", ">", data, summarize, message,
                          name)


def assert_greater_equal(x: Any, y: Any, data: Any = None, summarize: int | None = None,
                         message: Any = None, name: str | None = None) -> Operation:
    """`tf.assert_greater_equal`: asserts `x >= y` element-wise."""
    return _binary_assert(x, y, np.greater_equal, "assert_greater_equal", ">=", data,
                          summarize, message, name)


def assert_non_negative(x: Any, data: Any = None, summarize: int | None = None,
                        message: Any = None, name: str | None = None) -> Operation:
    """`tf.assert_non_negative`: asserts `x >= 0` element-wise."""
    x = convert_to_tensor(x)
    return assert_less_equal(np.zeros((), x.dtype.as_numpy_dtype), x, data, summarize,
                             message or f"x (name = {x.name}) must be non-negative",
                             name or "assert_non_negative")


def assert_positive(x: Any, data: Any = None, summarize: int | None = None,
                    message: Any = None, name: str | None = None) -> Operation:
    """`tf.assert_positive`: asserts `x > 0` element-wise."""
    x = convert_to_tensor(x)
    return assert_less(np.zeros((), x.dtype.as_numpy_dtype), x, data, summarize,
                       message or f"x (name = {x.name}) must be positive",
                       name or "assert_positive")


def assert_negative(x: Any, data: Any = None, summarize: int | None = None,
                    message: Any = None, name: str | None = None) -> Operation:
    """`tf.assert_negative`: asserts `x < 0` element-wise."""
    x = convert_to_tensor(x)
    return assert_less(x, np.zeros((), x.dtype.as_numpy_dtype), data, summarize,
                       message or f"x (name = {x.name}) must be negative",
                       name or "assert_negative")


def assert_rank(x: Any, rank: int, data: Any = None, summarize: int | None = None,
                message: Any = None, name: str | None = None) -> Operation:
    """`tf.assert_rank`: checks `x`'s rank statically (ValueError) when known, else at
    run time, printing `data` (default: what was expected and the shape) on failure.
    Arguments in TF 1.x's order: (x, rank, data, summarize, message, name).

    Example:
        >>> tf.assert_rank(tf.zeros([2, 3]), 2)
    """
    x = convert_to_tensor(x)
    rank_v = constant_value(rank) if isinstance(rank, Tensor) else np.asarray(rank)
    if x.shape.ndims is not None and rank_v is not None:
        if x.shape.ndims != int(rank_v):
            msg = f"{message} " if message else ""
            raise ValueError(f"{msg}Tensor {x.name} must have rank {int(rank_v)}. Received "
                             f"rank {x.shape.ndims}, shape {x.shape}")
        return no_op(name=name or "assert_rank")
    with get_default_graph().name_scope(name or "assert_rank"):
        r = array_ops.rank(x)
        if data is None:
            data = [message or f"Tensor {x.name} must have rank", rank, "Received shape: ",
                    array_ops.shape(x)]
        return Assert(_math().equal(r, rank), data, summarize)


def assert_type(tensor: Any, tf_type: Any, message: Any = None,
                name: str | None = None) -> Operation:
    """`tf.assert_type`: a static dtype check (TypeError naming the tensor)."""
    t = convert_to_tensor(tensor)
    if t.dtype.base_dtype != _dt.as_dtype(tf_type):
        msg = f"{message} " if message else ""
        raise TypeError(f"{msg}{t.name} must be of type {_dt.as_dtype(tf_type).name}, got "
                        f"{t.dtype.name}")
    return no_op(name=name or "assert_type")


# ==== Print =========================================================================
print_op = define_op("Print", inputs=("input", "data*"),
                     attrs={"message": "", "first_n": -1, "summarize": 3}, stateful=True)


@print_op.shape
def _(inp: Tensor, data: list, *, message: str, first_n: int, summarize: int) -> Any:
    return inp.dtype.base_dtype, inp.shape


@print_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, inp: Any, data: list, *, message: str, first_n: int,
      summarize: int) -> Any:
    import sys
    count = ctx.state.get("count", 0)
    if first_n < 0 or count < first_n:
        ctx.state["count"] = count + 1
        print(message + "".join(_format(d, summarize) for d in data), file=sys.stderr)
    return inp


@print_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [grad] + [None] * (len(op.inputs) - 1)


def Print(input_: Any, data: Sequence[Any], message: str | None = None,  # noqa: N802
          first_n: int | None = None, summarize: int | None = None,
          name: str | None = None) -> Tensor:
    """`tf.Print`: `input_` unchanged; prints `message` and `data` to stderr when run.

    Example:
        >>> x = tf.Print(x, [tf.shape(x)], "shape of x: ")
    """
    t = convert_to_tensor(input_, as_ref=False)
    values = [convert_to_tensor(d) for d in data]
    return create_tensor(
        "Print", [t, values], {"message": message or "",
               "first_n": -1 if first_n is None else int(first_n),
               "summarize": 3 if summarize is None else int(summarize)},
        name=name or "Print")
