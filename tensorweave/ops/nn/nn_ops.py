"""Neural-network activations and helpers: relu family, softmax, bias_add, l2_loss, dropout.

Each op is one stanza (definition, static shape, NumPy kernel, gradient, wrapper).
Gradients use dedicated gradient ops (ReluGrad, SoftmaxGrad, ...) so a backward
pass costs one kernel per op and depends on no other op family.

Example:
    >>> h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))
    >>> p = tf.nn.softmax(h)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.math import math_ops


# ---- shared helpers (also used by xent_ops, conv_ops, pool_ops) -----------
def check_float(op_type: str, t: Tensor, arg: str = "features") -> None:
    """Raises TypeError naming the op and tensor unless `t` is floating point."""
    if not t.dtype.base_dtype.is_floating:
        raise TypeError(f"{op_type} requires a floating-point {arg}, but {t.name} has dtype "
                        f"{t.dtype.base_dtype.name}; cast it with tf.cast(x, tf.float32).")


def norm_axis(op_type: str, shape: TensorShape, axis: int) -> int | None:
    """`axis` made non-negative against `shape` (None when the rank is unknown)."""
    if shape.ndims is None:
        return None
    rank = shape.ndims
    if rank == 0:
        raise ValueError(f"{op_type} needs an input of rank >= 1, got a scalar.")
    if not -rank <= axis < rank:
        raise ValueError(f"{op_type}: axis {axis} is out of range for an input of rank {rank} "
                         f"(shape {shape}); use an axis in [{-rank}, {rank}).")
    return axis % rank


def create(op_type: str, inputs: list[Any], attrs: dict[str, Any] | None = None,
           name: str | None = None) -> Operation:
    """Creates `op_type` on the default graph (name defaults to the op type)."""
    return create_op(op_type, inputs, attrs, name=name or op_type)


def _on_features(op_type: str, features: Any, name: str | None,
                 attrs: dict[str, Any] | None = None) -> Tensor:
    """An activation op named as TF's wrappers name it: a plain `features` value is the
    Const "<op>/features" inside the op's scope ("Relu/features"), which names the op."""
    if isinstance(features, Tensor):
        return create(op_type, [features], attrs, name=name).outputs[0]
    with name_scope(name, op_type, [features]) as scope:
        return create(op_type, [convert_to_tensor(features, name="features")], attrs,
                      name=scope).outputs[0]


def same_shape(op_type: str, a: Tensor, b: Tensor) -> TensorShape:
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"{op_type} needs two inputs of one shape, got {a.shape} ({a.name}) "
                         f"and {b.shape} ({b.name}).")
    return a.shape.merge_with(b.shape)


def same_dtype(op_type: str, a: Tensor, b: Tensor) -> _dt.DType:
    if a.dtype.base_dtype != b.dtype.base_dtype:
        raise TypeError(f"{op_type} needs two inputs of one dtype, got {a.dtype.base_dtype.name} "
                        f"({a.name}) and {b.dtype.base_dtype.name} ({b.name}).")
    return a.dtype.base_dtype


def _unary(op_type: str, grad_type: str, kernel: Any, grad_kernel: Any,
           attrs: dict[str, Any] | None = None) -> None:
    """Defines `op_type(features)` and `grad_type(gradients, features)` = grad * f'(features).

    The second-order gradient of `grad_type` w.r.t. `gradients` is `grad_type` again
    (it is linear in them); w.r.t. `features` it is zero almost everywhere (None).
    """
    attrs = attrs or {}
    fwd = define_op(op_type, inputs=("features",), attrs=attrs)
    bwd = define_op(grad_type, inputs=("gradients", "features"), attrs=attrs)

    @fwd.shape
    def _(x: Tensor, **kw: Any) -> Any:
        check_float(op_type, x)
        return x.dtype.base_dtype, x.shape

    fwd.kernel("CPU")(kernel)

    @fwd.gradient
    def _(op: Operation, grad: Tensor) -> list[Any]:
        return [create(grad_type, [grad, op.inputs[0]],
                       {k: op.get_attr(k) for k in attrs}).outputs[0]]

    @bwd.shape
    def _(g: Tensor, x: Tensor, **kw: Any) -> Any:
        return same_dtype(grad_type, g, x), same_shape(grad_type, g, x)

    bwd.kernel("CPU")(grad_kernel)

    @bwd.gradient
    def _(op: Operation, grad: Tensor) -> list[Any]:
        return [create(grad_type, [grad, op.inputs[1]], {k: op.get_attr(k) for k in attrs}
                       ).outputs[0], None]


# ---- Relu, Relu6, LeakyRelu --------------------------------------------------------
def _relu_k(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0).astype(x.dtype, copy=False)


def _relu_grad_k(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    # TF's ReluGrad is gradients * (features > 0) too (a NaN gradient stays NaN). Not
    # np.where(mask, g, 0): its int 0 made a float64 result, 20x slower on 128x2048.
    return (g * (x > 0)).astype(g.dtype, copy=False)


def _relu6_k(x: np.ndarray) -> np.ndarray:
    return np.clip(x, 0, 6).astype(x.dtype, copy=False)


def _relu6_grad_k(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (g * ((x > 0) & (x < 6))).astype(g.dtype, copy=False)


def _leaky_k(x: np.ndarray, *, alpha: float) -> np.ndarray:
    return np.where(x > 0, x, x * x.dtype.type(alpha)).astype(x.dtype, copy=False)


def _leaky_grad_k(g: np.ndarray, x: np.ndarray, *, alpha: float) -> np.ndarray:
    return np.where(x > 0, g, g * g.dtype.type(alpha)).astype(g.dtype, copy=False)


_unary("Relu", "ReluGrad", _relu_k, _relu_grad_k)
_unary("Relu6", "Relu6Grad", _relu6_k, _relu6_grad_k)
_unary("LeakyRelu", "LeakyReluGrad", _leaky_k, _leaky_grad_k, {"alpha": 0.2})


def relu(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.relu`: max(features, 0).

    Example:
        >>> tf.nn.relu([-1.0, 2.0])  # -> [0., 2.]
    """
    return _on_features("Relu", features, name)


def relu6(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.relu6`: min(max(features, 0), 6).

    Example:
        >>> tf.nn.relu6([-1.0, 7.0])  # -> [0., 6.]
    """
    return _on_features("Relu6", features, name)


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """`tf.nn.leaky_relu`: features where positive, alpha * features elsewhere.

    Example:
        >>> tf.nn.leaky_relu([-1.0, 2.0], alpha=0.1)  # -> [-0.1, 2.]
    """
    return _on_features("LeakyRelu", features, name, {"alpha": float(alpha)})


def exp_linear_grad_grad(grad_op: str) -> Any:
    """The gradient of EluGrad / SeluGrad(gradients, outputs): linear in `gradients`
    (so the same grad op again), and `grad * gradients` w.r.t. the outputs where y < 0
    (TF's _EluGradGrad / _SeluGradGrad)."""
    def grad_fn(op: Operation, grad: Tensor) -> list[Any]:
        g, y = op.inputs
        d_g = create(grad_op, [grad, y]).outputs[0]
        neg = math_ops.cast(math_ops.less(y, 0), y.dtype.base_dtype)
        return [d_g, math_ops.multiply(math_ops.multiply(grad, g), neg)]
    return grad_fn


# ---- Elu (its gradient op takes the *outputs*, as TF's EluGrad does); Selu too ------
def define_exp_linear(op_type: str, grad_type: str, scale: float = 1.0,
                      alpha: float = 1.0) -> tuple[Any, Any]:
    """Elu (scale = alpha = 1) and Selu: scale * x where x > 0, else
    scale * alpha * (e^x - 1); the gradient op takes the outputs, as TF's do."""
    fwd = define_op(op_type, inputs=("features",))
    bwd = define_op(grad_type, inputs=("gradients", "outputs"))
    sa = scale * alpha

    @fwd.shape
    def _(x: Tensor) -> Any:
        check_float(op_type, x)
        return x.dtype.base_dtype, x.shape

    @fwd.kernel("CPU")
    def _(x: np.ndarray) -> np.ndarray:
        t = x.dtype.type
        # expm1 of min(x, 0): no overflow warning for large positive x, exact near 0.
        neg = t(sa) * np.expm1(np.minimum(x, 0))
        return np.where(x > 0, t(scale) * x, neg).astype(x.dtype, copy=False)

    @fwd.gradient
    def _(op: Operation, grad: Tensor) -> list[Any]:
        return [create(grad_type, [grad, op.outputs[0]]).outputs[0]]

    @bwd.shape
    def _(g: Tensor, y: Tensor) -> Any:
        return same_dtype(grad_type, g, y), same_shape(grad_type, g, y)

    @bwd.kernel("CPU")
    def _(g: np.ndarray, y: np.ndarray) -> np.ndarray:
        # For x <= 0, y = s*a*(e^x - 1) so dy/dx = s*a*e^x = y + s*a: no need for x itself.
        t = g.dtype.type
        return np.where(y < 0, g * (y + t(sa)), g * t(scale)).astype(g.dtype, copy=False)

    bwd.gradient(exp_linear_grad_grad(grad_type))
    return fwd, bwd


elu_op, elu_grad_op = define_exp_linear("Elu", "EluGrad")


def elu(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.elu`: features where positive, exp(features) - 1 elsewhere.

    Example:
        >>> tf.nn.elu([-1.0, 2.0])  # -> [-0.632, 2.]
    """
    return _on_features("Elu", features, name)


# ---- Softmax, LogSoftmax -----------------------------------------------------------
def _softmax_k(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))  # shift: exp never overflows
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype, copy=False)


def _log_softmax_k(x: np.ndarray, axis: int) -> np.ndarray:
    z = x - np.max(x, axis=axis, keepdims=True)
    return (z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))).astype(x.dtype, copy=False)


def _define_softmax(op_type: str, kernel: Any) -> tuple[Any, Any]:
    fwd = define_op(op_type, inputs=("logits",), attrs={"axis": -1})
    bwd = define_op(op_type + "Grad", inputs=("gradients", "outputs"), attrs={"axis": -1})

    @fwd.shape
    def _(x: Tensor, *, axis: int) -> Any:
        check_float(op_type, x, "logits")
        norm_axis(op_type, x.shape, axis)
        return x.dtype.base_dtype, x.shape

    @fwd.kernel("CPU")
    def _(x: np.ndarray, *, axis: int) -> np.ndarray:
        return kernel(x, axis)

    @fwd.gradient
    def _(op: Operation, grad: Tensor) -> list[Any]:
        return [create(op_type + "Grad", [grad, op.outputs[0]],
                       {"axis": op.get_attr("axis")}).outputs[0]]

    @bwd.shape
    def _(g: Tensor, y: Tensor, *, axis: int) -> Any:
        return same_dtype(op_type + "Grad", g, y), same_shape(op_type + "Grad", g, y)

    return fwd, bwd


softmax_op, softmax_grad_op = _define_softmax("Softmax", _softmax_k)
log_softmax_op, log_softmax_grad_op = _define_softmax("LogSoftmax", _log_softmax_k)


@softmax_grad_op.kernel("CPU")
def _(g: np.ndarray, y: np.ndarray, *, axis: int) -> np.ndarray:
    # d softmax: J^T g = (g - <g, y>) * y, row by row along `axis`.
    return ((g - np.sum(g * y, axis=axis, keepdims=True)) * y).astype(g.dtype, copy=False)


@softmax_grad_op.gradient
def _(op: Operation, h: Tensor) -> list[Any]:
    # out = (g - <g,y>) y is linear in g (symmetric Jacobian) and bilinear in (g, y).
    g, y = op.inputs
    axis = op.get_attr("axis")
    d_g = create("SoftmaxGrad", [h, y], {"axis": axis}).outputs[0]
    gy = math_ops.reduce_sum(math_ops.multiply(g, y), axis=axis, keepdims=True)
    hy = math_ops.reduce_sum(math_ops.multiply(h, y), axis=axis, keepdims=True)
    d_y = math_ops.subtract(math_ops.multiply(h, math_ops.subtract(g, gy)),
                            math_ops.multiply(g, hy))
    return [d_g, d_y]


@log_softmax_grad_op.kernel("CPU")
def _(g: np.ndarray, ls: np.ndarray, *, axis: int) -> np.ndarray:
    return (g - np.exp(ls) * np.sum(g, axis=axis, keepdims=True)).astype(g.dtype, copy=False)


@log_softmax_grad_op.gradient
def _(op: Operation, h: Tensor) -> list[Any]:
    # out = g - p * sum(g) with p = exp(ls).
    g, ls = op.inputs
    axis = op.get_attr("axis")
    p = math_ops.exp(ls)
    d_g = math_ops.subtract(h, math_ops.reduce_sum(math_ops.multiply(h, p), axis=axis,
                                                   keepdims=True))
    d_ls = math_ops.negative(math_ops.multiply(
        math_ops.multiply(h, p), math_ops.reduce_sum(g, axis=axis, keepdims=True)))
    return [d_g, d_ls]


def softmax(logits: Any, axis: int = -1, name: str | None = None, dim: int | None = None
            ) -> Tensor:
    """`tf.nn.softmax`: exp(logits) / sum(exp(logits), axis), computed stably.

    Args:
        logits: a float tensor of rank >= 1.
        axis: the dimension softmax is taken over (`dim` is TF1's older alias).

    Example:
        >>> tf.nn.softmax([[1.0, 1.0]])  # -> [[0.5, 0.5]]
    """
    axis = dim if dim is not None else axis
    return create("Softmax", [convert_to_tensor(logits)], {"axis": int(axis)},
                  name=name).outputs[0]


def log_softmax(logits: Any, axis: int = -1, name: str | None = None, dim: int | None = None
                ) -> Tensor:
    """`tf.nn.log_softmax`: logits - log(sum(exp(logits), axis)), computed stably.

    Example:
        >>> tf.nn.log_softmax([[0.0, 0.0]])  # -> [[-0.693, -0.693]]
    """
    axis = dim if dim is not None else axis
    return create("LogSoftmax", [convert_to_tensor(logits)], {"axis": int(axis)},
                  name=name).outputs[0]


# ---- Softplus ----------------------------------------------------------------------
softplus_op = define_op("Softplus", inputs=("features",))
softplus_grad_op = define_op("SoftplusGrad", inputs=("gradients", "features"))


def _sigmoid_k(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


@softplus_op.shape
def _(x: Tensor) -> Any:
    check_float("Softplus", x)
    return x.dtype.base_dtype, x.shape


@softplus_op.kernel("CPU")
def _(x: np.ndarray) -> np.ndarray:
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow, exact for tiny e^x.
    return (np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))).astype(x.dtype, copy=False)


@softplus_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [create("SoftplusGrad", [grad, op.inputs[0]]).outputs[0]]


@softplus_grad_op.shape
def _(g: Tensor, x: Tensor) -> Any:
    return same_dtype("SoftplusGrad", g, x), same_shape("SoftplusGrad", g, x)


@softplus_grad_op.kernel("CPU")
def _(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (g * _sigmoid_k(x)).astype(g.dtype, copy=False)


@softplus_grad_op.gradient
def _(op: Operation, h: Tensor) -> list[Any]:
    g, x = op.inputs
    s = math_ops.sigmoid(x)
    ds = math_ops.multiply(s, math_ops.subtract(1.0, s))
    return [create("SoftplusGrad", [h, x]).outputs[0],
            math_ops.multiply(math_ops.multiply(h, g), ds)]


def softplus(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.softplus`: log(exp(features) + 1), computed without overflow.

    Example:
        >>> tf.nn.softplus([0.0])  # -> [0.693]
    """
    return _on_features("Softplus", features, name)


def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """`tf.log_sigmoid`: log(1 / (1 + exp(-x))) = -softplus(-x), without overflow.

    Example: `tf.log_sigmoid([0.0, -1000.0])` -> [-0.6931472, -1000.0]
    """
    return math_ops.negative(softplus(math_ops.negative(x)), name=name)
