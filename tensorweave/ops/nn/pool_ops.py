"""2-D pooling: MaxPool and AvgPool with their gradient ops, vectorized NumPy kernels.

Windows are strided views of the padded input (see conv_ops); gradients scatter
back with one vectorized add per window tap. As in TF, SAME max pooling pads with
-inf, SAME average pooling divides by the number of real (unpadded) elements, and a
max-pool gradient goes to the first maximum of each window.

Example:
    >>> p = tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np

from tensorweave.framework.convert import constant, constant_value, convert_to_tensor
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.kernels.window_geometry import (
    check_format, from_nhwc, from_nhwc_dims, known_out_size, nhwc_dims, out_size, pads,
    scatter_taps, spatial, taps, to_nhwc, windows)
from tensorweave.ops.nn.nn_ops import check_float, create, same_dtype, same_shape
from tensorweave.ops import array as array_ops

_POOL_ATTRS = {"ksize": [1, 1, 1, 1], "strides": [1, 1, 1, 1], "padding": "VALID",
               "data_format": "NHWC"}


class PoolGeom:
    def __init__(self, op_type: str, x_shape: tuple[int, ...], ksize: Any, strides: Any,
                 padding: str, data_format: str) -> None:
        self.n, self.h, self.w, self.c = x_shape
        self.kh, self.kw = spatial(op_type, "ksize", ksize, data_format)
        self.sh, self.sw = spatial(op_type, "strides", strides, data_format)
        self.oh = known_out_size(op_type, self.h, self.kh, self.sh, padding)
        self.ow = known_out_size(op_type, self.w, self.kw, self.sw, padding)
        self.pt, self.pb = pads(self.h, self.oh, self.kh, self.sh, padding)
        self.pl, self.pr = pads(self.w, self.ow, self.kw, self.sw, padding)

    @property
    def padded_shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.h + self.pt + self.pb, self.w + self.pl + self.pr, self.c)

    def windows(self, x: np.ndarray, fill: float) -> np.ndarray:
        """[N, OH, OW, KH*KW, C] copy of the windows of x padded with `fill`."""
        if self.pt or self.pb or self.pl or self.pr:
            x = np.pad(x, ((0, 0), (self.pt, self.pb), (self.pl, self.pr), (0, 0)),
                       constant_values=fill)
        v = windows(x, self.kh, self.kw, self.sh, self.sw, 1, 1, self.oh, self.ow)
        return v.reshape(self.n, self.oh, self.ow, self.kh * self.kw, self.c)

    def crop(self, xp: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(xp[:, self.pt:self.pt + self.h, self.pl:self.pl + self.w])

    def counts(self) -> np.ndarray:
        """Real (unpadded) elements per window, shaped [1, OH, OW, 1]."""
        def axis(size: int, out: int, k: int, s: int, before: int) -> np.ndarray:
            start = np.arange(out) * s - before
            return np.minimum(start + k, size) - np.maximum(start, 0)
        ch = axis(self.h, self.oh, self.kh, self.sh, self.pt)
        cw = axis(self.w, self.ow, self.kw, self.sw, self.pl)
        return (ch[:, None] * cw[None, :])[None, :, :, None]

    def scatter(self, cols: np.ndarray) -> np.ndarray:
        """Adds [N, OH, OW, KH*KW, C] window values back into the input's positions."""
        cols = cols.reshape(self.n, self.oh, self.ow, self.kh, self.kw, self.c)
        return self.crop(scatter_taps(cols, self.padded_shape, self.sh, self.sw, 1, 1))


def _geom(op_type: str, x: np.ndarray, attrs: dict[str, Any]) -> PoolGeom:
    return PoolGeom(op_type, x.shape, attrs["ksize"], attrs["strides"], attrs["padding"],
                     attrs["data_format"])


def pool_out_shape(op_type: str, x: Tensor, ksize: Any, strides: Any, padding: str,
                data_format: str) -> TensorShape:
    check_format(op_type, padding, data_format)
    check_float(op_type, x, "value")
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise ValueError(f"{op_type}: value must be 4-D ([batch, height, width, channels] for "
                         f"NHWC), but {x.name} has shape {x.shape}.")
    n, h, w, c = nhwc_dims(x.shape.with_rank(4), data_format)
    kh, kw = spatial(op_type, "ksize", ksize, data_format)
    sh, sw = spatial(op_type, "strides", strides, data_format)
    if kh < 1 or kw < 1:
        raise ValueError(f"{op_type}: ksize must be >= 1, got {ksize}.")
    return from_nhwc_dims([n, out_size(op_type, h, kh, sh, padding),
                           out_size(op_type, w, kw, sw, padding), c], data_format)


def _attrs_of(op: Operation) -> dict[str, Any]:
    return {k: op.get_attr(k) for k in _POOL_ATTRS}


# ---- MaxPool, MaxPoolGrad, MaxPoolGradGrad -----------------------------------------
max_pool_op = define_op("MaxPool", inputs=("input",), attrs=dict(_POOL_ATTRS))
max_pool_grad_op = define_op("MaxPoolGrad", inputs=("orig_input", "orig_output", "grad"),
                             attrs=dict(_POOL_ATTRS))
max_pool_grad_grad_op = define_op("MaxPoolGradGrad",
                                  inputs=("orig_input", "orig_output", "grad"),
                                  attrs=dict(_POOL_ATTRS))


@max_pool_op.shape
def _(x: Tensor, **attrs: Any) -> Any:
    return x.dtype.base_dtype, pool_out_shape("MaxPool", x, **attrs)


@max_pool_op.kernel("CPU")
def _(x: np.ndarray, **attrs: Any) -> np.ndarray:
    fmt = attrs["data_format"]
    x = to_nhwc(x, fmt)
    g = _geom("MaxPool", x, attrs)
    return from_nhwc(g.windows(x, -np.inf).max(axis=3), fmt)


@max_pool_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [create("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], _attrs_of(op)
                   ).outputs[0]]


def _first_max_masks(op_type: str, x: np.ndarray, attrs: dict[str, Any]) -> Any:
    """Yields (geometry, tap slice, mask) per window tap, in row-major tap order.

    `mask` marks the windows whose first maximum sits at that tap, so every window
    routes its gradient to exactly one input (TF's choice among ties). One vectorized
    comparison per tap is much faster than an argmax over a copied window axis.
    """
    g = _geom(op_type, x, attrs)
    xp = x
    if g.pt or g.pb or g.pl or g.pr:
        xp = np.pad(x, ((0, 0), (g.pt, g.pb), (g.pl, g.pr), (0, 0)), constant_values=-np.inf)
    index = [ix for _, ix in taps((g.kh, g.kw), (g.sh, g.sw), (1, 1), (g.oh, g.ow))]
    y = xp[index[0]]
    for t in index[1:]:
        y = np.maximum(y, xp[t])
    taken = np.zeros(y.shape, dtype=bool)
    for t in index:
        hit = (xp[t] == y) & ~taken
        taken |= hit
        yield g, t, hit


@max_pool_grad_op.shape
def _(x: Tensor, y: Tensor, dy: Tensor, **attrs: Any) -> Any:
    same_dtype("MaxPoolGrad", x, dy)
    out = pool_out_shape("MaxPoolGrad", x, **attrs)
    if not out.is_compatible_with(dy.shape):
        raise ValueError(f"MaxPoolGrad: grad {dy.name} has shape {dy.shape}, but pooling an "
                         f"input of {x.shape} gives {out}.")
    return x.dtype.base_dtype, x.shape


@max_pool_grad_op.kernel("CPU")
def _(x: np.ndarray, y: np.ndarray, dy: np.ndarray, **attrs: Any) -> np.ndarray:
    fmt = attrs["data_format"]
    x, dy = to_nhwc(x, fmt), to_nhwc(dy, fmt)
    dxp = None
    for g, tap, hit in _first_max_masks("MaxPoolGrad", x, attrs):
        if dxp is None:
            dxp = np.zeros(g.padded_shape, dtype=dy.dtype)
        dxp[tap] += np.where(hit, dy, 0)
    return from_nhwc(g.crop(dxp), fmt)


@max_pool_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y, _ = op.inputs
    return [None, None, create("MaxPoolGradGrad", [x, y, grad], _attrs_of(op)).outputs[0]]


@max_pool_grad_grad_op.shape
def _(x: Tensor, y: Tensor, ddx: Tensor, **attrs: Any) -> Any:
    same_shape("MaxPoolGradGrad", x, ddx)
    return x.dtype.base_dtype, pool_out_shape("MaxPoolGradGrad", x, **attrs)


@max_pool_grad_grad_op.kernel("CPU")
def _(x: np.ndarray, y: np.ndarray, ddx: np.ndarray, **attrs: Any) -> np.ndarray:
    # The gradient of MaxPoolGrad w.r.t. its `grad`: read ddx at each window's first max.
    fmt = attrs["data_format"]
    x, ddx = to_nhwc(x, fmt), to_nhwc(ddx, fmt)
    out: Any = None
    ddxp: Any = None
    for g, tap, hit in _first_max_masks("MaxPoolGradGrad", x, attrs):
        if out is None:
            out = np.zeros(hit.shape, dtype=ddx.dtype)
            ddxp = np.pad(ddx, ((0, 0), (g.pt, g.pb), (g.pl, g.pr), (0, 0)))
        out += np.where(hit, ddxp[tap], 0)
    return from_nhwc(out, fmt)


@max_pool_grad_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y, _ = op.inputs
    return [None, None, create("MaxPoolGrad", [x, y, grad], _attrs_of(op)).outputs[0]]


# ---- AvgPool, AvgPoolGrad ----------------------------------------------------------
avg_pool_op = define_op("AvgPool", inputs=("value",), attrs=dict(_POOL_ATTRS))
avg_pool_grad_op = define_op("AvgPoolGrad", inputs=("orig_input_shape", "grad"),
                             attrs=dict(_POOL_ATTRS))


@avg_pool_op.shape
def _(x: Tensor, **attrs: Any) -> Any:
    return x.dtype.base_dtype, pool_out_shape("AvgPool", x, **attrs)


@avg_pool_op.kernel("CPU")
def _(x: np.ndarray, **attrs: Any) -> np.ndarray:
    fmt = attrs["data_format"]
    x = to_nhwc(x, fmt)
    g = _geom("AvgPool", x, attrs)
    out = g.windows(x, 0).sum(axis=3) / g.counts()
    return from_nhwc(out.astype(x.dtype, copy=False), fmt)


@avg_pool_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x = op.inputs[0]
    if x.shape.is_fully_defined():
        shape = constant(np.array(x.shape.as_list(), dtype=np.int32), name="shape")
    else:
        shape = array_ops.shape(x)
    return [create("AvgPoolGrad", [shape, grad], _attrs_of(op)).outputs[0]]


@avg_pool_grad_op.shape
def _(shape: Tensor, dy: Tensor, **attrs: Any) -> Any:
    check_format("AvgPoolGrad", attrs["padding"], attrs["data_format"])
    v = constant_value(shape)
    out = TensorShape([None] * 4) if v is None else TensorShape([int(d) for d in v])
    return dy.dtype.base_dtype, out


@avg_pool_grad_op.kernel("CPU")
def _(shape: np.ndarray, dy: np.ndarray, **attrs: Any) -> np.ndarray:
    fmt = attrs["data_format"]
    dy = to_nhwc(dy, fmt)
    x_shape = tuple(cast(list[int], nhwc_dims(TensorShape([int(d) for d in shape]), fmt)))
    g = PoolGeom("AvgPoolGrad", x_shape, attrs["ksize"], attrs["strides"], attrs["padding"],
                  fmt)
    if dy.shape != (g.n, g.oh, g.ow, g.c):
        raise ValueError(f"AvgPoolGrad: grad has shape {dy.shape} (NHWC), but pooling an input "
                         f"of {x_shape} gives ({g.n}, {g.oh}, {g.ow}, {g.c})")
    share = (dy / g.counts()).astype(dy.dtype, copy=False)
    cols = np.broadcast_to(share[:, :, :, None, :], (g.n, g.oh, g.ow, g.kh * g.kw, g.c))
    return from_nhwc(g.scatter(cols), fmt)


@avg_pool_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [None, create("AvgPool", [grad], _attrs_of(op)).outputs[0]]


# ---- wrappers ----------------------------------------------------------------------
def _pool(op_type: str, value: Any, ksize: Any, strides: Any, padding: str,
          data_format: str | None, name: str | None) -> Tensor:
    fmt = data_format or "NHWC"

    def four(v: Any, what: str) -> list[int]:
        h, w = spatial(op_type, what, v, fmt)
        return [1, 1, h, w] if fmt == "NCHW" else [1, h, w, 1]
    if ksize is None or strides is None:
        raise ValueError(f"{op_type}: ksize and strides are required, e.g. ksize=[1, 2, 2, 1], "
                         "strides=[1, 2, 2, 1].")
    x = convert_to_tensor(value, name="input")
    attrs = {"ksize": four(ksize, "ksize"), "strides": four(strides, "strides"),
             "padding": str(padding).upper(), "data_format": fmt}
    return create(op_type, [x], attrs, name=name).outputs[0]


def max_pool(value: Any, ksize: Any, strides: Any, padding: str, data_format: str = "NHWC",
             name: str | None = None, input: Any = None) -> Tensor:
    """`tf.nn.max_pool`: the maximum of each window.

    Args:
        value: 4-D float tensor, NHWC (or NCHW with data_format="NCHW").
        ksize: window size, 4 ints in `data_format` order (1 in batch and channels),
            or an int / [kh, kw].
        strides: window stride, same forms as `ksize`.
        padding: "SAME" or "VALID".

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 28, 28, 32])
        >>> tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME").shape.as_list()
        [None, 14, 14, 32]
    """
    return _pool("MaxPool", value if input is None else input, ksize, strides, padding,
                 data_format, name)


def avg_pool(value: Any, ksize: Any, strides: Any, padding: str, data_format: str = "NHWC",
             name: str | None = None, input: Any = None) -> Tensor:
    """`tf.nn.avg_pool`: the mean of each window (padding excluded from the mean).

    Example:
        >>> tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    """
    return _pool("AvgPool", value if input is None else input, ksize, strides, padding,
                 data_format, name)
