"""The numpy/Pillow side of the image codec ops: bytes in, uint8/uint16 arrays out
(and back). No graph code here; `codec_ops` wraps each function in an op kernel.

Pillow (libjpeg-turbo, zlib, its own GIF/BMP readers) does the entropy coding. What
TF's kernels add on top of the libraries is reproduced here: TF 1.x's format
sniffing (DecodeJpeg/DecodePng/DecodeGif each decode any of JPEG, PNG and GIF),
libpng's channel conversions (its RGB-to-gray weights, not Pillow's), TF's JFIF
density header, and TF's messages.

JPEG decoding and TF's `dct_method` / `fancy_upscaling`: TF's default DCT is IFAST
with fancy (smooth) chroma upsampling; Pillow offers ISLOW + fancy (its normal path)
or IFAST + replicated chroma (its "draft" path). The choice below is the one that
matches TF exactly where TF's setting makes a difference the other cannot:
replicated vs smooth chroma changes pixels by tens of levels on sharp colour edges,
IFAST vs ISLOW by at most a few. Measured against TF 2.21 (same libjpeg-turbo):
exact for `INTEGER_ACCURATE` with fancy upsampling, for `fancy_upscaling=False` with
the default/`INTEGER_FAST` DCT, for grayscale and 4:4:4 images whatever the flags,
and for ratio >= the chroma subsampling; within 3 levels otherwise (TF's default
flags on 4:2:0 colour images; `INTEGER_ACCURATE` without fancy upsampling).

Example:
    >>> data = encode_jpeg_bytes(np.zeros((8, 8, 3), np.uint8), JpegEncodeFlags())
    >>> decode_any(data, "DecodeJpeg", 0, JpegDecodeFlags()).shape
    (8, 8, 3)
"""
from __future__ import annotations

import io
import struct
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorweave.kernels import png16

def _pil() -> Any:
    """Pillow, imported on the first image decoded or encoded (its import is ~9 ms of
    every process's start, and most processes never touch an image)."""
    import PIL.Image
    import PIL.ImageSequence
    return PIL


def _pil_image(image: np.ndarray) -> Any:
    """A [height, width, channels] array as a Pillow image (one channel: grayscale)."""
    return _pil().Image.fromarray(
        np.ascontiguousarray(image[..., 0] if image.shape[-1] == 1 else image))


__all__ = ["CodecError", "JpegDecodeFlags", "JpegEncodeFlags", "sniff", "decode_any",
           "decode_bmp_bytes", "encode_jpeg_bytes", "encode_png_bytes", "jpeg_shape"]

JPEG, PNG, GIF, BMP = "JPEG", "PNG", "GIF", "BMP"


class CodecError(ValueError):
    """Bad image data or arguments; the op kernel re-raises it as InvalidArgumentError."""


@dataclass(frozen=True)
class JpegDecodeFlags:
    """DecodeJpeg's attrs (TF's defaults)."""
    ratio: int = 1
    fancy_upscaling: bool = True
    try_recover_truncated: bool = False
    acceptable_fraction: float = 1.0
    dct_method: str = ""


@dataclass(frozen=True)
class JpegEncodeFlags:
    """EncodeJpeg's attrs (TF's defaults)."""
    format: str = ""
    quality: int = 95
    progressive: bool = False
    optimize_size: bool = False
    chroma_downsampling: bool = True
    density_unit: str = "in"
    x_density: int = 300
    y_density: int = 300
    xmp_metadata: str = ""


def sniff(data: bytes) -> str | None:
    """The format named by the first bytes (TF's magic numbers), or None."""
    if data.startswith(b"\xff\xd8\xff"):
        return JPEG
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if data.startswith(b"GIF8"):
        return GIF
    if data.startswith(b"BM"):
        return BMP
    return None


def describe(data: bytes) -> str:
    """'JPEG', 'empty file' or "unknown format starting with '...'" as TF words it."""
    fmt = sniff(data)
    if fmt:
        return fmt
    return "empty file" if not data else f"unknown format starting with {data[:16]!r}"


def _open(data: bytes, what: str) -> Any:
    try:
        with warnings.catch_warnings():  # DecompressionBombWarning: TF has no such limit
            warnings.simplefilter("ignore")
            return _pil().Image.open(io.BytesIO(data))
    except Exception as e:  # noqa: BLE001  (Pillow raises several kinds)
        why = "its header is not readable" if "identify" in str(e) else str(e)
        detail = "Invalid JPEG data or crop window" if what == JPEG else f"Invalid {what} data"
        raise CodecError(f"{detail}, data size {len(data)}: {why}.") from None


def _load(im: Any, what: str, size: int) -> None:
    try:
        im.load()
    except Exception as e:  # noqa: BLE001
        detail = "Invalid JPEG data or crop window" if what == JPEG else f"Invalid {what} data"
        raise CodecError(f"{detail}, data size {size}: {e}") from None


# ---- JPEG --------------------------------------------------------------------------
def _chroma_upsampled(im: Any, channels: int, ratio: int) -> bool:
    """Whether decoding this image to `channels` interpolates subsampled chroma."""
    layers = getattr(im, "layer", None) or []
    if channels == 1 or len(layers) < 3:
        return False
    return max(max(h, v) for _, h, v, _ in layers) > ratio


def decode_jpeg_bytes(data: bytes, channels: int, flags: JpegDecodeFlags) -> np.ndarray:
    """JPEG bytes -> uint8 [height, width, channels] (channels 0: the file's, 1 or 3)."""
    if flags.try_recover_truncated and not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        data = data + b"\xff\xd9"  # TF's recovery: a fake end-of-image marker
    im = _open(data, JPEG)
    mode = {1: "L", 3: "RGB"}.get(channels) or ("L" if im.mode == "L" else "RGB")
    if flags.ratio > 1 or mode != im.mode:
        size = (max(1, im.size[0] // flags.ratio), max(1, im.size[1] // flags.ratio))
        im.draft(mode if mode == "L" else None, size if flags.ratio > 1 else None)
    fast = flags.dct_method != "INTEGER_ACCURATE"
    if _chroma_upsampled(im, channels or 3, flags.ratio):
        draft = not flags.fancy_upscaling  # the upsampling decides; see module docstring
    else:
        draft = fast
    im.decoderconfig = (flags.ratio, int(draft))
    _load(im, JPEG, len(data))
    if im.mode != mode:
        im = im.convert(mode)  # CMYK -> RGB; L -> RGB replicates, as libjpeg does
    out = np.asarray(im, np.uint8)
    return out[..., None] if out.ndim == 2 else out


def jpeg_shape(data: bytes) -> list[int]:
    """[height, width, channels] from a JPEG header, without decoding."""
    if sniff(data) != JPEG:
        raise CodecError(f"Invalid JPEG data, size {len(data)}: not a JPEG ({describe(data)}).")
    im = _open(data, JPEG)
    return [im.size[1], im.size[0], 1 if im.mode == "L" else 3]


# ---- PNG ---------------------------------------------------------------------------
# TF asks libpng for 0.299 R + 0.587 G (+ the rest B); libpng keeps them as these
# 15-bit fixed-point weights and truncates (checked against TF 2.21: exact).
_GRAY_WEIGHTS = (9797, 19234, 3737)


def _png_array(im: Any) -> np.ndarray:
    """The PNG's samples at their own depth: uint8 or uint16, [h, w, c]."""
    if im.mode in ("I;16", "I;16B", "I"):
        return np.asarray(im, np.int32).astype(np.uint16)[..., None]
    if im.mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
    elif im.mode == "1":
        im = im.convert("L")
    elif im.mode not in ("L", "LA", "RGB", "RGBA"):
        im = im.convert("RGBA")
    a = np.asarray(im, np.uint8)
    return a[..., None] if a.ndim == 2 else a


def _to_gray(rgb: np.ndarray) -> np.ndarray:
    w = np.asarray(_GRAY_WEIGHTS, np.int64)
    return ((rgb[..., :3].astype(np.int64) * w).sum(-1) >> 15).astype(rgb.dtype)[..., None]


def convert_channels(a: np.ndarray, channels: int) -> np.ndarray:
    """libpng's conversions between 1 (gray), 2 (gray+alpha), 3 (RGB) and 4 (RGBA)."""
    have = a.shape[-1]
    if channels in (0, have):
        return a
    top = np.iinfo(a.dtype).max
    color = a[..., :3] if have >= 3 else np.repeat(a[..., :1], 3, -1)
    alpha = a[..., -1:] if have in (2, 4) else np.full(a.shape[:-1] + (1,), top, a.dtype)
    if channels == 1:
        return _to_gray(color) if have >= 3 else a[..., :1]
    if channels == 2:
        return np.concatenate([_to_gray(color) if have >= 3 else a[..., :1], alpha], -1)
    return color if channels == 3 else np.concatenate([color, alpha], -1)


def decode_png_bytes(data: bytes, channels: int, dtype: str) -> np.ndarray:
    """PNG bytes -> [height, width, channels] of `dtype` ('uint8' or 'uint16')."""
    im = _open(data, PNG)
    if dtype == "uint16" and im.mode in ("RGB", "RGBA", "LA") and png16.is_16bit(data):
        try:  # Pillow keeps only the high bytes of 16-bit colour
            a = png16.decode(data)
        except ValueError as e:
            raise CodecError(f"{e} (data size {len(data)})") from None
    else:
        _load(im, PNG, len(data))
        a = _png_array(im)
    if a.dtype == np.uint16 and dtype == "uint8":
        a = (a >> 8).astype(np.uint8)  # libpng's png_set_strip_16
    elif a.dtype == np.uint8 and dtype == "uint16":
        a = a.astype(np.uint16) * 257
    return convert_channels(a, channels)


# ---- GIF and BMP -------------------------------------------------------------------
def decode_gif_bytes(data: bytes) -> np.ndarray:
    """GIF bytes -> uint8 [frames, height, width, 3], each frame composed on the last."""
    im = _open(data, GIF)
    try:
        frames = [np.asarray(f.convert("RGB"), np.uint8) for f in _pil().ImageSequence.Iterator(im)]
    except Exception as e:  # noqa: BLE001
        raise CodecError(f"Invalid GIF data, size {len(data)}: {e}") from None
    return np.stack(frames)


def decode_bmp_bytes(data: bytes, channels: int) -> np.ndarray:
    """BMP bytes -> uint8 [height, width, channels] (0: the file's 1, 3 or 4)."""
    if sniff(data) != BMP:
        raise CodecError(f"Trying to decode {describe(data)} with DecodeBmp; use "
                         "decode_image or the format's own decode op.")
    im = _open(data, BMP)
    _load(im, BMP, len(data))
    return convert_channels(_png_array(im), channels)


def decode_any(data: bytes, op: str, channels: int, jpeg: JpegDecodeFlags,
               png_dtype: str = "uint8") -> np.ndarray:
    """TF 1.x's DecodeJpeg/DecodePng/DecodeGif kernel: sniffs JPEG, PNG or GIF (any of
    the three ops decodes any of them); DecodeGif's result is 4-D, the others' 3-D."""
    fmt = sniff(data)
    if fmt not in (JPEG, PNG, GIF):
        raise CodecError(f"Expected image (JPEG, PNG, or GIF), got {describe(data)}.")
    if png_dtype == "uint16" and fmt != PNG:
        raise CodecError(f"{fmt} does not support uint16 output.")
    if fmt == JPEG:
        if channels not in (0, 1, 3):
            raise CodecError(f"channels must be 0, 1, or 3 for JPEG, got {channels}.")
        out = decode_jpeg_bytes(data, channels, jpeg)
    elif fmt == PNG:
        out = decode_png_bytes(data, channels, png_dtype)
    else:
        if channels not in (0, 3):
            raise CodecError(f"channels must be 0 or 3 for GIF, got {channels}.")
        frames = decode_gif_bytes(data)
        if op == "DecodeGif":
            return frames
        if len(frames) != 1:
            raise CodecError(f"Got {len(frames)} frames, but animated gifs can only be "
                             "decoded by tf.image.decode_gif or tf.image.decode_image.")
        return frames[0]
    return out[None] if op == "DecodeGif" else out


# ---- encoders ----------------------------------------------------------------------
def _check_image(image: np.ndarray, op: str, allowed: tuple[int, ...]) -> None:
    if image.ndim != 3:
        raise CodecError(f"{op}: image must be 3-dimensional [height, width, channels], "
                         f"got shape {list(image.shape)}.")
    if image.shape[-1] not in allowed:
        raise CodecError(f"{op}: image must have {' or '.join(map(str, allowed))} channels, "
                         f"got shape {list(image.shape)}.")


def _jfif_density(data: bytes, flags: JpegEncodeFlags) -> bytes:
    """Writes TF's JFIF density (unit in/cm, x, y) into the APP0 header Pillow made."""
    if data[6:11] != b"JFIF\x00":
        return data
    unit = {"in": 1, "cm": 2}[flags.density_unit]
    return data[:13] + struct.pack(">BHH", unit, flags.x_density, flags.y_density) + data[18:]


def encode_jpeg_bytes(image: np.ndarray, flags: JpegEncodeFlags) -> bytes:
    """uint8 [height, width, 1 or 3] -> JPEG bytes, with EncodeJpeg's attrs."""
    want = {"grayscale": (1,), "rgb": (3,)}.get(flags.format, (1, 3))
    _check_image(image, "EncodeJpeg", want)
    if flags.density_unit not in ("in", "cm"):
        raise CodecError(f"EncodeJpeg: density_unit must be 'in' or 'cm', got "
                         f"{flags.density_unit!r}.")
    im = _pil_image(image)
    kw: dict[str, Any] = {"quality": int(flags.quality), "progressive": flags.progressive,
                          "optimize": flags.optimize_size,
                          "subsampling": 2 if flags.chroma_downsampling else 0}
    if flags.xmp_metadata:
        kw["xmp"] = flags.xmp_metadata.encode()
    buf = io.BytesIO()
    im.save(buf, "JPEG", **kw)
    return _jfif_density(buf.getvalue(), flags)


def encode_png_bytes(image: np.ndarray, compression: int) -> bytes:
    """uint8/uint16 [height, width, 1..4] -> PNG bytes (compression -1: zlib's default).
    The bytes may differ from TF's (libpng picks its row filters differently); the
    pixels round-trip exactly."""
    _check_image(image, "EncodePng", (1, 2, 3, 4))
    if image.dtype == np.uint16:
        return png16.encode(image, 6 if compression < 0 else int(compression))
    im = _pil_image(image)
    buf = io.BytesIO()
    im.save(buf, "PNG", compress_level=6 if compression < 0 else int(compression))
    return buf.getvalue()
