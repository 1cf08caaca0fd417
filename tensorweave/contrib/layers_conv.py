"""`tf.contrib.layers` (TF 1.x): the 2-D convolution and pooling layers of slim programs.

Variables are named as contrib names them, so TF1 checkpoints line up:
`Conv/weights`, `Conv/biases` (then `Conv_1/...`), `Conv2d_transpose/weights`,
`SeparableConv2d/depthwise_weights` and `pointwise_weights`, `BiasAdd/biases`; they
go to MODEL_VARIABLES and their regularization losses to REGULARIZATION_LOSSES. Every
layer is decorated with `add_arg_scope`.

Example:
    >>> net = conv2d(images, 32, [5, 5], scope="conv1")       # conv1/weights [5,5,C,32]
    >>> net = max_pool2d(net, [2, 2])                          # stride 2, VALID
    >>> up = conv2d_transpose(net, 16, [3, 3], stride=2)       # doubles height and width
"""
from __future__ import annotations

import numbers
from typing import Any

from tensorweave.contrib.arg_scope import add_arg_scope
from tensorweave.contrib.layers_impl import (
    _XAVIER, _ZEROS, _add_to_collections, _collect_named_outputs, _model_variable)
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops import array as array_ops
from tensorweave.nn_impl import conv_wrappers, depthwise_conv
from tensorweave.ops.nn import conv_ops, layer_ops, nn_ops, pool_ops
from tensorweave.state.variable_scope import variable_scope
from tensorweave.framework.tensor_shape import dimension_value


# ---- helpers --------------------------------------------------------------------------
def _pair(value: Any, what: str) -> tuple[int, int]:
    """An int, a pair or a TensorShape of two known dims -> (h, w)."""
    if hasattr(value, "as_list"):
        value = value.as_list()
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value), int(value)
    vals = list(value)
    if len(vals) != 2 or any(v is None for v in vals):
        raise ValueError(f"{what} must be an int or a list of 2 known ints, got {value!r}.")
    return int(vals[0]), int(vals[1])


def _nchw(data_format: str | None) -> bool:
    if data_format not in (None, "NHWC", "NCHW"):
        raise ValueError(f"data_format has to be either NCHW or NHWC, got {data_format!r}.")
    return data_format == "NCHW"


def _four(h: int, w: int, nchw: bool) -> list[int]:
    return [1, 1, h, w] if nchw else [1, h, w, 1]


def _rank4(inputs: Any, nchw: bool, what: str) -> tuple[Tensor, int]:
    """The inputs as a rank-4 tensor, and its (known) channel count."""
    x = convert_to_tensor(inputs)
    rank = x.get_shape().ndims
    if rank != 4:
        raise ValueError(f"{what} expects input with rank 4, got {rank} (inputs {x.name}, "
                         f"shape {x.get_shape()}).")
    channels = x.get_shape().as_list()[1 if nchw else 3]
    if channels is None:
        raise ValueError(f"{what}: the channel dimension of the inputs {x.name} should be "
                         f"defined, got shape {x.get_shape()}.")
    return x, int(channels)


def _check_outputs(num_outputs: Any) -> int:
    num_outputs = dimension_value(num_outputs)  # net.get_shape()[-1], as TF's conv takes
    if isinstance(num_outputs, bool) or not isinstance(num_outputs, numbers.Integral):
        raise ValueError(f"num_outputs should be an int, got {num_outputs!r}.")
    return int(num_outputs)


def _finish(outputs: Tensor, sc_name: str, channels: int, nchw: bool, activation_fn: Any,
            normalizer_fn: Any, normalizer_params: Any, biases_initializer: Any,
            biases_regularizer: Any, trainable: bool, variables_collections: Any,
            outputs_collections: Any) -> Tensor:
    """Biases (unless normalized), normalizer, activation, output collections."""
    if normalizer_fn is None and biases_initializer is not None:
        biases = _model_variable("biases", [channels], outputs.dtype.base_dtype,
                                 biases_initializer, biases_regularizer, trainable)
        _add_to_collections(biases, variables_collections, "biases")
        outputs = layer_ops.bias_add(outputs, biases, data_format="NCHW" if nchw else "NHWC",
                                     name="BiasAdd")
    if normalizer_fn is not None:
        outputs = normalizer_fn(outputs, **(normalizer_params or {}))
    if activation_fn is not None:
        outputs = activation_fn(outputs)
    return _collect_named_outputs(outputs_collections, sc_name, outputs)


# ---- convolutions ---------------------------------------------------------------------
@add_arg_scope
def convolution2d(inputs: Any, num_outputs: int, kernel_size: Any, stride: Any = 1,
                  padding: str = "SAME", data_format: str | None = None, rate: Any = 1,
                  activation_fn: Any = nn_ops.relu, normalizer_fn: Any = None,
                  normalizer_params: dict | None = None, weights_initializer: Any = _XAVIER,
                  weights_regularizer: Any = None, biases_initializer: Any = _ZEROS,
                  biases_regularizer: Any = None, reuse: Any = None,
                  variables_collections: Any = None, outputs_collections: Any = None,
                  trainable: bool = True, scope: Any = None) -> Tensor:
    """`activation_fn(normalizer_fn(conv2d(inputs, weights) + biases))` (alias conv2d).

    Args:
        kernel_size, stride, rate: an int or [h, w]; `rate` > 1 is atrous convolution
            (not together with `stride` > 1).
        padding: "SAME" or "VALID".
        data_format: None or "NHWC" (channels last), or "NCHW".

    Variables `<scope>/weights` [kh, kw, in_channels, num_outputs] and
    `<scope>/biases` (none with a normalizer_fn); scope default "Conv", made unique.

    Raises:
        ValueError: inputs not of rank 4 or of unknown channels, a bad data_format,
            kernel_size, num_outputs, or both rate and stride above 1.

    Example:
        >>> net = conv2d(images, 64, [3, 3], scope="conv1")  # conv1/Relu
    """
    nchw = _nchw(data_format)
    n = _check_outputs(num_outputs)
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    rh, rw = _pair(rate, "rate")
    if max(sh, sw) > 1 and max(rh, rw) > 1:
        raise ValueError(f"conv2d: stride {stride} > 1 is not supported together with "
                         f"rate {rate} > 1.")
    with variable_scope(scope, "Conv", [inputs], reuse=reuse) as sc:
        x, channels = _rank4(inputs, nchw, "Convolution")
        weights = _model_variable("weights", [kh, kw, channels, n], x.dtype.base_dtype,
                                  weights_initializer, weights_regularizer, trainable)
        _add_to_collections(weights, variables_collections, "weights")
        fmt = "NCHW" if nchw else "NHWC"
        if max(rh, rw) > 1:  # built as TF builds it: SpaceToBatchND -> Conv2D -> back
            outputs = conv_wrappers.convolution(x, weights, padding.upper(),
                                                dilation_rate=[rh, rw], data_format=fmt,
                                                name="Conv2D")
        else:
            outputs = conv_ops.conv2d(x, weights, _four(sh, sw, nchw), padding.upper(),
                                      data_format=fmt, name="Conv2D")
        return _finish(outputs, sc.name, n, nchw, activation_fn, normalizer_fn,
                       normalizer_params, biases_initializer, biases_regularizer, trainable,
                       variables_collections, outputs_collections)


def _deconv_dim(static: int | None, dynamic: Tensor, k: int, s: int, padding: str) -> Any:
    """The output length of a transposed convolution along one spatial axis."""
    extra = 0 if padding == "SAME" else max(k - s, 0)
    if static is not None:
        return static * s + extra
    return dynamic * s + extra


@add_arg_scope
def convolution2d_transpose(inputs: Any, num_outputs: int, kernel_size: Any, stride: Any = 1,
                            padding: str = "SAME", data_format: str = "NHWC",
                            activation_fn: Any = nn_ops.relu, normalizer_fn: Any = None,
                            normalizer_params: dict | None = None,
                            weights_initializer: Any = _XAVIER,
                            weights_regularizer: Any = None,
                            biases_initializer: Any = _ZEROS, biases_regularizer: Any = None,
                            reuse: Any = None, variables_collections: Any = None,
                            outputs_collections: Any = None, trainable: bool = True,
                            scope: Any = None) -> Tensor:
    """The transpose of conv2d (alias conv2d_transpose): upsamples by `stride`.

    Output height is `in * stride` ("SAME") or `in * stride + max(k - stride, 0)`
    ("VALID"). Variables `<scope>/weights` [kh, kw, num_outputs, in_channels] and
    `<scope>/biases`; scope default "Conv2d_transpose".

    Raises:
        ValueError: inputs not of rank 4, a bad data_format or kernel_size.

    Example:
        >>> up = conv2d_transpose(net, 32, [3, 3], stride=2)   # [N, 2H, 2W, 32]
    """
    nchw = _nchw(data_format)
    n = _check_outputs(num_outputs)
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    pad = padding.upper()
    with variable_scope(scope, "Conv2d_transpose", [inputs], reuse=reuse) as sc:
        x, channels = _rank4(inputs, nchw, "Convolution2d_transpose")
        weights = _model_variable("weights", [kh, kw, n, channels], x.dtype.base_dtype,
                                  weights_initializer, weights_regularizer, trainable)
        _add_to_collections(weights, variables_collections, "weights")
        static = x.get_shape().as_list()
        dyn = array_ops.shape(x)
        hi, wi = (2, 3) if nchw else (1, 2)
        h = _deconv_dim(static[hi], dyn[hi], kh, sh, pad)
        w = _deconv_dim(static[wi], dyn[wi], kw, sw, pad)
        batch = dyn[0]
        dims = [batch, n, h, w] if nchw else [batch, h, w, n]
        outputs = conv_ops.conv2d_transpose(x, weights, array_ops.stack(dims),
                                            _four(sh, sw, nchw), pad,
                                            data_format="NCHW" if nchw else "NHWC",
                                            name="conv2d_transpose")
        known = [static[0]] + [d if isinstance(d, int) else None
                               for d in ([n, h, w] if nchw else [h, w, n])]
        outputs.set_shape(known)
        return _finish(outputs, sc.name, n, nchw, activation_fn, normalizer_fn,
                       normalizer_params, biases_initializer, biases_regularizer, trainable,
                       variables_collections, outputs_collections)


@add_arg_scope
def separable_convolution2d(inputs: Any, num_outputs: int | None, kernel_size: Any,
                            depth_multiplier: int = 1, stride: Any = 1, padding: str = "SAME",
                            data_format: str = "NHWC", rate: Any = 1,
                            activation_fn: Any = nn_ops.relu, normalizer_fn: Any = None,
                            normalizer_params: dict | None = None,
                            weights_initializer: Any = _XAVIER,
                            pointwise_initializer: Any = None,
                            weights_regularizer: Any = None,
                            biases_initializer: Any = _ZEROS, biases_regularizer: Any = None,
                            reuse: Any = None, variables_collections: Any = None,
                            outputs_collections: Any = None, trainable: bool = True,
                            scope: Any = None) -> Tensor:
    """A depthwise convolution, then (unless num_outputs is None) a 1x1 one.

    Variables (scope default "SeparableConv2d"): `depthwise_weights`
    [kh, kw, in_channels, depth_multiplier], `pointwise_weights`
    [1, 1, in_channels * depth_multiplier, num_outputs] (only with num_outputs;
    `pointwise_initializer` defaults to `weights_initializer`), and `biases`.

    Raises:
        ValueError: inputs not of rank 4, a bad data_format or kernel_size.

    Example:
        >>> net = separable_conv2d(net, 64, [3, 3], depth_multiplier=1)
        >>> dw = separable_conv2d(net, None, [3, 3], depth_multiplier=2)  # depthwise only
    """
    nchw = _nchw(data_format)
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    rh, rw = _pair(rate, "rate")
    fmt = "NCHW" if nchw else "NHWC"
    with variable_scope(scope, "SeparableConv2d", [inputs], reuse=reuse) as sc:
        x, channels = _rank4(inputs, nchw, "SeparableConv2d")
        dtype = x.dtype.base_dtype
        dm = int(depth_multiplier)
        depthwise = _model_variable("depthwise_weights", [kh, kw, channels, dm], dtype,
                                    weights_initializer, weights_regularizer, trainable)
        _add_to_collections(depthwise, variables_collections, "weights")
        strides = _four(sh, sw, nchw)
        if num_outputs is not None:
            n = _check_outputs(num_outputs)
            pointwise = _model_variable(
                "pointwise_weights", [1, 1, channels * dm, n], dtype,
                weights_initializer if pointwise_initializer is None else pointwise_initializer,
                weights_regularizer, trainable)
            _add_to_collections(pointwise, variables_collections, "weights")
            outputs = depthwise_conv.separable_conv2d(x, depthwise, pointwise, strides,
                                                     padding.upper(), rate=[rh, rw],
                                                     data_format=fmt)
        else:
            n = channels * dm
            outputs = depthwise_conv.depthwise_conv2d(x, depthwise, strides, padding.upper(),
                                                     rate=[rh, rw], data_format=fmt)
        return _finish(outputs, sc.name, n, nchw, activation_fn, normalizer_fn,
                       normalizer_params, biases_initializer, biases_regularizer, trainable,
                       variables_collections, outputs_collections)


# ---- pooling and bias -----------------------------------------------------------------
def _pool2d(pool_fn: Any, default: str, op_name: str, inputs: Any, kernel_size: Any,
            stride: Any, padding: str, data_format: str, outputs_collections: Any,
            scope: Any) -> Tensor:
    nchw = _nchw(data_format)
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    with name_scope(scope, default, [inputs]) as sc:
        x = convert_to_tensor(inputs)
        outputs = pool_fn(x, _four(kh, kw, nchw), _four(sh, sw, nchw), padding.upper(),
                          data_format="NCHW" if nchw else "NHWC", name=op_name)
        return _collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def max_pool2d(inputs: Any, kernel_size: Any, stride: Any = 2, padding: str = "VALID",
               data_format: str = "NHWC", outputs_collections: Any = None,
               scope: Any = None) -> Tensor:
    """The maximum over each window (op `<scope>/MaxPool`, scope default "MaxPool2D").

    Raises:
        ValueError: a bad data_format, kernel_size or stride.

    Example:
        >>> net = max_pool2d(net, [2, 2], scope="pool1")   # halves height and width
    """
    return _pool2d(pool_ops.max_pool, "MaxPool2D", "MaxPool", inputs, kernel_size, stride,
                   padding, data_format, outputs_collections, scope)


@add_arg_scope
def avg_pool2d(inputs: Any, kernel_size: Any, stride: Any = 2, padding: str = "VALID",
               data_format: str = "NHWC", outputs_collections: Any = None,
               scope: Any = None) -> Tensor:
    """The mean over each window (op `<scope>/AvgPool`, scope default "AvgPool2D").

    Raises:
        ValueError: a bad data_format, kernel_size or stride.

    Example:
        >>> net = avg_pool2d(net, net.get_shape()[1:3], stride=1)   # global average
    """
    return _pool2d(pool_ops.avg_pool, "AvgPool2D", "AvgPool", inputs, kernel_size, stride,
                   padding, data_format, outputs_collections, scope)


@add_arg_scope
def bias_add(inputs: Any, activation_fn: Any = None, initializer: Any = _ZEROS,
             regularizer: Any = None, reuse: Any = None, variables_collections: Any = None,
             outputs_collections: Any = None, trainable: bool = True,
             data_format: str = "NHWC", scope: Any = None) -> Tensor:
    """Adds a learned bias per channel (variable `<scope>/biases`, scope "BiasAdd").

    Raises:
        ValueError: inputs of unknown rank or channels, a bad data_format, or NCHW
            inputs of rank below 3.

    Example:
        >>> net = bias_add(net, activation_fn=tf.nn.relu)
    """
    nchw = _nchw(data_format)
    with variable_scope(scope, "BiasAdd", [inputs], reuse=reuse) as sc:
        x = convert_to_tensor(inputs)
        rank = x.get_shape().ndims
        if rank is None:
            raise ValueError(f"Dims of shape must be known but is None (inputs {x.name}).")
        if nchw and rank < 3:
            raise ValueError(f"Data format NCHW only supports inputs of rank 3 or more, got "
                             f"rank {rank} ({x.name}).")
        channels = x.get_shape().as_list()[1 if nchw else -1]
        if channels is None:
            raise ValueError(f"`C` dimension must be known but is None (inputs {x.name}, "
                             f"shape {x.get_shape()}).")
        biases = _model_variable("biases", [channels], x.dtype.base_dtype, initializer,
                                 regularizer, trainable)
        _add_to_collections(biases, variables_collections, "biases")
        if nchw and rank != 4:  # bias_add's NCHW path is rank 4: broadcast by hand
            shaped = array_ops.reshape(biases, [1, channels] + [1] * (rank - 2))
            outputs = x + shaped
        else:
            outputs = layer_ops.bias_add(x, biases, data_format="NCHW" if nchw else "NHWC")
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


conv2d = convolution2d
conv2d_transpose = convolution2d_transpose
separable_conv2d = separable_convolution2d

__all__ = ["avg_pool2d", "bias_add", "conv2d", "conv2d_transpose", "convolution2d",
           "convolution2d_transpose", "max_pool2d", "separable_conv2d",
           "separable_convolution2d"]
