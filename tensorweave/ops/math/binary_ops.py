"""Element-wise binary math ops: AddV2/Add, Sub, Mul, RealDiv, FloorDiv, FloorMod, Pow,
Maximum, Minimum, SquaredDifference, comparisons and logical and/or, with their
gradients and public wrappers.

The public wrappers are re-exported by `tensorweave.ops.math.math_ops` (import them
from there). It builds on `cwise_ops`' helpers.

Example:
    >>> tf.maximum(tf.constant([1.0, 5.0]), 2.0)   # [2.0, 5.0]
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.math.cwise_ops import (
    _any, _is_bool, _is_float, _is_numeric, _numeric_or_bool, _numeric_or_string,
    binary_inputs, broadcast_shape, cast, check_dtype, check_same_dtype, create_binary,
    name_scope, ones_like_internal, select, sum_to_shape, zeros_like_internal)


# The unary stanzas live in unary_ops, whose gradients are built from this module's
# ops; the three unary ops needed here are created by op name, so the two modules do
# not import each other.
def _negative(x: Any) -> Tensor:
    return create_tensor("Neg", [convert_to_tensor(x)])


def _log(x: Any) -> Tensor:
    return create_tensor("Log", [convert_to_tensor(x)])


def _logical_not(x: Any) -> Tensor:
    return create_tensor("LogicalNot", [convert_to_tensor(x)])


# ---- binary ops ----------------------------------------------------------------------
def _define_binary(op_type: str, kernel: Callable[..., Any],
                   allowed: Callable[[_dt.DType], bool], bool_out: bool = False) -> Any:
    op = define_op(op_type, inputs=("x", "y"))

    @op.shape
    def _(x: Tensor, y: Tensor) -> Any:
        check_same_dtype(op_type, x, y)
        check_dtype(op_type, x, allowed)
        return (_dt.bool if bool_out else x.dtype.base_dtype), broadcast_shape(op_type, x, y)

    # The ufunc itself is the kernel: no Python frame per call (bench: <= 2 us per op).
    op.kernel("CPU")(kernel)
    return op


def _binary(op_type: str, x: Any, y: Any, name: str | None,
            default_name: str | None = None) -> Tensor:
    return create_binary(op_type, x, y, name, default_name)


add_v2_op = _define_binary("AddV2", np.add, _numeric_or_string)
add_op = _define_binary("Add", np.add, _numeric_or_string)  # TF1 graphs name it "Add"
sub_op = _define_binary("Sub", np.subtract, _is_numeric)
mul_op = _define_binary("Mul", np.multiply, _numeric_or_bool)
real_div_op = _define_binary("RealDiv", np.true_divide, _is_float)
floor_div_op = _define_binary("FloorDiv", np.floor_divide, _is_numeric)
floor_mod_op = _define_binary("FloorMod", np.mod, _is_numeric)
pow_op = _define_binary("Pow", np.power, _is_numeric)
maximum_op = _define_binary("Maximum", np.maximum, _is_numeric)
minimum_op = _define_binary("Minimum", np.minimum, _is_numeric)


def _sq_diff(x: Any, y: Any) -> Any:
    return np.square(np.subtract(x, y))


squared_difference_op = _define_binary("SquaredDifference", _sq_diff, _is_numeric)

for _name, _fn, _ok in [("Equal", np.equal, _any), ("NotEqual", np.not_equal, _any),
                        ("Less", np.less, _is_numeric), ("LessEqual", np.less_equal, _is_numeric),
                        ("Greater", np.greater, _is_numeric),
                        ("GreaterEqual", np.greater_equal, _is_numeric),
                        ("LogicalAnd", np.logical_and, _is_bool),
                        ("LogicalOr", np.logical_or, _is_bool)]:
    _define_binary(_name, _fn, _ok, bool_out=True).no_gradient()
floor_div_op.no_gradient()  # piecewise constant (TF: no gradient)


def _add_grad(op: Operation, grad: Tensor) -> list[Any]:
    x, y = op.inputs
    return [sum_to_shape(grad, x), sum_to_shape(grad, y)]


add_v2_op.gradient(_add_grad)
add_op.gradient(_add_grad)


@sub_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y = op.inputs
    return [sum_to_shape(grad, x), sum_to_shape(_negative(grad), y)]


@mul_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y = op.inputs
    return [sum_to_shape(multiply(grad, y), x), sum_to_shape(multiply(x, grad), y)]


@real_div_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y = op.inputs
    gy = multiply(grad, create_tensor("RealDiv", [create_tensor("RealDiv", [_negative(x), y]), y]))
    return [sum_to_shape(create_tensor("RealDiv", [grad, y]), x), sum_to_shape(gy, y)]


@floor_mod_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # x mod y = x - floor(x / y) * y, with floor(.) piecewise constant.
    x, y = op.inputs
    gy = multiply(_negative(grad), create_tensor("FloorDiv", [x, y]))
    return [sum_to_shape(grad, x), sum_to_shape(gy, y)]


@pow_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y = op.inputs
    z = op.outputs[0]
    gx = multiply(grad, multiply(y, pow(x, subtract(y, 1))))
    # d/dy x^y = x^y log x, taken as 0 where x <= 0 (log undefined) like TF.
    positive = greater(x, 0)
    safe_x = select(positive, x, ones_like_internal(x))
    log_x = select(positive, _log(safe_x), zeros_like_internal(x))
    gy = multiply(grad, multiply(z, log_x))
    return [sum_to_shape(gx, x), sum_to_shape(gy, y)]


def _max_min_grad(op: Operation, grad: Tensor) -> list[Any]:
    # The gradient flows to the chosen operand; ties go to x (as TF).
    x, y = op.inputs
    pick_x = (greater_equal if op.type == "Maximum" else less_equal)(x, y)
    gx = multiply(grad, cast(pick_x, grad.dtype))
    gy = multiply(grad, cast(_logical_not(pick_x), grad.dtype))
    return [sum_to_shape(gx, x), sum_to_shape(gy, y)]


maximum_op.gradient(_max_min_grad)
minimum_op.gradient(_max_min_grad)


@squared_difference_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y = op.inputs
    g = multiply(multiply(grad, 2), subtract(x, y))
    return [sum_to_shape(g, x), sum_to_shape(_negative(g), y)]


def add(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.add`: x + y element-wise, with NumPy broadcasting.

    Example:
        >>> tf.add([1.0, 2.0], 1.0)   # [2.0, 3.0]
    """
    # TF 1.x's tf.add builds an op named "Add" (its op type there).
    return _binary("AddV2", x, y, name, "Add")


def subtract(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.subtract`: x - y element-wise (broadcasting)."""
    return _binary("Sub", x, y, name)


def multiply(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.multiply`: x * y element-wise (broadcasting)."""
    return _binary("Mul", x, y, name)


def truediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.truediv`: x / y; integer inputs are first cast to float (int32/64 -> float64).

    Example:
        >>> tf.truediv(tf.constant(3), 2)   # 1.5 as float64
    """
    # As TF: one "truediv" scope holds the converted operands, the casts and the op.
    with name_scope(name, "truediv", [x, y]) as scope:
        x, y = binary_inputs(x, y)
        check_same_dtype("RealDiv", x, y)
        d = x.dtype.base_dtype
        if d.is_integer:
            target = _dt.float32 if d in (_dt.int8, _dt.uint8, _dt.int16, _dt.uint16) \
                else _dt.float64
            x, y = cast(x, target), cast(y, target)
        return create_tensor("RealDiv", [x, y], name=scope)


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.divide`: the same as `x / y` (true division)."""
    return truediv(x, y, name=name)


def floordiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.floordiv`: floor(x / y) element-wise (`x // y`)."""
    return _binary("FloorDiv", x, y, name, "floordiv")


def mod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.mod` / `tf.floormod`: the remainder with the sign of `y` (`x % y`)."""
    return _binary("FloorMod", x, y, name)


floormod = mod


def pow(x: Any, y: Any, name: str | None = None) -> Tensor:  # noqa: A001 - TF's public name
    """`tf.pow`: x ** y element-wise.

    Example:
        >>> tf.pow(tf.constant([2.0, 3.0]), 2.0)   # [4.0, 9.0]
    """
    return _binary("Pow", x, y, name)


def maximum(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.maximum`: the larger of x and y element-wise (broadcasting)."""
    return _binary("Maximum", x, y, name)


def minimum(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.minimum`: the smaller of x and y element-wise (broadcasting)."""
    return _binary("Minimum", x, y, name)


def squared_difference(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.squared_difference`: (x - y)**2 element-wise."""
    return _binary("SquaredDifference", x, y, name)


def equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.equal`: bool x == y element-wise (use this, not `==`, which is identity)."""
    return _binary("Equal", x, y, name)


def not_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.not_equal`: bool x != y element-wise."""
    return _binary("NotEqual", x, y, name)


def less(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.less`: bool x < y element-wise."""
    return _binary("Less", x, y, name)


def less_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.less_equal`: bool x <= y element-wise."""
    return _binary("LessEqual", x, y, name)


def greater(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.greater`: bool x > y element-wise."""
    return _binary("Greater", x, y, name)


def greater_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.greater_equal`: bool x >= y element-wise."""
    return _binary("GreaterEqual", x, y, name)


def logical_and(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.logical_and`: bool x AND y element-wise (`x & y`)."""
    return _binary("LogicalAnd", x, y, name)


def logical_or(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.logical_or`: bool x OR y element-wise (`x | y`)."""
    return _binary("LogicalOr", x, y, name)


def logical_xor(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.logical_xor`: (x | y) & ~(x & y) (`x ^ y`)."""
    # TF opens no scope here: the inner ops sit beside the final "LogicalXor".
    x, y = binary_inputs(x, y)
    return logical_and(logical_or(x, y), _logical_not(logical_and(x, y)),
                       name=name or "LogicalXor")

