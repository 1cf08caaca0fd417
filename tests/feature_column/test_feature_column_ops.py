"""The hashing and lookup ops under tf.feature_column: StringToHashBucketFast, AsString,
Bucketize, VocabularyLookup, SparseFeatureCross and FingerprintCat64.

Hash values were computed by real TF 2.21 (tf.compat.v1) in a scratch script and are
hard-coded here: they are the interface (ids must equal TF's so checkpoints and
vocabularies carry over). Our own tests.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.lookup.bucketize_ops import bucketize
from tensorweave.ops.lookup.cross_ops import sparse_feature_cross
from tensorweave.kernels.fingerprint import fingerprint64, fingerprint_cat64
from tensorweave.ops.lookup.vocab_ops import vocabulary_lookup

pytestmark = pytest.mark.usefixtures("graph")


def _run(t):
    with tf.Session() as sess:
        return sess.run(t)


def test_string_to_hash_bucket_fast_equals_tf():
    # value computed by TF 2.21: tf.strings.to_hash_bucket_fast(..., 2**62)
    got = _run(tf.string_to_hash_bucket_fast(["hello", "", "a", "tensorflow feature"], 2**62))
    assert got.tolist() == [3786372426573024488, 1936946117179621455, 3694432073954588131,
                            1340001493464725720]
    assert got.dtype == np.int64


def test_hash_bucket_rejects_numbers_and_bad_bucket_counts():
    with pytest.raises(TypeError, match="tf.as_string"):
        tf.string_to_hash_bucket_fast(tf.constant([1, 2]), 10)
    with pytest.raises(ValueError, match="num_buckets must be >= 1"):
        tf.string_to_hash_bucket_fast(["a"], 0)


def test_as_string_formats_ints_bools_and_floats():
    assert _run(tf.as_string(tf.constant([7, -12], tf.int64))).tolist() == [b"7", b"-12"]
    assert _run(tf.as_string(tf.constant([True, False]))).tolist() == [b"true", b"false"]
    assert _run(tf.as_string(tf.constant([1.5]), precision=2)).tolist() == [b"1.50"]
    assert _run(tf.as_string(tf.constant([3]), width=3, fill="0")).tolist() == [b"003"]


def test_bucketize_puts_a_boundary_value_in_the_bucket_above():
    got = _run(bucketize(tf.constant([[-5., 0.], [1.9, 2.], [100., 1.]]), [0., 1., 2.]))
    assert got.tolist() == [[0, 1], [2, 3], [3, 2]]
    with pytest.raises(ValueError, match="sorted"):
        bucketize(tf.constant([1.]), [2., 1.])


def test_vocabulary_lookup_known_default_and_oov_buckets():
    assert _run(vocabulary_lookup(tf.constant(["b", "zz", "a"]), ["a", "b"])).tolist() == \
        [1, -1, 0]
    assert _run(vocabulary_lookup(tf.constant([5, 9], tf.int64), [9, 5], default_value=7)
                ).tolist() == [1, 0]
    # OOV ids: vocab size + Fingerprint64(key) % buckets (TF's index_table_from_tensor).
    got = _run(vocabulary_lookup(tf.constant(["red", "teal"]), ["red", "green"],
                                 num_oov_buckets=3))
    assert got.tolist() == [0, 2 + fingerprint64(b"teal") % 3]
    assert got[1] == 3  # value computed by TF 2.21 (the same column, via indicator_column)


def test_vocabulary_lookup_rejects_duplicates():
    with pytest.raises(ValueError, match="duplicate keys"):
        vocabulary_lookup(tf.constant(["a"]), ["a", "b", "a"])


def test_fingerprint_cat64_mixes_both_inputs():
    a, b = fingerprint64(b"x"), fingerprint64(b"y")
    assert fingerprint_cat64(a, b) != fingerprint_cat64(b, a)
    assert 0 <= fingerprint_cat64(a, b) < 2**64


def test_sparse_feature_cross_ids_equal_tf():
    city = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], ["paris", "tokyo", "lima"], [3, 2])
    word = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], ["a", "b", "c"], [3, 2])
    got = _run(sparse_feature_cross([city, word], num_buckets=1000))
    # Row 0 crosses (paris, a) and (tokyo, a); rows 1 and 2 lack one side: no output.
    assert got.indices.tolist() == [[0, 0], [0, 1]]
    assert sorted(got.values.tolist()) == [600, 906]  # value computed by TF 2.21
    assert got.dense_shape.tolist() == [3, 2]


def test_sparse_feature_cross_product_order_last_input_fastest():
    a = tf.SparseTensor([[0, 0], [0, 1]], tf.constant([1, 2], tf.int64), [1, 2])
    b = tf.SparseTensor([[0, 0], [0, 1]], tf.constant([3, 4], tf.int64), [1, 2])
    got = _run(sparse_feature_cross([a, b], num_buckets=0, hash_key=5))
    want = [fingerprint_cat64(fingerprint_cat64(5, x), y) % (2**63 - 1)
            for x, y in [(1, 3), (1, 4), (2, 3), (2, 4)]]
    assert got.values.tolist() == want
    assert got.dense_shape.tolist() == [1, 4]


def test_sparse_feature_cross_rows_out_of_order_three_inputs_and_negative_ids():
    # Row 1 comes first in `a`; within a row features keep their order. Row 0 has
    # 2 x 1 x 2 combinations, row 1 has 1 x 1 x 1; -1 folds in as 2**64 - 1.
    a = tf.SparseTensor([[1, 0], [0, 0], [0, 1]], tf.constant([7, 1, 2], tf.int64), [2, 2])
    b = tf.SparseTensor([[0, 0], [1, 0]], ["x", "y"], [2, 1])
    c = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([-1, 3, 4], tf.int64), [2, 2])
    got = _run(sparse_feature_cross([a, b, c], num_buckets=97, hash_key=11))

    def cross(*feats):
        h = 11
        for f in feats:
            h = fingerprint_cat64(h, f)
        return h % 97
    x, y = fingerprint64("x"), fingerprint64("y")
    assert got.indices.tolist() == [[0, 0], [0, 1], [0, 2], [0, 3], [1, 0]]
    assert got.values.tolist() == [cross(1, x, 2**64 - 1), cross(1, x, 3),
                                   cross(2, x, 2**64 - 1), cross(2, x, 3), cross(7, y, 4)]
    assert got.dense_shape.tolist() == [2, 4]


def test_sparse_feature_cross_names_a_row_outside_the_batch():
    a = tf.SparseTensor([[0, 0], [3, 0]], ["p", "q"], [2, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="input 0 has row 3 outside "
                                                             "batch 2"):
        _run(sparse_feature_cross([a, a], num_buckets=5))


def test_sparse_feature_cross_rejects_float_values():
    f = tf.SparseTensor([[0, 0]], [1.5], [1, 1])
    with pytest.raises(TypeError, match="string or int64"):
        sparse_feature_cross([f, f], num_buckets=3)


def test_fingerprints_remembered_up_to_a_bound(monkeypatch):
    from tensorweave.kernels import fingerprint
    monkeypatch.setattr(fingerprint, "_CACHE", {})
    monkeypatch.setattr(fingerprint, "_CACHE_LIMIT", 3)
    words = np.array([b"a", b"b", b"a", b"c", b"d", b"e", b"a"], dtype=object)
    want = [fingerprint64(w) for w in words]
    for _ in range(2):  # the second pass reads the table, cleared once it held 3
        assert fingerprint.fingerprints(words).tolist() == want
        assert len(fingerprint._CACHE) <= 3


def test_as_string_of_ints_and_unsigned_extremes():
    got = _run(tf.as_string(tf.constant([-3, 0, 2**40], tf.int64)))
    assert got.tolist() == [b"-3", b"0", b"1099511627776"]
    assert _run(tf.as_string(tf.constant([7], tf.int32), width=3)).tolist() == [b"  7"]
