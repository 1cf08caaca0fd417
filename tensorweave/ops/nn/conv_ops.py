"""2-D convolution: Conv2D and its two backprop ops, with vectorized NumPy kernels.

Kernels work in NHWC (NCHW inputs are transposed in and out). A convolution is
im2col + one matmul: the padded input is viewed (no copy) as windows
[N, OH, OW, KH, KW, C] with stride tricks, flattened to rows and multiplied by
the filter as a [KH*KW*C, O] matrix. The input gradient scatters the columns back
with one vectorized add per filter tap (KH*KW adds, never a per-pixel loop).

Example:
    >>> y = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, cast

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.arg_aliases import one_of
from tensorweave.framework.convert import constant, constant_value, convert_to_tensor
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.nn.nn_ops import check_float, create, same_dtype
from tensorweave.kernels.window_geometry import (
    check_format, from_nhwc, from_nhwc_dims, known_out_size, nhwc_dims, out_size, pads,
    scatter_taps, spatial, to_nhwc, windows)
from tensorweave.ops import array as array_ops

_CONV_ATTRS = {"strides": [1, 1, 1, 1], "padding": "VALID", "data_format": "NHWC",
               "dilations": [1, 1, 1, 1]}


class ConvGeom:
    """Everything a conv kernel needs about one call, in NHWC."""

    def __init__(self, op_type: str, x_shape: Sequence[int], f_shape: Sequence[int],
                 strides: Any, padding: str, data_format: str, dilations: Any) -> None:
        self.n, self.h, self.w, self.c = x_shape
        self.kh, self.kw, _, self.o = f_shape
        self.sh, self.sw = spatial(op_type, "strides", strides, data_format)
        self.dh, self.dw = spatial(op_type, "dilations", dilations, data_format)
        ekh, ekw = (self.kh - 1) * self.dh + 1, (self.kw - 1) * self.dw + 1
        self.oh = known_out_size(op_type, self.h, ekh, self.sh, padding)
        self.ow = known_out_size(op_type, self.w, ekw, self.sw, padding)
        self.pt, self.pb = pads(self.h, self.oh, ekh, self.sh, padding)
        self.pl, self.pr = pads(self.w, self.ow, ekw, self.sw, padding)

    def pad(self, x: np.ndarray) -> np.ndarray:
        if self.pt or self.pb or self.pl or self.pr:
            return np.pad(x, ((0, 0), (self.pt, self.pb), (self.pl, self.pr), (0, 0)))
        return x

    def cols(self, x: np.ndarray) -> np.ndarray:
        """im2col: [N*OH*OW, KH*KW*C] rows, one per output pixel."""
        v = windows(self.pad(x), self.kh, self.kw, self.sh, self.sw, self.dh, self.dw,
                    self.oh, self.ow)
        return v.reshape(self.n * self.oh * self.ow, self.kh * self.kw * self.c)


# ---- Conv2D ------------------------------------------------------------------------
conv2d_op = define_op("Conv2D", inputs=("input", "filter"), attrs=dict(_CONV_ATTRS))


def conv_out_shape(op_type: str, x_shape: TensorShape, f_shape: TensorShape, strides: Any,
                    padding: str, data_format: str, dilations: Any) -> TensorShape:
    n, h, w, _ = nhwc_dims(x_shape.with_rank(4), data_format)
    kh, kw, _, o = f_shape.with_rank(4).as_list()
    sh, sw = spatial(op_type, "strides", strides, data_format)
    dh, dw = spatial(op_type, "dilations", dilations, data_format)
    oh = _out_dim(op_type, h, kh, dh, sh, padding)
    ow = _out_dim(op_type, w, kw, dw, sw, padding)
    return from_nhwc_dims([n, oh, ow, o], data_format)


def _out_dim(op_type: str, size: int | None, k: int | None, dilation: int, stride: int,
             padding: str) -> int | None:
    if padding == "SAME":  # ceil(size / stride): the window size does not matter
        return out_size(op_type, size, 1, stride, padding)
    if k is None:
        return None
    return out_size(op_type, size, (k - 1) * dilation + 1, stride, padding)


@conv2d_op.shape
def _(x: Tensor, f: Tensor, *, strides: Any, padding: str, data_format: str,
      dilations: Any) -> Any:
    check_format("Conv2D", padding, data_format)
    check_float("Conv2D", x, "input")
    dtype = same_dtype("Conv2D", x, f)
    for t, what in ((x, "input"), (f, "filter")):
        if t.shape.ndims is not None and t.shape.ndims != 4:
            raise ValueError(f"Conv2D: {what} must be 4-D, but {t.name} has shape {t.shape} "
                             f"(input is [batch, height, width, channels] for NHWC, filter is "
                             "[height, width, in_channels, out_channels]).")
    if x.shape.ndims is not None and f.shape.ndims is not None:
        c = nhwc_dims(x.shape, data_format)[3]
        fc = dimension_value(f.shape[2])
        if c is not None and fc is not None and c != fc:
            raise ValueError(f"Conv2D: input channels ({c}) must equal the filter's in_channels "
                             f"({fc}); input {x.name} has shape {x.shape} ({data_format}) and "
                             f"filter {f.name} has shape {f.shape} ([height, width, "
                             "in_channels, out_channels]).")
    return dtype, conv_out_shape("Conv2D", x.shape, f.shape, strides, padding, data_format,
                                  dilations)


@conv2d_op.kernel("CPU")
def _(x: np.ndarray, f: np.ndarray, *, strides: Any, padding: str, data_format: str,
      dilations: Any) -> np.ndarray:
    x = to_nhwc(x, data_format)
    if x.shape[3] != f.shape[2]:
        raise ValueError(f"input depth must equal filter in_channels: input shape {x.shape} "
                         f"(NHWC), filter shape {f.shape}")
    g = ConvGeom("Conv2D", x.shape, f.shape, strides, padding, data_format, dilations)
    out = g.cols(x) @ f.reshape(-1, g.o)
    return from_nhwc(out.reshape(g.n, g.oh, g.ow, g.o).astype(x.dtype, copy=False), data_format)


def shape_of(t: Tensor) -> Tensor:
    """t's shape as an int32 tensor: a constant when static, else a Shape op."""
    if t.shape.is_fully_defined():
        return constant(np.array(t.shape.as_list(), dtype=np.int32), name="shape")
    return array_ops.shape(t)


def _conv_attrs(op: Operation) -> dict[str, Any]:
    return {k: op.get_attr(k) for k in _CONV_ATTRS}


def conv_family_gradients(fwd: str, bp_input: str, bp_filter: str,
                          attrs_of: Callable[[Operation], dict[str, Any]]
                          ) -> tuple[Callable[..., list[Any]], ...]:
    """The gradients of a convolution family (Conv2D, Conv3D, DepthwiseConv2dNative): the
    forward op's, its input backprop's and its filter backprop's, each built from the
    other two ops of the family with the op's own attrs (TF's second derivatives)."""
    def forward(op: Operation, grad: Tensor) -> list[Any]:
        x, f = op.inputs
        a = attrs_of(op)
        return [create(bp_input, [shape_of(x), f, grad], a).outputs[0],
                create(bp_filter, [x, shape_of(f), grad], a).outputs[0]]

    def input_backprop(op: Operation, grad: Tensor) -> list[Any]:
        _, f, dy = op.inputs
        a = attrs_of(op)
        return [None, create(bp_filter, [grad, shape_of(f), dy], a).outputs[0],
                create(fwd, [grad, f], a).outputs[0]]

    def filter_backprop(op: Operation, grad: Tensor) -> list[Any]:
        x, _, dy = op.inputs
        a = attrs_of(op)
        return [create(bp_input, [shape_of(x), grad, dy], a).outputs[0], None,
                create(fwd, [x, grad], a).outputs[0]]
    return forward, input_backprop, filter_backprop


# ---- Conv2DBackpropInput -----------------------------------------------------------
backprop_input_op = define_op("Conv2DBackpropInput",
                              inputs=("input_sizes", "filter", "out_backprop"),
                              attrs=dict(_CONV_ATTRS))


def sizes_shape(op_type: str, sizes: Tensor) -> TensorShape:
    v = constant_value(sizes)
    if v is None:
        return TensorShape([None] * 4)
    v = np.asarray(v).reshape(-1)
    if v.size != 4:
        raise ValueError(f"{op_type}: the size tensor {sizes.name} must hold 4 values, got "
                         f"{v.tolist()}.")
    return TensorShape([int(d) for d in v])


@backprop_input_op.shape
def _(sizes: Tensor, f: Tensor, dy: Tensor, *, strides: Any, padding: str, data_format: str,
      dilations: Any) -> Any:
    check_format("Conv2DBackpropInput", padding, data_format)
    dtype = same_dtype("Conv2DBackpropInput", f, dy)
    shape = sizes_shape("Conv2DBackpropInput", sizes)
    if shape.is_fully_defined() and f.shape.ndims == 4:
        want = conv_out_shape("Conv2DBackpropInput", shape, f.shape, strides, padding,
                               data_format, dilations)
        if not want.is_compatible_with(dy.shape):
            raise ValueError(f"Conv2DBackpropInput: out_backprop {dy.name} has shape {dy.shape},"
                             f" but a convolution of an input of shape {shape} with filter "
                             f"{f.shape} produces {want}.")
    return dtype, shape


@backprop_input_op.kernel("CPU")
def _(sizes: np.ndarray, f: np.ndarray, dy: np.ndarray, *, strides: Any, padding: str,
      data_format: str, dilations: Any) -> np.ndarray:
    x_shape = cast(list[int], nhwc_dims(TensorShape([int(s) for s in sizes]), data_format))
    dy = to_nhwc(dy, data_format)
    g = ConvGeom("Conv2DBackpropInput", x_shape, f.shape, strides, padding, data_format, dilations)
    if dy.shape != (g.n, g.oh, g.ow, g.o):
        raise ValueError(f"out_backprop has shape {dy.shape} (NHWC) but an input of {x_shape} "
                         f"and filter {f.shape} give ({g.n}, {g.oh}, {g.ow}, {g.o})")
    cols = (dy.reshape(-1, g.o) @ f.reshape(-1, g.o).T).reshape(
        g.n, g.oh, g.ow, g.kh, g.kw, g.c)
    dxp = scatter_taps(cols, (g.n, g.h + g.pt + g.pb, g.w + g.pl + g.pr, g.c), g.sh, g.sw,
                       g.dh, g.dw)
    dx = dxp[:, g.pt:g.pt + g.h, g.pl:g.pl + g.w, :]
    return from_nhwc(np.ascontiguousarray(dx).astype(dy.dtype, copy=False), data_format)


# ---- Conv2DBackpropFilter ----------------------------------------------------------
backprop_filter_op = define_op("Conv2DBackpropFilter",
                               inputs=("input", "filter_sizes", "out_backprop"),
                               attrs=dict(_CONV_ATTRS))


@backprop_filter_op.shape
def _(x: Tensor, sizes: Tensor, dy: Tensor, *, strides: Any, padding: str, data_format: str,
      dilations: Any) -> Any:
    check_format("Conv2DBackpropFilter", padding, data_format)
    return same_dtype("Conv2DBackpropFilter", x, dy), sizes_shape("Conv2DBackpropFilter",
                                                                   sizes)


@backprop_filter_op.kernel("CPU")
def _(x: np.ndarray, sizes: np.ndarray, dy: np.ndarray, *, strides: Any, padding: str,
      data_format: str, dilations: Any) -> np.ndarray:
    x, dy = to_nhwc(x, data_format), to_nhwc(dy, data_format)
    f_shape = tuple(int(s) for s in sizes)
    g = ConvGeom("Conv2DBackpropFilter", x.shape, f_shape, strides, padding, data_format,
              dilations)
    if dy.shape != (g.n, g.oh, g.ow, g.o):
        raise ValueError(f"out_backprop has shape {dy.shape} (NHWC) but input {x.shape} and a "
                         f"filter of {f_shape} give ({g.n}, {g.oh}, {g.ow}, {g.o})")
    # (dy^T cols)^T rather than cols^T dy: the same product, but OpenBLAS was measured
    # taking ~100x longer on the transposed-im2col operand for some buffers.
    df = (dy.reshape(-1, g.o).T @ g.cols(x)).T
    return df.reshape(f_shape).astype(x.dtype, copy=False)


# Each op's gradient is built from the family's other two ops.
_grads = conv_family_gradients("Conv2D", "Conv2DBackpropInput",
                               "Conv2DBackpropFilter", _conv_attrs)
for _op, _grad in zip((conv2d_op, backprop_input_op, backprop_filter_op), _grads):
    _op.gradient(_grad)


# ---- wrappers ----------------------------------------------------------------------
def conv2d_attrs(strides: Any, padding: str, data_format: str | None, dilations: Any,
                 op_name: str = "conv2d") -> dict[str, Any]:
    """A 2-D conv's strides/padding/data_format/dilations attrs from wrapper arguments."""
    fmt = data_format or "NHWC"

    def four(v: Any, what: str) -> list[int]:
        h, w = spatial(op_name, what, v, fmt)
        return [1, 1, h, w] if fmt == "NCHW" else [1, h, w, 1]
    if strides is None:
        raise ValueError(f"{op_name}: strides is required, e.g. strides=[1, 1, 1, 1].")
    return {"strides": four(strides, "strides"), "padding": str(padding).upper(),
            "data_format": fmt, "dilations": four(dilations or 1, "dilations")}


def conv2d(input: Any, filter: Any = None, strides: Any = None, padding: str = "VALID",
           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC", dilations: Any = None,
           name: str | None = None, filters: Any = None) -> Tensor:
    """`tf.nn.conv2d`: 2-D convolution (cross-correlation, as TF computes it).

    Args:
        input: [batch, height, width, in_channels] (NHWC) or [batch, in_channels,
            height, width] (NCHW), floating point.
        filter: [filter_height, filter_width, in_channels, out_channels].
        strides: a list of 4 ints in `data_format` order (1 in batch and channels),
            or an int / [sh, sw] for convenience.
        padding: "SAME" (output = ceil(input / stride)) or "VALID" (no padding).
        data_format: "NHWC" or "NCHW".
        dilations: like `strides`; spacing between filter taps (atrous convolution).

    Raises:
        ValueError: at build time, naming both shapes, if the input's channels differ
            from the filter's in_channels.

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 28, 28, 1])
        >>> w = tf.ones([5, 5, 1, 32])
        >>> tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME").shape.as_list()
        [None, 28, 28, 32]
    """
    filter = filters if filter is None else filter
    x = convert_to_tensor(input, name="input")
    f = convert_to_tensor(filter, dtype=x.dtype.base_dtype, name="filter")
    return create("Conv2D", [x, f], conv2d_attrs(strides, padding, data_format, dilations),
                  name=name).outputs[0]


def conv2d_backprop_input(input_sizes: Any, filter: Any = None,  # noqa: A002 - TF's
                          out_backprop: Any = None, strides: Any = None,
                          padding: str | None = None, use_cudnn_on_gpu: bool = True,
                          data_format: str = "NHWC", dilations: Any = None,
                          name: str | None = None, filters: Any = None) -> Tensor:
    """`tf.nn.conv2d_backprop_input`: gradient of conv2d w.r.t. its input.

    TF 1.x's arguments, in its order (`filters`: the newer name of `filter`).

    Example:
        >>> dx = tf.nn.conv2d_backprop_input([8, 28, 28, 1], w, dy, [1, 1, 1, 1], "SAME")
    """
    filter = one_of("conv2d_backprop_input", "filter", filter, "filters", filters)
    if out_backprop is None or strides is None or padding is None:
        raise ValueError("conv2d_backprop_input: out_backprop, strides and padding are "
                         "required.")
    dy = convert_to_tensor(out_backprop, name="out_backprop")
    f = convert_to_tensor(filter, dtype=dy.dtype.base_dtype, name="filter")
    sizes = convert_to_tensor(input_sizes, dtype=_dt.int32, name="input_sizes")
    return create("Conv2DBackpropInput", [sizes, f, dy],
                  conv2d_attrs(strides, padding, data_format, dilations), name=name).outputs[0]


def conv2d_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any, strides: Any,
                           padding: str, use_cudnn_on_gpu: bool = True,
                           data_format: str = "NHWC", dilations: Any = None,
                           name: str | None = None) -> Tensor:
    """`tf.nn.conv2d_backprop_filter`: gradient of conv2d w.r.t. its filter.

    Example:
        >>> dw = tf.nn.conv2d_backprop_filter(x, [5, 5, 1, 32], dy, [1, 1, 1, 1], "SAME")
    """
    x = convert_to_tensor(input, name="input")
    dy = convert_to_tensor(out_backprop, dtype=x.dtype.base_dtype, name="out_backprop")
    sizes = convert_to_tensor(filter_sizes, dtype=_dt.int32, name="filter_sizes")
    return create("Conv2DBackpropFilter", [x, sizes, dy],
                  conv2d_attrs(strides, padding, data_format, dilations), name=name).outputs[0]


def conv2d_transpose(value: Any = None, filter: Any = None,  # noqa: A002 - TF's names
                     output_shape: Any = None, strides: Any = None, padding: str = "SAME",
                     data_format: str = "NHWC", name: str | None = None, input: Any = None,
                     filters: Any = None, dilations: Any = None) -> Tensor:
    """`tf.nn.conv2d_transpose`: the transpose (gradient) of conv2d, for upsampling.

    TF 1.x's arguments, in its order (`input`, `filters`: newer names of `value`,
    `filter`).

    Args:
        value: [batch, height, width, in_channels].
        filter: [height, width, output_channels, in_channels].
        output_shape: the 4-D output shape.

    Example:
        >>> up = tf.nn.conv2d_transpose(x, w, [8, 28, 28, 16], [1, 2, 2, 1], "SAME")
    """
    value = one_of("conv2d_transpose", "value", value, "input", input)
    filter = one_of("conv2d_transpose", "filter", filter, "filters", filters)
    if output_shape is None or strides is None:
        raise ValueError("conv2d_transpose: output_shape and strides are required.")
    return conv2d_backprop_input(output_shape, filter, value, strides, padding,
                                 data_format=data_format, dilations=dilations,
                                 name=name or "conv2d_transpose")
