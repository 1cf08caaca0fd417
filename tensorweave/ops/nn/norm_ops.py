"""Normalization ops of CNNs: LRN (local response normalization) and FusedBatchNormV3,
each with TF's gradient op (LRNGrad, FusedBatchNormGradV3).

LRN sums squares over a window of channels with one matmul by a band matrix, as
TF's CPU kernel does (exact sums, no cumulative-sum cancellation):
    sqr_sum[..., d] = sum(input[..., d - r : d + r + 1] ** 2)
    output = input / (bias + alpha * sqr_sum) ** beta
FusedBatchNormV3 normalizes per channel; in training it also returns the batch
mean and the *unbiased* batch variance (what the moving averages take), keeping the
biased one in reserve_space_2 for the gradient. Half inputs compute in float32.

Example:
    >>> y = tf.nn.lrn(x, depth_radius=4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)
    >>> y, mean, var = tf.nn.fused_batch_norm(x, gamma, beta, is_training=True)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.nn.nn_ops import check_float, create, same_dtype

# ---- LRN, LRNGrad ------------------------------------------------------------------
_LRN_ATTRS = {"depth_radius": 5, "bias": 1.0, "alpha": 1.0, "beta": 0.5}
lrn_op = define_op("LRN", inputs=("input",), attrs=dict(_LRN_ATTRS))
lrn_grad_op = define_op("LRNGrad", inputs=("input_grads", "input_image", "output_image"),
                        attrs=dict(_LRN_ATTRS))


def _check_lrn(op_type: str, t: Tensor, depth_radius: int) -> None:
    check_float(op_type, t, "input")
    if t.shape.ndims is not None and t.shape.ndims != 4:
        raise ValueError(f"{op_type}: input must be 4-D [batch, height, width, channels], but "
                         f"{t.name} has shape {t.shape}.")
    if not 0 <= int(depth_radius) < 2 ** 31:
        raise ValueError(f"{op_type}: depth_radius must be a non-negative int32, got "
                         f"{depth_radius}.")


def _lrn_norm(x: np.ndarray, depth_radius: int, bias: float, alpha: float) -> np.ndarray:
    """bias + alpha * (windowed sum of squares over channels), shaped [rows, depth]."""
    depth = x.shape[-1]
    idx = np.arange(depth)
    band = (np.abs(idx[:, None] - idx[None, :]) <= depth_radius).astype(x.dtype)
    x2 = x.reshape(-1, depth)
    return (x2 * x2) @ band * x.dtype.type(alpha) + x.dtype.type(bias)


@lrn_op.shape
def _(x: Tensor, **a: Any) -> Any:
    _check_lrn("LRN", x, a["depth_radius"])
    return x.dtype.base_dtype, x.shape


@lrn_op.kernel("CPU")
def _(x: np.ndarray, *, depth_radius: int, bias: float, alpha: float, beta: float
      ) -> np.ndarray:
    if x.ndim != 4:
        raise ValueError(f"LRN: input must be 4-D, got shape {x.shape}")
    work = x.astype(np.float32) if x.dtype.itemsize < 4 else x
    norm = _lrn_norm(work, depth_radius, bias, alpha)
    out = work.reshape(norm.shape) * norm ** work.dtype.type(-beta)
    return out.reshape(x.shape).astype(x.dtype, copy=False)


@lrn_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    a = {k: op.get_attr(k) for k in _LRN_ATTRS}
    return [create("LRNGrad", [grad, op.inputs[0], op.outputs[0]], a).outputs[0]]


@lrn_grad_op.shape
def _(dy: Tensor, x: Tensor, y: Tensor, **a: Any) -> Any:
    for t in (dy, x, y):
        _check_lrn("LRNGrad", t, a["depth_radius"])
        same_dtype("LRNGrad", x, t)
        if not t.shape.is_compatible_with(x.shape):
            raise ValueError(f"LRNGrad: input_grads, input_image and output_image must have "
                             f"one shape; {t.name} has {t.shape}, {x.name} has {x.shape}.")
    return x.dtype.base_dtype, x.shape


@lrn_grad_op.kernel("CPU")
def _(dy: np.ndarray, x: np.ndarray, y: np.ndarray, *, depth_radius: int, bias: float,
      alpha: float, beta: float) -> np.ndarray:
    if not dy.shape == x.shape == y.shape:
        raise ValueError(f"LRNGrad: input_grads {dy.shape}, input_image {x.shape} and "
                         f"output_image {y.shape} must have one shape")
    dtype = x.dtype
    if dtype.itemsize < 4:
        dy, x, y = dy.astype(np.float32), x.astype(np.float32), y.astype(np.float32)
    norm = _lrn_norm(x, depth_radius, bias, alpha)
    d, xs, ys = dy.reshape(norm.shape), x.reshape(norm.shape), y.reshape(norm.shape)
    # d out[j] / d in[k] = [k == j] norm[j]^-beta - 2 alpha beta in[k] out[j] / norm[j]
    # for k in j's window; the window is symmetric, so the sum over j is a band matmul.
    idx = np.arange(norm.shape[-1])
    band = (np.abs(idx[:, None] - idx[None, :]) <= depth_radius).astype(norm.dtype)
    cross = (d * ys / norm) @ band
    dx = d * norm ** norm.dtype.type(-beta) - norm.dtype.type(2 * alpha * beta) * xs * cross
    return dx.reshape(x.shape).astype(dtype, copy=False)


@lrn_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    raise LookupError(f"Second derivatives of LRN are not implemented (no gradient for "
                      f"{op.name}, op type LRNGrad; TensorFlow has none either). Use "
                      "first-order gradients of tf.nn.lrn only.")


# ---- FusedBatchNormV3, FusedBatchNormGradV3 ----------------------------------------
_BN_ATTRS = {"epsilon": 0.0001, "exponential_avg_factor": 1.0, "data_format": "NHWC",
             "is_training": True}
_FORMATS = {"NHWC": (4, -1), "NCHW": (4, 1), "NDHWC": (5, -1), "NCDHW": (5, 1)}
fused_bn_op = define_op("FusedBatchNormV3",
                        inputs=("x", "scale", "offset", "mean", "variance"),
                        attrs=dict(_BN_ATTRS))
fused_bn_grad_op = define_op("FusedBatchNormGradV3",
                             inputs=("y_backprop", "x", "scale", "reserve_space_1",
                                     "reserve_space_2", "reserve_space_3"),
                             attrs={"epsilon": 0.0001, "data_format": "NHWC",
                                    "is_training": True})


def _channel_axis(op_type: str, data_format: str, rank: int | None) -> int:
    if data_format not in _FORMATS:
        raise ValueError(f"{op_type}: data_format must be one of {sorted(_FORMATS)}, got "
                         f"{data_format!r}.")
    want, axis = _FORMATS[data_format]
    if rank is not None and rank != want:
        raise ValueError(f"{op_type}: x must be {want}-D for data_format {data_format}, got "
                         f"rank {rank}; use NHWC/NCHW for 4-D and NDHWC/NCDHW for 5-D.")
    return axis % want


def _param_dtype(x: Tensor) -> _dt.DType:
    """TF's U: float32 statistics for half/bfloat16/float32 x (float64 for float64 x)."""
    return _dt.float64 if x.dtype.base_dtype == _dt.float64 else _dt.float32


def _check_params(op_type: str, x: Tensor, params: list[Tensor], channels: int | None,
                  exact: list[bool]) -> None:
    u = _param_dtype(x)
    for t, must_match in zip(params, exact):
        if t.dtype.base_dtype != u:
            raise TypeError(f"{op_type}: {t.name} must be {u.name} for x of dtype "
                            f"{x.dtype.base_dtype.name}, got {t.dtype.base_dtype.name}.")
        if t.shape.ndims is not None and t.shape.ndims != 1:
            raise ValueError(f"{op_type}: {t.name} must be 1-D [channels], got shape "
                             f"{t.shape}.")
        n = dimension_value(t.shape[0]) if t.shape.ndims == 1 else None
        if must_match and n is not None and channels is not None and n != channels:
            raise ValueError(f"{op_type}: {t.name} has {n} elements but x {x.name} (shape "
                             f"{x.shape}) has {channels} channels; they must be equal.")


@fused_bn_op.shape
def _(x: Tensor, scale: Tensor, offset: Tensor, mean: Tensor, variance: Tensor, **a: Any
      ) -> Any:
    check_float("FusedBatchNormV3", x, "x")
    axis = _channel_axis("FusedBatchNormV3", a["data_format"], x.shape.ndims)
    c = dimension_value(x.shape[axis]) if x.shape.ndims is not None else None
    # Training with factor 1 ignores mean/variance, which may then be empty.
    stats_used = not a["is_training"] or a["exponential_avg_factor"] != 1.0
    _check_params("FusedBatchNormV3", x, [scale, offset, mean, variance], c,
                  [True, True, stats_used, stats_used])
    u, vec = _param_dtype(x), TensorShape([c])
    return [(x.dtype.base_dtype, x.shape), (u, vec), (u, vec), (u, vec), (u, vec),
            (u, TensorShape(None))]


def _moments(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    red = tuple(i for i in range(x.ndim) if i != axis)
    mean = x.mean(axis=red)
    var = np.square(x - _bcast(mean, x.ndim, axis)).mean(axis=red)
    return mean, var, red


def _bcast(v: np.ndarray, rank: int, axis: int) -> np.ndarray:
    shape = [1] * rank
    shape[axis] = -1
    return v.reshape(shape)


@fused_bn_op.kernel("CPU")
def _(x: np.ndarray, scale: np.ndarray, offset: np.ndarray, mean: np.ndarray,
      variance: np.ndarray, *, epsilon: float, exponential_avg_factor: float,
      data_format: str, is_training: bool) -> Any:
    axis = _channel_axis("FusedBatchNormV3", data_format, x.ndim)
    u = scale.dtype
    xu = x.astype(u, copy=False)
    if is_training:
        bm, bv, _ = _moments(xu, axis)
        rest = x.size // max(x.shape[axis], 1)
        unbiased = bv * u.type(rest / max(rest - 1, 1))
        f = u.type(exponential_avg_factor)
        new_m = bm if f == 1 else (1 - f) * mean + f * bm
        new_v = unbiased if f == 1 else (1 - f) * variance + f * unbiased
        m, v, outs = bm, bv, (new_m, new_v, bm, bv)
    else:
        if mean.shape != scale.shape or variance.shape != scale.shape:
            raise ValueError(f"FusedBatchNormV3: in inference mean {mean.shape} and variance "
                             f"{variance.shape} must have one value per channel "
                             f"({scale.shape[0]}); pass the moving statistics.")
        m, v, outs = mean, variance, (mean.copy(), variance.copy(), mean.copy(),
                                      variance.copy())
    inv = (1 / np.sqrt(v + u.type(epsilon))) * scale
    y = (xu - _bcast(m, x.ndim, axis)) * _bcast(inv, x.ndim, axis) + _bcast(offset, x.ndim, axis)
    return (y.astype(x.dtype, copy=False), *(o.astype(u, copy=False) for o in outs),
            np.zeros((0,), u))


@fused_bn_op.gradient
def _(op: Operation, dy: Tensor, *unused: Any) -> list[Any]:
    x, scale, _, mean, variance = op.inputs
    a = {k: op.get_attr(k) for k in ("epsilon", "data_format", "is_training")}
    # Training: the batch statistics the forward pass saved; inference: the moving ones.
    r1, r2 = (op.outputs[3], op.outputs[4]) if a["is_training"] else (mean, variance)
    g = create("FusedBatchNormGradV3", [dy, x, scale, r1, r2, op.outputs[5]], a)
    return [g.outputs[0], g.outputs[1], g.outputs[2], None, None]


@fused_bn_grad_op.shape
def _(dy: Tensor, x: Tensor, scale: Tensor, r1: Tensor, r2: Tensor, r3: Tensor, **a: Any
      ) -> Any:
    check_float("FusedBatchNormGradV3", x, "x")
    same_dtype("FusedBatchNormGradV3", dy, x)
    if not dy.shape.is_compatible_with(x.shape):
        raise ValueError(f"FusedBatchNormGradV3: y_backprop {dy.name} {dy.shape} and x "
                         f"{x.name} {x.shape} must have one shape.")
    axis = _channel_axis("FusedBatchNormGradV3", a["data_format"], x.shape.ndims)
    c = dimension_value(x.shape[axis]) if x.shape.ndims is not None else None
    _check_params("FusedBatchNormGradV3", x, [scale, r1, r2], c, [True, True, True])
    u, vec = _param_dtype(x), TensorShape([c])
    return [(x.dtype.base_dtype, x.shape), (u, vec), (u, vec), (u, TensorShape([0])),
            (u, TensorShape([0]))]


@fused_bn_grad_op.kernel("CPU")
def _(dy: np.ndarray, x: np.ndarray, scale: np.ndarray, r1: np.ndarray, r2: np.ndarray,
      r3: np.ndarray, *, epsilon: float, data_format: str, is_training: bool) -> Any:
    axis = _channel_axis("FusedBatchNormGradV3", data_format, x.ndim)
    u = scale.dtype
    dyu, xu = dy.astype(u, copy=False), x.astype(u, copy=False)
    red = tuple(i for i in range(x.ndim) if i != axis)
    rstd = 1 / np.sqrt(r2 + u.type(epsilon))
    centered = xu - _bcast(r1, x.ndim, axis)
    doffset = dyu.sum(axis=red)
    dscale = (dyu * centered).sum(axis=red) * rstd
    if is_training:
        # dx = scale * rstd * (dy - mean(dy) - (x - m) * mean(dy * (x - m)) * rstd^2)
        rest = u.type(x.size // max(x.shape[axis], 1))
        inner = dyu - _bcast(doffset / rest, x.ndim, axis) - centered * _bcast(
            dscale * rstd / rest, x.ndim, axis)
        dx = inner * _bcast(scale * rstd, x.ndim, axis)
    else:
        dx = dyu * _bcast(scale * rstd, x.ndim, axis)
    empty = np.zeros((0,), u)
    return dx.astype(x.dtype, copy=False), dscale.astype(u), doffset.astype(u), empty, empty


@fused_bn_grad_op.gradient
def _(op: Operation, *grads: Any) -> list[Any]:
    raise LookupError(f"Second derivatives of fused batch norm are not implemented in "
                      f"tensorweave (no gradient for {op.name}, op type FusedBatchNormGradV3). "
                      "Use tf.nn.batch_normalization with tf.nn.moments where you need them.")


# ---- wrappers ----------------------------------------------------------------------
def lrn(input: Any, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,
        beta: float = 0.5, name: str | None = None) -> Tensor:
    """`tf.nn.lrn` / `tf.nn.local_response_normalization` (AlexNet, CIFAR-10 tutorial).

    output = input / (bias + alpha * sum(input[..., d - r : d + r + 1] ** 2)) ** beta,
    the sum over a window of 2 * depth_radius + 1 channels (clipped at the edges).

    Raises:
        ValueError: naming the tensor, for an input that is not 4-D.

    Example:
        >>> norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name="norm1")
    """
    x = convert_to_tensor(input, name="input")
    attrs = {"depth_radius": int(depth_radius), "bias": float(bias), "alpha": float(alpha),
             "beta": float(beta)}
    return create("LRN", [x], attrs, name=name).outputs[0]


local_response_normalization = lrn


def fused_batch_norm(x: Any, scale: Any, offset: Any, mean: Any = None, variance: Any = None,
                     epsilon: float = 0.001, data_format: str = "NHWC",
                     is_training: bool = True, name: str | None = None,
                     exponential_avg_factor: float = 1.0) -> tuple[Tensor, Tensor, Tensor]:
    """`tf.nn.fused_batch_norm`: batch normalization of 4-D (or 5-D) inputs in one op.

    Args:
        x: [N, H, W, C] (NHWC), [N, C, H, W] (NCHW), or 5-D with NDHWC/NCDHW.
        scale, offset: [C] gamma and beta.
        mean, variance: [C] moving statistics; required for inference (is_training
            False) and when exponential_avg_factor != 1.
        epsilon: raised to 1.001e-5 if smaller (cuDNN's minimum, as TF does).
        is_training: normalize with the batch's statistics (True) or mean/variance.

    Returns:
        (y, batch_mean, batch_variance); in training the variance is the unbiased
        one (what moving averages take), in inference the given mean/variance.

    Raises:
        ValueError: mean/variance missing where required, or shapes that disagree.

    Example:
        >>> y, m, v = tf.nn.fused_batch_norm(h, tf.ones([64]), tf.zeros([64]))
    """
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or
                                                               variance is None):
        raise ValueError("fused_batch_norm: both 'mean' and 'variance' must be a 1-D tensor "
                         "when is_training is False or exponential_avg_factor != 1.0.")
    xt = convert_to_tensor(x, name="input")
    u = _param_dtype(xt)
    ts = [convert_to_tensor(v, dtype=u, name=n) if v is not None
          else convert_to_tensor(np.zeros((0,), u.as_numpy_dtype), name=n)
          for v, n in ((scale, "scale"), (offset, "offset"), (mean, "mean"),
                       (variance, "variance"))]
    attrs = {"epsilon": max(float(epsilon), 1.001e-5),
             "exponential_avg_factor": float(exponential_avg_factor),
             "data_format": data_format, "is_training": bool(is_training)}
    op = create("FusedBatchNormV3", [xt, *ts], attrs, name=name)
    return op.outputs[0], op.outputs[1], op.outputs[2]
