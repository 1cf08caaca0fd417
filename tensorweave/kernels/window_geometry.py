"""Window geometry shared by the convolution and pooling kernels (NHWC).

Strides/ksize/dilations per spatial axis, output sizes and SAME padding as TF
computes them, NCHW <-> NHWC, and the stride-trick window view / tap scatter that
the vectorized kernels are built on.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterator, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tensorweave.framework.tensor_shape import TensorShape


def spatial(op_type: str, what: str, value: Any, data_format: str) -> tuple[int, int]:
    """(h, w) from an int, [h, w] or a 4-list in `data_format` order (batch/depth == 1)."""
    if isinstance(value, (int, np.integer)):
        return int(value), int(value)
    vals = [int(v) for v in value]
    if len(vals) == 1:
        return vals[0], vals[0]
    if len(vals) == 2:
        return vals[0], vals[1]
    if len(vals) != 4:
        raise ValueError(f"{op_type}: {what} must be an int or a list of 1, 2 or 4 ints, "
                         f"got {value!r}.")
    n, c = (vals[0], vals[1]) if data_format == "NCHW" else (vals[0], vals[3])
    if n != 1 or c != 1:
        raise ValueError(f"{op_type}: {what} {vals} ({data_format}) must be 1 in the batch and "
                         "channel dimensions; only spatial windows/strides are supported.")
    return (vals[2], vals[3]) if data_format == "NCHW" else (vals[1], vals[2])


def check_format(op_type: str, padding: str, data_format: str) -> None:
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"{op_type}: padding must be 'SAME' or 'VALID', got {padding!r}.")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{op_type}: data_format must be 'NHWC' or 'NCHW', got "
                         f"{data_format!r}.")


def out_size(op_type: str, size: int | None, k_eff: int, stride: int, padding: str
             ) -> int | None:
    """Output length of one spatial dimension (None if `size` is unknown)."""
    if stride < 1:
        raise ValueError(f"{op_type}: strides must be >= 1, got {stride}.")
    if size is None:
        return None
    if padding == "SAME":
        return (size + stride - 1) // stride
    out = (size - k_eff + stride) // stride
    if out < 0 or size < k_eff:
        raise ValueError(f"{op_type}: with VALID padding the window ({k_eff}) is larger than "
                         f"the input ({size}); the output size would be negative. Use SAME "
                         "padding or a smaller window.")
    return out


def known_out_size(op_type: str, size: int, k_eff: int, stride: int, padding: str) -> int:
    """`out_size` in a kernel, where the input size is known (so is the output's)."""
    out = out_size(op_type, size, k_eff, stride, padding)
    assert out is not None
    return out


def pads(size: int, out: int, k_eff: int, stride: int, padding: str) -> tuple[int, int]:
    """(before, after) padding; SAME puts the odd extra element after, as TF does."""
    if padding == "VALID":
        return 0, 0
    total = max((out - 1) * stride + k_eff - size, 0)
    return total // 2, total - total // 2


def to_nhwc(x: np.ndarray, data_format: str) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if data_format == "NCHW" else x


def from_nhwc(x: np.ndarray, data_format: str) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if data_format == "NCHW" else x


def nhwc_dims(shape: TensorShape, data_format: str) -> list[int | None]:
    d = shape.as_list()
    return [d[0], d[2], d[3], d[1]] if data_format == "NCHW" else d


def from_nhwc_dims(d: Sequence[int | None], data_format: str) -> TensorShape:
    return TensorShape([d[0], d[3], d[1], d[2]] if data_format == "NCHW" else list(d))


def windows(xp: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int,
            oh: int, ow: int) -> np.ndarray:
    """Read-only view [N, OH, OW, KH, KW, C] of the padded NHWC input's windows."""
    return windows_nd(xp, (kh, kw), (sh, sw), (dh, dw), (oh, ow))


def windows_nd(xp: np.ndarray, k: Sequence[int], s: Sequence[int], d: Sequence[int],
               out: Sequence[int]) -> np.ndarray:
    """Read-only view [N, *out, *k, C] of a padded channels-last input's windows.

    Any number of spatial axes (2 for conv2d/pools, 3 for conv3d/pool3d); no copy.
    """
    st = xp.strides
    sp = st[1:-1]
    return as_strided(xp, (xp.shape[0], *out, *k, xp.shape[-1]),
                      (st[0], *(a * b for a, b in zip(sp, s)),
                       *(a * b for a, b in zip(sp, d)), st[-1]), writeable=False)


def taps(k: Sequence[int], s: Sequence[int], d: Sequence[int], out: Sequence[int]
         ) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """(tap, index) per filter tap, row-major: `xp[index]` is that tap's input for
    every output position, [N, *out, C] (a strided view of the padded input)."""
    for tap in itertools.product(*(range(n) for n in k)):
        yield tap, (slice(None),) + tuple(
            slice(t * dd, t * dd + ss * (o - 1) + 1, ss) for t, ss, dd, o in zip(tap, s, d, out))


def scatter_taps(cols: np.ndarray, padded_shape: tuple[int, ...], sh: int, sw: int, dh: int,
                 dw: int) -> np.ndarray:
    """Adds cols [N, OH, OW, KH, KW, C] back into a zero array of `padded_shape` (col2im)."""
    return scatter_taps_nd(cols, padded_shape, (sh, sw), (dh, dw))


def scatter_taps_nd(cols: np.ndarray, padded_shape: tuple[int, ...], s: Sequence[int],
                    d: Sequence[int]) -> np.ndarray:
    """col2im for any number of spatial axes: cols [N, *out, *k, C] -> `padded_shape`.

    One vectorized add per filter tap, never a loop over output positions.
    """
    r = len(s)
    out_sz, k = cols.shape[1:1 + r], cols.shape[1 + r:1 + 2 * r]
    acc = np.zeros(padded_shape, dtype=cols.dtype)
    for tap, index in taps(k, s, d, out_sz):
        acc[index] += cols[(slice(None),) * (1 + r) + tap]
    return acc


class WindowGeom:
    """One call's window geometry over any number of spatial axes, channels last.

    Used by the 3-D conv and pool kernels: sizes, TF's SAME/VALID padding, output
    sizes, and the window view / col2im scatter over the padded input.
    """

    def __init__(self, op_type: str, x_shape: Sequence[int], k: Sequence[int],
                 s: Sequence[int], d: Sequence[int], padding: str) -> None:
        self.n, self.c = int(x_shape[0]), int(x_shape[-1])
        self.size = [int(v) for v in x_shape[1:-1]]
        self.k, self.s, self.d = [int(v) for v in k], [int(v) for v in s], [int(v) for v in d]
        eff = [(kk - 1) * dd + 1 for kk, dd in zip(self.k, self.d)]
        self.out = [known_out_size(op_type, z, e, st, padding)
                    for z, e, st in zip(self.size, eff, self.s)]
        self.pads = [pads(z, o, e, st, padding)
                     for z, o, e, st in zip(self.size, self.out, eff, self.s)]

    @property
    def padded_shape(self) -> tuple[int, ...]:
        return (self.n, *(z + a + b for z, (a, b) in zip(self.size, self.pads)), self.c)

    def pad(self, x: np.ndarray, fill: float = 0) -> np.ndarray:
        if not any(a or b for a, b in self.pads):
            return x
        return np.pad(x, [(0, 0), *self.pads, (0, 0)], constant_values=fill)

    def windows(self, x: np.ndarray, fill: float = 0) -> np.ndarray:
        """[N, *out, *k, C] view of the windows of x padded with `fill`."""
        return windows_nd(self.pad(x, fill), self.k, self.s, self.d, self.out)

    def taps(self) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
        return taps(self.k, self.s, self.d, self.out)

    def crop(self, xp: np.ndarray) -> np.ndarray:
        index = tuple(slice(a, a + z) for z, (a, _) in zip(self.size, self.pads))
        return np.ascontiguousarray(xp[(slice(None), *index)])

    def scatter(self, cols: np.ndarray) -> np.ndarray:
        """col2im: adds cols [N, *out, *k, C] back into the (unpadded) input's shape."""
        return self.crop(scatter_taps_nd(cols, self.padded_shape, self.s, self.d))
