"""Element-wise unary math ops: Neg, Abs, Sign, Square, Sqrt, Rsqrt, Exp, Log, Log1p,
Sigmoid, Tanh, Reciprocal, Cos, Sin, LogicalNot, Floor, Ceil, Round.

The public wrappers are re-exported by `tensorweave.ops.math.math_ops`.

Example:
    >>> tf.sqrt(tf.constant([4.0, 9.0]))   # [2.0, 3.0]
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.math.binary_ops import add, multiply, pow, subtract
from tensorweave.ops.math.cwise_ops import (
    create_unary, _is_bool, _is_float, _is_numeric, check_dtype)


# ---- unary ops -----------------------------------------------------------------------
def _sigmoid(x: Any) -> Any:
    # exp(-log(1 + exp(-x))) never overflows and keeps precision in both tails.
    return np.exp(-np.logaddexp(0, -x)).astype(x.dtype, copy=False)


def _rsqrt(x: Any) -> Any:
    return np.reciprocal(np.sqrt(x))


def _define_unary(op_type: str, kernel: Callable[..., Any],
                  allowed: Callable[[_dt.DType], bool]) -> Any:
    op = define_op(op_type, inputs=("x",))

    @op.shape
    def _(x: Tensor) -> Any:
        check_dtype(op_type, x, allowed)
        return (_dt.bool if op_type == "LogicalNot" else x.dtype.base_dtype), x.shape

    op.kernel("CPU")(kernel)
    return op


neg_op = _define_unary("Neg", np.negative, _is_numeric)
abs_op = _define_unary("Abs", np.abs, _is_numeric)
sign_op = _define_unary("Sign", np.sign, _is_numeric)
square_op = _define_unary("Square", np.square, _is_numeric)
sqrt_op = _define_unary("Sqrt", np.sqrt, _is_float)
rsqrt_op = _define_unary("Rsqrt", _rsqrt, _is_float)
exp_op = _define_unary("Exp", np.exp, _is_float)
log_op = _define_unary("Log", np.log, _is_float)
log1p_op = _define_unary("Log1p", np.log1p, _is_float)
sigmoid_op = _define_unary("Sigmoid", _sigmoid, _is_float)
tanh_op = _define_unary("Tanh", np.tanh, _is_float)
reciprocal_op = _define_unary("Reciprocal", np.reciprocal, _is_float)
cos_op = _define_unary("Cos", np.cos, _is_float)
sin_op = _define_unary("Sin", np.sin, _is_float)
_define_unary("LogicalNot", np.logical_not, _is_bool).no_gradient()
sign_op.no_gradient()  # zero almost everywhere
_define_unary("Floor", np.floor, _is_float).no_gradient()
_define_unary("Ceil", np.ceil, _is_float).no_gradient()
_define_unary("Round", np.round, _is_numeric).no_gradient()  # half to even, as TF


@neg_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [negative(grad)]


@abs_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [multiply(grad, sign(op.inputs[0]))]


@square_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [multiply(grad, multiply(op.inputs[0], 2))]


@sqrt_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [create_tensor("RealDiv", [multiply(grad, 0.5), op.outputs[0]])]


@rsqrt_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    y = op.outputs[0]
    return [multiply(grad, multiply(pow(y, 3), -0.5))]


@exp_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [multiply(grad, op.outputs[0])]


@log_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [multiply(grad, reciprocal(op.inputs[0]))]


@log1p_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [multiply(grad, reciprocal(add(op.inputs[0], 1)))]


@sigmoid_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    y = op.outputs[0]
    return [multiply(grad, multiply(y, subtract(1, y)))]


@tanh_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    y = op.outputs[0]
    return [multiply(grad, subtract(1, square(y)))]


@reciprocal_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    y = op.outputs[0]
    return [multiply(negative(grad), square(y))]


@cos_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [multiply(negative(grad), sin(op.inputs[0]))]


@sin_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [multiply(grad, cos(op.inputs[0]))]


def _unary(op_type: str, x: Any, name: str | None) -> Tensor:
    return create_unary(op_type, x, name)


def negative(x: Any, name: str | None = None) -> Tensor:
    """`tf.negative`: -x element-wise."""
    return _unary("Neg", x, name)


def abs(x: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's public name
    """`tf.abs`: |x| element-wise."""
    return _unary("Abs", x, name)


def sign(x: Any, name: str | None = None) -> Tensor:
    """`tf.sign`: -1, 0 or 1 element-wise."""
    return _unary("Sign", convert_to_tensor(x), name)  # TF converts it first: "Const"


def square(x: Any, name: str | None = None) -> Tensor:
    """`tf.square`: x * x element-wise."""
    return _unary("Square", x, name)


def sqrt(x: Any, name: str | None = None) -> Tensor:
    """`tf.sqrt`: the square root element-wise (floats only).

    Example:
        >>> tf.sqrt([4.0, 9.0])   # [2.0, 3.0]
    """
    return _unary("Sqrt", x, name)


def rsqrt(x: Any, name: str | None = None) -> Tensor:
    """`tf.rsqrt`: 1 / sqrt(x) element-wise."""
    return _unary("Rsqrt", x, name)


def exp(x: Any, name: str | None = None) -> Tensor:
    """`tf.exp`: e**x element-wise."""
    return _unary("Exp", x, name)


def log(x: Any, name: str | None = None) -> Tensor:
    """`tf.log`: the natural logarithm element-wise."""
    return _unary("Log", x, name)


def log1p(x: Any, name: str | None = None) -> Tensor:
    """`tf.log1p`: log(1 + x), accurate for small x."""
    return _unary("Log1p", x, name)


def sigmoid(x: Any, name: str | None = None) -> Tensor:
    """`tf.sigmoid`: 1 / (1 + exp(-x)), computed without overflow."""
    return _unary("Sigmoid", x, name)


def tanh(x: Any, name: str | None = None) -> Tensor:
    """`tf.tanh`: the hyperbolic tangent element-wise."""
    return _unary("Tanh", x, name)


def reciprocal(x: Any, name: str | None = None) -> Tensor:
    """`tf.reciprocal`: 1 / x element-wise."""
    return _unary("Reciprocal", x, name)


def cos(x: Any, name: str | None = None) -> Tensor:
    """`tf.cos`: the cosine element-wise (floats, radians)."""
    return _unary("Cos", x, name)


def sin(x: Any, name: str | None = None) -> Tensor:
    """`tf.sin`: the sine element-wise (floats, radians)."""
    return _unary("Sin", x, name)


def logical_not(x: Any, name: str | None = None) -> Tensor:
    """`tf.logical_not`: NOT x for bools (`~x`)."""
    return _unary("LogicalNot", x, name)


def floor(x: Any, name: str | None = None) -> Tensor:
    """`tf.floor`: the largest integer not greater than x (floats)."""
    return _unary("Floor", x, name)


def ceil(x: Any, name: str | None = None) -> Tensor:
    """`tf.ceil`: the smallest integer not less than x (floats)."""
    return _unary("Ceil", x, name)


def round(x: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's public name
    """`tf.round`: rounds half to even, element-wise."""
    return _unary("Round", convert_to_tensor(x, name="x"), name)  # TF's "x", unscoped


conj_op = _define_unary("Conj", np.conj, _is_numeric)


@conj_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [conj(grad)]


def conj(x: Any, name: str | None = None) -> Tensor:
    """`tf.conj`: the complex conjugate; real tensors are returned unchanged (as TF)."""
    x = convert_to_tensor(x)
    if not x.dtype.is_complex:
        return x
    return _unary("Conj", x, name)
