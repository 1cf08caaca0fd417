"""3-D convolution: Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2 (NDHWC/NCDHW).

The same im2col + one matmul as Conv2D (see conv_ops), over three spatial axes:
`WindowGeom` views the padded input as windows [N, OD, OH, OW, KD, KH, KW, C]; the
input gradient scatters the columns back with one add per filter tap.

Example:
    >>> y = tf.nn.conv3d(volumes, w, strides=[1, 1, 1, 1, 1], padding="SAME")
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.arg_aliases import one_of
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.nn.conv_ops import conv_family_gradients
from tensorweave.ops.nn.nn_ops import check_float, create, same_dtype
from tensorweave.kernels.window_geometry import WindowGeom, out_size

_CONV3D_ATTRS = {"strides": [1, 1, 1, 1, 1], "padding": "VALID", "data_format": "NDHWC",
                 "dilations": [1, 1, 1, 1, 1]}


def check_format_3d(op_type: str, padding: str, data_format: str) -> None:
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"{op_type}: padding must be 'SAME' or 'VALID', got {padding!r}.")
    if data_format not in ("NDHWC", "NCDHW"):
        raise ValueError(f"{op_type}: data_format must be 'NDHWC' or 'NCDHW', got "
                         f"{data_format!r}.")


def spatial3(op_type: str, what: str, value: Any, data_format: str) -> list[int]:
    """(d, h, w) from an int, [d, h, w] or 5 ints in `data_format` order."""
    vals = [int(value)] * 3 if isinstance(value, (int, np.integer)) else [int(v) for v in value]
    if len(vals) == 1:
        vals = vals * 3
    if len(vals) == 3:
        return vals
    if len(vals) != 5:
        raise ValueError(f"{op_type}: {what} must be an int or a list of 1, 3 or 5 ints, got "
                         f"{value!r}.")
    first = data_format == "NCDHW"
    if vals[0] != 1 or vals[1 if first else 4] != 1:
        raise ValueError(f"{op_type}: {what} {vals} ({data_format}) must be 1 in the batch and "
                         "channel dimensions.")
    return vals[2:] if first else vals[1:4]


def five(op_type: str, what: str, value: Any, data_format: str) -> list[int]:
    """`value` as the 5-int attr TF stores, in `data_format` order."""
    d, h, w = spatial3(op_type, what, value, data_format)
    return [1, 1, d, h, w] if data_format == "NCDHW" else [1, d, h, w, 1]


def to_ndhwc(x: np.ndarray, data_format: str) -> np.ndarray:
    return x.transpose(0, 2, 3, 4, 1) if data_format == "NCDHW" else x


def from_ndhwc(x: np.ndarray, data_format: str) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 4, 1, 2, 3)) if data_format == "NCDHW" else x


def ndhwc_dims(shape: TensorShape, data_format: str) -> list[int | None]:
    d = shape.with_rank(5).as_list()
    return [d[0], d[2], d[3], d[4], d[1]] if data_format == "NCDHW" else d


def from_ndhwc_dims(d: list[int | None], data_format: str) -> TensorShape:
    return TensorShape([d[0], d[4], d[1], d[2], d[3]] if data_format == "NCDHW" else d)


def _geom(op_type: str, x_shape: Any, f_shape: Any, a: dict[str, Any]) -> WindowGeom:
    fmt = a["data_format"]
    return WindowGeom(op_type, x_shape, f_shape[:3], spatial3(op_type, "strides", a["strides"],
                      fmt), spatial3(op_type, "dilations", a["dilations"], fmt), a["padding"])


def _out_shape(op_type: str, x: TensorShape, f: TensorShape, a: dict[str, Any]
               ) -> TensorShape:
    fmt = a["data_format"]
    n, *space, _ = ndhwc_dims(x, fmt)
    k = f.with_rank(5).as_list()
    s = spatial3(op_type, "strides", a["strides"], fmt)
    d = spatial3(op_type, "dilations", a["dilations"], fmt)
    out = [None if kk is None and a["padding"] == "VALID" else
           out_size(op_type, z, 1 if kk is None else (kk - 1) * dd + 1, st, a["padding"])
           for z, kk, st, dd in zip(space, k[:3], s, d)]
    return from_ndhwc_dims([n, *out, k[4]], fmt)


def _attrs_of(op: Operation) -> dict[str, Any]:
    return {k: op.get_attr(k) for k in _CONV3D_ATTRS}


# ---- Conv3D ------------------------------------------------------------------------
conv3d_op = define_op("Conv3D", inputs=("input", "filter"), attrs=dict(_CONV3D_ATTRS))


@conv3d_op.shape
def _(x: Tensor, f: Tensor, **a: Any) -> Any:
    check_format_3d("Conv3D", a["padding"], a["data_format"])
    check_float("Conv3D", x, "input")
    dtype = same_dtype("Conv3D", x, f)
    for t, what in ((x, "input"), (f, "filter")):
        if t.shape.ndims is not None and t.shape.ndims != 5:
            raise ValueError(f"Conv3D: {what} must be 5-D, but {t.name} has shape {t.shape} "
                             "(input is [batch, depth, height, width, channels] for NDHWC, "
                             "filter is [depth, height, width, in_channels, out_channels]).")
    c, fc = ndhwc_dims(x.shape, a["data_format"])[4], f.shape.with_rank(5)[3]
    if c is not None and fc is not None and c != fc:
        raise ValueError(f"Conv3D: input channels ({c}) must equal the filter's in_channels "
                         f"({fc}); input {x.name} has shape {x.shape} and filter {f.name} "
                         f"has shape {f.shape}.")
    return dtype, _out_shape("Conv3D", x.shape, f.shape, a)


@conv3d_op.kernel("CPU")
def _(x: np.ndarray, f: np.ndarray, **a: Any) -> np.ndarray:
    x = to_ndhwc(x, a["data_format"])
    if x.shape[4] != f.shape[3]:
        raise ValueError(f"input depth must equal filter in_channels: input shape {x.shape} "
                         f"(NDHWC), filter shape {f.shape}")
    g = _geom("Conv3D", x.shape, f.shape, a)
    rows = g.n * int(np.prod(g.out))
    out = g.windows(x).reshape(rows, -1) @ f.reshape(-1, f.shape[4])
    return from_ndhwc(out.reshape(g.n, *g.out, f.shape[4]).astype(x.dtype, copy=False),
                      a["data_format"])


def _sizes(op_type: str, sizes: Tensor) -> TensorShape:
    v = constant_value(sizes)
    if v is None:
        return TensorShape([None] * 5)
    return TensorShape([int(d) for d in np.asarray(v).reshape(-1)]).with_rank(5)


def _check_dy(op_type: str, dy: np.ndarray, g: WindowGeom, o: int) -> None:
    want = (g.n, *g.out, o)
    if dy.shape != want:
        raise ValueError(f"{op_type}: out_backprop has shape {dy.shape} (NDHWC), but the "
                         f"convolution produces {want}")


# ---- Conv3DBackpropInputV2 ---------------------------------------------------------
backprop_input_op = define_op("Conv3DBackpropInputV2",
                              inputs=("input_sizes", "filter", "out_backprop"),
                              attrs=dict(_CONV3D_ATTRS))


@backprop_input_op.shape
def _(sizes: Tensor, f: Tensor, dy: Tensor, **a: Any) -> Any:
    check_format_3d("Conv3DBackpropInputV2", a["padding"], a["data_format"])
    return same_dtype("Conv3DBackpropInputV2", f, dy), _sizes("Conv3DBackpropInputV2", sizes)


@backprop_input_op.kernel("CPU")
def _(sizes: np.ndarray, f: np.ndarray, dy: np.ndarray, **a: Any) -> np.ndarray:
    fmt = a["data_format"]
    x_shape = cast(list[int], ndhwc_dims(TensorShape([int(s) for s in sizes]), fmt))
    dy = to_ndhwc(dy, fmt)
    g = _geom("Conv3DBackpropInputV2", x_shape, f.shape, a)
    o = f.shape[4]
    _check_dy("Conv3DBackpropInputV2", dy, g, o)
    cols = (dy.reshape(-1, o) @ f.reshape(-1, o).T).reshape(g.n, *g.out, *g.k, g.c)
    return from_ndhwc(g.scatter(cols).astype(dy.dtype, copy=False), fmt)


# ---- Conv3DBackpropFilterV2 --------------------------------------------------------
backprop_filter_op = define_op("Conv3DBackpropFilterV2",
                               inputs=("input", "filter_sizes", "out_backprop"),
                               attrs=dict(_CONV3D_ATTRS))


@backprop_filter_op.shape
def _(x: Tensor, sizes: Tensor, dy: Tensor, **a: Any) -> Any:
    check_format_3d("Conv3DBackpropFilterV2", a["padding"], a["data_format"])
    return (same_dtype("Conv3DBackpropFilterV2", x, dy),
            _sizes("Conv3DBackpropFilterV2", sizes))


@backprop_filter_op.kernel("CPU")
def _(x: np.ndarray, sizes: np.ndarray, dy: np.ndarray, **a: Any) -> np.ndarray:
    fmt = a["data_format"]
    x, dy = to_ndhwc(x, fmt), to_ndhwc(dy, fmt)
    f_shape = tuple(int(s) for s in sizes)
    g = _geom("Conv3DBackpropFilterV2", x.shape, f_shape, a)
    o = f_shape[4]
    _check_dy("Conv3DBackpropFilterV2", dy, g, o)
    cols = g.windows(x).reshape(g.n * int(np.prod(g.out)), -1)
    df = (dy.reshape(-1, o).T @ cols).T  # the order conv_ops measured fastest
    return df.reshape(f_shape).astype(x.dtype, copy=False)


# Each op's gradient is built from the family's other two ops.
_grads = conv_family_gradients("Conv3D", "Conv3DBackpropInputV2",
                               "Conv3DBackpropFilterV2", _attrs_of)
for _op, _grad in zip((conv3d_op, backprop_input_op, backprop_filter_op), _grads):
    _op.gradient(_grad)


# ---- wrappers ----------------------------------------------------------------------
def conv3d(input: Any, filter: Any = None, strides: Any = None, padding: str = "VALID",
           data_format: str = "NDHWC", dilations: Any = None, name: str | None = None,
           filters: Any = None) -> Tensor:
    """`tf.nn.conv3d`: 3-D convolution of [batch, depth, height, width, channels] volumes.

    Args:
        filter: [filter_depth, filter_height, filter_width, in_channels, out_channels].
        strides: 5 ints in `data_format` order (1 in batch and channels).
        padding: "SAME" or "VALID"; data_format: "NDHWC" or "NCDHW".

    Raises:
        ValueError: naming both shapes if the input channels differ from the filter's.

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 8, 16, 16, 1])
        >>> tf.nn.conv3d(x, tf.ones([3, 3, 3, 1, 4]), [1, 1, 1, 1, 1], "SAME").shape.as_list()
        [None, 8, 16, 16, 4]
    """
    filter = filters if filter is None else filter
    if strides is None:
        raise ValueError("conv3d: strides is required, e.g. strides=[1, 1, 1, 1, 1].")
    x = convert_to_tensor(input, name="input")
    f = convert_to_tensor(filter, dtype=x.dtype.base_dtype, name="filter")
    attrs = {"strides": five("conv3d", "strides", strides, data_format),
             "padding": str(padding).upper(), "data_format": data_format,
             "dilations": five("conv3d", "dilations", dilations or 1, data_format)}
    return create("Conv3D", [x, f], attrs, name=name).outputs[0]


def conv3d_backprop_input_v2(input_sizes: Any, filter: Any, out_backprop: Any, strides: Any,
                             padding: str, data_format: str = "NDHWC", dilations: Any = None,
                             name: str | None = None) -> Tensor:
    """`tf.nn.conv3d_backprop_input_v2`: gradient of conv3d w.r.t. its input.

    Example:
        >>> dx = tf.nn.conv3d_backprop_input_v2([2, 8, 8, 8, 1], w, dy, [1] * 5, "SAME")
    """
    dy = convert_to_tensor(out_backprop, name="out_backprop")
    f = convert_to_tensor(filter, dtype=dy.dtype.base_dtype, name="filter")
    sizes = convert_to_tensor(input_sizes, dtype=_dt.int32, name="input_sizes")
    attrs = {"strides": five("conv3d", "strides", strides, data_format),
             "padding": str(padding).upper(), "data_format": data_format,
             "dilations": five("conv3d", "dilations", dilations or 1, data_format)}
    return create("Conv3DBackpropInputV2", [sizes, f, dy], attrs, name=name).outputs[0]


def conv3d_transpose(value: Any, filter: Any = None,  # noqa: A002 - TF's names
                     output_shape: Any = None, strides: Any = None, padding: str = "SAME",
                     data_format: str = "NDHWC", name: str | None = None, input: Any = None,
                     filters: Any = None, dilations: Any = None) -> Tensor:
    """`tf.nn.conv3d_transpose`: the gradient of conv3d, for upsampling volumes.

    TF 1.x's arguments, in its order (`input`, `filters`: newer names of `value`,
    `filter`).

    Args:
        filter: [depth, height, width, output_channels, in_channels].

    Example:
        >>> up = tf.nn.conv3d_transpose(x, w, [2, 16, 16, 16, 4], [1, 2, 2, 2, 1], "SAME")
    """
    value = one_of("conv3d_transpose", "value", value, "input", input)
    filter = one_of("conv3d_transpose", "filter", filter, "filters", filters)
    if output_shape is None or strides is None:
        raise ValueError("conv3d_transpose: output_shape and strides are required.")
    return conv3d_backprop_input_v2(output_shape, filter, value, strides, padding,
                                    data_format=data_format, dilations=dilations,
                                    name=name or "conv3d_transpose")
