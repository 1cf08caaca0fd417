"""`tf.nn.conv1d`, `atrous_conv2d`, `convolution` and `pool`: wrappers that build the
Conv2D / Conv3D / pooling ops the way TF1 programs expect.

conv1d is TF's ExpandDims + Conv2D + Squeeze (a dilated conv1d sets Conv2D's
`dilations`, as TF does). atrous_conv2d, a dilated `convolution` and a dilated `pool`
are built as TF builds them: SpaceToBatchND -> the undilated op (VALID) ->
BatchToSpaceND (`space_to_batch_conv.with_space_to_batch`), so exported graphs
never ask TF's CPU backprop kernels for dilations.

Example:
    >>> y = tf.nn.conv1d(seq, w, stride=1, padding="SAME")        # [batch, width, chans]
    >>> y = tf.nn.atrous_conv2d(x, w, rate=2, padding="SAME")
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.shape_ops import expand_dims, shape, squeeze
from tensorweave.ops.nn.conv3d_ops import conv3d
from tensorweave.ops.nn.conv_ops import conv2d
from tensorweave.ops.nn.pool3d_ops import avg_pool3d, max_pool3d
from tensorweave.ops.nn.pool_ops import avg_pool, max_pool
from tensorweave.nn_impl.space_to_batch_conv import with_space_to_batch


def _ints(op_name: str, what: str, value: Any, n: int) -> list[int]:
    """`value` (None, an int, or n ints) as n ints."""
    if value is None:
        return [1] * n
    vals = [int(value)] if isinstance(value, (int, np.integer)) else [int(v) for v in value]
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n or min(vals) < 1:
        raise ValueError(f"{op_name}: {what} must be a positive int or {n} positive ints, got "
                         f"{value!r}.")
    return vals


def _width(what: str, value: Any, fmt: str) -> int:
    """conv1d's stride/dilation: an int, [w], or 3 ints in NWC/NCW order (TF's rule)."""
    vals = [int(value)] if isinstance(value, (int, np.integer)) else [int(v) for v in value]
    if len(vals) == 3:
        return vals[2 if fmt == "NCHW" else 1]
    if len(vals) != 1:
        raise ValueError(f"conv1d: {what} must be an int or a list of 1 or 3 ints, got "
                         f"{value!r}.")
    return vals[0]


def conv1d(value: Any = None, filters: Any = None, stride: Any = None, padding: str | None = None,
           use_cudnn_on_gpu: Any = None, data_format: str | None = None,
           name: str | None = None, input: Any = None, dilations: Any = None) -> Tensor:
    """`tf.nn.conv1d`: 1-D convolution of [batch, in_width, in_channels] (NWC) inputs.

    Args:
        value: [batch, in_width, in_channels] ("NWC") or [batch, in_channels, in_width]
            ("NCW"); `input` is its TF2 name.
        filters: [filter_width, in_channels, out_channels].
        stride: an int (or a list of 1 or 3 ints).
        padding: "SAME" or "VALID".
        dilations: an int (or a list of 1 or 3 ints).

    Raises:
        ValueError: for a data_format other than NWC/NHWC or NCW/NCHW.

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 100, 8])
        >>> tf.nn.conv1d(x, tf.ones([5, 8, 16]), stride=2, padding="SAME").shape.as_list()
        [None, 50, 16]
    """
    value = input if value is None else value
    if data_format in (None, "NHWC", "NWC"):
        fmt, spatial_dim = "NHWC", 1
    elif data_format in ("NCHW", "NCW"):
        fmt, spatial_dim = "NCHW", 2
    else:
        raise ValueError(f'conv1d: data_format must be "NWC" or "NCW", got {data_format!r}.')
    if padding is None or stride is None:
        raise ValueError("conv1d: stride and padding are required, e.g. stride=1, "
                         "padding='SAME'.")

    with name_scope(name, "conv1d", [value, filters]) as scope:
        x = expand_dims(convert_to_tensor(value, name="value"), spatial_dim)
        f = expand_dims(convert_to_tensor(filters, dtype=x.dtype.base_dtype, name="filters"),
                        0)
        out = conv2d(x, f, [1, _width("stride", stride, fmt)], padding, data_format=fmt,
                     dilations=[1, _width("dilations", dilations or 1, fmt)], name=scope)
        return squeeze(out, [spatial_dim])


def atrous_conv2d(value: Any, filters: Any, rate: int, padding: str,
                  name: str | None = None) -> Tensor:
    """`tf.nn.atrous_conv2d`: a Conv2D whose filter taps are `rate` pixels apart.

    As in TF, this is `convolution(value, filters, padding, dilation_rate=[rate, rate])`:
    rate > 1 builds SpaceToBatchND -> Conv2D -> BatchToSpaceND.

    Args:
        value: [batch, height, width, in_channels] (NHWC).
        filters: [filter_height, filter_width, in_channels, out_channels].
        rate: a positive int; 1 is an ordinary convolution.

    Raises:
        ValueError: if rate is less than one.

    Example:
        >>> y = tf.nn.atrous_conv2d(x, w, rate=2, padding="SAME")
    """
    if int(rate) < 1:
        raise ValueError(f"atrous_conv2d: rate {rate} cannot be less than one.")
    return convolution(value, filters, padding, dilation_rate=[int(rate)] * 2, name=name)


def _spatial_rank(op_name: str, x: Tensor) -> int:
    rank = x.shape.ndims
    if rank not in (3, 4, 5):
        raise ValueError(f"{op_name}: input {x.name} must have rank 3, 4 or 5 (1 to 3 "
                         f"spatial dimensions), got shape {x.shape}; give it a static rank.")
    return rank - 2


def convolution(input: Any, filter: Any = None, padding: str | None = None,
                strides: Any = None, dilation_rate: Any = None, name: str | None = None,
                data_format: str | None = None, filters: Any = None,
                dilations: Any = None) -> Tensor:
    """`tf.nn.convolution`: N-d convolution (N = 1, 2 or 3) chosen by the input's rank.

    Args:
        strides, dilation_rate: N ints (or one int); not both above 1, as in TF.
        data_format: NWC/NCW, NHWC/NCHW or NDHWC/NCDHW (channels last by default).

    Raises:
        ValueError: for an input of unknown or unsupported rank, or strides and
            dilation_rate both above 1.

    Example:
        >>> y = tf.nn.convolution(x, w, "SAME", dilation_rate=[2, 2])
    """
    if padding is None:
        raise ValueError("convolution: padding is required, 'SAME' or 'VALID'.")
    x = convert_to_tensor(input, name="input")
    f = filters if filter is None else filter
    rate = dilations if dilation_rate is None else dilation_rate
    n = _spatial_rank("convolution", x)
    s, d = _ints("convolution", "strides", strides, n), _ints("convolution", "dilation_rate",
                                                               rate, n)
    if max(s) > 1 and max(d) > 1:
        raise ValueError(f"convolution: strides {s} > 1 not supported in conjunction with "
                         f"dilation_rate {d} > 1.")
    first = bool(data_format) and str(data_format).startswith("NC")
    if max(d) == 1:
        return _conv_nd(x, f, s, padding, first, name or "convolution")
    with name_scope(name, "convolution", [x, f]) as scope:   # TF's Convolution class
        ft = convert_to_tensor(f, dtype=x.dtype.base_dtype, name="filter")
        fs: Any = ft.shape.as_list() if ft.shape.is_fully_defined() else shape(ft)
        return with_space_to_batch(
            x, d, padding, lambda inp, _, pad: _conv_nd(inp, ft, s, pad, first, scope),
            filter_shape=fs, data_format="NC" if first else None)


def _conv_nd(x: Tensor, f: Any, s: list[int], padding: str, first: bool, name: str
             ) -> Tensor:
    """The undilated conv1d / Conv2D / Conv3D for `x`'s rank."""
    n = _spatial_rank("convolution", x)
    if n == 1:
        return conv1d(x, f, s[0], padding, data_format="NCW" if first else "NWC", name=name)
    if n == 2:
        return conv2d(x, f, s, padding, data_format="NCHW" if first else "NHWC", name=name)
    return conv3d(x, f, s, padding, data_format="NCDHW" if first else "NDHWC", name=name)


def pool(input: Any, window_shape: Any, pooling_type: str, padding: str,
         dilation_rate: Any = None, strides: Any = None, name: str | None = None,
         data_format: str | None = None, dilations: Any = None) -> Tensor:
    """`tf.nn.pool`: N-d max or average pooling (N = 1, 2 or 3) by the input's rank.

    Args:
        window_shape: N ints; pooling_type: "MAX" or "AVG".
        strides: N ints (default 1).
        dilation_rate: N ints; above 1, built as TF does (SpaceToBatchND, the pool
            with VALID padding, BatchToSpaceND); then strides must be 1.

    Raises:
        ValueError: for a bad pooling_type, strides and dilation_rate both above 1,
            or strides larger than the window (refused by TF too).

    Example:
        >>> tf.nn.pool(x, window_shape=[2, 2], pooling_type="MAX", padding="SAME",
        ...            strides=[2, 2])
    """
    x = convert_to_tensor(input, name="input")
    n = _spatial_rank("pool", x)
    k, s = _ints("pool", "window_shape", window_shape, n), _ints("pool", "strides", strides, n)
    d = _ints("pool", "dilation_rate", dilations if dilation_rate is None else dilation_rate, n)
    kind = str(pooling_type).upper()
    if kind not in ("MAX", "AVG"):
        raise ValueError(f"pool: pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}.")
    if max(d) > 1 and max(s) > 1:
        raise ValueError(f"pool: strides {s} > 1 not supported in conjunction with "
                         f"dilation_rate {d} > 1.")
    if any(st > kk for st, kk in zip(s, k)):
        raise ValueError(f"pool: strides {s} > window_shape {k} not supported due to "
                         "inconsistency between CPU and GPU implementations.")
    first = bool(data_format) and str(data_format).startswith("NC")
    with name_scope(name, f"{kind.lower()}_pool", [x]) as scope:
        if max(d) > 1:
            return with_space_to_batch(
                x, d, padding, lambda inp, _, pad: _pool_nd(inp, kind, k, s, pad, first, scope),
                filter_shape=k, data_format="NC" if first else None)
        return _pool_nd(x, kind, k, s, padding, first, scope)


def _pool_nd(x: Tensor, kind: str, k: list[int], s: list[int], padding: str, first: bool,
             scope: str) -> Tensor:
    """The undilated max/avg pool for `x`'s rank (1-D: a unit height, as TF does)."""
    n = _spatial_rank("pool", x)
    if n == 3:
        fn3 = max_pool3d if kind == "MAX" else avg_pool3d
        return fn3(x, k, s, padding, data_format="NCDHW" if first else "NDHWC", name=scope)
    fn = max_pool if kind == "MAX" else avg_pool
    if n == 2:
        return fn(x, k, s, padding, data_format="NCHW" if first else "NHWC", name=scope)
    axis = 2 if first else 1   # 1-D: a unit height, as TF does
    out = fn(expand_dims(x, axis), [1, k[0]], [1, s[0]], padding,
             data_format="NCHW" if first else "NHWC")
    return squeeze(out, [axis], name=scope)
