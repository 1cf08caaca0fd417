"""A GraphDef of sparse ops written by real TensorFlow imports and runs here with TF's values.

The fixture (tests/data/tf_written_sparse, made by tools/make_tf_sparse_fixture.py with
TF 2.21's compat.v1) holds sparse placeholders (TF 2 makes their dense shape a
PlaceholderWithDefault), embedding_lookup_sparse (TF 2's weighted mean divides with
DivNoNan), SparseReorder, SparseToDense, SparseReduceSum, SparseTensorDenseMatMul and
SparseFillEmptyRows; our own test.
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

DATA = os.path.join(TEST_DATA, "tf_written_sparse")


def test_tensorflow_written_sparse_graph_runs_with_tensorflows_values():
    gd = graph_pb2.GraphDef.FromString(open(os.path.join(DATA, "graph.pb"), "rb").read())
    expected = json.load(open(os.path.join(DATA, "expected.json")))
    types = {n.op for n in gd.node}
    assert {"SparseSegmentSqrtN", "DivNoNan", "SparseReorder", "SparseToDense",
            "SparseReduceSum", "SparseTensorDenseMatMul", "SparseFillEmptyRows"} <= types
    tf.import_graph_def(from_tensorflow(gd), name="")
    names = sorted(expected["outputs"])
    with tf.Session() as sess:
        got = sess.run(names, expected["feed"])
    for name, value in zip(names, got):
        np.testing.assert_allclose(value, expected["outputs"][name], rtol=1e-6,
                                   err_msg=name)
