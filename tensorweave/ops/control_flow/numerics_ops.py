"""Numerics checks: IsNan, IsInf, IsFinite and CheckNumerics, with `tf.check_numerics`,
`tf.verify_tensor_all_finite` and `tf.add_check_numerics_ops`.

CheckNumerics passes its float input through unchanged, or fails the step with
InvalidArgumentError naming the op, the caller's message and what it found ("Tensor
had NaN values", "Inf values", or both), as TF 1.x's kernel does; its gradient
checks the incoming gradient the same way.

Example:
    >>> loss = tf.check_numerics(loss, "loss")          # fails the step on NaN or Inf
    >>> tf.is_nan(tf.constant([1.0, float("nan")]))    # [False, True]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.arg_aliases import one_of
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import colocate_with, control_dependencies, get_default_graph
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.control_flow.assert_ops import group
from tensorweave.ops.math.cwise_ops import _is_float, check_dtype


def _define_class(op_type: str, fn: Any) -> Any:
    op = define_op(op_type, inputs=("x",))

    @op.shape
    def _(x: Tensor) -> Any:
        check_dtype(op_type, x, _is_float)
        return _dt.bool, x.shape

    op.kernel("CPU")(lambda x: fn(np.asarray(x)))
    op.no_gradient()
    return op


_define_class("IsNan", np.isnan)
_define_class("IsInf", np.isinf)
_define_class("IsFinite", np.isfinite)

check_op = define_op("CheckNumerics", inputs=("tensor",), attrs={"message": ""})


@check_op.shape
def _(tensor: Tensor, *, message: str) -> Any:
    check_dtype("CheckNumerics", tensor, _is_float)
    return tensor.dtype.base_dtype, tensor.shape


@check_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, tensor: Any, *, message: str) -> Any:
    x = np.asarray(tensor)
    if not np.isfinite(x).all():
        found = [what for what, bad in (("Inf", np.isinf(x).any()), ("NaN", np.isnan(x).any()))
                 if bad]
        raise errors.InvalidArgumentError(
            None, None, f"{message} : Tensor had {' and '.join(found)} values (CheckNumerics "
            f"op {ctx.name!r}, shape {list(x.shape)}, {int((~np.isfinite(x)).sum())} of "
            f"{x.size} elements). Look at what feeds it: a learning rate too high, a log or "
            "division of 0, or bad input.")
    return x


@check_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [check_numerics(grad, "Not a number (NaN) or infinity (Inf) values detected in "
                           f"gradient. {op.get_attr('message')}")]


def is_nan(x: Any, name: str | None = None) -> Tensor:
    """Element-wise `x != x`: True where x is NaN.

    Example:
        >>> tf.is_nan(tf.constant([0.0, float("nan")]))   # [False, True]
    """
    return create_tensor("IsNan", [convert_to_tensor(x, name="x")], name=name)


def is_inf(x: Any, name: str | None = None) -> Tensor:
    """True where x is +Inf or -Inf.

    Example:
        >>> tf.is_inf(tf.constant([1.0, -float("inf")]))  # [False, True]
    """
    return create_tensor("IsInf", [convert_to_tensor(x, name="x")], name=name)


def is_finite(x: Any, name: str | None = None) -> Tensor:
    """True where x is neither NaN nor infinite.

    Example:
        >>> tf.is_finite(tf.constant([1.0, float("inf")]))  # [True, False]
    """
    return create_tensor("IsFinite", [convert_to_tensor(x, name="x")], name=name)


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """`tensor` unchanged; running it fails (InvalidArgumentError) if it holds NaN or Inf.

    Example:
        >>> loss = tf.check_numerics(loss, "loss went bad")
    """
    t = convert_to_tensor(tensor, name="tensor")
    return create_tensor("CheckNumerics", [t], {"message": str(message)},
                         name=name or "CheckNumerics")


def verify_tensor_all_finite(t: Any = None, msg: str | None = None, name: str | None = None,
                             x: Any = None, message: str | None = None) -> Tensor:
    """`t`, available only after a CheckNumerics of it passed (TF1's name for it).

    TF 1.x's arguments: `t` and `msg`, or their newer names `x` and `message`.

    Example:
        >>> logits = tf.verify_tensor_all_finite(logits, "logits")
    """
    t = convert_to_tensor(one_of("verify_tensor_all_finite", "t", t, "x", x), name="t")
    msg = one_of("verify_tensor_all_finite", "msg", msg, "message", message)
    with colocate_with(t.op):
        verified = check_numerics(t, message=msg)
        with control_dependencies([verified]):
            return identity(t, name=name or "VerifyFinite")


def add_check_numerics_ops() -> Operation:
    """One op that checks every float tensor of the default graph for NaN and Inf.

    Each check is placed with the op it checks and named "op:output" in its message;
    the checks run one after another, in graph order. Run the returned op (e.g. with
    the train op) to find the first op that produced a NaN or Inf. Ops added later
    are not covered: call it after building the model.

    Example:
        >>> check = tf.add_check_numerics_ops()
        >>> sess.run([train_op, check])
    """
    checks: list[Operation] = []
    for op in list(get_default_graph().get_operations()):
        for out in op.outputs:
            dt = out.dtype
            if dt.is_ref_dtype or not dt.base_dtype.is_floating:
                continue
            with colocate_with(op), control_dependencies(checks[-1:]):
                checks = [check_numerics(out, message=f"{op.name}:{out.value_index}").op]
    return group(*checks, name="CheckNumerics_all")
