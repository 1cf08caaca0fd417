"""Moving spatial blocks into the channels and back: SpaceToDepth and DepthToSpace
(sub-pixel convolution / pixel shuffle). Each is the other's gradient, as in TF.

SpaceToDepth turns every non-overlapping `block_size` x `block_size` patch of an
NHWC image into one pixel of depth `block_size**2 * depth`, ordered (row in block,
column in block, channel). DepthToSpace is its inverse. NCHW is the same rearrangement
on the transposed layout; NCHW_VECT_C (int8 GPU layout) is refused. Kernels are one
reshape and transpose.

Example:
    >>> tf.space_to_depth(tf.zeros([1, 4, 6, 3]), 2).shape.as_list()
    [1, 2, 3, 12]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape


_ATTRS = {"block_size": REQUIRED, "data_format": "NHWC"}


def _check_attrs(op_type: str, block_size: int, data_format: str) -> None:
    if data_format not in ("NHWC", "NCHW"):
        hint = (" (the int8 GPU layout, not supported in tensorweave)"
                if data_format == "NCHW_VECT_C" else "")
        raise ValueError(f"{op_type}: data_format {data_format!r}{hint} is not supported; "
                         "use 'NHWC' or 'NCHW'.")
    if block_size < 2:
        raise ValueError(f"{op_type}: block_size must be at least 2, got {block_size}.")


def _shape(op_type: str, x: Tensor, block_size: int, data_format: str) -> Any:
    """[N, H, W, C] -> [N, H/b, W/b, C*b*b] (to_depth) or [N, H*b, W*b, C/(b*b)]."""
    _check_attrs(op_type, block_size, data_format)
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise ValueError(f"{op_type}: input must be 4-D ({data_format}), but {x.name} has "
                         f"shape {x.shape}.")
    dims = x.shape.with_rank(4).as_list()
    first = data_format == "NCHW"
    n, (h, w, c) = dims[0], ((dims[2], dims[3], dims[1]) if first else dims[1:])
    b, bb = block_size, block_size * block_size
    if op_type == "SpaceToDepth":
        for d, what in ((h, "height"), (w, "width")):
            if d is not None and d % b:
                raise ValueError(f"SpaceToDepth: image {what} {d} of {x.name} (shape "
                                 f"{x.shape}, {data_format}) is not divisible by block_size "
                                 f"{b}; pad or crop it to a multiple.")
        h, w, c = (None if h is None else h // b, None if w is None else w // b,
                   None if c is None else c * bb)
    else:
        if c is not None and c % bb:
            raise ValueError(f"DepthToSpace: input depth {c} of {x.name} (shape {x.shape}, "
                             f"{data_format}) is not divisible by block_size * block_size "
                             f"= {bb}.")
        h, w, c = (None if h is None else h * b, None if w is None else w * b,
                   None if c is None else c // bb)
    return x.dtype.base_dtype, TensorShape([n, c, h, w] if first else [n, h, w, c])


def space_to_depth_np(x: np.ndarray, b: int) -> np.ndarray:
    """SpaceToDepth of an NHWC NumPy array."""
    n, h, w, c = x.shape
    if h % b or w % b:
        raise errors.InvalidArgumentError(None, None, f"SpaceToDepth: image width {w} and "
                                          f"height {h} should be divisible by block_size: "
                                          f"{b}.")
    out = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return np.ascontiguousarray(out.reshape(n, h // b, w // b, c * b * b))


def depth_to_space_np(x: np.ndarray, b: int) -> np.ndarray:
    """DepthToSpace of an NHWC NumPy array."""
    n, h, w, c = x.shape
    if c % (b * b):
        raise errors.InvalidArgumentError(None, None, f"DepthToSpace: input depth dimension "
                                          f"{c} should be divisible by: {b * b}.")
    out = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return np.ascontiguousarray(out.reshape(n, h * b, w * b, c // (b * b)))


def _run(op_type: str, fn: Any, x: Any, block_size: int, data_format: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 4:
        raise errors.InvalidArgumentError(None, None, f"{op_type}: input must be 4-D, got "
                                          f"shape {list(x.shape)}.")
    if data_format == "NCHW":
        return np.ascontiguousarray(fn(x.transpose(0, 2, 3, 1), block_size).transpose(0, 3, 1, 2))
    return fn(x, block_size)


# ---- SpaceToDepth ------------------------------------------------------------------
s2d_op = define_op("SpaceToDepth", inputs=("input",), attrs=dict(_ATTRS))


@s2d_op.shape
def _(x: Tensor, *, block_size: int, data_format: str) -> Any:
    return _shape("SpaceToDepth", x, block_size, data_format)


@s2d_op.kernel("CPU")
def _(x: np.ndarray, *, block_size: int, data_format: str) -> np.ndarray:
    return _run("SpaceToDepth", space_to_depth_np, x, block_size, data_format)


@s2d_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [depth_to_space(grad, op.get_attr("block_size"),
                           data_format=op.get_attr("data_format"))]


# ---- DepthToSpace ------------------------------------------------------------------
d2s_op = define_op("DepthToSpace", inputs=("input",), attrs=dict(_ATTRS))


@d2s_op.shape
def _(x: Tensor, *, block_size: int, data_format: str) -> Any:
    return _shape("DepthToSpace", x, block_size, data_format)


@d2s_op.kernel("CPU")
def _(x: np.ndarray, *, block_size: int, data_format: str) -> np.ndarray:
    return _run("DepthToSpace", depth_to_space_np, x, block_size, data_format)


@d2s_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [space_to_depth(grad, op.get_attr("block_size"),
                           data_format=op.get_attr("data_format"))]


# ---- public API --------------------------------------------------------------------
def space_to_depth(input: Any, block_size: int, name: str | None = None,
                   data_format: str = "NHWC") -> Tensor:
    """`tf.space_to_depth` / `tf.nn.space_to_depth`: blocks of pixels into channels.

    Args:
        input: 4-D [batch, height, width, depth] (NHWC) or [batch, depth, height,
            width] (NCHW); height and width divisible by block_size.
        block_size: an int >= 2.
        data_format: "NHWC" (default) or "NCHW".

    Returns:
        [batch, height / b, width / b, depth * b * b] (NHWC); channel
        (i * b + j) * depth + c holds pixel (i, j) of the block, channel c.

    Raises:
        ValueError: for block_size < 2, a non-4-D input, sizes not divisible by
            block_size, or another data_format.

    Example:
        >>> tf.space_to_depth(tf.zeros([1, 4, 4, 1]), 2).shape.as_list()
        [1, 2, 2, 4]
    """
    x = convert_to_tensor(input, name="input")
    return create_op("SpaceToDepth", [x], {"block_size": int(block_size),
                                         "data_format": data_format}, name).outputs[0]


def depth_to_space(input: Any, block_size: int, name: str | None = None,
                   data_format: str = "NHWC") -> Tensor:
    """`tf.depth_to_space` / `tf.nn.depth_to_space`: channels into blocks of pixels.

    The inverse of `space_to_depth` (sub-pixel upsampling, "pixel shuffle").

    Args:
        input: 4-D NHWC or NCHW; depth divisible by block_size * block_size.
        block_size: an int >= 2.

    Raises:
        ValueError: for block_size < 2, a non-4-D input, a depth not divisible by
            block_size**2, or another data_format.

    Example:
        >>> tf.depth_to_space(tf.zeros([1, 2, 2, 12]), 2).shape.as_list()
        [1, 4, 4, 3]
    """
    x = convert_to_tensor(input, name="input")
    return create_op("DepthToSpace", [x], {"block_size": int(block_size),
                                         "data_format": data_format}, name).outputs[0]
