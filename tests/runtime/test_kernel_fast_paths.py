"""The fast paths of the kernels a feature-column step runs (issue 11's speed work):
each gives what the general code gives, on the inputs that take it and on those that
do not. Unique of ids, SparseFillEmptyRows with no empty row, SparseReshape to the
same shape, GatherV2's bounds, VocabularyLookup's table, StridedSlice's spec cache."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.lookup.vocab_ops import vocabulary_lookup

pytestmark = pytest.mark.usefixtures("graph")


def _run(x, feed=None):
    with tf.Session() as sess:
        return sess.run(x, feed)


def _first_appearance(x):
    """Unique by hand: distinct values in order of first appearance, and idx."""
    seen: dict = {}
    idx = [seen.setdefault(v, len(seen)) for v in x.tolist()]
    return np.asarray(list(seen), dtype=x.dtype), np.asarray(idx)


@pytest.mark.parametrize("values", [
    np.array([7, -3, 7, 0, -3, 2**40, 7], np.int64), np.array([5], np.int32),
    np.array([3, 3, 3], np.uint8), np.array([True, False, True]),
    np.random.RandomState(0).randint(0, 50, 300).astype(np.int64)])
def test_unique_of_ids_in_order_of_first_appearance(values):
    y, idx = _run(tf.unique(tf.constant(values), out_idx=tf.int64))
    want_y, want_idx = _first_appearance(values)
    assert y.dtype == values.dtype and idx.dtype == np.int64
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(y[idx], values)


def test_unique_of_empty_and_float_vectors_still_the_general_way():
    y, idx = _run(tf.unique(tf.constant(np.zeros(0, np.int64))))
    assert y.shape == (0,) and idx.shape == (0,) and idx.dtype == np.int32
    y, idx = _run(tf.unique(tf.constant([2.5, -1.0, 2.5])))
    np.testing.assert_array_equal(y, [2.5, -1.0])
    np.testing.assert_array_equal(idx, [0, 1, 0])


def test_fill_empty_rows_with_every_row_filled_returns_the_input():
    sp = tf.SparseTensor([[0, 0], [0, 2], [1, 1], [2, 0]], [1, 2, 3, 4], [3, 4])
    out, empty = tf.sparse_fill_empty_rows(sp, -1)
    got, is_empty = _run([out, empty])
    np.testing.assert_array_equal(got.indices, [[0, 0], [0, 2], [1, 1], [2, 0]])
    np.testing.assert_array_equal(got.values, [1, 2, 3, 4])
    np.testing.assert_array_equal(is_empty, [False, False, False])


def test_fill_empty_rows_with_rows_out_of_order_or_missing():
    sp = tf.SparseTensor([[2, 0], [0, 1], [0, 0]], [1.0, 2.0, 3.0], [4, 2])
    out, empty = tf.sparse_fill_empty_rows(sp, 9.0)
    got, is_empty = _run([out, empty])
    # Rows gathered in row order, each row's entries in input order; rows 1, 3 filled.
    np.testing.assert_array_equal(got.indices, [[0, 1], [0, 0], [1, 0], [2, 0], [3, 0]])
    np.testing.assert_array_equal(got.values, [2.0, 3.0, 9.0, 1.0, 9.0])
    np.testing.assert_array_equal(is_empty, [False, True, False, True])


def test_fill_empty_rows_gradient_through_the_forwarded_values():
    values = tf.constant([1.0, 2.0, 3.0])
    sp = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], values, [2, 2])
    out, _ = tf.sparse_fill_empty_rows(sp, 0.0)
    grad = tf.gradients(tf.reduce_sum(out.values * [1.0, 2.0, 3.0]), values)[0]
    np.testing.assert_allclose(_run(grad), [1.0, 2.0, 3.0])


def test_sparse_reshape_to_the_same_shape_keeps_the_indices():
    sp = tf.SparseTensor([[0, 3], [2, 1]], [5, 6], [3, 4])
    same = tf.sparse_reshape(sp, [-1, 4])
    other = tf.sparse_reshape(sp, [4, 3])
    a, b = _run([same, other])
    np.testing.assert_array_equal(a.indices, [[0, 3], [2, 1]])
    np.testing.assert_array_equal(a.dense_shape, [3, 4])
    np.testing.assert_array_equal(b.indices, [[1, 0], [3, 0]])


@pytest.mark.parametrize("ids, bad", [([0, 5], 5), ([-1, 0], -1)])
def test_gather_out_of_range_names_the_index(ids, bad):
    x = tf.gather(tf.zeros([5, 2]), tf.constant(ids))
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"indices contain {bad}, which is "
                       r"not in \[0, 5\)"):
        _run(x)


def test_gather_along_an_axis_and_empty_ids():
    params = np.arange(12).reshape(3, 4)
    a, b = _run([tf.gather(params, [3, 0], axis=1), tf.gather(params, np.zeros(0, np.int64))])
    np.testing.assert_array_equal(a, params[:, [3, 0]])
    assert b.shape == (0, 4)


def test_vocabulary_lookup_bytes_str_and_int_keys_across_steps():
    keys = tf.placeholder(tf.string, [None])
    ids = vocabulary_lookup(keys, ["a", "b", "c"], num_oov_buckets=2)
    with tf.Session() as sess:
        first = sess.run(ids, {keys: np.array([b"c", b"a", b"zz"], dtype=object)})
        second = sess.run(ids, {keys: np.array(["b", "zz"], dtype=object)})
    assert first[:2].tolist() == [2, 0] and 3 <= first[2] < 5
    assert second.tolist() == [1, first[2]]  # the same OOV bucket on each step
    ints = vocabulary_lookup(tf.constant(np.array([[30, 10], [99, 20]], np.int64)),
                             [10, 20, 30], default_value=-7)
    np.testing.assert_array_equal(_run(ints), [[2, 0], [-7, 1]])


def test_strided_slice_with_fed_bounds_each_step():
    x = tf.constant(np.arange(10))
    begin = tf.placeholder(tf.int32, [1])
    y = tf.strided_slice(x, begin, [8], [2])
    with tf.Session() as sess:
        got = [sess.run(y, {begin: [b]}).tolist() for b in (0, 3, 0, 1)]
    assert got == [[0, 2, 4, 6], [3, 5, 7], [0, 2, 4, 6], [1, 3, 5, 7]]
    shape = tf.shape(tf.placeholder(tf.float32, [None, 3]))
    with tf.Session() as sess:
        assert sess.run(shape[1:], {shape.op.inputs[0]: np.zeros((2, 3))}).tolist() == [3]


def test_sparse_segment_ops_with_one_entry_a_segment_and_with_several():
    data = tf.constant(np.arange(12, dtype=np.float32).reshape(6, 2))
    one = [tf.sparse_segment_sum(data, [4, 1, 1], [0, 1, 2]),
           tf.sparse_segment_mean(data, [4, 1, 1], [0, 1, 2]),
           tf.sparse_segment_sqrt_n(data, [4, 1, 1], [0, 1, 2])]
    for got in _run(one):
        np.testing.assert_array_equal(got, [[8, 9], [2, 3], [2, 3]])
    # Ids 0, 0, 2 span as many rows as entries but are not one a segment.
    several = _run([tf.sparse_segment_sum(data, [4, 1, 0], [0, 0, 2]),
                    tf.sparse_segment_mean(data, [4, 1, 0], [0, 0, 2])])
    np.testing.assert_array_equal(several[0], [[10, 12], [0, 0], [0, 1]])
    np.testing.assert_array_equal(several[1], [[5, 6], [0, 0], [0, 1]])


def test_crossed_ids_of_single_valued_rows_match_the_general_cross():
    from tensorweave.ops.lookup.cross_ops import sparse_feature_cross
    words = [b"a", b"b", b"c"]
    ids = [7, -2, 7]
    single = sparse_feature_cross([
        tf.SparseTensor([[0, 0], [1, 0], [2, 0]], tf.constant(words, tf.string), [3, 1]),
        tf.SparseTensor([[0, 0], [1, 0], [2, 0]], tf.constant(ids, tf.int64), [3, 1])],
        num_buckets=1000)
    # The same rows plus a row with two words: the general path computes them all.
    general = sparse_feature_cross([
        tf.SparseTensor([[0, 0], [1, 0], [2, 0], [3, 0], [3, 1]],
                        tf.constant(words + [b"a", b"b"], tf.string), [4, 2]),
        tf.SparseTensor([[0, 0], [1, 0], [2, 0], [3, 0]], tf.constant(ids + [7], tf.int64),
                        [4, 1])], num_buckets=1000)
    a, b = _run([single, general])
    np.testing.assert_array_equal(a.indices, [[0, 0], [1, 0], [2, 0]])
    np.testing.assert_array_equal(a.dense_shape, [3, 1])
    np.testing.assert_array_equal(a.values, b.values[:3])
    assert a.values[0] != a.values[1] and b.values[3] == a.values[0]


def test_slice_to_the_end_follows_each_steps_shape():
    x = tf.placeholder(tf.int64, [None, None])
    y = tf.slice(x, [1, 0], [-1, 2])
    with tf.Session() as sess:
        for rows in (3, 5, 3):
            value = np.arange(rows * 4).reshape(rows, 4)
            np.testing.assert_array_equal(sess.run(y, {x: value}), value[1:, :2])
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
            sess.run(y, {x: np.zeros((2, 1), np.int64)})


def test_reshape_expand_dims_and_concat_with_fed_shapes_and_axes():
    x = tf.placeholder(tf.float32, [None])
    shape = tf.placeholder(tf.int32, [2])
    axis = tf.placeholder(tf.int32, [])
    outs = [tf.reshape(x, shape), tf.expand_dims(x, axis), tf.concat([x, x], axis)]
    with tf.Session() as sess:
        a, b, c = sess.run(outs, {x: np.arange(6.0), shape: [3, -1], axis: 0})
        assert a.shape == (3, 2) and b.shape == (1, 6) and c.shape == (12,)
        with pytest.raises(tf.errors.InvalidArgumentError, match="requested shape is"):
            sess.run(outs[0], {x: np.arange(6.0), shape: [4, -1]})


def test_segment_mean_and_sqrt_n_gradients_one_entry_a_segment_and_several():
    data = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2))
    for op in (tf.sparse_segment_mean, tf.sparse_segment_sqrt_n):
        one = op(data, [3, 1, 3], [0, 1, 2])  # row 3 read twice
        several = op(data, [3, 1, 3], [0, 0, 1])
        g_one, g_several = _run(tf.gradients(tf.reduce_sum(one * [[1.0, 2.0]]), data)
                                + tf.gradients(tf.reduce_sum(several * [[1.0, 2.0]]), data))
        np.testing.assert_allclose(g_one, [[0, 0], [1, 2], [0, 0], [2, 4]])
        w = 0.5 if op is tf.sparse_segment_mean else 1 / np.sqrt(2)
        np.testing.assert_allclose(g_several, [[0, 0], [w, 2 * w], [0, 0], [w + 1, 2 * w + 2]],
                                   rtol=1e-6)


def test_string_to_hash_bucket_fast_repeated_values_across_bucket_counts():
    from tensorweave.kernels.fingerprint import fingerprint64
    words = tf.placeholder(tf.string, [None])
    a, b = tf.string_to_hash_bucket_fast(words, 10), tf.string_to_hash_bucket_fast(words, 7)
    with tf.Session() as sess:
        for batch in ([b"x", b"y", b"x"], [b"y", b"z"], [b"x", b"y"]):
            got_a, got_b = sess.run([a, b], {words: np.array(batch, dtype=object)})
            assert got_a.tolist() == [fingerprint64(w) % 10 for w in batch]
            assert got_b.tolist() == [fingerprint64(w) % 7 for w in batch]


def test_pack_of_string_scalars_stays_a_vector_of_strings():
    # The numeric-scalar fast path must not take strings (np.array nests 0-d object
    # arrays): tf.train.Saver's sharded filenames are built with this Pack.
    a = tf.placeholder(tf.string, [])
    b = tf.placeholder(tf.string, [])
    packed = tf.stack([a, b])
    with tf.Session() as sess:
        got = sess.run(packed, {a: b"ckpt", b: b"part-00000-of-00002"})
        assert list(got) == [b"ckpt", b"part-00000-of-00002"]
        assert got.dtype == object and all(type(x) is bytes for x in got)
        nums = sess.run(tf.stack([tf.constant(3), tf.constant(4)]))
        assert nums.tolist() == [3, 4] and nums.dtype == np.int32
