"""16-bit colour PNGs (gray+alpha, RGB, RGBA at 16 bits a sample), which Pillow can
neither hold nor write: a small reader and writer for `decode_png(dtype=tf.uint16)`
and `encode_png` of uint16 images. Interlaced (Adam7) files are not read here.

Example:
    >>> img = np.arange(24, dtype=np.uint16).reshape(2, 4, 3) * 1000
    >>> (decode(encode(img, 6)) == img).all()
    True
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["decode", "encode", "is_16bit"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples a pixel


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    out, pos = [], len(_SIGNATURE)
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        out.append((kind, data[pos + 8:pos + 8 + n]))
        pos += 12 + n
        if kind == b"IEND":
            break
    return out


def is_16bit(data: bytes) -> bool:
    """Whether the PNG's IHDR says 16 bits a sample."""
    return len(data) > 24 and data[12:16] == b"IHDR" and data[24] == 16


def _unfilter(raw: np.ndarray, h: int, stride: int, bpp: int) -> np.ndarray:
    """Undoes PNG's per-row filters (None, Sub, Up, Average, Paeth) on bytes."""
    out = np.zeros((h, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        kind, row = raw[y, 0], raw[y, 1:].astype(np.int32)
        if kind == 0:
            cur = row
        elif kind == 1:  # Sub: a running sum along each byte lane
            cur = np.cumsum(row.reshape(-1, bpp), 0).reshape(-1) & 0xFF
        elif kind == 2:
            cur = (row + prev) & 0xFF
        elif kind in (3, 4):
            cur = np.zeros(stride, np.int32)
            for x in range(0, stride, bpp):  # sequential: each pixel needs its left one
                a = cur[x - bpp:x] if x else np.zeros(bpp, np.int32)
                b, c = prev[x:x + bpp], (prev[x - bpp:x] if x else np.zeros(bpp, np.int32))
                if kind == 3:
                    pred = (a + b) >> 1
                else:
                    p = a + b - c
                    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
                    pred = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
                cur[x:x + bpp] = (row[x:x + bpp] + pred) & 0xFF
        else:
            raise ValueError(f"Invalid PNG data: unknown filter type {kind} in row {y}.")
        out[y] = prev = cur
    return out.astype(np.uint8)


def decode(data: bytes) -> np.ndarray:
    """A 16-bit PNG's samples, uint16 [height, width, channels].

    Raises:
        ValueError: not a 16-bit non-interlaced PNG, or corrupt.
    """
    chunks = _chunks(data)
    if not chunks or chunks[0][0] != b"IHDR":
        raise ValueError("Invalid PNG data: no IHDR chunk.")
    w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if depth != 16 or ctype not in _CHANNELS or interlace:
        raise ValueError(f"PNG of depth {depth}, colour type {ctype}, interlace {interlace} "
                         "is not a 16-bit non-interlaced gray/colour PNG.")
    c = _CHANNELS[ctype]
    try:
        raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    except zlib.error as e:
        raise ValueError(f"Invalid PNG data: {e}") from None
    stride = w * c * 2
    if len(raw) < h * (stride + 1):
        raise ValueError(f"Invalid PNG data: {len(raw)} bytes of pixels, need "
                         f"{h * (stride + 1)}.")
    rows = np.frombuffer(raw, np.uint8, h * (stride + 1)).reshape(h, stride + 1)
    pixels = _unfilter(rows, h, stride, c * 2)
    return pixels.view(">u2").reshape(h, w, c).astype(np.uint16)


def encode(image: np.ndarray, level: int) -> bytes:
    """uint16 [height, width, 1..4] -> a 16-bit PNG (rows unfiltered, zlib `level`)."""
    h, w, c = image.shape
    rows = np.ascontiguousarray(image.astype(">u2")).reshape(h, w * c).view(np.uint8)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rows], 1).tobytes()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    ctype = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    ihdr = struct.pack(">IIBBBBB", w, h, 16, ctype, 0, 0, 0)
    return (_SIGNATURE + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, level))
            + chunk(b"IEND", b""))
