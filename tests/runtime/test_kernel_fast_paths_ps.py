"""Fast paths of the kernels a ps and a feature-column step run (issue 11's speed
work), each against the general code it skips: a sparse update's dedup of ids that are
already unique (one sort, no np.unique), and StridedSlice/Slice specs remembered by the
identity of constant bounds."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.ops.array import slice_ops
from tensorweave.ops.training.training_ops import _dedup

pytestmark = pytest.mark.usefixtures("graph")


def _general_dedup(idx, grad):
    """The sum of duplicate rows by np.unique, as before the fast path."""
    uniq, inverse = np.unique(idx, return_inverse=True)
    if uniq.size == idx.size:
        return idx, grad
    summed = np.zeros((uniq.size,) + grad.shape[1:], grad.dtype)
    np.add.at(summed, inverse, grad)
    return uniq, summed


@pytest.mark.parametrize("ids", [[7, 2, 9, 0], [4, 1, 4, 4, 0], [3], [], [9, 8, 7, 6, 5],
                                 list(np.random.RandomState(1).randint(0, 10, 40))])
def test_dedup_matches_the_general_path(ids):
    idx = np.asarray(ids, np.int64)
    grad = np.arange(idx.size * 2, dtype=np.float32).reshape(-1, 2)
    got_idx, got_grad = _dedup(idx, grad, 10, "v")
    want_idx, want_grad = _general_dedup(idx, grad)
    np.testing.assert_array_equal(got_idx, want_idx)
    np.testing.assert_array_equal(got_grad, want_grad)


@pytest.mark.parametrize("ids,bad", [([1, 10, 2], 10), ([-1, 3], -1), ([2, 2, 12], 12)])
def test_dedup_range_errors_name_the_index(ids, bad):
    with pytest.raises(errors.InvalidArgumentError, match=rf"Index {bad} is not in \[0, 10\) "
                                                          r"for variable v"):
        _dedup(np.asarray(ids), np.zeros((len(ids), 3), np.float32), 10, "v")


def test_sparse_update_with_unique_and_repeated_ids_match_dense_arithmetic():
    v = tf.Variable(np.ones((5, 2), np.float32))
    ids = tf.placeholder(tf.int64, [None])
    rows = tf.placeholder(tf.float32, [None, 2])
    accum = tf.Variable(np.full((5, 2), 0.1, np.float32))
    update = tf.get_default_graph().create_op(
        "SparseApplyAdagrad", [v._ref(), accum._ref(), tf.constant(0.5), rows, ids]).outputs[0]
    g = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(update, {ids: [4, 0, 2], rows: g})        # unique: the fast path
        sess.run(update, {ids: [1, 1, 3], rows: g})        # repeated: np.unique
        got = sess.run(v)
    dense = np.zeros((5, 2), np.float32)
    dense[[4, 0, 2]] = g
    acc = 0.1 + dense ** 2
    want = np.ones((5, 2), np.float32) - np.where(dense != 0, 0.5 * dense / np.sqrt(acc), 0)
    dense2 = np.zeros((5, 2), np.float32)
    dense2[1] = g[0] + g[1]
    dense2[3] = g[2]
    acc2 = acc + dense2 ** 2
    want = want - np.where(dense2 != 0, 0.5 * dense2 / np.sqrt(acc2), 0)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_strided_slice_of_constant_bounds_matches_fed_bounds():
    x = tf.placeholder(tf.float32, [None, 4])
    b, e, s = (tf.placeholder(tf.int32, [2]) for _ in range(3))
    const_bounds = x[1:, ::2]              # constant begin/end/strides: the identity memo
    fed_bounds = tf.strided_slice(x, b, e, s)  # fresh arrays every run: the general path
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    with tf.Session() as sess:
        for rows in (value, value[:2], value[:1]):
            got, want = sess.run([const_bounds, fed_bounds],
                                 {x: rows, b: [1, 0], e: [len(rows), 4], s: [1, 2]})
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got, rows[1:, ::2])


def test_slice_of_constant_bounds_matches_fed_bounds():
    x = tf.placeholder(tf.float32, [None, 3])
    b, n = tf.placeholder(tf.int32, [2]), tf.placeholder(tf.int32, [2])
    const_bounds = tf.slice(x, [1, 0], [-1, 2])
    fed_bounds = tf.slice(x, b, n)
    value = np.arange(9, dtype=np.float32).reshape(3, 3)
    with tf.Session() as sess:
        got, want = sess.run([const_bounds, fed_bounds], {x: value, b: [1, 0], n: [-1, 2]})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, value[1:, :2])


def test_the_identity_memo_takes_only_frozen_arrays_and_checks_identity():
    begin = np.array([1, 0], np.int32)
    end = np.array([0, 0], np.int32)
    strides = np.array([1, 2], np.int32)
    masks = {k: 0 for k in slice_ops._MASKS}
    masks["end_mask"] = 1
    first = slice_ops._cached_index(2, begin, end, strides, masks)
    begin[0] = 2  # a writeable array may change between calls: never memoized by identity
    assert slice_ops._cached_index(2, begin, end, strides, masks) != first
    for a in (begin, end, strides):
        a.flags.writeable = False
    frozen = slice_ops._cached_index(2, begin, end, strides, masks)
    assert slice_ops._cached_index(2, begin, end, strides, masks) == frozen
    copy = np.array([1, 0], np.int32)
    copy.flags.writeable = False
    assert slice_ops._cached_index(2, copy, end, strides, masks) == first


def test_fingerprints_of_known_values_match_each_value_hashed():
    from tensorweave.kernels import fingerprint
    values = np.array([[b"alpha", "beta"], [b"", "u17"]], dtype=object)
    want = np.array([[fingerprint.fingerprint64(v) for v in row] for row in values],
                    dtype=np.uint64)
    fingerprint._CACHE.clear()
    cold = fingerprint.fingerprints(values)   # misses: hashed one by one
    warm = fingerprint.fingerprints(values)   # all known: the one-pass lookup
    assert cold.dtype == warm.dtype == np.uint64 and warm.shape == (2, 2)
    np.testing.assert_array_equal(cold, want)
    np.testing.assert_array_equal(warm, want)
    mixed = fingerprint.fingerprints(np.array(["beta", "new one"], dtype=object))
    np.testing.assert_array_equal(mixed, [want[0, 1], fingerprint.fingerprint64("new one")])


def test_vocabulary_lookup_of_known_keys_matches_the_general_path():
    from tensorweave.ops.lookup.vocab_ops import vocabulary_lookup
    keys = tf.placeholder(tf.string, [None, 2])
    ids = vocabulary_lookup(keys, ["news", "sports", "music"], num_oov_buckets=3)
    known = np.array([[b"music", b"news"], [b"sports", b"music"]], dtype=object)
    with tf.Session() as sess:
        fast = sess.run(ids, {keys: known})                        # all in the vocabulary
        as_str = sess.run(ids, {keys: known.astype(str).astype(object)})  # str keys
        mixed = sess.run(ids, {keys: np.array([[b"music", b"games"], [b"sports", b"news"]],
                                              dtype=object)})      # one miss
    assert fast.dtype == np.int64 and fast.shape == (2, 2)
    np.testing.assert_array_equal(fast, [[2, 0], [1, 2]])
    np.testing.assert_array_equal(as_str, fast)
    assert mixed[0, 0] == 2 and mixed[1].tolist() == [1, 0] and 3 <= mixed[0, 1] < 6
