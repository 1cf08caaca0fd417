"""tf.SparseTensor, SparseTensorValue, sparse_placeholder; feeding and fetching sparse values
through Session.run, in process and on a cluster.

Specification: TF 1.x framework/sparse_tensor_test.py and the sparse parts of
client/session_test.py (testFeedSparseTensor, testFeedSparsePlaceholder*,
testFetchSparseTensor); our own tests.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def _value():
    return tf.SparseTensorValue(np.array([[0, 1], [2, 3]], np.int64),
                                np.array([1.5, -2.0], np.float32), np.array([3, 4], np.int64))


def test_sparse_tensor_parts_dtypes_and_static_shape():
    sp = tf.SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0], dense_shape=[3, 4])
    assert sp.indices.dtype == tf.int64 and sp.dense_shape.dtype == tf.int64
    assert sp.dtype == tf.float32
    assert sp.get_shape().as_list() == [3, 4] and sp.shape.as_list() == [3, 4]
    assert sp.op is sp.values.op and sp.graph is tf.get_default_graph()
    assert isinstance(sp, tf.SparseTensor)


def test_sparse_tensor_rejects_malformed_parts():
    with pytest.raises(ValueError, match="indices must be a matrix"):
        tf.SparseTensor(indices=[0, 1], values=[1.0, 2.0], dense_shape=[3])
    with pytest.raises(ValueError, match="2 indices but 3 values"):
        tf.SparseTensor(indices=[[0], [1]], values=[1.0, 2.0, 3.0], dense_shape=[3])
    with pytest.raises(ValueError, match="rank 2 but dense_shape has 3"):
        tf.SparseTensor(indices=[[0, 0]], values=[1.0], dense_shape=[3, 4, 5])


def test_fetch_sparse_tensor_gives_sparse_tensor_value():
    sp = tf.SparseTensor([[0, 1], [2, 3]], [1.5, -2.0], [3, 4])
    with tf.Session() as sess:
        got = sess.run(sp)
        nested = sess.run({"a": [sp, sp.values]})
    assert isinstance(got, tf.SparseTensorValue)
    np.testing.assert_array_equal(got.indices, [[0, 1], [2, 3]])
    np.testing.assert_array_equal(got.values, [1.5, -2.0])
    np.testing.assert_array_equal(got.dense_shape, [3, 4])
    assert got.indices.dtype == np.int64
    assert isinstance(nested["a"][0], tf.SparseTensorValue)
    np.testing.assert_array_equal(nested["a"][1], [1.5, -2.0])


def test_eval_uses_the_default_session():
    sp = tf.SparseTensor([[1]], [7], [4])
    with tf.Session():
        got = sp.eval()
    np.testing.assert_array_equal(got.values, [7])


def test_feed_sparse_placeholder_with_value_and_with_tuple():
    sp = tf.sparse_placeholder(tf.float32, name="x")
    assert sp.get_shape().ndims is None
    assert sp.indices.op.name == "x/indices" and sp.values.op.name == "x/values"
    dense = tf.sparse_tensor_to_dense(sp)
    v = _value()
    with tf.Session() as sess:
        by_value = sess.run(dense, {sp: v})
        by_tuple = sess.run(dense, {sp: (v.indices, v.values, v.dense_shape)})
        echoed = sess.run(sp, {sp: v})
    want = np.zeros([3, 4], np.float32)
    want[0, 1], want[2, 3] = 1.5, -2.0
    np.testing.assert_array_equal(by_value, want)
    np.testing.assert_array_equal(by_tuple, want)
    np.testing.assert_array_equal(echoed.values, v.values)


def test_sparse_placeholder_shapes():
    known = tf.sparse_placeholder(tf.float32, shape=[3, 4])
    assert known.get_shape().as_list() == [3, 4]
    partial = tf.sparse_placeholder(tf.int64, shape=[None, 5])
    assert partial.get_shape().as_list() == [None, 5]
    assert partial.dense_shape.op.type == "Placeholder"
    with tf.Session() as sess:
        out = sess.run(tf.sparse_tensor_to_dense(partial),
                       {partial: tf.SparseTensorValue([[1, 4]], [9], [2, 5])})
    np.testing.assert_array_equal(out, [[0] * 5, [0, 0, 0, 0, 9]])


def test_feeding_a_dense_shape_that_contradicts_the_placeholder_is_refused():
    sp = tf.sparse_placeholder(tf.float32, shape=[None, 5])
    with tf.Session() as sess, pytest.raises(ValueError, match="shape"):
        sess.run(sp.values, {sp: tf.SparseTensorValue([[0, 0, 0]], [1.0], [1, 5, 1])})


def test_feeding_a_dense_shape_that_contradicts_a_known_shape_is_refused():
    sp = tf.sparse_placeholder(tf.float32, shape=[2, 3], name="known")
    with tf.Session() as sess, pytest.raises(ValueError, match=r"dense shape \[2, 4\].*known"):
        sess.run(sp.values, {sp: tf.SparseTensorValue([[1, 2]], [1.0], [2, 4])})


def test_feeding_something_else_than_a_sparse_value_names_the_tensor():
    sp = tf.sparse_placeholder(tf.float32)
    with tf.Session() as sess, pytest.raises(TypeError, match="SparseTensorValue"):
        sess.run(sp.values, {sp: np.zeros([2, 2])})


def test_empty_sparse_value_feeds_and_fetches():
    sp = tf.sparse_placeholder(tf.float32, shape=[None, 3])
    with tf.Session() as sess:
        dense = sess.run(tf.sparse_tensor_to_dense(sp),
                         {sp: tf.SparseTensorValue(np.zeros([0, 2], np.int64), [], [2, 3])})
    np.testing.assert_array_equal(dense, np.zeros([2, 3]))


def test_convert_to_tensor_or_sparse_tensor():
    v = tf.SparseTensorValue([[0]], [1.0], [2])
    sp = tf.convert_to_tensor_or_sparse_tensor(v)
    assert isinstance(sp, tf.SparseTensor)
    assert tf.convert_to_tensor_or_sparse_tensor(sp) is sp
    assert isinstance(tf.convert_to_tensor_or_sparse_tensor([1, 2]), tf.Tensor)
    with pytest.raises(RuntimeError, match="Sparse dtype"):
        tf.convert_to_tensor_or_sparse_tensor(sp, dtype=tf.int32)


def test_sparse_feed_and_fetch_through_a_cluster(local_cluster):
    # The client expands a SparseTensor into its three dense tensors, so a remote
    # master sees only ordinary feeds and fetches.
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2), name="w")
    with tf.device("/job:worker/task:1"):
        sp = tf.sparse_placeholder(tf.float32, shape=[None, 4])
        y = tf.sparse_tensor_dense_matmul(sp, w)
        reordered = tf.sparse_reorder(sp)
    value = tf.SparseTensorValue([[1, 3], [0, 0]], [2.0, 1.0], [2, 4])
    with tf.Session(local_cluster.target("worker", 0)) as sess:
        sess.run(w.initializer)
        got_y, got_sp = sess.run([y, reordered], {sp: value})
    np.testing.assert_allclose(got_y, [[0.0, 1.0], [12.0, 14.0]])
    assert isinstance(got_sp, tf.SparseTensorValue)
    np.testing.assert_array_equal(got_sp.indices, [[0, 0], [1, 3]])
    np.testing.assert_array_equal(got_sp.values, [1.0, 2.0])


def test_slicing_the_parts_of_a_sparse_tensor():
    sp = tf.sparse_placeholder(tf.int64, shape=[None, None])
    rows, cols = sp.indices[:, 0], sp.indices[:, 1]
    last_dim = sp.dense_shape[-1]
    value = tf.SparseTensorValue([[0, 2], [3, 1]], [10, 20], [4, 5])
    with tf.Session() as sess:
        got = sess.run([rows, cols, last_dim, sp.values[1:]], {sp: value})
    np.testing.assert_array_equal(got[0], [0, 3])
    np.testing.assert_array_equal(got[1], [2, 1])
    assert got[2] == 5
    np.testing.assert_array_equal(got[3], [20])


def test_sparse_placeholder_with_a_shape_tensor():
    shape = tf.constant([2, 3], tf.int64)
    sp = tf.sparse_placeholder(tf.float32, shape=shape)
    assert sp.dense_shape is shape and sp.get_shape().as_list() == [2, 3]
    with tf.Session() as sess:
        out = sess.run(tf.sparse_tensor_to_dense(sp), {sp.indices: [[1, 1]], sp.values: [4.0]})
    np.testing.assert_array_equal(out, [[0, 0, 0], [0, 4, 0]])
