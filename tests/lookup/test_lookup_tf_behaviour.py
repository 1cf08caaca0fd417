"""Lookup tables as TF 1.15's core `lookup_ops` exposes them: its argument names
(`vocabulary_list`, column indices of multi-column vocabulary files), `resource_handle`,
tables of one text file sharing a resource, the key/value dtypes TF's kernels accept,
hasher checks, and `StaticVocabularyTable`.

Specification: TF 1.15 python/ops/lookup_ops.py and kernels/lookup_table_op.cc.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.contrib import lookup as tables

pytestmark = pytest.mark.usefixtures("graph")


def _file(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_core_and_contrib_spellings_of_the_vocabulary():
    a = tables.index_table_from_tensor(vocabulary_list=["x", "y"])
    b = tables.index_table_from_tensor(mapping=["x", "y"])
    c = tables.index_to_string_table_from_tensor(vocabulary_list=["x", "y"])
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        keys = tf.constant(["y", "q"])
        np.testing.assert_array_equal(sess.run(a.lookup(keys)), [1, -1])
        np.testing.assert_array_equal(sess.run(b.lookup(keys)), [1, -1])
        assert sess.run(c.lookup(tf.constant([0], tf.int64))).tolist() == [b"x"]
    with pytest.raises(ValueError, match="vocabulary_list must be specified"):
        tables.index_table_from_tensor()
    with pytest.raises(ValueError, match="not both"):
        tables.index_table_from_tensor(["x"], mapping=["x"])


def test_multicolumn_vocabulary_files(tmp_path):
    path = _file(tmp_path, "cols.txt", ["0,brain,7", "1,salad,8", "2,surgery,9"])
    ids = tables.index_table_from_file(path, key_column_index=1, value_column_index=2,
                                       delimiter=",")
    words = tables.index_to_string_table_from_file(path, key_column_index=0,
                                                   value_column_index=1, delimiter=",")
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(
            sess.run(ids.lookup(tf.constant(["salad", "nope"]))), [8, -1])
        assert sess.run(words.lookup(tf.constant([2, 5], tf.int64))).tolist() == \
            [b"surgery", b"UNK"]


def test_resource_handle():
    table = tables.HashTable(tables.KeyValueTensorInitializer(["a"], [1], tf.string,
                                                              tf.int64), -1)
    assert table.resource_handle is table.table_ref
    assert tables.IdTableWithHashBuckets(table, 2).resource_handle is table.table_ref
    assert tables.IdTableWithHashBuckets(None, num_oov_buckets=2).resource_handle is None


def test_tables_of_one_file_share_their_resource(tmp_path):
    path = _file(tmp_path, "v.txt", ["brain", "salad"])
    init = tables.TextFileIdTableInitializer(path, vocab_size=2)
    assert init.shared_name == f"hash_table_{path}_2_-2_-1"
    first = tables.HashTable(init, -1)
    with tf.Session() as sess:
        sess.run(first.init)
        # A second table of the same file and columns finds the filled resource.
        second = tables.HashTable(tables.TextFileIdTableInitializer(path, vocab_size=2), -1)
        assert second.table_ref.op.get_attr("shared_name") == init.shared_name
        np.testing.assert_array_equal(sess.run(second.lookup(tf.constant(["salad"]))), [1])
    fed = tables.TextFileInitializer(tf.constant(path), tf.string, -2, tf.int64, -1)
    assert fed.shared_name == ""  # a path known only at run time shares nothing
    with pytest.raises(ValueError, match="Filename required"):
        tables.TextFileInitializer("", tf.string, -2, tf.int64, -1)


def test_int32_keys_follow_tfs_registered_kernels():
    ok = tables.HashTable(tables.KeyValueTensorInitializer([3, 4], ["c", "d"], tf.int32,
                                                           tf.string), "?")
    bad = tables.HashTable(tables.KeyValueTensorInitializer([3], [1], tf.int32, tf.int64), -1)
    with tf.Session() as sess:
        sess.run(ok.init)
        assert sess.run(ok.lookup(tf.constant([4, 9], tf.int32))).tolist() == [b"d", b"?"]
        with pytest.raises(tf.errors.InvalidArgumentError, match="int32 keys and int64"):
            sess.run(bad.init)


def test_empty_vocabulary_fails_when_the_table_is_filled():
    table = tables.index_table_from_tensor(np.array([], dtype=np.str_), num_oov_buckets=1)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="keys and values cannot be empty"):
            sess.run(tf.tables_initializer())
    del table


def test_hasher_and_key_dtype_checks():
    with pytest.raises(TypeError, match="must be of type HasherSpec"):
        tables.index_table_from_tensor(["a"], num_oov_buckets=1, hasher_spec=1)
    odd = tables.IdTableWithHashBuckets(None, 2, hasher_spec=tables.HasherSpec("mine", None))
    with pytest.raises(ValueError, match="Unknown hasher mine"):
        odd.lookup(tf.constant(["a"]))
    for dtype in (tf.bool, tf.float64):
        with pytest.raises(TypeError, match="Invalid key_dtype"):
            tables.IdTableWithHashBuckets(None, num_oov_buckets=5, key_dtype=dtype)


def test_zero_vocab_size_names_the_file_even_as_a_tensor(tmp_path):
    path = _file(tmp_path, "zero.txt", ["a"])
    with pytest.raises(ValueError, match=r"vocab_size must be greater than 0, got 0\. "
                                         r"vocabulary_file: .*zero\.txt"):
        tables.index_table_from_file(vocabulary_file=tf.constant(path), vocab_size=0)


def test_static_vocabulary_table():
    init = tables.KeyValueTensorInitializer(["a", "b"], [0, 1], tf.string, tf.int64)
    table = tables.StaticVocabularyTable(init, num_oov_buckets=3)
    only_buckets = tables.StaticVocabularyTable(None, num_oov_buckets=3)
    oov = tables.index_table_from_tensor(["a", "b"], num_oov_buckets=3)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        keys = tf.constant(["b", "zzz", "a", "qq"])
        # The same ids as index_table_from_tensor: Fingerprint64 buckets after the vocab.
        np.testing.assert_array_equal(sess.run(table.lookup(keys)),
                                      sess.run(oov.lookup(keys)))
        assert sess.run(table.size()) == 5 and sess.run(only_buckets.size()) == 3
        assert all(0 <= i < 3 for i in sess.run(only_buckets.lookup(keys)))
    with pytest.raises(ValueError, match="oov_buckets must be > 0"):
        tables.StaticVocabularyTable(init, 0)
    floats = tables.KeyValueTensorInitializer(["a"], [0.5], tf.string, tf.float32)
    with pytest.raises(TypeError, match="Invalid value dtype"):
        tables.StaticVocabularyTable(floats, 1)
    assert tf.lookup.StaticVocabularyTable is tables.StaticVocabularyTable


def test_static_tables_export():
    table = tables.HashTable(tables.KeyValueTensorInitializer(["a", "b"], [1, 2], tf.string,
                                                              tf.int64), -1)
    keys, values = table.export()
    with tf.Session() as sess:
        assert [len(x) for x in sess.run([keys, values])] == [0, 0]  # not yet filled
        sess.run(table.init)
        k, v = sess.run([keys, values])
    assert dict(zip(k.tolist(), v.tolist())) == {b"a": 1, b"b": 2}


def test_strong_hash_buckets_equal_tfs():
    # Values from TF 2.21's tf.strings.to_hash_bucket_strong(words, 1000003, [1, 2]).
    words = ["hello", "", "brain", "a much longer string of bytes!!"]
    ids = tf.strings.to_hash_bucket_strong(tf.constant(words), 1000003, [1, 2])
    assert ids.op.type == "StringToHashBucketStrong"
    assert tf.string_to_hash_bucket_strong is tf.strings.to_hash_bucket_strong
    with tf.Session() as sess:
        assert sess.run(ids).tolist() == [430577, 383377, 598232, 69771]


def test_strong_hash_spec_for_oov_buckets():
    with pytest.raises(ValueError, match="key must have size 2"):
        tables.StrongHashSpec([1, 2, 3])
    with pytest.raises(TypeError, match="Must be unsigned integer values"):
        tables.StrongHashSpec([None, 2])
    spec = tables.StrongHashSpec((1, 2))
    table = tables.index_table_from_tensor(["a"], num_oov_buckets=1000003, hasher_spec=spec)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        # Out-of-vocabulary ids: 1 (the vocabulary) + SipHash bucket, as TF.
        assert sess.run(table.lookup(tf.constant(["a", "hello"]))).tolist() == [0, 430578]


def test_legacy_hash_buckets_equal_tfs():
    # Values from TF 2.21's tf.strings.to_hash_bucket(words, 1000003) (TF's Hash64).
    ids = tf.string_to_hash_bucket(tf.constant(["hello", "", "brain"]), 1000003)
    assert ids.op.type == "StringToHashBucket"
    assert tf.strings.to_hash_bucket is tf.string_to_hash_bucket
    legacy = tables.index_table_from_tensor(["a"], num_oov_buckets=1000003,
                                            hasher_spec=tables.HasherSpec("legacy", None))
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        assert sess.run(ids).tolist() == [546981, 598820, 27567]
        assert sess.run(legacy.lookup(tf.constant(["a", "hello"]))).tolist() == [0, 546982]
