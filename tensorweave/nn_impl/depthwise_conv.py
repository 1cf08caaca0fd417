"""`tf.nn.depthwise_conv2d` and `tf.nn.separable_conv2d`: composites of the
DepthwiseConv2dNative op (`ops/nn/depthwise_ops.py`) and Conv2D, as TF's `nn_impl` builds them.

A rate above 1 is built as TF's python does: SpaceToBatchND -> DepthwiseConv2dNative
(dilations 1, VALID) -> BatchToSpaceND (`space_to_batch_conv.with_space_to_batch`). The
native op still honours its own `dilations` attr here, but real TF's CPU
DepthwiseConv2dNativeBackprop* kernels ignore it (checked with TF 2.21): a graph that sets
`dilations` > 1 by hand (`depthwise_conv2d_native`) trains wrongly once exported to TF;
graphs from these two functions do not.

Example:
    >>> y = tf.nn.depthwise_conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME", rate=[2, 2])
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import dimension_value
from tensorweave.kernels.window_geometry import spatial
from tensorweave.nn_impl.space_to_batch_conv import with_space_to_batch
from tensorweave.ops.array.shape_ops import shape as array_shape
from tensorweave.ops.nn.conv_ops import conv2d, conv2d_attrs
from tensorweave.ops.nn.depthwise_ops import depthwise_conv2d_native


def _dw_attrs(op_name: str, strides: Any, padding: str, data_format: str | None,
              rate: Any) -> tuple[dict[str, Any], list[int]]:
    """The native op's attrs (dilations 1) and the [rate_h, rate_w] to build around it."""
    a = conv2d_attrs(strides, padding, data_format, rate, op_name)
    fmt = a["data_format"]
    rates = list(spatial(op_name, "rate", a["dilations"], fmt))
    if max(rates) > 1 and max(spatial(op_name, "strides", a["strides"], fmt)) > 1:
        # TF builds dilation with space_to_batch, which cannot also stride.
        raise ValueError(f"{op_name}: strides > 1 not supported in conjunction with rate > 1 "
                         f"(strides {a['strides']}, rate {a['dilations']}); use one of them.")
    a["dilations"] = [1, 1, 1, 1]
    return a, rates


def _depthwise(x: Tensor, f: Tensor, a: dict[str, Any], rates: list[int], name: str
               ) -> Tensor:
    """DepthwiseConv2dNative named `name`, wrapped in SpaceToBatchND/BatchToSpaceND
    for rates above 1 (TF's nn_impl.depthwise_conv2d)."""
    def op(inp: Tensor, _: int, padding: str) -> Tensor:
        return depthwise_conv2d_native(inp, f, a["strides"], padding, a["data_format"],
                                       a["dilations"], name=name)
    fs: Any = f.shape.as_list() if f.shape.is_fully_defined() else array_shape(f)
    out = with_space_to_batch(x, rates, a["padding"], op, filter_shape=fs,
                              data_format=a["data_format"])
    if a["data_format"] == "NCHW" and out.shape.ndims == 4 and \
            dimension_value(out.shape[1]) is None:
        _, _, c, m = f.shape.with_rank(4).as_list()
        if c is not None and m is not None:   # crops unknown: keep the channels (as TF)
            out.set_shape([None, c * m, None, None])
    return out


def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: str, rate: Any = None,
                     name: str | None = None, data_format: str | None = None,
                     dilations: Any = None) -> Tensor:
    """`tf.nn.depthwise_conv2d`: a separate filter bank per input channel.

    Args:
        input: [batch, height, width, in_channels] (NHWC) or NCHW.
        filter: [filter_height, filter_width, in_channels, channel_multiplier].
        strides: 4 ints in `data_format` order (1 in batch and channels).
        padding: "SAME" or "VALID".
        rate: [rate_h, rate_w] dilation (atrous) rates; `dilations` is its TF2 name.
            Rate > 1 is built as TF builds it: SpaceToBatchND, the native op,
            BatchToSpaceND.

    Returns:
        [batch, out_height, out_width, in_channels * channel_multiplier]; channel
        c * channel_multiplier + m is filter m of input channel c.

    Raises:
        ValueError: naming the shapes if the channels differ, or strides and rate
            both above 1.

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 32, 32, 16])
        >>> w = tf.ones([3, 3, 16, 2])
        >>> tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME").shape.as_list()
        [None, 32, 32, 32]
    """
    rate = dilations if rate is None else rate
    with name_scope(name, "depthwise", [input, filter]) as scope:
        x = convert_to_tensor(input, name="tensor_in")
        f = convert_to_tensor(filter, dtype=x.dtype.base_dtype, name="filter_in")
        a, rates = _dw_attrs("depthwise_conv2d", strides, padding, data_format, rate)
        return _depthwise(x, f, a, rates, scope)


def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any, strides: Any,
                     padding: str, rate: Any = None, name: str | None = None,
                     data_format: str | None = None, dilations: Any = None) -> Tensor:
    """`tf.nn.separable_conv2d`: a depthwise convolution, then a 1x1 (pointwise) Conv2D.

    Args:
        depthwise_filter: [filter_height, filter_width, in_channels, channel_multiplier].
        pointwise_filter: [1, 1, in_channels * channel_multiplier, out_channels].
        strides, padding, rate, data_format: of the depthwise step (see
            `depthwise_conv2d`); the pointwise step is stride 1, VALID.

    Raises:
        ValueError: if pointwise_filter is not [1, 1, ...] or the filters are not 4-D.

    Example:
        >>> y = tf.nn.separable_conv2d(x, tf.ones([3, 3, 16, 1]), tf.ones([1, 1, 16, 32]),
        ...                            [1, 1, 1, 1], "SAME")
    """
    rate = dilations if rate is None else rate
    with name_scope(name, "separable_conv2d",
                    [input, depthwise_filter, pointwise_filter]) as scope:
        x = convert_to_tensor(input, name="tensor_in")
        dw = convert_to_tensor(depthwise_filter, dtype=x.dtype.base_dtype,
                               name="depthwise_filter")
        pw = convert_to_tensor(pointwise_filter, dtype=x.dtype.base_dtype,
                               name="pointwise_filter")
        for t in (dw, pw):
            t.shape.with_rank(4)
        if not all(d in (None, 1) for d in pw.shape.as_list()[:2]):
            raise ValueError(f"separable_conv2d: pointwise_filter {pw.name} must have shape "
                             f"[1, 1, in_channels * channel_multiplier, out_channels], got "
                             f"{pw.shape}.")
        a, rates = _dw_attrs("separable_conv2d", strides, padding, data_format, rate)
        depthwise = _depthwise(x, dw, a, rates, "depthwise")
        return conv2d(depthwise, pw, [1, 1, 1, 1], "VALID", data_format=a["data_format"],
                      name=scope)
