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
