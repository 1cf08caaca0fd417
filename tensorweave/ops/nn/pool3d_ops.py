"""3-D pooling: MaxPool3D and AvgPool3D with TF's gradient ops (NDHWC/NCDHW).

As TF's CPU kernels: SAME max pooling pads with -inf; SAME average pooling divides
by the number of real elements; MaxPool3DGrad gives each window's gradient to
*every* input equal to the window's max (TF's 3-D kernel selects by equality,
unlike the 2-D one which picks the first), MaxPool3DGradGrad reads the first max.
Every kernel is a loop over window taps (KD*KH*KW vectorized steps).

Example:
    >>> p = tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np

from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.nn.conv3d_ops import (
    check_format_3d, five, from_ndhwc, from_ndhwc_dims, ndhwc_dims, spatial3, to_ndhwc)
from tensorweave.ops.nn.conv_ops import shape_of
from tensorweave.ops.nn.nn_ops import check_float, create, same_shape
from tensorweave.kernels.window_geometry import WindowGeom, out_size

_POOL3D_ATTRS = {"ksize": [1, 1, 1, 1, 1], "strides": [1, 1, 1, 1, 1], "padding": "VALID",
                 "data_format": "NDHWC"}


def _geom(op_type: str, shape: Any, a: dict[str, Any]) -> WindowGeom:
    fmt = a["data_format"]
    return WindowGeom(op_type, shape, spatial3(op_type, "ksize", a["ksize"], fmt),
                      spatial3(op_type, "strides", a["strides"], fmt), [1, 1, 1], a["padding"])


def _pool_shape(op_type: str, x: Tensor, a: dict[str, Any]) -> TensorShape:
    check_format_3d(op_type, a["padding"], a["data_format"])
    check_float(op_type, x, "input")
    if x.shape.ndims is not None and x.shape.ndims != 5:
        raise ValueError(f"{op_type}: input must be 5-D ([batch, depth, height, width, "
                         f"channels] for NDHWC), but {x.name} has shape {x.shape}.")
    fmt = a["data_format"]
    n, *space, c = ndhwc_dims(x.shape, fmt)
    k = spatial3(op_type, "ksize", a["ksize"], fmt)
    s = spatial3(op_type, "strides", a["strides"], fmt)
    if min(k) < 1:
        raise ValueError(f"{op_type}: ksize must be >= 1, got {a['ksize']}.")
    return from_ndhwc_dims([n, *(out_size(op_type, z, kk, st, a["padding"])
                                 for z, kk, st in zip(space, k, s)), c], fmt)


def _attrs_of(op: Operation) -> dict[str, Any]:
    return {k: op.get_attr(k) for k in _POOL3D_ATTRS}


def _max_and_padded(op_type: str, x: np.ndarray, a: dict[str, Any]) -> Any:
    g = _geom(op_type, x.shape, a)
    xp = g.pad(x, -np.inf)
    index = [ix for _, ix in g.taps()]
    y = xp[index[0]]
    for t in index[1:]:
        y = np.maximum(y, xp[t])
    return g, xp, index, y


# ---- MaxPool3D, MaxPool3DGrad, MaxPool3DGradGrad -----------------------------------
max_pool3d_op = define_op("MaxPool3D", inputs=("input",), attrs=dict(_POOL3D_ATTRS))
max_pool3d_grad_op = define_op("MaxPool3DGrad", inputs=("orig_input", "orig_output", "grad"),
                               attrs=dict(_POOL3D_ATTRS))
max_pool3d_grad_grad_op = define_op("MaxPool3DGradGrad",
                                    inputs=("orig_input", "orig_output", "grad"),
                                    attrs=dict(_POOL3D_ATTRS))


@max_pool3d_op.shape
def _(x: Tensor, **a: Any) -> Any:
    return x.dtype.base_dtype, _pool_shape("MaxPool3D", x, a)


@max_pool3d_op.kernel("CPU")
def _(x: np.ndarray, **a: Any) -> np.ndarray:
    fmt = a["data_format"]
    return from_ndhwc(_max_and_padded("MaxPool3D", to_ndhwc(x, fmt), a)[3], fmt)


@max_pool3d_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [create("MaxPool3DGrad", [op.inputs[0], op.outputs[0], grad], _attrs_of(op)
                   ).outputs[0]]


@max_pool3d_grad_op.shape
def _(x: Tensor, y: Tensor, dy: Tensor, **a: Any) -> Any:
    out = _pool_shape("MaxPool3DGrad", x, a)
    if not out.is_compatible_with(dy.shape):
        raise ValueError(f"MaxPool3DGrad: grad {dy.name} has shape {dy.shape}, but pooling an "
                         f"input of {x.shape} gives {out}.")
    return dy.dtype.base_dtype, x.shape


@max_pool3d_grad_op.kernel("CPU")
def _(x: np.ndarray, y: np.ndarray, dy: np.ndarray, **a: Any) -> np.ndarray:
    fmt = a["data_format"]
    x, y, dy = to_ndhwc(x, fmt), to_ndhwc(y, fmt), to_ndhwc(dy, fmt)
    g = _geom("MaxPool3DGrad", x.shape, a)
    xp = g.pad(x, -np.inf)
    dxp = np.zeros(g.padded_shape, dtype=dy.dtype)
    for _, ix in g.taps():
        dxp[ix] += np.where(xp[ix] == y, dy, 0)
    return from_ndhwc(g.crop(dxp), fmt)


@max_pool3d_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y, _ = op.inputs
    return [None, None, create("MaxPool3DGradGrad", [x, y, grad], _attrs_of(op)).outputs[0]]


@max_pool3d_grad_grad_op.shape
def _(x: Tensor, y: Tensor, ddx: Tensor, **a: Any) -> Any:
    same_shape("MaxPool3DGradGrad", x, ddx)
    return ddx.dtype.base_dtype, _pool_shape("MaxPool3DGradGrad", x, a)


@max_pool3d_grad_grad_op.kernel("CPU")
def _(x: np.ndarray, y: np.ndarray, ddx: np.ndarray, **a: Any) -> np.ndarray:
    fmt = a["data_format"]
    x, ddx = to_ndhwc(x, fmt), to_ndhwc(ddx, fmt)
    g, xp, index, ymax = _max_and_padded("MaxPool3DGradGrad", x, a)
    ddxp = g.pad(ddx, 0)
    out = np.zeros(ymax.shape, dtype=ddx.dtype)
    taken = np.zeros(ymax.shape, dtype=bool)
    for ix in index:   # the first maximum of each window, in row-major tap order
        hit = (xp[ix] == ymax) & ~taken
        taken |= hit
        out += np.where(hit, ddxp[ix], 0)
    return from_ndhwc(out, fmt)


@max_pool3d_grad_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y, _ = op.inputs
    return [None, None, create("MaxPool3DGrad", [x, y, grad], _attrs_of(op)).outputs[0]]


# ---- AvgPool3D, AvgPool3DGrad ------------------------------------------------------
avg_pool3d_op = define_op("AvgPool3D", inputs=("input",), attrs=dict(_POOL3D_ATTRS))
avg_pool3d_grad_op = define_op("AvgPool3DGrad", inputs=("orig_input_shape", "grad"),
                               attrs=dict(_POOL3D_ATTRS))


def _counts(g: WindowGeom) -> np.ndarray:
    """Real (unpadded) elements per window, shaped [1, OD, OH, OW, 1]."""
    total = np.ones((1,) * 5)
    for axis, (z, o, k, s, (before, _)) in enumerate(zip(g.size, g.out, g.k, g.s, g.pads)):
        start = np.arange(o) * s - before
        n = np.minimum(start + k, z) - np.maximum(start, 0)
        shape = [1] * 5
        shape[axis + 1] = o
        total = total * n.reshape(shape)
    return total


@avg_pool3d_op.shape
def _(x: Tensor, **a: Any) -> Any:
    return x.dtype.base_dtype, _pool_shape("AvgPool3D", x, a)


@avg_pool3d_op.kernel("CPU")
def _(x: np.ndarray, **a: Any) -> np.ndarray:
    fmt = a["data_format"]
    x = to_ndhwc(x, fmt)
    g = _geom("AvgPool3D", x.shape, a)
    xp = g.pad(x, 0)
    acc = np.zeros((g.n, *g.out, g.c), dtype=x.dtype)
    for _, ix in g.taps():
        acc += xp[ix]
    return from_ndhwc((acc / _counts(g)).astype(x.dtype, copy=False), fmt)


@avg_pool3d_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [create("AvgPool3DGrad", [shape_of(op.inputs[0]), grad], _attrs_of(op)).outputs[0]]


@avg_pool3d_grad_op.shape
def _(shape: Tensor, dy: Tensor, **a: Any) -> Any:
    check_format_3d("AvgPool3DGrad", a["padding"], a["data_format"])
    v = constant_value(shape)
    out = TensorShape([None] * 5) if v is None else TensorShape([int(d) for d in v])
    return dy.dtype.base_dtype, out


@avg_pool3d_grad_op.kernel("CPU")
def _(shape: np.ndarray, dy: np.ndarray, **a: Any) -> np.ndarray:
    fmt = a["data_format"]
    dy = to_ndhwc(dy, fmt)
    x_shape = cast(list[int], ndhwc_dims(TensorShape([int(d) for d in shape]), fmt))
    g = _geom("AvgPool3DGrad", x_shape, a)
    if dy.shape != (g.n, *g.out, g.c):
        raise ValueError(f"AvgPool3DGrad: grad has shape {dy.shape} (NDHWC), but pooling an "
                         f"input of {tuple(x_shape)} gives {(g.n, *g.out, g.c)}")
    share = (dy / _counts(g)).astype(dy.dtype, copy=False)
    dxp = np.zeros(g.padded_shape, dtype=dy.dtype)
    for _, ix in g.taps():
        dxp[ix] += share
    return from_ndhwc(g.crop(dxp), fmt)


@avg_pool3d_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [None, create("AvgPool3D", [grad], _attrs_of(op)).outputs[0]]


# ---- wrappers ----------------------------------------------------------------------
def _pool3d(op_type: str, input: Any, ksize: Any, strides: Any, padding: str,
            data_format: str, name: str | None) -> Tensor:
    if ksize is None or strides is None:
        raise ValueError(f"{op_type}: ksize and strides are required, e.g. "
                         "ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1].")
    x = convert_to_tensor(input, name="input")
    attrs = {"ksize": five(op_type, "ksize", ksize, data_format),
             "strides": five(op_type, "strides", strides, data_format),
             "padding": str(padding).upper(), "data_format": data_format}
    return create(op_type, [x], attrs, name=name).outputs[0]


def max_pool3d(input: Any, ksize: Any, strides: Any, padding: str,
               data_format: str = "NDHWC", name: str | None = None) -> Tensor:
    """`tf.nn.max_pool3d`: the maximum of each 3-D window.

    Args:
        input: [batch, depth, height, width, channels] (NDHWC) or NCDHW.
        ksize, strides: 5 ints in `data_format` order (1 in batch and channels), or
            an int / [d, h, w].

    Example:
        >>> tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID")
    """
    return _pool3d("MaxPool3D", input, ksize, strides, padding, data_format, name)


def avg_pool3d(input: Any, ksize: Any, strides: Any, padding: str,
               data_format: str = "NDHWC", name: str | None = None) -> Tensor:
    """`tf.nn.avg_pool3d`: the mean of each 3-D window (padding excluded).

    Example:
        >>> tf.nn.avg_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
    """
    return _pool3d("AvgPool3D", input, ksize, strides, padding, data_format, name)

