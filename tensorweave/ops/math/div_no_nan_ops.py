"""DivNoNan: x / y, and 0 wherever y is 0 (TF 2's weighted embedding combiners use it).

Example:
    >>> tf.div_no_nan([1.0, 2.0], [0.0, 4.0])   # [0.0, 0.5]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.math.cwise_ops import (
    _is_float, broadcast_shape, check_dtype, check_same_dtype, create_binary, sum_to_shape)

div_no_nan_op = define_op("DivNoNan", inputs=("x", "y"))


@div_no_nan_op.shape
def _(x: Tensor, y: Tensor) -> Any:
    check_same_dtype("DivNoNan", x, y)
    check_dtype("DivNoNan", x, _is_float)
    return x.dtype.base_dtype, broadcast_shape("DivNoNan", x, y)


@div_no_nan_op.kernel("CPU")
def _(x: Any, y: Any) -> Any:
    x, y = np.asarray(x), np.asarray(y)
    zero = y == 0
    out = np.true_divide(x, np.where(zero, np.ones_like(y), y))
    return np.where(zero, np.zeros_like(out), out)


@div_no_nan_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # d/dx = 1/y and d/dy = -x/y^2, both 0 where y == 0 (as TF).
    x, y = op.inputs
    gx = create_tensor("DivNoNan", [grad, y])
    gy = create_tensor("Mul", [grad, create_tensor("DivNoNan", [create_tensor("DivNoNan", [
        create_tensor("Neg", [x]), y]), y])])
    return [sum_to_shape(gx, x), sum_to_shape(gy, y)]


def div_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.div_no_nan` / `tf.math.divide_no_nan`: x / y, 0 where y == 0.

    Example:
        >>> tf.div_no_nan(tf.constant([3.0]), tf.constant([0.0]))   # [0.0]
    """
    return create_binary("DivNoNan", x, y, name, "div_no_nan")  # TF's scope name
