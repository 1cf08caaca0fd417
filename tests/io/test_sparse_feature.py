"""tf.SparseFeature in parse_example / parse_single_example, and tf.sparse_merge.

Expected values are TF's (parsing_ops_test / parse_example_dataset_test and TF 2.21
on the same records), except where noted: an index outside [0, size) is an error
here (TF documents the range but returns an invalid SparseTensor).
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _example(**features):
    f = {}
    for key, values in features.items():
        if key.startswith("idx"):
            f[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        elif values and isinstance(values[0], bytes):
            f[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
        else:
            f[key] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()


def _check(value, indices, values, shape):
    np.testing.assert_array_equal(value.indices, indices)
    np.testing.assert_array_equal(value.values, values)
    np.testing.assert_array_equal(value.dense_shape, shape)


def test_sparse_features_share_an_index_key_and_helper_keys_stay_out():
    batch = [_example(val1=[3.0, 4.0], val2=[5.0, 6.0], idx=[5, 10]),
             _example(val1=[], idx=[])]   # val2 missing where idx is empty
    out = tf.parse_example(batch, {
        "sp1": tf.SparseFeature("idx", "val1", tf.float32, 13),
        "sp2": tf.io.SparseFeature("idx", "val2", tf.float32, size=11, already_sorted=True)})
    assert sorted(out) == ["sp1", "sp2"]
    with tf.Session() as sess:
        got = sess.run(out)
    _check(got["sp1"], [[0, 5], [0, 10]], [3.0, 4.0], [2, 13])
    _check(got["sp2"], [[0, 5], [0, 10]], [5.0, 6.0], [2, 11])


def test_unsorted_indices_are_reordered_and_the_index_key_can_be_asked_for_too():
    batch = [_example(val=[b"a", b"b"], idx=[0, 3]), _example(val=[b"c", b"d"], idx=[7, 1])]
    out = tf.parse_example(batch, {"idx": tf.VarLenFeature(tf.int64),
                                   "sp": tf.SparseFeature(["idx"], "val", tf.string, [13])})
    with tf.Session() as sess:
        got = sess.run(out)
    _check(got["idx"], [[0, 0], [0, 1], [1, 0], [1, 1]], [0, 3, 7, 1], [2, 2])
    _check(got["sp"], [[0, 0], [0, 3], [1, 1], [1, 7]], [b"a", b"b", b"d", b"c"], [2, 13])


def test_one_index_key_per_dimension_and_parse_single_example():
    record = _example(idx0=[1, 0, 1], idx1=[2, 0, 0], val=[1.5, 2.5, 3.5])
    spec = {"grid": tf.SparseFeature(["idx0", "idx1"], "val", tf.float32, [2, 3])}
    batch = tf.parse_example([record], spec)["grid"]
    one = tf.parse_single_example(record, spec)["grid"]
    with tf.Session() as sess:
        got_batch, got_one = sess.run([batch, one])
        dense = sess.run(tf.sparse_tensor_to_dense(one))
    _check(got_batch, [[0, 0, 0], [0, 1, 0], [0, 1, 2]], [2.5, 3.5, 1.5], [1, 2, 3])
    _check(got_one, [[0, 0], [1, 0], [1, 2]], [2.5, 3.5, 1.5], [2, 3])
    np.testing.assert_array_equal(dense, [[2.5, 0, 0], [3.5, 0, 1.5]])


def test_bad_sparse_features_are_named():
    with pytest.raises(ValueError, match="'sp'.*one size per index key"):
        tf.parse_example([b""], {"sp": tf.SparseFeature(["a", "b"], "v", tf.float32, 3)})
    with pytest.raises(ValueError, match="'sp'.*reads 'idx' as VarLenFeature\\(int64\\).*"
                                         "conflicts"):
        tf.parse_example([b""], {"idx": tf.FixedLenFeature([], tf.int64),
                                 "sp": tf.SparseFeature("idx", "v", tf.float32, 3)})
    uneven = tf.parse_example([_example(idx=[0, 1], val=[1.0])],
                              {"sp": tf.SparseFeature("idx", "val", tf.float32, 4)})["sp"]
    too_big = tf.parse_example([_example(idx=[0, 9], val=[1.0, 2.0])],
                               {"sp": tf.SparseFeature("idx", "val", tf.float32, 4)})["sp"]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"same indices.*2 ids and 1 values"):
            sess.run(uneven.values)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"outside \[0, vocab_size\).*\[0 9\].*4"):
            sess.run(too_big.indices)


def test_sparse_merge_as_tensorflow_documents_it():
    """TF's docstring example: ids and values sharing indices -> [batch, vocab]."""
    indices = [[0, 0], [0, 1], [0, 2], [1, 0], [2, 0], [2, 1]]
    ids = tf.SparseTensor(indices, tf.constant([0, 1, 3, 2, 1, 4], tf.int32), [3, 3])
    values = tf.SparseTensor(indices, [-3.0, 1.0, 4.0, 1.0, 5.0, 9.0], [3, 3])
    merged = tf.sparse_merge(ids, values, vocab_size=5)
    with tf.Session() as sess:
        got = sess.run(merged)
        dense = sess.run(tf.sparse_tensor_to_dense(merged))
    _check(got, [[0, 0], [0, 1], [0, 3], [1, 2], [2, 1], [2, 4]],
           [-3.0, 1.0, 4.0, 1.0, 5.0, 9.0], [3, 5])
    np.testing.assert_array_equal(dense, [[-3, 1, 0, 4, 0], [0, 0, 1, 0, 0], [0, 5, 0, 0, 9]])
    with pytest.raises(TypeError, match="one size per ids tensor"):
        tf.sparse_merge([ids, ids], values, vocab_size=5)
    with pytest.raises(TypeError, match="must be integers"):
        tf.sparse_merge(values, values, vocab_size=5)
