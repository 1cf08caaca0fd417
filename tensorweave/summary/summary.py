"""`tf.summary.scalar/histogram/text/image/merge/merge_all`: graph ops returning Summary bytes.

Each function adds one op whose output is a serialized `Summary` proto (a
tf.string scalar) and adds it to `collections` (default GraphKeys.SUMMARIES),
so `merge_all()` finds it. The tag is the op's name scope plus `name`
(prefixed with `family/` when given), as in TF 1.x.

Example:
    >>> tf.summary.scalar("loss", loss)
    >>> tf.summary.histogram("weights", w)
    >>> merged = tf.summary.merge_all()
    >>> writer.add_summary(sess.run(merged), step)
"""
from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.proto import summary_pb2
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.summary import summary_ops as _ops  # noqa: F401 - registers the ops
from tensorweave.platform import tf_logging


_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")


def clean_tag(name: str | None) -> str | None:
    """`name` made a valid summary name, as TF 1.x does instead of refusing it.

    Each character a node name may not hold becomes `_` and leading slashes go;
    a changed name is logged at INFO (TF 1.x's `summary_op_util.clean_tag`).

    Example:
        >>> clean_tag("local3/weight_loss (raw)")
        'local3/weight_loss__raw_'
    """
    if name is None:
        return None
    new_name = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if new_name != name:
        tf_logging.info("Summary name %s is illegal; using %s instead.", name, new_name)
    return new_name


@contextlib.contextmanager
def summary_scope(name: str, family: str | None = None, default_name: str | None = None
                  ) -> Iterator[tuple[str, str]]:
    """Opens the name scope of one summary; yields `(tag, scope)`.

    `name` and `family` are cleaned first (`clean_tag`). The scope is
    `outer/family/name` (made unique); the tag is the scope without its slash,
    prefixed with `family/` when given, so the family is always the tag's first
    part: `fam/outer/fam/x`, as TF 1.x writes it.

    Example:
        >>> with summary_scope("loss (raw)") as (tag, scope):
        ...     tag
        'loss__raw_'
    """
    name = clean_tag(name) or ""
    family = clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with get_default_graph().name_scope(base or default_name) as scope:
        tag = scope.rstrip("/")
        yield (tag if family is None else f"{family}/{tag}"), scope


def _build(op_type: str, name: str, inputs: list[Any], attrs: dict[str, Any] | None,
           collections: Any, family: str | None) -> Tensor:
    g = get_default_graph()
    with summary_scope(name, family) as (tag, scope):
        tag_t = convert_to_tensor(tag, dtype=_dt.string, name="tag")
        args = [tag_t] + [convert_to_tensor(x) if not isinstance(x, Tensor) else x
                          for x in inputs]
        # TF names the summary op after its scope ("loss", not "loss/ScalarSummary").
        out = g.create_op(op_type, args, attrs or {}, name=scope).outputs[0]
    keys = [GraphKeys.SUMMARIES] if collections is None else list(collections)
    g.add_to_collections(keys, out)
    return out


def scalar(name: str, tensor: Any, collections: Any = None, family: str | None = None
           ) -> Tensor:
    """A Summary with one `simple_value` (TensorBoard's Scalars tab).

    Raises:
        ValueError: if `tensor` is not a scalar.

    Example:
        >>> tf.summary.scalar("loss", loss)
    """
    t = convert_to_tensor(tensor)
    if t.shape.ndims not in (None, 0):
        raise ValueError(f"tf.summary.scalar({name!r}) needs a scalar, but {t.name} has shape "
                         f"{t.shape}; reduce it first (e.g. tf.reduce_mean).")
    return _build("ScalarSummary", name, [t], None, collections, family)


def histogram(name: str, values: Any, collections: Any = None, family: str | None = None
              ) -> Tensor:
    """A Summary with a `HistogramProto` of `values` (TensorBoard's Histograms tab).

    Example:
        >>> tf.summary.histogram("weights", w)
    """
    return _build("HistogramSummary", name, [convert_to_tensor(values)], None, collections,
                  family)


def _metadata(plugin: str, content: bytes = b"", description: str = "") -> bytes:
    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin,
                                                           content=content),
        summary_description=description).SerializeToString()


def text(name: str, tensor: Any, collections: Any = None) -> Tensor:
    """A Summary holding a string tensor for TensorBoard's Text tab (markdown).

    Raises:
        ValueError: if `tensor` is not a string tensor.

    Example:
        >>> tf.summary.text("config", tf.constant("lr = 0.1"))
    """
    t = convert_to_tensor(tensor)
    if t.dtype.base_dtype != _dt.string:
        raise ValueError(f"tf.summary.text({name!r}) needs a tf.string tensor; {t.name} is "
                         f"{t.dtype.name}. Convert it with tf.as_string first.")
    meta = convert_to_tensor(_metadata("text"), dtype=_dt.string)
    return _build("TensorSummaryV2", name, [t, meta], None, collections, None)


def tensor_summary(name: str, tensor: Any, summary_description: str | None = None,
                   collections: Any = None, summary_metadata: Any = None,
                   family: str | None = None, display_name: str | None = None) -> Tensor:
    """A Summary holding any tensor as a TensorProto (for custom TensorBoard plugins).

    Example:
        >>> tf.summary.tensor_summary("activations", h)
    """
    meta = summary_pb2.SummaryMetadata()
    if summary_metadata is not None:
        meta.CopyFrom(summary_metadata)
    # Explicit arguments win over the metadata's fields, as in TF (which sets them on the
    # caller's proto; a copy leaves the caller's proto as it was).
    if summary_description is not None:
        meta.summary_description = summary_description
    if display_name is not None:
        meta.display_name = display_name
    return _build("TensorSummaryV2", name,
                  [convert_to_tensor(tensor),
                   convert_to_tensor(meta.SerializeToString(), dtype=_dt.string)],
                  None, collections, family)


def image(name: str, tensor: Any, max_outputs: int = 3, collections: Any = None,
          family: str | None = None) -> Tensor:
    """PNG images from a [batch, height, width, channels] tensor (Images tab).

    uint8 values are used as is; floats are scaled to [0, 255].

    Example:
        >>> tf.summary.image("inputs", tf.reshape(x, [-1, 28, 28, 1]), max_outputs=4)
    """
    return _build("ImageSummary", name, [convert_to_tensor(tensor)],
                  {"max_images": int(max_outputs)}, collections, family)


def audio(name: str, tensor: Any, sample_rate: Any, max_outputs: int = 3,
          collections: Any = None, family: str | None = None) -> Tensor:
    """16-bit WAV clips from a float [batch, frames, channels] or [batch, frames] tensor
    with values in [-1, 1] (Audio tab); `sample_rate` in Hz.

    Example:
        >>> tf.summary.audio("speech", waveforms, 16000, max_outputs=2)
    """
    # Python values become float32 constants inside the summary's scope, as in TF.
    values = tensor if isinstance(tensor, Tensor) else np.asarray(tensor, np.float32)
    rate = sample_rate if isinstance(sample_rate, Tensor) else np.float32(sample_rate)
    return _build("AudioSummaryV2", name, [values, rate], {"max_outputs": int(max_outputs)},
                  collections, family)


def merge(inputs: list[Any], collections: Any = None, name: str | None = None) -> Tensor:
    """One Summary with every value of `inputs` (serialized Summary tensors).

    Raises:
        InvalidArgumentError: at run time, if two inputs use the same tag.

    Example:
        >>> merged = tf.summary.merge([loss_summary, acc_summary])
    """
    g = get_default_graph()
    name = clean_tag(name)  # TF cleans a merge's name too, then names "name/name"
    with g.name_scope(name or "Merge"):
        out = g.create_op("MergeSummary", [[convert_to_tensor(x) for x in inputs]],
                          name=name or "MergeSummary").outputs[0]
    if collections:
        g.add_to_collections(list(collections), out)
    return out


def merge_all(key: str = GraphKeys.SUMMARIES, scope: str | None = None,
              name: str | None = None) -> Tensor | None:
    """Merges every summary in collection `key`; None if there is none.

    Example:
        >>> merged = tf.summary.merge_all()
    """
    summaries = get_default_graph().get_collection(key, scope)
    return merge(summaries, name=name) if summaries else None


Summary = summary_pb2.Summary
Event = summary_pb2.Event
SessionLog = summary_pb2.SessionLog
SummaryMetadata = summary_pb2.SummaryMetadata
TaggedRunMetadata = summary_pb2.TaggedRunMetadata

__all__ = [
    "Event",
    "clean_tag",
    "summary_scope",
    "SessionLog",
    "Summary",
    "SummaryMetadata",
    "histogram",
    "image",
    "merge",
    "merge_all",
    "scalar",
    "tensor_summary",
    "text",
]
