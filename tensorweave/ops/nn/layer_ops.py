"""Neural-network layer helpers: bias_add, l2_loss and dropout.

Example:
    >>> h = tf.nn.dropout(tf.nn.bias_add(z, b), keep_prob=0.5)
    >>> reg = tf.nn.l2_loss(w)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, broadcast_shapes, dimension_value
from tensorweave.ops.nn.nn_ops import check_float, same_dtype, create
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.random import random_ops


# ---- BiasAdd -----------------------------------------------------------------------
bias_add_op = define_op("BiasAdd", inputs=("value", "bias"), attrs={"data_format": "NHWC"})
bias_add_grad_op = define_op("BiasAddGrad", inputs=("out_backprop",),
                             attrs={"data_format": "NHWC"})


def _channel_axis(op_type: str, rank: int, data_format: str) -> int:
    if data_format not in ("NHWC", "NCHW", "NWC", "NCW", "NDHWC", "NCDHW", "N...C", "NC..."):
        raise ValueError(f"{op_type}: unknown data_format {data_format!r}; use 'NHWC' "
                         "(channels last) or 'NCHW' (channels first).")
    if data_format.startswith("NC"):
        if rank < 3:
            raise ValueError(f"{op_type} with data_format {data_format} needs an input of rank "
                             f">= 3, got rank {rank}.")
        return 1
    return rank - 1


@bias_add_op.shape
def _(value: Tensor, bias: Tensor, *, data_format: str) -> Any:
    dtype = same_dtype("BiasAdd", value, bias)
    if bias.shape.ndims is not None and bias.shape.ndims != 1:
        raise ValueError(f"BiasAdd: bias must be 1-D, but {bias.name} has shape {bias.shape}.")
    shape = value.shape
    if shape.ndims is None:
        return dtype, shape
    if shape.ndims < 2:
        raise ValueError(f"BiasAdd: value must have rank >= 2, but {value.name} has shape "
                         f"{shape}.")
    c = _channel_axis("BiasAdd", shape.ndims, data_format)
    n_bias = dimension_value(bias.shape[0]) if bias.shape.ndims else None
    if dimension_value(shape[c]) not in (None, n_bias) and n_bias is not None:
        raise ValueError(f"Dimensions must be equal, but are {shape[c]} and {n_bias} for "
                         f"BiasAdd with input shapes {shape}, {bias.shape} (data_format "
                         f"{data_format}: the bias length must equal the channel dimension).")
    dims = shape.as_list()
    dims[c] = dims[c] if dims[c] is not None else n_bias
    return dtype, TensorShape(dims)


@bias_add_op.kernel("CPU")
def _(value: np.ndarray, bias: np.ndarray, *, data_format: str) -> np.ndarray:
    c = _channel_axis("BiasAdd", value.ndim, data_format)
    if value.shape[c] != bias.shape[0]:
        raise ValueError(f"Must provide as many biases as the channel dimension of the input "
                         f"tensor: got bias of shape {bias.shape} for value of shape "
                         f"{value.shape} (data_format {data_format}).")
    b = bias.reshape((-1,) + (1,) * (value.ndim - 1 - c))
    return value + b


@bias_add_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    fmt = op.get_attr("data_format")
    return [grad, create("BiasAddGrad", [grad], {"data_format": fmt}).outputs[0]]


@bias_add_grad_op.shape
def _(g: Tensor, *, data_format: str) -> Any:
    if g.shape.ndims is None:
        return g.dtype.base_dtype, TensorShape([None])
    if g.shape.ndims < 2:
        raise ValueError(f"BiasAddGrad: out_backprop must have rank >= 2, got {g.shape}.")
    return g.dtype.base_dtype, TensorShape([g.shape[_channel_axis("BiasAddGrad", g.shape.ndims,
                                                                 data_format)]])


@bias_add_grad_op.kernel("CPU")
def _(g: np.ndarray, *, data_format: str) -> np.ndarray:
    c = _channel_axis("BiasAddGrad", g.ndim, data_format)
    axes = tuple(i for i in range(g.ndim) if i != c)
    return np.asarray(np.sum(g, axis=axes), dtype=g.dtype)


@bias_add_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # Summing over non-channel axes is undone by broadcasting the bias back out.
    zeros = array_ops.zeros_like(op.inputs[0])
    return [create("BiasAdd", [zeros, grad], {"data_format": op.get_attr("data_format")}
                   ).outputs[0]]


def bias_add(value: Any, bias: Any, data_format: str | None = None, name: str | None = None
             ) -> Tensor:
    """`tf.nn.bias_add`: adds the 1-D `bias` along the channel axis of `value`.

    Args:
        value: a tensor of rank >= 2.
        bias: a 1-D tensor whose length is the channel dimension of `value`.
        data_format: "NHWC" (channels last, default) or "NCHW" (channels at axis 1).

    Example:
        >>> tf.nn.bias_add(tf.zeros([2, 3]), [1.0, 2.0, 3.0])  # -> [[1, 2, 3], [1, 2, 3]]
    """
    with name_scope(name, "BiasAdd", [value, bias]) as scope:  # TF's BiasAdd/bias
        value = convert_to_tensor(value, name="input")
        bias = convert_to_tensor(bias, dtype=value.dtype.base_dtype, name="bias")
        return create("BiasAdd", [value, bias], {"data_format": data_format or "NHWC"},
                      name=scope).outputs[0]


# ---- L2Loss ------------------------------------------------------------------------
l2_loss_op = define_op("L2Loss", inputs=("t",))


@l2_loss_op.shape
def _(t: Tensor) -> Any:
    check_float("L2Loss", t, "t")
    return t.dtype.base_dtype, TensorShape([])


@l2_loss_op.kernel("CPU")
def _(t: np.ndarray) -> np.ndarray:
    return np.asarray(np.sum(np.square(t)) / 2, dtype=t.dtype)


@l2_loss_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [math_ops.multiply(op.inputs[0], grad)]


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """`tf.nn.l2_loss`: sum(t ** 2) / 2, a scalar.

    Example:
        >>> tf.nn.l2_loss([3.0, 4.0])  # -> 12.5
    """
    return create("L2Loss", [convert_to_tensor(t)], name=name).outputs[0]


# ---- Dropout -----------------------------------------------------------------------
# One op applies the mask: out = x / keep_prob * floor(keep_prob + uniform). It is
# linear in x, so its gradient is the same op applied to the incoming gradient
# with the same uniform draw; no gradient flows to the noise or keep_prob.
dropout_mask_op = define_op("ApplyDropoutMask", inputs=("x", "uniform", "keep_prob"))


@dropout_mask_op.shape
def _(x: Tensor, uniform: Tensor, keep_prob: Tensor) -> Any:
    check_float("ApplyDropoutMask", x, "x")
    dtype = same_dtype("ApplyDropoutMask", x, uniform)
    same_dtype("ApplyDropoutMask", x, keep_prob)
    if keep_prob.shape.ndims not in (None, 0):
        raise ValueError(f"dropout: keep_prob must be a scalar, but {keep_prob.name} has shape "
                         f"{keep_prob.shape}.")
    try:
        out = broadcast_shapes(x.shape, uniform.shape)
    except ValueError:
        raise ValueError(f"dropout: noise_shape {uniform.shape} does not broadcast to the shape "
                         f"{x.shape} of x ({x.name}).") from None
    if out.ndims is not None and x.shape.ndims is not None and out.ndims != x.shape.ndims:
        raise ValueError(f"dropout: noise_shape {uniform.shape} has a higher rank than x "
                         f"{x.shape}.")
    return dtype, x.shape


@dropout_mask_op.kernel("CPU")
def _(x: np.ndarray, uniform: np.ndarray, keep_prob: np.ndarray) -> np.ndarray:
    if not 0 < keep_prob <= 1:
        raise ValueError(f"dropout: keep_prob must be in (0, 1], got {keep_prob}.")
    return (x / keep_prob * np.floor(keep_prob + uniform)).astype(x.dtype, copy=False)


@dropout_mask_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    _, uniform, keep_prob = op.inputs
    return [create("ApplyDropoutMask", [grad, uniform, keep_prob]).outputs[0], None, None]


def dropout(x: Any, keep_prob: Any = None, noise_shape: Any = None, seed: int | None = None,
            name: str | None = None, rate: Any = None) -> Tensor:
    """`tf.nn.dropout` (TF1): keeps each element with probability `keep_prob`, scaled up.

    Kept elements are multiplied by 1 / keep_prob so the expected sum is unchanged;
    dropped ones become 0.

    Args:
        x: a float tensor.
        keep_prob: probability of keeping an element (scalar, may be a placeholder).
        noise_shape: shape of the random keep/drop mask, broadcast against `x`
            (e.g. [batch, 1, 1, channels] drops whole channels).
        seed: op-level random seed.
        rate: probability of dropping an element (1 - keep_prob); give one of the two.

    Raises:
        ValueError: if both or neither of keep_prob and rate are given, or a constant
            keep_prob lies outside (0, 1].

    Example:
        >>> keep = tf.placeholder_with_default(1.0, [])
        >>> h = tf.nn.dropout(h, keep_prob=keep)
    """
    if (keep_prob is None) == (rate is None):
        raise ValueError("dropout: pass exactly one of keep_prob (TF1) or rate (= 1 - "
                         f"keep_prob); got keep_prob={keep_prob!r}, rate={rate!r}.")
    with name_scope(name, "dropout", [x]):
        x = convert_to_tensor(x, name="x")
        check_float("dropout", x, "x")
        if rate is not None:
            rate_t = convert_to_tensor(rate, dtype=x.dtype.base_dtype, name="rate")
            rate_v = constant_value(rate_t)
            if rate_v is not None:
                keep_prob = 1.0 - float(rate_v)
            else:
                keep_prob = math_ops.subtract(1.0, rate_t)
        kp = convert_to_tensor(keep_prob, dtype=x.dtype.base_dtype, name="keep_prob")
        kp_v = constant_value(kp)
        if kp_v is not None:
            if not 0 < float(kp_v) <= 1:
                raise ValueError(f"dropout: keep_prob must be a scalar in (0, 1], got "
                                 f"{float(kp_v)}.")
            if float(kp_v) == 1.0:
                return x  # as TF1: nothing is dropped, so no random op is built
        if noise_shape is None:
            noise_shape = (x.shape.as_list() if x.shape.is_fully_defined()
                           else _dynamic_shape(x))
        uniform = _random_uniform(noise_shape, x.dtype.base_dtype, seed)
        # Named like TF1's output (`dropout/mul`) so graph-inspecting code finds it.
        return create("ApplyDropoutMask", [x, uniform, kp], name="mul").outputs[0]


def _dynamic_shape(x: Tensor) -> Tensor:
    return array_ops.shape(x)


def _random_uniform(shape: Any, dtype: _dt.DType, seed: int | None) -> Tensor:
    return random_ops.random_uniform(shape, dtype=dtype, seed=seed)


# ---- composites: moments, l2_normalize, embedding_lookup ---------------------------
def moments(x: Any, axes: Any, shift: Any = None, name: str | None = None,
            keep_dims: bool = False, keepdims: bool | None = None) -> tuple[Tensor, Tensor]:
    """`tf.nn.moments`: (mean, variance) of `x` over `axes`.

    Example:
        >>> mean, var = tf.nn.moments(x, axes=[0])  # per-feature batch statistics
    """
    keep = keep_dims if keepdims is None else keepdims
    with name_scope(name, "moments", [x]):
        x = convert_to_tensor(x, name="x")
        check_float("moments", x, "x")
        axes = list(axes) if isinstance(axes, (list, tuple)) else [axes]
        mean = math_ops.reduce_mean(x, axis=axes, keepdims=True, name="mean")  # TF's names
        # d var / d mean is zero at the mean, so stopping its gradient is exact and cheaper.
        var = math_ops.reduce_mean(math_ops.squared_difference(x, array_ops.stop_gradient(mean)),
                                   axis=axes, keepdims=True, name="variance")
        if not keep:
            mean, var = array_ops.squeeze(mean, axes), array_ops.squeeze(var, axes)
        return mean, var


def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None,
                 dim: Any = None) -> Tensor:
    """`tf.nn.l2_normalize`: x / sqrt(max(sum(x ** 2, axis), epsilon)).

    Example:
        >>> tf.nn.l2_normalize([3.0, 4.0], axis=0)  # -> [0.6, 0.8]
    """
    axis = dim if axis is None else axis
    with name_scope(name, "l2_normalize", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        sq = math_ops.reduce_sum(math_ops.square(x), axis=axis, keepdims=True)
        return math_ops.multiply(x, math_ops.rsqrt(math_ops.maximum(sq, epsilon)), name=scope)
