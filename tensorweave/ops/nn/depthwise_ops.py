"""Depthwise convolution: DepthwiseConv2dNative and its two backprop ops, and their
raw-op functions (`tf.nn.depthwise_conv2d_native`, `..._backprop_input`, `..._backprop_filter`).

Each input channel c is convolved with its own `channel_multiplier` filters
filter[:, :, c, :]; output channel c * multiplier + m holds filter m of channel c.
Geometry (strides, dilations, SAME/VALID padding) is Conv2D's (`conv_ops.ConvGeom`).
Kernels are one `einsum` over the strided window view (no copy, no per-pixel loop).
The input gradient is the correlation of the stride-upsampled, fully padded
output gradient with the flipped filter: the same einsum again, which measured ~2x
faster than scattering the KH*KW taps one at a time.

`tf.nn.depthwise_conv2d` and `tf.nn.separable_conv2d`, which build a rate > 1 around
these ops with SpaceToBatchND/BatchToSpaceND as TF does, are composites:
`tensorweave/nn_impl/depthwise_conv.py`. The native ops still honour their own
`dilations` attr here, but real TF's CPU DepthwiseConv2dNativeBackprop* kernels ignore
it (checked with TF 2.21).

Example:
    >>> y = tf.nn.depthwise_conv2d_native(x, w, strides=[1, 1, 1, 1], padding="SAME")
"""
from __future__ import annotations

from typing import Any, Sequence, cast

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.nn.conv_ops import (
    ConvGeom, conv2d_attrs, conv_family_gradients, conv_out_shape, sizes_shape)
from tensorweave.ops.nn.nn_ops import check_float, create, same_dtype
from tensorweave.kernels.window_geometry import (
    check_format, from_nhwc, nhwc_dims, to_nhwc, windows_nd)

_DW_ATTRS = {"strides": [1, 1, 1, 1], "padding": "VALID", "explicit_paddings": [],
             "data_format": "NHWC", "dilations": [1, 1, 1, 1]}
_ATTRS = ("strides", "padding", "data_format", "dilations")


def _check(op_type: str, padding: str, data_format: str) -> None:
    if padding == "EXPLICIT":
        raise ValueError(f"{op_type}: padding='EXPLICIT' is not supported; pad the input with "
                         "tf.pad and use padding='VALID'.")
    check_format(op_type, padding, data_format)


def _geom(op_type: str, x_shape: Sequence[int], f_shape: Sequence[int], a: dict[str, Any]
          ) -> ConvGeom:
    return ConvGeom(op_type, x_shape, f_shape, a["strides"], a["padding"], a["data_format"],
                    a["dilations"])


def _windows(g: ConvGeom, x: np.ndarray) -> np.ndarray:
    """[N, OH, OW, KH, KW, C] view of the padded input's windows."""
    return windows_nd(g.pad(x), (g.kh, g.kw), (g.sh, g.sw), (g.dh, g.dw), (g.oh, g.ow))


def _out_shape(op_type: str, x: TensorShape, f: TensorShape, a: dict[str, Any]) -> TensorShape:
    kh, kw, c, m = f.with_rank(4).as_list()
    cm = c * m if c is not None and m is not None else None
    return conv_out_shape(op_type, x, TensorShape([kh, kw, c, cm]), a["strides"],
                          a["padding"], a["data_format"], a["dilations"])


def _attrs_of(op: Operation) -> dict[str, Any]:
    return {k: op.get_attr(k) for k in _DW_ATTRS}


# ---- DepthwiseConv2dNative ---------------------------------------------------------
depthwise_op = define_op("DepthwiseConv2dNative", inputs=("input", "filter"),
                         attrs=dict(_DW_ATTRS))


@depthwise_op.shape
def _(x: Tensor, f: Tensor, **a: Any) -> Any:
    _check("DepthwiseConv2dNative", a["padding"], a["data_format"])
    check_float("DepthwiseConv2dNative", x, "input")
    dtype = same_dtype("DepthwiseConv2dNative", x, f)
    for t, what in ((x, "input"), (f, "filter")):
        if t.shape.ndims is not None and t.shape.ndims != 4:
            raise ValueError(f"DepthwiseConv2dNative: {what} must be 4-D, but {t.name} has "
                             f"shape {t.shape} (input is [batch, height, width, channels] for "
                             "NHWC, filter is [height, width, in_channels, "
                             "channel_multiplier]).")
    c = nhwc_dims(x.shape.with_rank(4), a["data_format"])[3]
    fc = f.shape.with_rank(4)[2]
    if c is not None and fc is not None and c != fc:
        raise ValueError(f"DepthwiseConv2dNative: input channels ({c}) must equal the filter's "
                         f"in_channels ({fc}); input {x.name} has shape {x.shape} "
                         f"({a['data_format']}) and filter {f.name} has shape {f.shape} "
                         "([height, width, in_channels, channel_multiplier]).")
    return dtype, _out_shape("DepthwiseConv2dNative", x.shape, f.shape, a)


@depthwise_op.kernel("CPU")
def _(x: np.ndarray, f: np.ndarray, **a: Any) -> np.ndarray:
    fmt = a["data_format"]
    x = to_nhwc(x, fmt)
    if x.shape[3] != f.shape[2]:
        raise ValueError(f"input depth must equal filter in_channels: input shape {x.shape} "
                         f"(NHWC), filter shape {f.shape}")
    g = _geom("DepthwiseConv2dNative", x.shape, f.shape, a)
    out = np.einsum("nhwijc,ijcm->nhwcm", _windows(g, x), f)
    return from_nhwc(out.reshape(g.n, g.oh, g.ow, g.c * g.o).astype(x.dtype, copy=False), fmt)


def _check_dy(op_type: str, dy: np.ndarray, g: ConvGeom, x_shape: Any, f_shape: Any) -> None:
    if dy.shape != (g.n, g.oh, g.ow, g.c * g.o):
        raise ValueError(f"{op_type}: out_backprop has shape {dy.shape} (NHWC), but an input "
                         f"of {tuple(x_shape)} and filter {tuple(f_shape)} give "
                         f"({g.n}, {g.oh}, {g.ow}, {g.c * g.o})")


# ---- DepthwiseConv2dNativeBackpropInput --------------------------------------------
backprop_input_op = define_op("DepthwiseConv2dNativeBackpropInput",
                              inputs=("input_sizes", "filter", "out_backprop"),
                              attrs=dict(_DW_ATTRS))


@backprop_input_op.shape
def _(sizes: Tensor, f: Tensor, dy: Tensor, **a: Any) -> Any:
    _check("DepthwiseConv2dNativeBackpropInput", a["padding"], a["data_format"])
    dtype = same_dtype("DepthwiseConv2dNativeBackpropInput", f, dy)
    return dtype, sizes_shape("DepthwiseConv2dNativeBackpropInput", sizes)


@backprop_input_op.kernel("CPU")
def _(sizes: np.ndarray, f: np.ndarray, dy: np.ndarray, **a: Any) -> np.ndarray:
    fmt = a["data_format"]
    x_shape = cast(list[int], nhwc_dims(TensorShape([int(s) for s in sizes]), fmt))
    dy = to_nhwc(dy, fmt)
    g = _geom("DepthwiseConv2dNativeBackpropInput", x_shape, f.shape, a)
    _check_dy("DepthwiseConv2dNativeBackpropInput", dy, g, x_shape, f.shape)
    # Padded-input row p gets dy[o] * f[t] wherever o * stride + t * dilation == p: put
    # dy at every stride-th row of a zero array padded by the dilated filter extent on
    # both sides, and correlate with the flipped filter at stride 1.
    eh, ew = (g.kh - 1) * g.dh, (g.kw - 1) * g.dw
    uh, uw = (g.oh - 1) * g.sh + 1, (g.ow - 1) * g.sw + 1
    fh, fw = max(uh + eh, g.pt + g.h), max(uw + ew, g.pl + g.w)  # rows the crop reads
    up = np.zeros((g.n, fh + eh, fw + ew, g.c * g.o), dtype=dy.dtype)
    up[:, eh:eh + uh:g.sh, ew:ew + uw:g.sw] = dy
    v = windows_nd(up, (g.kh, g.kw), (1, 1), (g.dh, g.dw), (fh, fw))
    v = v.reshape(g.n, fh, fw, g.kh, g.kw, g.c, g.o)
    full = np.einsum("nhwijcm,ijcm->nhwc", v, f[::-1, ::-1])
    dx = full[:, g.pt:g.pt + g.h, g.pl:g.pl + g.w]
    return from_nhwc(np.ascontiguousarray(dx).astype(dy.dtype, copy=False), fmt)


# ---- DepthwiseConv2dNativeBackpropFilter -------------------------------------------
backprop_filter_op = define_op("DepthwiseConv2dNativeBackpropFilter",
                               inputs=("input", "filter_sizes", "out_backprop"),
                               attrs=dict(_DW_ATTRS))


@backprop_filter_op.shape
def _(x: Tensor, sizes: Tensor, dy: Tensor, **a: Any) -> Any:
    _check("DepthwiseConv2dNativeBackpropFilter", a["padding"], a["data_format"])
    dtype = same_dtype("DepthwiseConv2dNativeBackpropFilter", x, dy)
    return dtype, sizes_shape("DepthwiseConv2dNativeBackpropFilter", sizes)


@backprop_filter_op.kernel("CPU")
def _(x: np.ndarray, sizes: np.ndarray, dy: np.ndarray, **a: Any) -> np.ndarray:
    fmt = a["data_format"]
    x, dy = to_nhwc(x, fmt), to_nhwc(dy, fmt)
    f_shape = tuple(int(s) for s in sizes)
    g = _geom("DepthwiseConv2dNativeBackpropFilter", x.shape, f_shape, a)
    _check_dy("DepthwiseConv2dNativeBackpropFilter", dy, g, x.shape, f_shape)
    df = np.einsum("nhwijc,nhwcm->ijcm", _windows(g, x),
                   dy.reshape(g.n, g.oh, g.ow, g.c, g.o))
    return df.astype(x.dtype, copy=False)


# Each op's gradient is built from the family's other two ops.
_grads = conv_family_gradients("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                               "DepthwiseConv2dNativeBackpropFilter", _attrs_of)
for _op, _grad in zip((depthwise_op, backprop_input_op, backprop_filter_op), _grads):
    _op.gradient(_grad)


# ---- the raw ops' functions (TF's gen_nn_ops) ---------------------------------
def depthwise_conv2d_native(input: Any, filter: Any, strides: Any, padding: str,
                            data_format: str = "NHWC", dilations: Any = None,
                            name: str | None = None) -> Tensor:
    """`tf.nn.depthwise_conv2d_native`: the raw DepthwiseConv2dNative op.

    Example:
        >>> tf.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1], "SAME")
    """
    x = convert_to_tensor(input, name="input")
    f = convert_to_tensor(filter, dtype=x.dtype.base_dtype, name="filter")
    a = conv2d_attrs(strides, padding, data_format, dilations, "depthwise_conv2d_native")
    return create("DepthwiseConv2dNative", [x, f], a, name=name).outputs[0]


def depthwise_conv2d_native_backprop_input(input_sizes: Any, filter: Any, out_backprop: Any,
                                           strides: Any, padding: str,
                                           data_format: str = "NHWC", dilations: Any = None,
                                           name: str | None = None) -> Tensor:
    """`tf.nn.depthwise_conv2d_native_backprop_input`: the input gradient.

    Example:
        >>> dx = tf.nn.depthwise_conv2d_native_backprop_input([8, 32, 32, 16], w, dy,
        ...                                                   [1, 1, 1, 1], "SAME")
    """
    dy = convert_to_tensor(out_backprop, name="out_backprop")
    f = convert_to_tensor(filter, dtype=dy.dtype.base_dtype, name="filter")
    sizes = convert_to_tensor(input_sizes, dtype=_dt.int32, name="input_sizes")
    a = conv2d_attrs(strides, padding, data_format, dilations, "depthwise_conv2d_native")
    return create("DepthwiseConv2dNativeBackpropInput", [sizes, f, dy], a,
                  name=name).outputs[0]


def depthwise_conv2d_native_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any,
                                            strides: Any, padding: str,
                                            data_format: str = "NHWC", dilations: Any = None,
                                            name: str | None = None) -> Tensor:
    """`tf.nn.depthwise_conv2d_native_backprop_filter`: the filter gradient.

    Example:
        >>> dw = tf.nn.depthwise_conv2d_native_backprop_filter(x, [3, 3, 16, 1], dy,
        ...                                                    [1, 1, 1, 1], "SAME")
    """
    x = convert_to_tensor(input, name="input")
    dy = convert_to_tensor(out_backprop, dtype=x.dtype.base_dtype, name="out_backprop")
    sizes = convert_to_tensor(filter_sizes, dtype=_dt.int32, name="filter_sizes")
    a = conv2d_attrs(strides, padding, data_format, dilations, "depthwise_conv2d_native")
    return create("DepthwiseConv2dNativeBackpropFilter", [x, sizes, dy], a,
                  name=name).outputs[0]
