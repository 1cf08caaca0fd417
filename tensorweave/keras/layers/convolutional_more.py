"""Keras Conv1D and Conv2DTranspose, built on the 2-D convolution ops.

Conv1D runs a [1, k] 2-D convolution over the inputs with a unit height added
(as TF does); its kernel keeps TF's [k, in_channels, filters] shape so checkpoints
match. Conv2DTranspose is the gradient of Conv2D (`tf.nn.conv2d_transpose`) with
a [kh, kw, filters, in_channels] kernel.

Example:
    >>> h = tf.keras.layers.Conv1D(16, 3, activation="relu")(sequences)    # [b, t, c]
    >>> up = tf.keras.layers.Conv2DTranspose(8, 3, strides=2, padding="same")(h)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.keras.layers.convolutional import Conv2D
from tensorweave.keras.layers.layer_utils import conv_output_length, nhwc, normalize_tuple
from tensorweave.ops import array as array_ops
from tensorweave.ops.nn import conv_ops, layer_ops


class Conv1D(Conv2D):
    """1-D convolution over [batch, steps, channels] (channels_last) inputs.

    Raises:
        ValueError: for padding="causal" (not supported) or a non-3-D input.
    """

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: str = "channels_last",
                 dilation_rate: Any = 1, **kwargs: Any) -> None:
        if str(padding).lower() == "causal":
            raise ValueError("Conv1D: padding='causal' is not supported; pad the sequence "
                             "on the left yourself and use 'valid'.")
        super().__init__(filters, (1,) + normalize_tuple(kernel_size, 1, "kernel_size"),
                         (1,) + normalize_tuple(strides, 1, "strides"), padding, data_format,
                         (1,) + normalize_tuple(dilation_rate, 1, "dilation_rate"), **kwargs)

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        if shape.ndims != 3:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim=3, found ndim={shape.ndims} (shape {shape}).")
        channels = shape.as_list()[-1 if self.data_format == "channels_last" else 1]
        if channels is None:
            raise ValueError(f"The channel dimension of the inputs to {self.name} should be "
                             f"defined. Found `None` (input shape {shape}).")
        self.kernel = self.add_weight(
            "kernel", [self.kernel_size[1], int(channels), self.filters],
            initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        self._add_bias()
        self.built = True

    def call(self, inputs: Any) -> Any:
        axis = 1 if self.data_format == "channels_last" else 2   # the added unit height
        x = array_ops.expand_dims(inputs, axis)
        kernel = array_ops.expand_dims(self.kernel, 0)
        fmt = nhwc(self.data_format)
        out = conv_ops.conv2d(x, kernel, strides=list(self.strides), padding=self.padding,
                              data_format=fmt, dilations=list(self.dilation_rate))
        if self.bias is not None:
            out = layer_ops.bias_add(out, self.bias, data_format=fmt)
        return self.activation(array_ops.squeeze(out, [axis]))

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        first = self.data_format == "channels_first"
        steps = conv_output_length(dims[2] if first else dims[1], self.kernel_size[1],
                                   self.padding, self.strides[1], self.dilation_rate[1])
        return TensorShape([dims[0], self.filters, steps] if first
                           else [dims[0], steps, self.filters])


class Conv2DTranspose(Conv2D):
    """Transposed 2-D convolution ("deconvolution"), e.g. for upsampling.

    Output size per spatial axis: in * stride for "same"; (in - 1) * stride + k for
    "valid".

    Raises:
        ValueError: for dilation_rate other than 1 or output_padding (not supported).
    """

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", output_padding: Any = None,
                 data_format: str | None = None, dilation_rate: Any = (1, 1),
                 **kwargs: Any) -> None:
        if output_padding is not None or normalize_tuple(dilation_rate, 2,
                                                         "dilation_rate") != (1, 1):
            raise ValueError("Conv2DTranspose: output_padding and dilation_rate != 1 are not "
                             "supported; leave them at their defaults.")
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        if shape.ndims != 4:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim=4, found ndim={shape.ndims} (shape {shape}).")
        channels = shape.as_list()[-1 if self.data_format == "channels_last" else 1]
        if channels is None:
            raise ValueError(f"The channel dimension of the inputs to {self.name} should be "
                             f"defined. Found `None` (input shape {shape}).")
        self.kernel = self.add_weight(
            "kernel", list(self.kernel_size) + [self.filters, int(channels)],
            initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        self._add_bias()
        self.built = True

    def _length(self, size: Any, k: int, stride: int) -> Any:
        return size * stride if self.padding == "SAME" else (size - 1) * stride + k

    def call(self, inputs: Any) -> Any:
        first = self.data_format == "channels_first"
        dyn = array_ops.shape(inputs)
        static = inputs.shape.as_list()
        axes = (2, 3) if first else (1, 2)
        space = [self._length(static[a] if static[a] is not None else dyn[a], k, s)
                 for a, k, s in zip(axes, self.kernel_size, self.strides)]
        dims = [dyn[0], self.filters] + space if first else [dyn[0]] + space + [self.filters]
        fmt = nhwc(self.data_format)
        out = conv_ops.conv2d_transpose(inputs, self.kernel, array_ops.stack(dims),
                                        strides=list(self.strides), padding=self.padding,
                                        data_format=fmt)
        out.set_shape(self.compute_output_shape(inputs.shape))
        return self._bias_and_activation(out, fmt)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        dims = TensorShape(input_shape).as_list()
        first = self.data_format == "channels_first"
        space = dims[2:] if first else dims[1:3]
        out = [None if s is None else self._length(s, k, st)
               for s, k, st in zip(space, self.kernel_size, self.strides)]
        return TensorShape([dims[0], self.filters] + out if first
                           else [dims[0]] + out + [self.filters])


Convolution1D = Conv1D
Convolution2DTranspose = Deconvolution2D = Deconv2D = Conv2DTranspose
