"""tf.summary ops and FileWriter: event files read back with TensorBoard's own reader."""
import os
import struct

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.summary import writer as writer_mod

ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _accumulate(logdir):
    acc = ea.EventAccumulator(str(logdir), size_guidance={
        ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0, ea.IMAGES: 0})
    acc.Reload()
    return acc


def test_scalars_histograms_text_graph_in_tensorboard(tmp_path):
    x = tf.placeholder(tf.float32, [None], name="x")
    with tf.name_scope("train"):
        tf.summary.scalar("loss", tf.reduce_mean(x))
    tf.summary.histogram("x_hist", x)
    tf.summary.text("notes", tf.constant("lr = **0.1**"))
    merged = tf.summary.merge_all()
    data = [np.array([1.0, 2.0, 3.0], np.float32), np.array([-1.0, 0.0, 5.0, 5.0], np.float32)]
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path), sess.graph) as w:
        for step, d in enumerate(data):
            w.add_summary(sess.run(merged, {x: d}), global_step=step * 10)
        assert w.get_logdir() == str(tmp_path)
    acc = _accumulate(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("train/loss")] == [(0, 2.0), (10, 2.25)]
    h = acc.Histograms("x_hist")[1].histogram_value
    assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (-1.0, 5.0, 4.0, 9.0, 51.0)
    assert sum(h.bucket) == 4
    # Every value lies in its bucket (bucket_limit[i-1], bucket_limit[i]].
    assert any(c == 2 and 4.5 < lim and lim * 0.9 < 5.0 for c, lim in
               zip(h.bucket, h.bucket_limit))
    assert acc.Tensors("notes")[0].tensor_proto.string_val == [b"lr = **0.1**"]
    assert acc.SummaryMetadata("notes").plugin_data.plugin_name == "text"
    node_names = {n.name for n in acc.Graph().node}
    assert {"x", "x_hist"} <= node_names  # TF names a summary op after its scope


def test_event_file_framing_and_first_event(tmp_path):
    w = tf.summary.FileWriter(str(tmp_path), filename_suffix=".v2")
    w.add_summary(tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=1.5)]), 3)
    w.close()
    (name,) = os.listdir(tmp_path)
    assert name.startswith("events.out.tfevents.") and name.endswith(".v2")
    events = list(EventFileLoader(str(tmp_path / name)).Load())
    assert events[0].file_version == "brain.Event:2"
    # TensorBoard's loader migrates simple_value into a scalar tensor as it reads.
    assert events[1].step == 3 and events[1].summary.value[0].tensor.float_val == [1.5]
    ours = list(tf.summary.summary_iterator(str(tmp_path / name)))
    assert [e.step for e in ours] == [0, 3]


def test_crc_detects_damage(tmp_path):
    path = str(tmp_path / "rec")
    with open(path, "wb") as f:
        f.write(writer_mod.encode_record(b"hello"))
    assert list(writer_mod.read_records(path)) == [b"hello"]
    # Known answer: CRC32C("123456789") = 0xE3069283 (RFC 3720), before masking.
    import google_crc32c
    assert google_crc32c.value(b"123456789") == 0xE3069283
    data = bytearray(open(path, "rb").read())
    data[13] ^= 1
    open(path, "wb").write(bytes(data))
    with pytest.raises(errors.DataLossError, match="corrupted"):
        list(writer_mod.read_records(path))
    assert struct.unpack("<Q", bytes(data[:8]))[0] == 5


def test_image_summary_png(tmp_path):
    img = np.zeros([2, 4, 6, 3], np.uint8)
    img[:, :, :, 0] = 255
    s = tf.summary.image("pic", tf.constant(img), max_outputs=1)
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path)) as w:
        w.add_summary(sess.run(s), 1)
    acc = _accumulate(tmp_path)
    (ev,) = acc.Images("pic/image")
    assert (ev.width, ev.height) == (6, 4)
    assert ev.encoded_image_string.startswith(b"\x89PNG\r\n\x1a\n")


def test_merge_rejects_duplicate_tags_and_nonfinite_histograms():
    a = tf.summary.scalar("same", 1.0)
    b = tf.summary.scalar("same", 2.0, collections=[])   # tag "same_1": scope uniquified
    m = tf.summary.merge([a, a])
    h = tf.summary.histogram("bad", tf.constant([1.0, np.nan]))
    with tf.Session() as sess:
        assert tf.Summary.FromString(sess.run(b)).value[0].tag == "same_1"
        with pytest.raises(errors.InvalidArgumentError, match="Duplicate tag"):
            sess.run(m)
        with pytest.raises(errors.InvalidArgumentError, match="Nan or Inf"):
            sess.run(h)
    assert tf.summary.merge_all("no_such_key") is None
    with pytest.raises(ValueError, match="scalar"):
        tf.summary.scalar("v", tf.zeros([3]))


def test_writer_reopen_flush_and_cache(tmp_path):
    w = tf.summary.FileWriter(str(tmp_path), flush_secs=0.05)
    first = w.event_file
    w.add_summary(tf.Summary(value=[tf.Summary.Value(tag="t", simple_value=1.0)]), 1)
    w.flush()
    assert len(list(tf.summary.summary_iterator(first))) == 2
    w.close()
    with pytest.warns(UserWarning, match="closed FileWriter"):  # as TF: dropped, no error
        w.add_summary(tf.Summary(), 2)
    w.reopen()
    w.add_session_log(tf.summary.SessionLog(status=tf.summary.SessionLog.START), 2)
    w.close()
    assert w.event_file != first      # a new file, even within the same second
    assert [e.step for e in tf.summary.summary_iterator(w.event_file)] == [0, 2]
    c1 = tf.summary.FileWriterCache.get(str(tmp_path / "c"))
    assert tf.summary.FileWriterCache.get(str(tmp_path / "c")) is c1
    tf.summary.FileWriterCache.clear()
