"""Summary ops: each outputs a serialized `Summary` protobuf (a tf.string scalar), as TF's.

The protos (tensorweave/framework/proto/summary.proto) use TensorFlow's field
numbers, so `tf.summary.FileWriter` event files open in TensorBoard.

Example:
    >>> s = tf.summary.scalar("loss", loss)       # a string tensor
    >>> writer.add_summary(sess.run(s), global_step=step)
"""
from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np

from tensorweave.framework.text import text_of
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.op_author import define_op
from tensorweave.framework.proto import summary_pb2
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.framework.graph_io import tensor_proto_of


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


def _out(summary: Any) -> np.ndarray:
    return np.asarray(summary.SerializeToString(), dtype=object)


def _string_scalar(*_: Any, **__: Any) -> Any:
    return _dt.string, TensorShape([])


def _check_string(t: Tensor, what: str) -> None:
    if t.dtype.base_dtype != _dt.string:
        raise TypeError(f"{what} must be tf.string tensors (serialized Summary protos); "
                        f"{t.name} is {t.dtype.name}")


# ---- ScalarSummary ---------------------------------------------------------------
scalar_op = define_op("ScalarSummary", inputs=("tags", "values"))
scalar_op.shape(_string_scalar)


@scalar_op.kernel("CPU")
def _(tags: np.ndarray, values: np.ndarray) -> np.ndarray:
    tags, values = np.asarray(tags, dtype=object), np.asarray(values)
    if tags.shape != values.shape:
        raise _invalid(f"ScalarSummary: tags and values must have the same shape; got "
                       f"tags {list(tags.shape)} and values {list(values.shape)}")
    if values.dtype.kind not in "biuf":
        raise _invalid(f"ScalarSummary needs a real number, got dtype {values.dtype}")
    s = summary_pb2.Summary()
    for t, v in zip(tags.reshape(-1), values.reshape(-1)):
        s.value.add(tag=text_of(t), simple_value=float(v))
    return _out(s)


scalar_op.no_gradient()


# ---- HistogramSummary ------------------------------------------------------------
def _default_limits() -> np.ndarray:
    # TF's bucket limits: exponential (ratio 1.1) from 1e-12 to 1e20, mirrored for
    # negatives, with 0 and +-DBL_MAX, so relative resolution is ~10% at every magnitude.
    pos = [1e-12]
    while pos[-1] * 1.1 < 1e20:
        pos.append(pos[-1] * 1.1)
    big = float(np.finfo(np.float64).max)
    return np.array([-big] + [-p for p in reversed(pos)] + [0.0] + pos + [big])


_LIMITS = _default_limits()


def histogram_proto(values: np.ndarray) -> Any:
    """A HistogramProto of `values` (non-finite values rejected), encoded as TF encodes it.

    Bucket i holds the values in [limit[i-1], limit[i]); each run of empty buckets is
    written as one empty bucket at the run's last limit, so the proto starts and ends
    with the empty runs around the data (an empty histogram is one empty bucket at
    DBL_MAX, with min DBL_MAX and max -DBL_MAX).
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(v)):
        raise _invalid("Nan or Inf in summary histogram values; check the tensor "
                       "(e.g. with tf.debugging) before summarizing it.")
    big = float(_LIMITS[-1])
    h = summary_pb2.HistogramProto(num=v.size, sum=float(v.sum()),
                                   sum_squares=float(np.dot(v, v)),
                                   min=float(v.min()) if v.size else big,
                                   max=float(v.max()) if v.size else -big)
    index = np.minimum(np.searchsorted(_LIMITS, v, side="right"), _LIMITS.size - 1)
    counts = np.bincount(index, minlength=_LIMITS.size)
    # A bucket is written if it holds values, or if it ends a run of empty ones.
    keep = (counts > 0) | np.append(counts[1:] > 0, True)
    h.bucket_limit.extend(_LIMITS[keep].tolist())
    h.bucket.extend(counts[keep].astype(np.float64).tolist())
    return h


histogram_op = define_op("HistogramSummary", inputs=("tag", "values"))
histogram_op.shape(_string_scalar)


@histogram_op.kernel("CPU")
def _(tag: np.ndarray, values: np.ndarray) -> np.ndarray:
    s = summary_pb2.Summary()
    s.value.add(tag=text_of(tag), histo=histogram_proto(values))
    return _out(s)


histogram_op.no_gradient()


# ---- TensorSummaryV2 (text and other plugin data) --------------------------------
tensor_op = define_op("TensorSummaryV2", inputs=("tag", "tensor", "serialized_summary_metadata"))
tensor_op.shape(_string_scalar)


@tensor_op.kernel("CPU")
def _(tag: np.ndarray, tensor: np.ndarray, serialized_summary_metadata: np.ndarray
      ) -> np.ndarray:
    s = summary_pb2.Summary()
    meta = summary_pb2.SummaryMetadata.FromString(
        np.asarray(serialized_summary_metadata, dtype=object).item())
    s.value.add(tag=text_of(tag), metadata=meta, tensor=tensor_proto_of(tensor))
    return _out(s)


tensor_op.no_gradient()


# ---- ImageSummary ----------------------------------------------------------------
def encode_png(image: np.ndarray) -> bytes:
    """A minimal PNG (8-bit gray, gray+alpha, RGB or RGBA) of an [h, w, c] uint8 array."""
    h, w, c = image.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + image[y].tobytes() for y in range(h))  # filter 0 per row

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


_BAD_COLOR = np.array([255, 0, 0, 255], np.uint8)  # TF's default: opaque red


def _float_image_to_uint8(image: np.ndarray) -> np.ndarray:
    """One [h, w, c] float image as uint8, as TF scales it: by 255/max when no finite
    value is negative, else by 127/max|x| around 128 (min and max over the pixels whose
    channels are all finite); a pixel with a NaN or Inf channel is drawn opaque red."""
    work = image.dtype if image.dtype.kind == "f" else np.dtype(np.float32)
    x = image.astype(work)
    finite = np.all(np.isfinite(x), axis=-1)
    seen = x[finite]
    lo = seen.min() if seen.size else work.type(0)
    hi = seen.max() if seen.size else work.type(0)
    tiny = 1e-6  # below this the image is treated as all zeros
    if lo < 0:
        top = max(abs(lo), abs(hi))
        scale, offset = (work.type(0) if top < tiny else work.type(127.0) / top), 128.0
    else:
        scale, offset = (work.type(0) if hi < tiny else work.type(255.0) / hi), 0.0
    with np.errstate(invalid="ignore"):
        scaled = x * work.type(scale) + work.type(offset)
    out = np.trunc(np.clip(np.nan_to_num(scaled), 0, 255)).astype(np.uint8)
    out[~finite] = _BAD_COLOR[:image.shape[-1]]
    return out


image_op = define_op("ImageSummary", inputs=("tag", "tensor"), attrs={"max_images": 3})
image_op.shape(_string_scalar)


@image_op.kernel("CPU")
def _(tag: np.ndarray, tensor: np.ndarray, *, max_images: int) -> np.ndarray:
    t = np.asarray(tensor)
    if t.ndim != 4 or t.shape[-1] not in (1, 2, 3, 4):
        raise _invalid(f"ImageSummary needs a [batch, height, width, channels] tensor with 1, "
                       f"3 or 4 channels; got shape {list(t.shape)}")
    n = min(max_images, t.shape[0])
    if t.dtype != np.uint8:
        t = np.stack([_float_image_to_uint8(t[i]) for i in range(n)]) if n else t[:0]
    s, name = summary_pb2.Summary(), text_of(tag)
    for i in range(n):
        s.value.add(tag=f"{name}/image/{i}" if max_images > 1 else f"{name}/image",
                    image=summary_pb2.Summary.Image(
                        height=t.shape[1], width=t.shape[2], colorspace=t.shape[3],
                        encoded_image_string=encode_png(np.ascontiguousarray(t[i]))))
    return _out(s)


image_op.no_gradient()


# ---- MergeSummary ----------------------------------------------------------------
# ---- AudioSummaryV2 --------------------------------------------------------------
def encode_wav(samples: np.ndarray, sample_rate: float) -> bytes:
    """[frames, channels] floats as a 16-bit PCM WAV file, as TF encodes it: each sample
    times 32768, rounded, clamped to int16; the header's rate is the integer part."""
    frames, channels = samples.shape
    pcm = np.clip(np.round(samples.astype(np.float64) * 32768.0), -32768, 32767)
    data = pcm.astype("<i2").tobytes()
    rate = int(sample_rate)
    header = (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt "
              + struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * channels * 2,
                            channels * 2, 16)
              + b"data" + struct.pack("<I", len(data)))
    return header + data


audio_op = define_op("AudioSummaryV2", inputs=("tag", "tensor", "sample_rate"),
                     attrs={"max_outputs": 3})
audio_op.shape(_string_scalar)


@audio_op.kernel("CPU")
def _(tag: np.ndarray, tensor: np.ndarray, sample_rate: np.ndarray, *,
      max_outputs: int) -> np.ndarray:
    t = np.asarray(tensor)
    if t.ndim not in (2, 3):
        raise _invalid(f"AudioSummary needs a [batch, frames] or [batch, frames, channels] "
                       f"tensor; got shape {list(t.shape)}")
    if np.ndim(sample_rate) != 0:
        raise _invalid(f"AudioSummary: sample_rate must be a scalar; got shape "
                       f"{list(np.shape(sample_rate))}")
    rate = float(sample_rate)
    t = t.reshape(t.shape + (1,)) if t.ndim == 2 else t
    s, name = summary_pb2.Summary(), text_of(tag)
    for i in range(min(max_outputs, t.shape[0])):
        s.value.add(tag=f"{name}/audio/{i}" if max_outputs > 1 else f"{name}/audio",
                    audio=summary_pb2.Summary.Audio(
                        sample_rate=rate, num_channels=t.shape[2], length_frames=t.shape[1],
                        content_type="audio/wav", encoded_audio_string=encode_wav(t[i], rate)))
    return _out(s)


audio_op.no_gradient()


merge_op = define_op("MergeSummary", inputs=("inputs*",))


@merge_op.shape
def _(inputs: list[Tensor]) -> Any:
    for t in inputs:
        _check_string(t, "MergeSummary inputs")
    return _dt.string, TensorShape([])


@merge_op.kernel("CPU")
def _(inputs: list[np.ndarray]) -> np.ndarray:
    out, seen = summary_pb2.Summary(), set()
    for blob in inputs:
        for b in np.asarray(blob, dtype=object).reshape(-1):
            for v in summary_pb2.Summary.FromString(bytes(b)).value:
                if v.tag in seen:
                    raise _invalid(f"Duplicate tag {v.tag!r} found in summary inputs of "
                                   "MergeSummary; give the summaries distinct names.")
                seen.add(v.tag)
                out.value.append(v)
    return _out(out)


merge_op.no_gradient()


__all__ = ["encode_png", "encode_wav", "histogram_proto"]
