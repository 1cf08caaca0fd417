"""A parse_example GraphDef written by real TF (its op is ParseExampleV2) runs here.

The fixture (tests/data/tf_written_records/parse_graph.pb, made by
tools/make_tf_record_fixtures.py with TF 2.21's compat.v1) parses a string placeholder
"examples"; fed TF-written records, it gives the values TF computed (expected.json).
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tf_graph_import_compat import from_tensorflow
from suite_paths import TEST_DATA

pytestmark = pytest.mark.usefixtures("graph")
DATA = os.path.join(TEST_DATA, "tf_written_records")


def _import():
    gd = graph_pb2.GraphDef.FromString(open(os.path.join(DATA, "parse_graph.pb"), "rb").read())
    assert "ParseExampleV2" in {n.op for n in gd.node}
    tf.import_graph_def(from_tensorflow(gd), name="")


def test_tf_written_parse_graph_gives_tfs_values():
    _import()
    expected = json.load(open(os.path.join(DATA, "expected.json")))
    records = list(tf.io.tf_record_iterator(os.path.join(DATA, "examples.tfrecord")))
    names = ["x_out", "label_out", "tags_indices", "tags_values", "tags_shape", "seq_out"]
    with tf.Session() as sess:
        x, label, idx, vals, shape, seq = sess.run([n + ":0" for n in names],
                                                   {"examples:0": records})
    np.testing.assert_array_equal(x, expected["x"])
    np.testing.assert_array_equal(label, expected["label"])
    assert idx.tolist() == expected["tags_indices"]
    assert [v.hex() for v in vals] == expected["tags_values"]
    assert shape.tolist() == expected["tags_dense_shape"]
    np.testing.assert_array_equal(seq, expected["seq"])


def test_tf_written_parse_graph_reports_a_missing_required_feature():
    _import()
    bare = tf.train.Example().SerializeToString()  # no "x", which has no default
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"example 0, key 'x'"):
            sess.run("x_out:0", {"examples:0": [bare]})
