"""TF 0.x's summary functions, still in TF 1.15's `logging_ops`: explicit tags, no scopes.

Old programs call `scalar_summary(tags, values)` with the tags themselves (any
string, a tensor of them for several values at once), `merge_all_summaries()`
and `get_summary_op()`. Each builds the same ops as `tf.summary.*`; the tag is
taken as given rather than made from the name scope.

Example:
    >>> from tensorweave.python.ops import logging_ops
    >>> logging_ops.scalar_summary(["loss", "acc"], tf.stack([loss, acc]))
    >>> merged = logging_ops.merge_all_summaries()
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.summary.summary import merge


def _legacy(op_type: str, default_name: str, tag: Any, value: Any, name: str | None,
            collections: Any, attrs: dict[str, Any] | None = None,
            sample_rate: Any = None) -> Tensor:
    g = get_default_graph()
    with g.name_scope(name or default_name) as scope:
        inputs = [convert_to_tensor(tag, dtype=_dt.string), convert_to_tensor(value)]
        if sample_rate is not None:
            inputs.append(convert_to_tensor(sample_rate, dtype=_dt.float32, name="sample_rate"))
        out = g.create_op(op_type, inputs, attrs or {}, name=scope).outputs[0]
    g.add_to_collections([GraphKeys.SUMMARIES] if collections is None
                         else list(collections), out)
    return out


def scalar_summary(tags: Any, values: Any, collections: Any = None,
                   name: str | None = None) -> Tensor:
    """A Summary with one simple_value per element of `values`, tagged by the same
    element of `tags` (same shape).

    Example:
        >>> scalar_summary("loss", loss)
    """
    return _legacy("ScalarSummary", "ScalarSummary", tags, values, name, collections)


def histogram_summary(tag: Any, values: Any, collections: Any = None,
                      name: str | None = None) -> Tensor:
    """A Summary with a histogram of `values` under `tag`.

    Example:
        >>> histogram_summary("weights", w)
    """
    return _legacy("HistogramSummary", "HistogramSummary", tag, values, name, collections)


def image_summary(tag: Any, tensor: Any, max_images: int = 3, collections: Any = None,
                  name: str | None = None) -> Tensor:
    """A Summary with up to `max_images` PNG images of a [batch, h, w, c] tensor, tagged
    `tag/image/0`, `tag/image/1`, ...

    Example:
        >>> image_summary("inputs", images, max_images=2)
    """
    return _legacy("ImageSummary", "ImageSummary", tag, tensor, name, collections,
                   {"max_images": int(max_images)})


def audio_summary(tag: Any, tensor: Any, sample_rate: Any, max_outputs: int = 3,
                  collections: Any = None, name: str | None = None) -> Tensor:
    """A Summary with up to `max_outputs` 16-bit WAV clips of a float [batch, frames,
    channels] or [batch, frames] tensor, tagged `tag/audio/0`, `tag/audio/1`, ...

    Example:
        >>> audio_summary("speech", waveforms, 16000)
    """
    return _legacy("AudioSummaryV2", "AudioSummary", tag, tensor, name, collections,
                   {"max_outputs": int(max_outputs)}, sample_rate)


def merge_summary(inputs: list[Any], collections: Any = None,
                  name: str | None = None) -> Tensor:
    """`tf.summary.merge` under its TF 0.x name.

    Example:
        >>> merge_summary([s1, s2])
    """
    return merge(inputs, collections, name)


def merge_all_summaries(key: str = GraphKeys.SUMMARIES) -> Tensor | None:
    """Merges every summary in collection `key`; None if there is none.

    Example:
        >>> merged = merge_all_summaries()
    """
    summaries = get_default_graph().get_collection(key)
    return merge_summary(summaries) if summaries else None


def get_summary_op() -> Tensor | None:
    """The graph's one merged summary op (collection SUMMARY_OP), made on first call.

    Example:
        >>> op = get_summary_op()       # the same op on every call
    """
    g = get_default_graph()
    existing = g.get_collection(GraphKeys.SUMMARY_OP)
    if existing:
        return existing[0]
    op = merge_all_summaries()
    if op is not None:
        g.add_to_collection(GraphKeys.SUMMARY_OP, op)
    return op


__all__ = ["audio_summary", "get_summary_op", "histogram_summary", "image_summary",
           "merge_all_summaries", "merge_summary", "scalar_summary"]
