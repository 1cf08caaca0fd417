"""The ops every graph needs: Const, Placeholder(WithDefault), Identity, NoOp.

Example:
    >>> x = tf.placeholder(tf.float32, shape=[None, 3], name="x")
    >>> y = tf.identity(x)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor, register_constant_folder
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, plain_dims
from tensorweave.runtime.inline import CONST, FORWARD, NOTHING, inline_kernel

# ---- Const -----------------------------------------------------------------------
const_op = define_op("Const", attrs={"value": REQUIRED, "dtype": REQUIRED})


@const_op.shape
def _(*, value: np.ndarray, dtype: _dt.DType) -> Any:
    value.flags.writeable = False  # a fetched constant is copied, never aliased
    return dtype, TensorShape(value.shape)


@const_op.kernel("CPU")
@inline_kernel(CONST)  # compiled plans write it as an expression
def _(*, value: np.ndarray, dtype: _dt.DType) -> np.ndarray:
    return value


const_op.no_gradient()
register_constant_folder("Const", lambda op, i: op.get_attr("value"))

# ---- Placeholder -----------------------------------------------------------------
placeholder_op = define_op("Placeholder", attrs={"dtype": REQUIRED, "shape": None})


@placeholder_op.shape
def _(*, dtype: _dt.DType, shape: Any) -> Any:
    return dtype, as_shape(shape)


@placeholder_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, dtype: _dt.DType, shape: Any) -> Any:
    raise errors.InvalidArgumentError(
        None, ctx.op, f"You must feed a value for placeholder tensor '{ctx.name}' with dtype "
        f"{dtype.name}" + (f" and shape {as_shape(shape)}" if shape is not None else "") +
        " (pass it in feed_dict).")


placeholder_op.no_gradient()


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """`tf.placeholder`: a value that must be fed at run time.

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 784])
    """
    dt = _dt.as_dtype(dtype)
    shp = None if shape is None else plain_dims(shape)
    return get_default_graph().create_op("Placeholder", [], {"dtype": dt, "shape": shp},
                                         name=name or "Placeholder").outputs[0]


with_default_op = define_op("PlaceholderWithDefault", inputs=("input",),
                            attrs={"shape": None})


@with_default_op.shape
def _(inp: Tensor, *, shape: Any) -> Any:
    return inp.dtype, as_shape(shape) if shape is not None else inp.shape


@with_default_op.kernel("CPU")
@inline_kernel(FORWARD)  # compiled plans write it as an expression
def _(inp: Any, *, shape: Any) -> Any:
    return inp


with_default_op.no_gradient()


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tf.placeholder_with_default`: `input` unless fed."""
    t = convert_to_tensor(input)
    return get_default_graph().create_op(
        "PlaceholderWithDefault", [t], {"shape": plain_dims(shape)},
        name=name or "PlaceholderWithDefault").outputs[0]


# ---- Identity --------------------------------------------------------------------
identity_op = define_op("Identity", inputs=("input",))


@identity_op.shape
def _(inp: Tensor) -> Any:
    return inp.dtype.base_dtype, inp.shape


@identity_op.kernel("CPU")
@inline_kernel(FORWARD)  # compiled plans write it as an expression
def _(inp: Any) -> Any:
    return inp


@identity_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [grad]


def identity(input: Any, name: str | None = None) -> Tensor:
    """`tf.identity`: the same value (a snapshot when `input` is a variable)."""
    if isinstance(input, (list, tuple, int, float, bool, str, bytes, np.ndarray, np.generic)):
        # A plain value is "Identity/input" inside the op's scope, as TF names it.
        with name_scope(name, "Identity", [input]) as scope:
            return get_default_graph().create_op(
                "Identity", [convert_to_tensor(input, name="input")], name=scope).outputs[0]
    t = convert_to_tensor(input, as_ref=True)
    return get_default_graph().create_op("Identity", [t], name=name or "Identity").outputs[0]


# ---- NoOp ------------------------------------------------------------------------
no_op_def = define_op("NoOp")


@no_op_def.shape
def _() -> list:
    return []


@no_op_def.kernel("CPU")
@inline_kernel(NOTHING)  # compiled plans write it as an expression
def _() -> None:
    return None


no_op_def.no_gradient()


def no_op(name: str | None = None) -> Operation:
    """`tf.no_op`: does nothing; useful as a target carrying control dependencies."""
    return get_default_graph().create_op("NoOp", [], name=name or "NoOp")
