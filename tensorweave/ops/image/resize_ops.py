"""Image resizing: the ResizeBilinear and ResizeNearestNeighbor ops (with their
gradient ops ResizeBilinearGrad and ResizeNearestNeighborGrad), `ResizeMethod` and
`resize_images`.

Coordinates follow TF's kernels: with `align_corners` the corner pixels of input and
output line up (scale (in - 1) / (out - 1)); otherwise the scale is in / out and, in
TF 1.x's legacy mapping (`half_pixel_centers=False`), output pixel i samples input
coordinate i * scale. With `half_pixel_centers=True` it samples (i + 0.5) * scale - 0.5
(bilinear) or (i + 0.5) * scale (nearest). Like TF, the coordinate arithmetic is done
in float32, so the numbers match TF's.

Example:
    >>> small = resize_images(images, [16, 16])  # float32, bilinear
    >>> nn = resize_images(images, [64, 64], ResizeMethod.NEAREST_NEIGHBOR)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.array.core_ops import shape_from_tensor
from tensorweave.ops.array.shape_ops import expand_dims, shape, squeeze
from tensorweave.ops.array.slice_ops import strided_slice
from tensorweave.ops.image.color_ops import check_image_dtype, invalid_argument
from tensorweave.ops.math import math_ops


class ResizeMethod:
    """`tf.image.ResizeMethod`: the `method` argument of `resize_images` (TF 1.x ints)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


# ---- shared geometry -----------------------------------------------------------------
def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """TF's CalculateResizeScale, in float32 as the kernels compute it."""
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _check_attrs(align_corners: bool, half_pixel_centers: bool, err: Any) -> None:
    if align_corners and half_pixel_centers:
        raise err("If half_pixel_centers is True, align_corners must be False.")


def _bilinear_weights(in_size: int, out_size: int, align_corners: bool,
                      half_pixel: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower index, upper index, lerp) per output position, as TF's
    compute_interpolation_weights."""
    scale = _scale(in_size, out_size, align_corners)
    i = np.arange(out_size, dtype=np.float32)
    src = (i + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else i * scale
    src = src.astype(np.float32)
    floor = np.floor(src)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(src), in_size - 1).astype(np.int64)
    return lower, upper, (src - floor).astype(np.float32)


def _nearest_index(in_size: int, out_size: int, align_corners: bool,
                   half_pixel: bool) -> np.ndarray:
    """The input index each output position copies, as TF's nearest-neighbor kernel."""
    scale = _scale(in_size, out_size, align_corners)
    i = np.arange(out_size, dtype=np.float32)
    src = ((i + np.float32(0.5)) * scale if half_pixel else i * scale).astype(np.float32)
    # roundf rounds halves away from zero; the coordinates here are never negative.
    idx = np.floor(src + np.float32(0.5)) if align_corners else np.floor(src)
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    return np.maximum(idx, 0)


def _check_images(images: Tensor, what: str) -> None:
    if images.shape.ndims not in (None, 4):
        raise ValueError(f"{what}: input must be 4-dimensional [batch, height, width, "
                         f"channels], but {images.name} has shape {images.shape}.")


def _size_shape(size: Tensor, what: str) -> TensorShape:
    if not size.shape.is_compatible_with([2]):
        raise ValueError(f"{what}: size must be a 1-D int32 tensor of 2 elements "
                         f"[new_height, new_width], but {size.name} has shape {size.shape}.")
    if size.dtype.base_dtype != _dt.int32:
        raise TypeError(f"{what}: size must be int32, but {size.name} has dtype "
                        f"{size.dtype.base_dtype.name}.")
    hw = shape_from_tensor(size)
    for nm, d in zip(("height", "width"), hw.as_list() if hw.ndims == 2 else []):
        if d is not None and d <= 0:
            raise ValueError(f"{what}: the new {nm} must be positive, got {d} "
                             f"({size.name}).")
    return hw if hw.ndims == 2 else TensorShape([None, None])


def _resize_shape(images: Tensor, size: Tensor, what: str) -> TensorShape:
    _check_images(images, what)
    hw = _size_shape(size, what)
    dims = images.shape.as_list() if images.shape.ndims == 4 else [None] * 4
    return TensorShape([dims[0], hw[0], hw[1], dims[3]])


def _kernel_geometry(images: np.ndarray, size: Any, what: str) -> tuple[int, int]:
    if images.ndim != 4:
        raise invalid_argument(f"{what}: input must be 4-dimensional, got shape "
                               f"{list(images.shape)}")
    sz = np.asarray(size).reshape(-1)
    if sz.size != 2:
        raise invalid_argument(f"{what}: size must have 2 elements, got {sz.tolist()}")
    h, w = int(sz[0]), int(sz[1])
    if h <= 0 or w <= 0:
        raise invalid_argument(f"{what}: output dimensions must be positive, got size "
                               f"[{h}, {w}]")
    if images.shape[1] <= 0 or images.shape[2] <= 0:
        raise invalid_argument(f"{what}: input image must be non-empty, got shape "
                               f"{list(images.shape)}")
    return h, w


# ---- ResizeBilinear --------------------------------------------------------------------
bilinear_op = define_op("ResizeBilinear", inputs=("images", "size"),
                        attrs={"align_corners": False, "half_pixel_centers": False})


@bilinear_op.shape
def _(images: Tensor, size: Tensor, *, align_corners: bool, half_pixel_centers: bool) -> Any:
    _check_attrs(align_corners, half_pixel_centers, ValueError)
    check_image_dtype(images, "ResizeBilinear")
    return _dt.float32, _resize_shape(images, size, "ResizeBilinear")


@bilinear_op.kernel("CPU")
def _(images: Any, size: Any, *, align_corners: bool, half_pixel_centers: bool) -> Any:
    _check_attrs(align_corners, half_pixel_centers, invalid_argument)
    images = np.asarray(images)
    out_h, out_w = _kernel_geometry(images, size, "ResizeBilinear")
    x = images.astype(np.float32)
    top, bottom, ylerp = _bilinear_weights(x.shape[1], out_h, align_corners, half_pixel_centers)
    left, right, xlerp = _bilinear_weights(x.shape[2], out_w, align_corners, half_pixel_centers)
    rows_t, rows_b = x[:, top], x[:, bottom]
    xl = xlerp[None, None, :, None]
    # The same lerp order as TF's kernel (top row, bottom row, then between them).
    t = rows_t[:, :, left] + (rows_t[:, :, right] - rows_t[:, :, left]) * xl
    b = rows_b[:, :, left] + (rows_b[:, :, right] - rows_b[:, :, left]) * xl
    return (t + (b - t) * ylerp[None, :, None, None]).astype(np.float32)


@bilinear_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    attrs = {"align_corners": op.get_attr("align_corners"),
             "half_pixel_centers": op.get_attr("half_pixel_centers")}
    return [create_op("ResizeBilinearGrad", [grad, op.inputs[0]], attrs, None).outputs[0], None]


# ---- ResizeBilinearGrad ----------------------------------------------------------------
bilinear_grad_op = define_op("ResizeBilinearGrad", inputs=("grads", "original_image"),
                             attrs={"align_corners": False, "half_pixel_centers": False})


@bilinear_grad_op.shape
def _(grads: Tensor, original: Tensor, *, align_corners: bool,
      half_pixel_centers: bool) -> Any:
    _check_attrs(align_corners, half_pixel_centers, ValueError)
    _check_images(grads, "ResizeBilinearGrad")
    _check_images(original, "ResizeBilinearGrad")
    if not original.dtype.base_dtype.is_floating:
        raise TypeError(f"ResizeBilinearGrad: original_image must be a float type, but "
                        f"{original.name} has dtype {original.dtype.base_dtype.name}.")
    return original.dtype.base_dtype, original.shape


def _interp_matrix(in_size: int, out_size: int, align_corners: bool,
                   half_pixel: bool) -> np.ndarray:
    """[out, in] matrix whose row i holds the bilinear weights of output position i."""
    lo, hi, lerp = _bilinear_weights(in_size, out_size, align_corners, half_pixel)
    m = np.zeros((out_size, in_size), np.float64)
    rows = np.arange(out_size)
    np.add.at(m, (rows, lo), 1.0 - lerp.astype(np.float64))
    np.add.at(m, (rows, hi), lerp.astype(np.float64))
    return m


@bilinear_grad_op.kernel("CPU")
def _(grads: Any, original: Any, *, align_corners: bool, half_pixel_centers: bool) -> Any:
    _check_attrs(align_corners, half_pixel_centers, invalid_argument)
    g, orig = np.asarray(grads), np.asarray(original)
    if g.ndim != 4 or orig.ndim != 4:
        raise invalid_argument(f"ResizeBilinearGrad: grads and original_image must be "
                               f"4-dimensional, got shapes {list(g.shape)} and "
                               f"{list(orig.shape)}")
    # Each output pixel sends its gradient back to the (up to) four input pixels it
    # blended, with the same weights: the transpose of the forward interpolation.
    my = _interp_matrix(orig.shape[1], g.shape[1], align_corners, half_pixel_centers)
    mx = _interp_matrix(orig.shape[2], g.shape[2], align_corners, half_pixel_centers)
    out = np.einsum("oh,bopc,pw->bhwc", my, g.astype(np.float64), mx, optimize=True)
    return out.astype(orig.dtype)


bilinear_grad_op.no_gradient()  # TF registers no gradient for ResizeBilinearGrad either


# ---- ResizeNearestNeighbor -------------------------------------------------------------
nearest_op = define_op("ResizeNearestNeighbor", inputs=("images", "size"),
                       attrs={"align_corners": False, "half_pixel_centers": False})


@nearest_op.shape
def _(images: Tensor, size: Tensor, *, align_corners: bool, half_pixel_centers: bool) -> Any:
    _check_attrs(align_corners, half_pixel_centers, ValueError)
    check_image_dtype(images, "ResizeNearestNeighbor")
    return images.dtype.base_dtype, _resize_shape(images, size, "ResizeNearestNeighbor")


@nearest_op.kernel("CPU")
def _(images: Any, size: Any, *, align_corners: bool, half_pixel_centers: bool) -> Any:
    _check_attrs(align_corners, half_pixel_centers, invalid_argument)
    images = np.asarray(images)
    out_h, out_w = _kernel_geometry(images, size, "ResizeNearestNeighbor")
    ys = _nearest_index(images.shape[1], out_h, align_corners, half_pixel_centers)
    xs = _nearest_index(images.shape[2], out_w, align_corners, half_pixel_centers)
    return np.ascontiguousarray(images[:, ys][:, :, xs])


@nearest_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    image = op.inputs[0]
    hw = image.shape[1:3] if image.shape.ndims == 4 else TensorShape(None)
    if hw.is_fully_defined():
        size: Any = convert_to_tensor(np.asarray(hw.as_list(), np.int32))
    else:
        size = strided_slice(shape(image), [1], [3])
    attrs = {"align_corners": op.get_attr("align_corners"),
             "half_pixel_centers": op.get_attr("half_pixel_centers")}
    return [create_op("ResizeNearestNeighborGrad", [grad, size], attrs, None).outputs[0], None]


# ---- ResizeNearestNeighborGrad ---------------------------------------------------------
nearest_grad_op = define_op("ResizeNearestNeighborGrad", inputs=("grads", "size"),
                            attrs={"align_corners": False, "half_pixel_centers": False})


@nearest_grad_op.shape
def _(grads: Tensor, size: Tensor, *, align_corners: bool, half_pixel_centers: bool) -> Any:
    _check_attrs(align_corners, half_pixel_centers, ValueError)
    return grads.dtype.base_dtype, _resize_shape(grads, size, "ResizeNearestNeighborGrad")


@nearest_grad_op.kernel("CPU")
def _(grads: Any, size: Any, *, align_corners: bool, half_pixel_centers: bool) -> Any:
    _check_attrs(align_corners, half_pixel_centers, invalid_argument)
    g = np.asarray(grads)
    in_h, in_w = _kernel_geometry(g, size, "ResizeNearestNeighborGrad")
    # The forward op's index map from the original size to the resized one; every
    # resized pixel's gradient goes to the original pixel it copied.
    ys = _nearest_index(in_h, g.shape[1], align_corners, half_pixel_centers)
    xs = _nearest_index(in_w, g.shape[2], align_corners, half_pixel_centers)
    out = np.zeros((g.shape[0], in_h, in_w, g.shape[3]), g.dtype)
    idx: Any = (slice(None), ys[:, None], xs[None, :])
    np.add.at(out, idx, g)
    return out


nearest_grad_op.no_gradient()


# ---- resize_images ---------------------------------------------------------------------
_OPS = {ResizeMethod.BILINEAR: "ResizeBilinear",
        ResizeMethod.NEAREST_NEIGHBOR: "ResizeNearestNeighbor"}


def resize_images(images: Any, size: Any, method: int = ResizeMethod.BILINEAR,
                  align_corners: bool = False, preserve_aspect_ratio: bool = False,
                  name: str | None = None) -> Tensor:
    """`tf.image.resize_images`: resizes images to `size` = [new_height, new_width].

    Bilinear output is float32 (as TF); nearest neighbor keeps the dtype. When the
    size is statically the current one the images are returned unchanged.

    Args:
        images: [batch, height, width, channels] or [height, width, channels].
        size: 2 ints or a 1-D int32 tensor [new_height, new_width].
        method: a `ResizeMethod` (BILINEAR or NEAREST_NEIGHBOR).
        align_corners: align the centers of the 4 corner pixels of input and output.
        preserve_aspect_ratio: scale to fit inside `size`, keeping the aspect ratio.

    Raises:
        ValueError: images not of rank 3 or 4, a bad `size`, or an unsupported method.

    Example:
        >>> resize_images(tf.zeros([4, 4, 3]), [2, 2]).shape.as_list()  # [2, 2, 3]
    """
    with name_scope(name, "resize"):
        images = convert_to_tensor(images, name="images")
        if images.shape.ndims is None:
            raise ValueError(f"resize_images: 'images' ({images.name}) has no static rank; "
                             "it must be 3-D or 4-D.")
        is_batch = images.shape.ndims == 4
        if images.shape.ndims == 3:
            images = expand_dims(images, 0)
        elif not is_batch:
            raise ValueError(f"resize_images: 'images' must have 3 or 4 dimensions, but "
                             f"{images.name} has shape {images.shape}.")
        if method not in _OPS:
            raise ValueError(f"resize_images: method {method!r} is not supported; use "
                             "ResizeMethod.BILINEAR (0) or ResizeMethod.NEAREST_NEIGHBOR (1).")
        try:
            size_t = convert_to_tensor(size, dtype=_dt.int32, name="size")
        except (TypeError, ValueError) as e:
            raise ValueError(f"resize_images: 'size' must be a 1-D int32 tensor, got "
                             f"{size!r}") from e
        hw = _size_shape(size_t, "resize_images")
        _, height, width, _ = images.shape.as_list()
        if preserve_aspect_ratio:
            size_t, hw = _fit_size(images, hw, size_t)
        known_hw = (dimension_value(hw[0]), dimension_value(hw[1]))
        if None not in known_hw + (height, width) and known_hw == (height, width):
            return squeeze(images, [0]) if not is_batch else images
        attrs = {"align_corners": bool(align_corners), "half_pixel_centers": False}
        out = create_op(_OPS[method], [images, size_t], attrs, None).outputs[0]
        out.set_shape([None, hw[0], hw[1], None])
        return squeeze(out, [0]) if not is_batch else out


def _fit_size(images: Tensor, hw: TensorShape, size_t: Tensor) -> tuple[Tensor, TensorShape]:
    """The size that fits inside `size` with the images' aspect ratio (TF's float32
    arithmetic: scale = min(new_h / h, new_w / w), then round each side)."""
    _, h, w, _ = images.shape.as_list()
    if None not in (h, w, dimension_value(hw[0]), dimension_value(hw[1])):
        f = min(np.float32(hw[0]) / np.float32(h), np.float32(hw[1]) / np.float32(w))
        new = [int(np.round(np.float32(f) * np.float32(d))) for d in (h, w)]
        return convert_to_tensor(np.asarray(new, np.int32), name="size"), TensorShape(new)
    cur = math_ops.cast(strided_slice(shape(images), [1], [3]), _dt.float32)
    ft = math_ops.reduce_min(math_ops.cast(size_t, _dt.float32) / cur)
    new_t = math_ops.cast(math_ops.round(ft * cur), _dt.int32)
    return new_t, TensorShape([None, None])


__all__ = ["ResizeMethod", "resize_images"]
