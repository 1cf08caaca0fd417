"""Writes tests/data/tf_written_sparse/: a GraphDef of sparse ops made by real TensorFlow.

The test (tests/ops/test_sparse_tf_written.py) imports it here and compares with the values
TF computed (TF itself is never imported by the tests). Regenerate with a Python that
has TensorFlow (TF 2.x runs the 1.x graph API through tf.compat.v1):

    $TENSORFLOW_PYTHON tools/make_tf_sparse_fixture.py tests/data/tf_written_sparse

Contents: graph.pb, with two sparse placeholders "ids" (int64) and "w" (float32), a
constant embedding "emb" [10, 2] = arange / 10, and outputs out_a..out_f:
embedding_lookup_sparse (sqrtn, unweighted; mean, weighted), to_dense(reorder(w)),
sparse reduce_sum over axis 1, sparse_tensor_dense_matmul(w, emb[:3]), and
to_dense(fill_empty_rows(w, 0.5)); expected.json holds the feeds and TF's outputs.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

FEED = {"ids/indices:0": [[0, 0], [0, 1], [2, 0]], "ids/values:0": [1, 7, 3],
        "ids/shape:0": [4, 3], "w/indices:0": [[2, 0], [0, 0], [0, 1]],
        "w/values:0": [3.0, 1.0, 2.0], "w/shape:0": [4, 3]}


def main(out_dir: str) -> None:
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    emb = tf.constant(np.arange(20, dtype=np.float32).reshape(10, 2) / 10, name="emb")
    ids = tf.sparse_placeholder(tf.int64, shape=[None, None], name="ids")
    w = tf.sparse_placeholder(tf.float32, shape=[None, None], name="w")
    ordered_w = tf.sparse.reorder(w)
    outs = [tf.nn.embedding_lookup_sparse(emb, ids, None, combiner="sqrtn"),
            tf.nn.embedding_lookup_sparse(emb, ids, tf.SparseTensor(
                ids.indices, tf.constant([1.0, 2.0, 0.5]), ids.dense_shape), combiner="mean"),
            tf.sparse.to_dense(ordered_w), tf.sparse.reduce_sum(w, 1),
            tf.sparse_tensor_dense_matmul(ordered_w, emb[:3]),
            tf.sparse.to_dense(tf.sparse_fill_empty_rows(ordered_w, 0.5)[0])]
    names = [tf.identity(t, name=f"out_{c}").name for c, t in zip("abcdef", outs)]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "graph.pb"), "wb") as f:
        f.write(tf.get_default_graph().as_graph_def().SerializeToString())
    with tf.Session() as sess:
        values = sess.run(names, FEED)
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump({"feed": FEED, "outputs": {n: v.tolist() for n, v in zip(names, values)}},
                  f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
