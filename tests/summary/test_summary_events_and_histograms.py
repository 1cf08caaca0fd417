"""tf.summary's smaller surfaces: TaggedRunMetadata events, TF's histogram bucket encoding,
and TF 0.x's summary functions that TF 1.15's logging_ops still has."""
import numpy as np

import tensorweave as tf
from tensorweave.ops.summary.summary_ops import histogram_proto
from tensorweave.python.ops import logging_ops

BIG = float(np.finfo(np.float64).max)


def test_add_run_metadata_writes_a_tagged_run_metadata_event(tmp_path):
    meta = tf.RunMetadata()
    with tf.summary.FileWriter(str(tmp_path)) as w:
        w.add_run_metadata(meta, "step_7", global_step=7)
    files = sorted(p for p in tmp_path.iterdir() if "tfevents" in p.name)
    events = [e for e in tf.train.summary_iterator(str(files[0]))
              if e.HasField("tagged_run_metadata")]
    assert len(events) == 1
    tagged = events[0].tagged_run_metadata
    assert isinstance(tagged, tf.summary.TaggedRunMetadata)
    assert (tagged.tag, events[0].step) == ("step_7", 7)
    assert tf.RunMetadata.FromString(tagged.run_metadata) == meta


def _buckets(values):
    h = histogram_proto(np.array(values, np.float64))
    return [(float(f"{lim:.7g}") if abs(lim) < 1e300 else lim, c)
            for lim, c in zip(h.bucket_limit, h.bucket)], h


def test_histogram_buckets_are_encoded_as_tf_encodes_them():
    # Each empty run becomes one empty bucket at its last limit, the runs around the
    # data included; a value on a limit belongs to the next bucket ([lo, hi)).
    got, _ = _buckets([10.0])
    assert got == [(9.938095, 0.0), (10.9319, 1.0), (BIG, 0.0)]
    got, _ = _buckets([0.0, -1.0, 5.0, 5.0])
    assert got == [(-1.008971, 0.0), (-0.9172464, 1.0), (0.0, 0.0), (1e-12, 1.0),
                   (4.636195, 0.0), (5.099814, 2.0), (BIG, 0.0)]
    got, h = _buckets([])
    assert got == [(BIG, 0.0)] and (h.min, h.max, h.num) == (BIG, -BIG, 0)


def test_tf0_summary_functions_take_their_tags_as_given():
    tf.reset_default_graph()
    c = tf.constant([1.0, 2.0])
    s = logging_ops.scalar_summary(["a b", "c/d"], c)   # any tag, one per value
    h = logging_ops.histogram_summary("my hist", c, name="H")
    assert s.op.name == "ScalarSummary" and h.op.name == "H"
    merged = logging_ops.get_summary_op()
    assert logging_ops.get_summary_op() is merged  # made once, kept in SUMMARY_OP
    assert tf.get_collection(tf.GraphKeys.SUMMARY_OP) == [merged]
    with tf.Session() as sess:
        summ = tf.Summary.FromString(sess.run(merged))
    assert [v.tag for v in summ.value] == ["a b", "c/d", "my hist"]
    assert [v.simple_value for v in summ.value[:2]] == [1.0, 2.0]
    assert logging_ops.merge_all_summaries(key="empty") is None


def _decoded(summary_tensor):
    with tf.Session() as sess:
        summ = tf.Summary.FromString(sess.run(summary_tensor))
        return [v.tag for v in summ.value], [
            sess.run(tf.image.decode_png(v.image.encoded_image_string))[..., 0].tolist()
            for v in summ.value]


def test_float_images_are_scaled_per_image_as_tf_scales_them():
    tf.reset_default_graph()
    x = np.array([[[[0.5], [-1.0]], [[np.nan], [2.0]]],    # negatives: 127/max|x| around 128
                  [[[0.1], [0.2]], [[0.3], [0.0]]],        # none negative: 255/max
                  [[[0.0], [0.0]], [[0.0], [0.0]]]], np.float32)
    tags, images = _decoded(tf.summary.image("img", tf.constant(x)))
    assert tags == ["img/image/0", "img/image/1", "img/image/2"]
    # The NaN pixel is drawn red (255 in a 1-channel image); float32 truncation as in TF.
    assert images == [[[159, 64], [255, 255]], [[84, 169], [254, 0]], [[0, 0], [0, 0]]]
    rgb = tf.summary.image("rgb", tf.constant(np.repeat(x[:1], 3, axis=-1)), max_outputs=1)
    with tf.Session() as sess:
        png = tf.Summary.FromString(sess.run(rgb)).value[0]
        assert png.tag == "rgb/image"  # one image asked for: no index
        assert sess.run(tf.image.decode_png(png.image.encoded_image_string))[1, 0].tolist() \
            == [255, 0, 0]
    # More than one image asked for: indexed tags even for a batch of one.
    assert _decoded(tf.summary.image("one", tf.constant(x[:1]), max_outputs=3))[0] == \
        ["one/image/0"]


def test_audio_summaries_are_16_bit_wav_clips_as_tf_writes_them():
    tf.reset_default_graph()
    x = np.array([[[0.5, -0.25], [1.0, -1.0], [2.0, 0.00001]],
                  [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]], np.float32)
    with tf.name_scope("outer"):
        s = tf.summary.audio("snd", x, 16000.5, family="fam")
    one = logging_ops.audio_summary("clip", x[:, :, 0], 8000, max_outputs=1)
    with tf.Session() as sess:
        values = tf.Summary.FromString(sess.run(s)).value
        clip = tf.Summary.FromString(sess.run(one)).value
    assert s.op.type == "AudioSummaryV2" and s.op.name == "outer/fam/snd"
    assert [v.tag for v in values] == ["fam/outer/fam/snd/audio/0", "fam/outer/fam/snd/audio/1"]
    a = values[0].audio
    assert (a.sample_rate, a.num_channels, a.length_frames, a.content_type) == \
        (16000.5, 2, 3, "audio/wav")
    # Bytes from real TF: header (rate 16000, 2 channels, 16 bits) then samples * 32768,
    # rounded and clamped (1.0 -> 32767, -1.0 -> -32768, 2.0 -> 32767, 1e-5 -> 0).
    assert a.encoded_audio_string.hex() == (
        "524946463000000057415645666d74201000000001000200803e000000fa0000040010006461"
        "74610c000000004000e0ff7f0080ff7f0000")
    assert [v.tag for v in clip] == ["clip/audio"] and clip[0].audio.num_channels == 1
