"""EncodeJpeg and EncodePng (`tf.image.encode_jpeg`, `tf.image.encode_png`), with TF's
attrs; no gradients. Pillow (libjpeg-turbo, zlib) writes the bytes; with TF's default
attrs the JPEG bytes equal TF 2.21's for the images tested (same quality tables, 4:2:0,
JFIF 300x300 dpi header).

Example:
    >>> data = tf.image.encode_jpeg(tf.cast(img, tf.uint8), quality=90)
    >>> back = tf.image.decode_jpeg(data)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.kernels import codec_kernels as _k
from tensorweave.ops.image.codec_ops import _run

__all__ = ["encode_jpeg", "encode_png"]

_ENCODE_ATTRS = {"format": "", "quality": 95, "progressive": False, "optimize_size": False,
                 "chroma_downsampling": True, "density_unit": "in", "x_density": 300,
                 "y_density": 300, "xmp_metadata": ""}


def _image_rank3(t: Tensor, op: str, allowed: tuple[int, ...]) -> None:
    if t.shape.ndims not in (None, 3):
        raise ValueError(f"{op}: image must be 3-D [height, width, channels], got {t.name} "
                         f"of shape {t.shape}.")
    if t.shape.ndims == 3 and t.shape.as_list()[2] not in (None,) + allowed:
        raise ValueError(f"{op}: image must have {allowed} channels, got {t.name} of shape "
                         f"{t.shape}.")


# ---- EncodeJpeg --------------------------------------------------------------------
encode_jpeg_op = define_op("EncodeJpeg", inputs=("image",), attrs=dict(_ENCODE_ATTRS))
encode_jpeg_op.no_gradient()


@encode_jpeg_op.shape
def _(image: Tensor, **_: Any) -> Any:
    _image_rank3(image, "EncodeJpeg", (1, 3))
    return _dt.string, TensorShape([])


@encode_jpeg_op.kernel("CPU")
def _(image: Any, **attrs: Any) -> np.ndarray:
    flags = _k.JpegEncodeFlags(**attrs)
    data = _run("EncodeJpeg", lambda: _k.encode_jpeg_bytes(np.asarray(image), flags))
    return np.asarray(data, dtype=object)


def encode_jpeg(image: Any, format: str = "", quality: int = 95,  # noqa: A002 (TF's name)
                progressive: bool = False, optimize_size: bool = False,
                chroma_downsampling: bool = True, density_unit: str = "in",
                x_density: int = 300, y_density: int = 300, xmp_metadata: str = "",
                name: str | None = None) -> Tensor:
    """`tf.image.encode_jpeg`: uint8 [height, width, 1 or 3] -> JPEG bytes (scalar string).

    Args:
        image: uint8 image; 1 channel is written as grayscale, 3 as RGB.
        format: "" (from the channels), "grayscale" or "rgb" (then channels must match).
        quality: 0-100. progressive, optimize_size: libjpeg's options.
        chroma_downsampling: 4:2:0 chroma (True) or full-resolution 4:4:4.
        density_unit, x_density, y_density: the JFIF header's resolution ("in"/"cm").
        xmp_metadata: an XMP packet to embed, if not empty.
        name: the op's name.

    Raises:
        ValueError: bad attrs or an image that is not 3-D with 1 or 3 channels.

    Example:
        >>> tf.image.encode_jpeg(tf.zeros([4, 4, 3], tf.uint8), quality=80)
    """
    _check_choice("format", format, ("", "grayscale", "rgb"))
    _check_choice("density_unit", density_unit, ("in", "cm"))
    if not 0 <= int(quality) <= 100:
        raise ValueError(f"EncodeJpeg: quality must be in [0, 100], got {quality}.")
    t = convert_to_tensor(image, dtype=_dt.uint8, name="image")
    attrs = {"format": format, "quality": int(quality), "progressive": bool(progressive),
             "optimize_size": bool(optimize_size),
             "chroma_downsampling": bool(chroma_downsampling), "density_unit": density_unit,
             "x_density": int(x_density), "y_density": int(y_density),
             "xmp_metadata": str(xmp_metadata)}
    return create_tensor("EncodeJpeg", [t], attrs,
                         name=name or "EncodeJpeg")


def _check_choice(attr: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise ValueError(f"EncodeJpeg: {attr} must be one of {allowed}, got {value!r}.")


# ---- EncodePng ---------------------------------------------------------------------
encode_png_op = define_op("EncodePng", inputs=("image",), attrs={"compression": -1})
encode_png_op.no_gradient()


@encode_png_op.shape
def _(image: Tensor, *, compression: int) -> Any:
    if image.dtype.base_dtype not in (_dt.uint8, _dt.uint16):
        raise TypeError(f"EncodePng: image must be uint8 or uint16, got {image.name} "
                        f"({image.dtype.name}); convert with tf.image.convert_image_dtype.")
    _image_rank3(image, "EncodePng", (1, 2, 3, 4))
    return _dt.string, TensorShape([])


@encode_png_op.kernel("CPU")
def _(image: Any, *, compression: int) -> np.ndarray:
    data = _run("EncodePng", lambda: _k.encode_png_bytes(np.asarray(image), compression))
    return np.asarray(data, dtype=object)


def encode_png(image: Any, compression: int = -1, name: str | None = None) -> Tensor:
    """`tf.image.encode_png`: uint8 or uint16 [height, width, 1-4] -> PNG bytes.

    Args:
        image: the image; uint16 gives a 16-bit PNG.
        compression: zlib level 0-9, or -1 for the default.
        name: the op's name.

    Example:
        >>> tf.image.encode_png(tf.zeros([4, 4, 4], tf.uint8), compression=9)
    """
    if not -1 <= int(compression) <= 9:
        raise ValueError(f"EncodePng: compression must be -1 or 0-9, got {compression}.")
    t = convert_to_tensor(image, name="image")
    return create_tensor("EncodePng", [t], {"compression": int(compression)},
                         name=name or "EncodePng")
