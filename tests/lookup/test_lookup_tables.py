"""Lookup tables (`tf.contrib.lookup`): HashTable and its initializers, the index
tables with out-of-vocabulary buckets, the index-to-string tables, and a table on a
ps task shared by two workers' sessions.

Specification: TF 1.x tensorflow/contrib/lookup/lookup_ops_test.py and
python/kernel_tests/lookup_ops_test.py; OOV ids from farmhash Fingerprint64 as TF.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.contrib import lookup as tables  # every table name, as users reach them
from tensorweave.ops.lookup import table_ops
from tensorweave.kernels.fingerprint import fingerprint64
from tensorweave.ops.lookup.vocab_ops import vocabulary_lookup

pytestmark = pytest.mark.usefixtures("graph")


def _kv(keys, values, kd=None, vd=None):
    return tables.KeyValueTensorInitializer(keys, values, kd, vd)


def test_string_to_int64_table():
    table = tables.HashTable(_kv(["brain", "salad", "surgery"], [0, 1, 2], tf.string,
                                 tf.int64), -1)
    assert table.key_dtype == tf.string and table.value_dtype == tf.int64
    out = table.lookup(tf.constant(["brain", "salad", "tank"]))
    assert out.dtype == tf.int64 and out.shape.as_list() == [3]
    assert table.init in tf.get_collection(tf.GraphKeys.TABLE_INITIALIZERS)
    assert table.initializer is table.init
    with tf.Session() as sess:
        assert sess.run(table.size()) == 0
        sess.run(tf.tables_initializer())
        assert sess.run(table.size()) == 3
        np.testing.assert_array_equal(sess.run(out), [0, 1, -1])
        # Keys of any shape keep it.
        np.testing.assert_array_equal(
            sess.run(table.lookup(tf.constant([["surgery"], ["x"]]))), [[2], [-1]])


def test_int64_to_string_and_int64_to_float_tables():
    names = tables.HashTable(_kv([1, 2, 3], ["one", "two", "three"], tf.int64, tf.string),
                             "n/a")
    weights = tables.HashTable(_kv(tf.constant([10, 20], tf.int64),
                                   tf.constant([0.5, 1.5], tf.float32)), -1.0)
    keys = tf.constant([3, 7, 1], tf.int64)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(sess.run(names.lookup(keys)),
                                      [b"three", b"n/a", b"one"])
        got = sess.run(weights.lookup(tf.constant([20, 11], tf.int64)))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [1.5, -1.0])


def test_lookup_with_fed_keys_and_wrong_dtype():
    table = tables.HashTable(_kv(["a", "b"], [5, 6], tf.string, tf.int64), 0)
    keys = tf.placeholder(tf.string, [None])
    out = table.lookup(keys)
    with tf.Session() as sess:
        sess.run(table.init)
        np.testing.assert_array_equal(sess.run(out, {keys: ["b", "q", "a"]}), [6, 0, 5])
    with pytest.raises(TypeError, match="Signature mismatch"):
        table.lookup(tf.constant([1, 2], tf.int64))
    with pytest.raises(TypeError, match="Invalid value dtype"):
        tables.HashTable(_kv(["a"], [1.0], tf.string, tf.float32), 0).check_table_dtypes(
            tf.string, tf.int64)


def test_lookup_before_initialization_says_to_run_tables_initializer():
    table = tables.HashTable(_kv(["a"], [1], tf.string, tf.int64), -1)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match=r"not initialized.*tf\.tables_initializer\(\)"):
            sess.run(table.lookup(tf.constant(["a"])))


def test_initializing_twice():
    table = tables.HashTable(_kv(["a", "b"], [0, 1], tf.string, tf.int64), -1,
                             shared_name="shared")
    with tf.Session() as sess:
        sess.run(table.init)
        sess.run(table.init)  # the same data again: a no-op (TF >= 1.13)
        other = tables.HashTable(_kv(["a", "b"], [1, 0], tf.string, tf.int64), -1,
                                 shared_name="shared")
        with pytest.raises(tf.errors.FailedPreconditionError,
                           match="Table already initialized"):
            sess.run(other.init)
        np.testing.assert_array_equal(sess.run(other.lookup(tf.constant(["a"]))), [0])


def test_duplicate_keys_with_different_values_fail():
    table = tables.HashTable(_kv(["a", "a"], [0, 1], tf.string, tf.int64), -1)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="different value"):
            sess.run(table.init)


def test_default_value_must_be_scalar():
    with pytest.raises(ValueError, match="scalar"):
        tables.HashTable(_kv(["a"], [0], tf.string, tf.int64), [-1, -2])


def test_sparse_keys_keep_indices_and_shape():
    table = tables.HashTable(_kv(["a", "b"], [0, 1], tf.string, tf.int64), -1)
    sp = tf.SparseTensor([[0, 0], [1, 2], [2, 1]], ["b", "zz", "a"], [3, 3])
    out = table.lookup(sp)
    assert isinstance(out, tf.SparseTensor)
    oov = tables.index_table_from_tensor(tf.constant(["a", "b"]), num_oov_buckets=3)
    out2 = oov.lookup(sp)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        got, got2 = sess.run([out, out2])
    np.testing.assert_array_equal(got.indices, [[0, 0], [1, 2], [2, 1]])
    np.testing.assert_array_equal(got.values, [1, -1, 0])
    np.testing.assert_array_equal(got.dense_shape, [3, 3])
    np.testing.assert_array_equal(got2.values, [1, 2 + fingerprint64(b"zz") % 3, 0])


def _oov(key, vocab_size, buckets):
    return vocab_size + fingerprint64(str(key).encode() if not isinstance(key, bytes)
                                      else key) % buckets


@pytest.mark.parametrize("buckets", [0, 1, 5])
def test_index_table_from_tensor_matches_vocabulary_lookup(buckets):
    vocab = ["emerson", "lake", "palmer"]
    keys = ["emerson", "lake", "palmer", "king", "crimson", ""]
    table = tables.index_table_from_tensor(tf.constant(vocab), num_oov_buckets=buckets)
    ids = table.lookup(tf.constant(keys))
    fused = vocabulary_lookup(tf.constant(keys), vocab, num_oov_buckets=buckets)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        got, want, size = sess.run([ids, fused, table.size()])
    np.testing.assert_array_equal(got, want)
    expected = [0, 1, 2] + [_oov(k.encode(), 3, buckets) if buckets else -1
                            for k in keys[3:]]
    np.testing.assert_array_equal(got, expected)
    assert size == 3 + buckets


def test_index_table_from_tensor_int_keys_hash_their_decimal_string():
    table = tables.index_table_from_tensor(tf.constant([42, 1, -7], tf.int64),
                                           num_oov_buckets=4, dtype=tf.int64)
    keys = tf.constant([1, 1000, -7, 123456789], tf.int64)
    ids = table.lookup(keys)
    fused = vocabulary_lookup(keys, [42, 1, -7], num_oov_buckets=4)
    # int32 keys against an int64 table (TF casts them).
    table32 = tables.index_table_from_tensor(tf.constant([42, 1, -7]), num_oov_buckets=4,
                                             dtype=tf.int32)
    ids32 = table32.lookup(tf.constant([1, 1000], tf.int32))
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        got, want, got32 = sess.run([ids, fused, ids32])
    np.testing.assert_array_equal(got, [1, _oov(1000, 3, 4), 2, _oov(123456789, 3, 4)])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got32, got[:2])


def test_index_table_from_tensor_argument_errors():
    with pytest.raises(ValueError, match="vocabulary_list must be specified"):
        tables.index_table_from_tensor(None)
    with pytest.raises(ValueError, match="num_oov_buckets"):
        tables.index_table_from_tensor(["a"], num_oov_buckets=-1)
    with pytest.raises(TypeError, match="Only integer and string"):
        tables.index_table_from_tensor([1.0], dtype=tf.float32)
    with pytest.raises(ValueError, match="Expected integer"):
        tables.index_table_from_tensor(["a"], dtype=tf.int64)


def test_index_table_default_value_without_buckets():
    table = tables.index_table_from_tensor(["a", "b"], default_value=-5)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(sess.run(table.lookup(tf.constant(["b", "c"]))),
                                      [1, -5])


def test_tf1_snippet():
    tokens = tf.constant([["a", "b", "c"], ["b", "a", "a"]])
    table = tables.index_table_from_tensor(tf.constant(["a", "b"]), num_oov_buckets=1)
    ids = table.lookup(tokens)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(sess.run(ids), [[0, 1, 2], [1, 0, 0]])


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


@pytest.mark.parametrize("buckets", [0, 2])
def test_index_table_from_file(tmp_path, buckets):
    path = _write(tmp_path, "vocab.txt", ["brain", "salad", "surgery"])
    table = tables.index_table_from_file(path, num_oov_buckets=buckets)
    keys = ["salad", "surgery", "tarkus", "brain"]
    ids = table.lookup(tf.constant(keys))
    fused = vocabulary_lookup(tf.constant(keys), ["brain", "salad", "surgery"],
                              num_oov_buckets=buckets)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        got, want = sess.run([ids, fused])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [1, 2, _oov(b"tarkus", 3, 2) if buckets else -1, 0])


def test_index_table_from_file_vocab_size_and_int_keys(tmp_path):
    path = _write(tmp_path, "vocab.txt", ["brain", "salad", "surgery"])
    table = tables.index_table_from_file(path, vocab_size=2)
    ints = _write(tmp_path, "ints.txt", ["42", "1", "-7"])
    itable = tables.index_table_from_file(ints, num_oov_buckets=3, key_dtype=tf.int64)
    too_big = tables.index_table_from_file(path, vocab_size=4)
    with tf.Session() as sess:
        sess.run([table.init, itable.init])
        np.testing.assert_array_equal(
            sess.run(table.lookup(tf.constant(["salad", "surgery"]))), [1, -1])
        assert sess.run(table.size()) == 2
        np.testing.assert_array_equal(
            sess.run(itable.lookup(tf.constant([-7, 5], tf.int64))), [2, _oov(5, 3, 3)])
        with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid vocab_size"):
            sess.run(too_big.init)
    with pytest.raises(ValueError, match="vocabulary_file must be specified"):
        tables.index_table_from_file("")
    with pytest.raises(ValueError, match="vocab_size must be greater than 0"):
        tables.index_table_from_file(path, vocab_size=0)


def test_two_tables_of_one_file_share_it(tmp_path):
    path = _write(tmp_path, "vocab.txt", ["a", "b"])
    t1 = tables.index_table_from_file(path)
    t2 = tables.index_table_from_file(path)
    assert t1.table_ref.op.get_attr("shared_name") == t2.table_ref.op.get_attr("shared_name")
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())  # both initializers, one resource
        np.testing.assert_array_equal(sess.run(t2.lookup(tf.constant(["b"]))), [1])


def test_text_file_initializer_columns_and_delimiter(tmp_path):
    path = _write(tmp_path, "table.csv", ["0,zero,0.5", "1,one,1.5", "2,two,2.5"])
    by_name = tables.HashTable(tables.TextFileInitializer(
        path, tf.string, 1, tf.int64, 0, delimiter=","), -1)
    weight = tables.HashTable(tables.TextFileInitializer(
        path, tf.int64, 0, tf.float32, 2, delimiter=","), 0.0)
    line = tables.HashTable(tables.TextFileInitializer(
        path, tf.int64, tables.TextFileIndex.LINE_NUMBER, tf.string,
        tables.TextFileIndex.WHOLE_LINE, vocab_size=2), "none")
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(sess.run(by_name.lookup(tf.constant(["two", "x"]))),
                                      [2, -1])
        np.testing.assert_allclose(sess.run(weight.lookup(tf.constant([1, 9], tf.int64))),
                                   [1.5, 0.0])
        np.testing.assert_array_equal(sess.run(line.lookup(tf.constant([1, 2], tf.int64))),
                                      [b"1,one,1.5", b"none"])
        assert sess.run(line.size()) == 2


def test_text_file_errors(tmp_path):
    path = _write(tmp_path, "t.txt", ["a\t1", "b"])
    short = tables.HashTable(tables.TextFileInitializer(path, tf.string, 0, tf.int64, 1), -1)
    bad = _write(tmp_path, "bad.txt", ["a\tx"])
    notint = tables.HashTable(tables.TextFileInitializer(bad, tf.string, 0, tf.int64, 1), -1)
    missing = tables.HashTable(tables.TextFileInitializer(
        str(tmp_path / "nope.txt"), tf.string, -2, tf.int64, -1), -1)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="number of columns"):
            sess.run(short.init)
        with pytest.raises(tf.errors.InvalidArgumentError, match="not a valid int64"):
            sess.run(notint.init)
        with pytest.raises(tf.errors.NotFoundError):
            sess.run(missing.init)
    with pytest.raises(ValueError, match="Invalid key index"):
        tables.TextFileInitializer(path, tf.string, -3, tf.int64, 0)
    with pytest.raises(ValueError, match="Signature mismatch"):
        tables.TextFileInitializer(path, tf.string, -1, tf.int64, 0)
    with pytest.raises(ValueError, match="Signature mismatch"):
        tables.TextFileInitializer(path, tf.string, 0, tf.int64, -2)
    with pytest.raises(ValueError, match="Invalid vocab_size"):
        tables.TextFileInitializer(path, tf.string, 0, tf.int64, 1, vocab_size=0)


def test_index_to_string_tables(tmp_path):
    t = tables.index_to_string_table_from_tensor(tf.constant(["brain", "salad"]))
    path = _write(tmp_path, "vocab.txt", ["brain", "salad", "surgery"])
    f = tables.index_to_string_table_from_file(path, default_value="?")
    f2 = tables.index_to_string_table_from_file(path, vocab_size=1)
    ids = tf.constant([1, 0, 2, -1], tf.int64)
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(sess.run(t.lookup(ids)),
                                      [b"salad", b"brain", b"UNK", b"UNK"])
        np.testing.assert_array_equal(sess.run(f.lookup(ids)),
                                      [b"salad", b"brain", b"surgery", b"?"])
        np.testing.assert_array_equal(sess.run(f2.lookup(ids)),
                                      [b"UNK", b"brain", b"UNK", b"UNK"])


def test_deprecated_helpers():
    ids = tables.string_to_index(tf.constant(["b", "x"]), tf.constant(["a", "b"]))
    names = tables.index_to_string(tf.constant([0, 3], tf.int64), tf.constant(["a", "b"]))
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_array_equal(sess.run(ids), [1, -1])
        np.testing.assert_array_equal(sess.run(names), [b"a", b"UNK"])


def test_ops_have_tf_names_and_attrs():
    table = tables.HashTable(_kv(["a"], [1], tf.string, tf.int64), -1)
    op = table.table_ref.op
    assert op.type == "HashTable"
    assert op.get_attr("key_dtype") == tf.string and op.get_attr("value_dtype") == tf.int64
    assert op.get_attr("shared_name") == "" and op.get_attr("container") == ""
    assert table.table_ref.dtype == tf.string._as_ref
    assert table.init.type == "InitializeTable"
    assert table.lookup(tf.constant(["a"])).op.type == "LookupTableFind"
    assert table.size().op.type == "LookupTableSize"
    # As TF: an unknown hasher is refused when the table hashes (at lookup).
    odd = tables.index_table_from_tensor(["a"], num_oov_buckets=1,
                                         hasher_spec=tables.HasherSpec("my-hash", None))
    with pytest.raises(ValueError, match="Unknown hasher my-hash"):
        odd.lookup(tf.constant(["b"]))
    assert table_ops.WHOLE_LINE == tables.TextFileIndex.WHOLE_LINE == -2


def test_table_on_ps_is_shared_by_two_workers(inprocess_cluster):
    spec, servers = inprocess_cluster
    with tf.device("/job:ps/task:0"):
        table = tables.HashTable(_kv(["a", "b"], [10, 20], tf.string, tf.int64), -1,
                                 shared_name="vocab")
    with tf.device("/job:worker/task:1"):
        keys = tf.constant(["b", "c", "a"])
    out = table.lookup(keys)
    with tf.Session(servers[("worker", 0)].target) as s0:
        s0.run(tf.tables_initializer())
    with tf.Session(servers[("worker", 1)].target) as s1:
        # Initialized by the other worker's session: it lives in the ps's resources.
        np.testing.assert_array_equal(s1.run(out), [20, -1, 10])
        assert s1.run(table.size()) == 2
    with tf.Session(servers[("worker", 0)].target) as s0:
        np.testing.assert_array_equal(s0.run(out), [20, -1, 10])
