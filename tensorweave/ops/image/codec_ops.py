"""Image codec ops with TF's names and attrs: DecodeJpeg, DecodeAndCropJpeg, DecodePng,
DecodeGif, DecodeBmp, EncodeJpeg, EncodePng, ExtractJpegShape. None has a gradient
(as in TF: their inputs are strings). The pixel work is in `codec_kernels` (Pillow).

As in TF 1.x, DecodeJpeg, DecodePng and DecodeGif each decode any of JPEG, PNG and
GIF (the kernel sniffs the bytes); DecodeGif always gives [frames, h, w, 3].

Example:
    >>> img = tf.image.decode_jpeg(tf.read_file("cat.jpg"), channels=3)  # [h, w, 3] uint8
    >>> png = tf.image.encode_png(img)
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.kernels import codec_kernels as _k

__all__ = ["decode_and_crop_jpeg", "decode_bmp", "decode_gif", "decode_jpeg", "decode_png",
           "extract_jpeg_shape"]

_JPEG_ATTRS = {"channels": 0, "ratio": 1, "fancy_upscaling": True,
               "try_recover_truncated": False, "acceptable_fraction": 1.0, "dct_method": ""}


def _data(v: Any) -> bytes:
    v = v.item() if isinstance(v, np.ndarray) else v
    return v if isinstance(v, bytes) else str(v).encode()


def _run(op: str, fn: Callable[[], Any]) -> Any:
    """Runs a codec function, turning its CodecError into TF's InvalidArgumentError."""
    try:
        return fn()
    except _k.CodecError as e:
        raise errors.InvalidArgumentError(None, None, f"{op}: {e}") from None


def _scalar_contents(t: Tensor, op: str) -> None:
    if t.dtype.base_dtype != _dt.string:
        raise TypeError(f"{op}: contents {t.name} must be a string tensor, got "
                        f"{t.dtype.base_dtype.name}.")
    if t.shape.ndims not in (None, 0):
        raise ValueError(f"{op}: contents must be a scalar (one encoded image), got "
                         f"{t.name} of shape {t.shape}; decode a batch with tf.map_fn or "
                         "in Dataset.map.")


def _check_choice(op: str, attr: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise ValueError(f"{op}: {attr} must be one of {allowed}, got {value!r}.")


def _jpeg_attrs(op: str, channels: int, ratio: int, fancy_upscaling: bool,
                try_recover_truncated: bool, acceptable_fraction: float,
                dct_method: str) -> dict[str, Any]:
    _check_choice(op, "channels", channels, (0, 1, 3))
    _check_choice(op, "ratio", ratio, (1, 2, 4, 8))
    _check_choice(op, "dct_method", dct_method, ("", "INTEGER_FAST", "INTEGER_ACCURATE"))
    return {"channels": int(channels), "ratio": int(ratio),
            "fancy_upscaling": bool(fancy_upscaling),
            "try_recover_truncated": bool(try_recover_truncated),
            "acceptable_fraction": float(acceptable_fraction), "dct_method": str(dct_method)}


def _flags(attrs: dict[str, Any]) -> _k.JpegDecodeFlags:
    return _k.JpegDecodeFlags(attrs["ratio"], attrs["fancy_upscaling"],
                              attrs["try_recover_truncated"], attrs["acceptable_fraction"],
                              attrs["dct_method"])


def _image_shape(channels: int) -> TensorShape:
    return TensorShape([None, None, channels or None])


def _contents(contents: Any) -> Tensor:
    return convert_to_tensor(contents, dtype=_dt.string, name="contents")


# ---- DecodeJpeg --------------------------------------------------------------------
decode_jpeg_op = define_op("DecodeJpeg", inputs=("contents",), attrs=dict(_JPEG_ATTRS))
decode_jpeg_op.no_gradient()


@decode_jpeg_op.shape
def _(contents: Tensor, *, channels: int, **_: Any) -> Any:
    _scalar_contents(contents, "DecodeJpeg")
    return _dt.uint8, _image_shape(channels)


@decode_jpeg_op.kernel("CPU")
def _(contents: Any, *, channels: int, **attrs: Any) -> np.ndarray:
    return _run("DecodeJpeg", lambda: _k.decode_any(_data(contents), "DecodeJpeg", channels,
                                                    _flags(attrs)))


def decode_jpeg(contents: Any, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1,
                dct_method: str = "", name: str | None = None) -> Tensor:
    """`tf.image.decode_jpeg`: JPEG bytes -> uint8 [height, width, channels].

    Args:
        contents: scalar string, the encoded image (PNG and one-frame GIF also decode,
            as in TF 1.x).
        channels: 0 (the file's), 1 (grayscale) or 3 (RGB).
        ratio: downscale by 1, 2, 4 or 8 while decoding.
        fancy_upscaling: smooth (True) or replicated chroma upsampling.
        try_recover_truncated: decode a truncated file, the missing part filled in.
        acceptable_fraction: kept for TF compatibility (see the module notes).
        dct_method: "" / "INTEGER_FAST" or "INTEGER_ACCURATE".
        name: the op's name.

    Raises:
        ValueError: bad attrs, or `contents` not a scalar.
        InvalidArgumentError: (at run time) bytes that are not a valid image.

    Example:
        >>> img = tf.image.decode_jpeg(tf.read_file("cat.jpg"), channels=3)
        >>> img.shape.as_list()
        [None, None, 3]
    """
    attrs = _jpeg_attrs("DecodeJpeg", channels, ratio, fancy_upscaling,
                        try_recover_truncated, acceptable_fraction, dct_method)
    return create_tensor("DecodeJpeg", [_contents(contents)], attrs,
                         name=name or "DecodeJpeg")


# ---- DecodeAndCropJpeg -------------------------------------------------------------
crop_op = define_op("DecodeAndCropJpeg", inputs=("contents", "crop_window"),
                    attrs=dict(_JPEG_ATTRS))
crop_op.no_gradient()


@crop_op.shape
def _(contents: Tensor, crop_window: Tensor, *, channels: int, **_: Any) -> Any:
    _scalar_contents(contents, "DecodeAndCropJpeg")
    if crop_window.shape.ndims not in (None, 1) or crop_window.shape.num_elements() not in (
            None, 4):
        raise ValueError(f"DecodeAndCropJpeg: crop_window must be [y, x, height, width], got "
                         f"shape {crop_window.shape}.")
    window = constant_value(crop_window)
    if window is None:
        return _dt.uint8, _image_shape(channels)
    return _dt.uint8, TensorShape([int(window[2]), int(window[3]), channels or None])


def _crop(data: bytes, window: np.ndarray, channels: int, attrs: dict[str, Any]) -> np.ndarray:
    if _k.sniff(data) != _k.JPEG:
        raise _k.CodecError(f"Invalid JPEG data or crop window: expected a JPEG, got "
                            f"{_k.describe(data)}.")
    image = _k.decode_jpeg_bytes(data, channels, _flags(attrs))
    y, x, h, w = (int(v) for v in np.asarray(window).reshape(-1))
    if min(y, x) < 0 or h <= 0 or w <= 0 or y + h > image.shape[0] or x + w > image.shape[1]:
        raise _k.CodecError(f"Invalid JPEG data or crop window: window [y={y}, x={x}, "
                            f"height={h}, width={w}] is not inside the "
                            f"{image.shape[0]}x{image.shape[1]} image.")
    return image[y:y + h, x:x + w]


@crop_op.kernel("CPU")
def _(contents: Any, crop_window: Any, *, channels: int, **attrs: Any) -> np.ndarray:
    return _run("DecodeAndCropJpeg", lambda: _crop(_data(contents), crop_window, channels,
                                                   attrs))


def decode_and_crop_jpeg(contents: Any, crop_window: Any, channels: int = 0, ratio: int = 1,
                         fancy_upscaling: bool = True, try_recover_truncated: bool = False,
                         acceptable_fraction: float = 1, dct_method: str = "",
                         name: str | None = None) -> Tensor:
    """`tf.image.decode_and_crop_jpeg`: decodes and crops `crop_window` = [y, x, height,
    width] (in the decoded image's pixels) out of a JPEG.

    Raises:
        InvalidArgumentError: (at run time) bad data, or a window outside the image.

    Example:
        >>> tf.image.decode_and_crop_jpeg(data, [10, 20, 64, 64], channels=3)  # [64, 64, 3]
    """
    attrs = _jpeg_attrs("DecodeAndCropJpeg", channels, ratio, fancy_upscaling,
                        try_recover_truncated, acceptable_fraction, dct_method)
    window = convert_to_tensor(crop_window, dtype=_dt.int32, name="crop_window")
    return create_tensor("DecodeAndCropJpeg", [_contents(contents), window],
                         attrs, name=name or "DecodeAndCropJpeg")


# ---- DecodePng ---------------------------------------------------------------------
decode_png_op = define_op("DecodePng", inputs=("contents",),
                          attrs={"channels": 0, "dtype": _dt.uint8})
decode_png_op.no_gradient()


@decode_png_op.shape
def _(contents: Tensor, *, channels: int, dtype: Any) -> Any:
    _scalar_contents(contents, "DecodePng")
    return dtype, _image_shape(channels)


@decode_png_op.kernel("CPU")
def _(contents: Any, *, channels: int, dtype: Any) -> np.ndarray:
    return _run("DecodePng", lambda: _k.decode_any(_data(contents), "DecodePng", channels,
                                                   _k.JpegDecodeFlags(), dtype.name))


def decode_png(contents: Any, channels: int = 0, dtype: Any = _dt.uint8,
               name: str | None = None) -> Tensor:
    """`tf.image.decode_png`: PNG bytes -> [height, width, channels] of uint8 or uint16.

    Args:
        contents: scalar string (JPEG and one-frame GIF also decode, as in TF 1.x).
        channels: 0 (the file's), 1 (gray), 3 (RGB) or 4 (RGBA).
        dtype: tf.uint8 or tf.uint16 (8-bit files are scaled by 257).
        name: the op's name.

    Example:
        >>> tf.image.decode_png(tf.read_file("mask.png"), channels=1)  # [h, w, 1]
    """
    _check_choice("DecodePng", "channels", channels, (0, 1, 3, 4))
    dt = _dt.as_dtype(dtype).base_dtype
    _check_choice("DecodePng", "dtype", dt.name, ("uint8", "uint16"))
    return create_tensor(
        "DecodePng", [_contents(contents)], {"channels": int(channels), "dtype": dt},
        name=name or "DecodePng")


# ---- DecodeGif ---------------------------------------------------------------------
decode_gif_op = define_op("DecodeGif", inputs=("contents",))
decode_gif_op.no_gradient()


@decode_gif_op.shape
def _(contents: Tensor) -> Any:
    _scalar_contents(contents, "DecodeGif")
    return _dt.uint8, TensorShape([None, None, None, 3])


@decode_gif_op.kernel("CPU")
def _(contents: Any) -> np.ndarray:
    return _run("DecodeGif", lambda: _k.decode_any(_data(contents), "DecodeGif", 3,
                                                   _k.JpegDecodeFlags()))


def decode_gif(contents: Any, name: str | None = None) -> Tensor:
    """`tf.image.decode_gif`: GIF bytes -> uint8 [frames, height, width, 3].

    Example:
        >>> frames = tf.image.decode_gif(tf.read_file("anim.gif"))  # [n, h, w, 3]
    """
    return create_tensor("DecodeGif", [_contents(contents)],
                         name=name or "DecodeGif")


# ---- DecodeBmp ---------------------------------------------------------------------
decode_bmp_op = define_op("DecodeBmp", inputs=("contents",), attrs={"channels": 0})
decode_bmp_op.no_gradient()


@decode_bmp_op.shape
def _(contents: Tensor, *, channels: int) -> Any:
    _scalar_contents(contents, "DecodeBmp")
    return _dt.uint8, _image_shape(channels)


@decode_bmp_op.kernel("CPU")
def _(contents: Any, *, channels: int) -> np.ndarray:
    return _run("DecodeBmp", lambda: _k.decode_bmp_bytes(_data(contents), channels))


def decode_bmp(contents: Any, channels: int = 0, name: str | None = None) -> Tensor:
    """`tf.image.decode_bmp`: BMP bytes -> uint8 [height, width, channels].

    Example:
        >>> tf.image.decode_bmp(tf.read_file("x.bmp"), channels=3)
    """
    _check_choice("DecodeBmp", "channels", channels, (0, 1, 3, 4))
    return create_tensor("DecodeBmp", [_contents(contents)],
                         {"channels": int(channels)},
                         name=name or "DecodeBmp")


# ---- ExtractJpegShape --------------------------------------------------------------
shape_op = define_op("ExtractJpegShape", inputs=("contents",),
                     attrs={"output_type": _dt.int32})
shape_op.no_gradient()


@shape_op.shape
def _(contents: Tensor, *, output_type: Any) -> Any:
    _scalar_contents(contents, "ExtractJpegShape")
    return output_type, TensorShape([3])


@shape_op.kernel("CPU")
def _(contents: Any, *, output_type: Any) -> np.ndarray:
    dims = _run("ExtractJpegShape", lambda: _k.jpeg_shape(_data(contents)))
    return np.asarray(dims, output_type.as_numpy_dtype)


def extract_jpeg_shape(contents: Any, output_type: Any = _dt.int32,
                       name: str | None = None) -> Tensor:
    """`tf.image.extract_jpeg_shape`: [height, width, channels] read from the header only.

    Example:
        >>> tf.image.extract_jpeg_shape(tf.read_file("cat.jpg"))  # e.g. [480, 640, 3]
    """
    dt = _dt.as_dtype(output_type).base_dtype
    _check_choice("ExtractJpegShape", "output_type", dt.name, ("int32", "int64"))
    return create_tensor("ExtractJpegShape", [_contents(contents)],
                         {"output_type": dt},
                         name=name or "ExtractJpegShape")
