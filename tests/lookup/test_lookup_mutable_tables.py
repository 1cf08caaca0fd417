"""`tf.contrib.lookup.MutableHashTable`: insert, remove, lookup, size and export, scalar
and vector values, shape and dtype errors, sharing by node name, and Saver round trips
(from the SAVEABLE_OBJECTS collection and with the table in var_list).

Specification: TF 1.15 python/ops/lookup_ops.py (MutableHashTable) and
kernels/lookup_table_op.cc (MutableHashTableOfScalars / OfTensors).
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
MutableHashTable = tf.contrib.lookup.MutableHashTable


def test_insert_lookup_remove_export():
    table = MutableHashTable(tf.string, tf.int64, default_value=-1)
    assert table.resource_handle.op.type == "MutableHashTable"
    keys = tf.constant(["brain", "salad", "surgery"])
    with tf.Session() as sess:
        assert sess.run(table.size()) == 0
        sess.run(table.insert(keys, tf.constant([0, 1, 2], tf.int64)))
        sess.run(table.insert(tf.constant(["salad"]), tf.constant([7], tf.int64)))
        assert sess.run(table.size()) == 3
        out = table.lookup(tf.constant([["brain", "x"], ["salad", "surgery"]]))
        np.testing.assert_array_equal(sess.run(out), [[0, -1], [7, 2]])
        sess.run(table.remove(tf.constant(["brain", "never-there"])))
        k, v = sess.run(table.export())
        assert dict(zip(k.tolist(), v.tolist())) == {b"salad": 7, b"surgery": 2}


def test_vector_values_and_their_shape_errors():
    table = MutableHashTable(tf.int64, tf.float32, default_value=[-1., -1.])
    assert table.resource_handle.op.type == "MutableHashTableOfTensors"
    keys = tf.constant([5, 6], tf.int64)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected shape \[2, 2\]"):
            sess.run(table.insert(keys, tf.constant([1., 2., 3., 4.])))
        sess.run(table.insert(keys, tf.constant([[1., 2.], [3., 4.]])))
        out = table.lookup(tf.constant([6, 9], tf.int64))
        assert out.shape.as_list() == [2, 2]
        np.testing.assert_allclose(sess.run(out), [[3., 4.], [-1., -1.]])
        assert sess.run(table.export()[1]).shape == (2, 2)
    bad = MutableHashTable(tf.string, tf.int64, default_value=[[-1, -1]])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Default value must be a vector"):
            sess.run(bad.size())


def test_key_dtype_mismatches():
    # As TF: lookup/insert convert to the table's dtypes (ValueError for a tensor of
    # another dtype), remove checks the keys' dtype itself (TypeError).
    table = MutableHashTable(tf.string, tf.int64, default_value=-1)
    with pytest.raises(ValueError, match="requested dtype string"):
        table.lookup(tf.constant([1], tf.int64))
    with pytest.raises(ValueError, match="requested dtype int64"):
        table.insert(tf.constant(["a"]), tf.constant(["x"]))
    with pytest.raises(TypeError, match="Signature mismatch"):
        table.remove(tf.constant([1], tf.int64))


def test_checkpointed_tables_are_shared_by_node_name():
    a = MutableHashTable(tf.string, tf.int64, -1, name="shared_t")
    with tf.Session() as sess:
        sess.run(a.insert(tf.constant(["k"]), tf.constant([3], tf.int64)))
        # Another graph's table of the same node name, run in the same session's
        # resource manager, would be the same; here: a second lookup op sees the insert.
        assert sess.run(a.lookup(tf.constant(["k"]))).tolist() == [3]
        assert a.resource_handle.op.get_attr("use_node_name_sharing") is True
    private = MutableHashTable(tf.string, tf.int64, -1, checkpoint=False)
    assert private.resource_handle.op.get_attr("use_node_name_sharing") is False
    assert all(s.op is not private for s in tf.get_collection(tf.GraphKeys.SAVEABLE_OBJECTS))


@pytest.mark.parametrize("in_var_list", [False, True])
def test_saver_round_trip(tmp_path, in_var_list):
    path = str(tmp_path / "ckpt")
    with tf.Graph().as_default():
        table = MutableHashTable(tf.string, tf.int64, -1, name="t1")
        v = tf.Variable(10.0, name="v")
        saver = tf.train.Saver([table, v] if in_var_list else None)
        with tf.Session() as sess:
            sess.run(v.initializer)
            sess.run(table.insert(tf.constant(["b", "c"]), tf.constant([0, 1], tf.int64)))
            saver.save(sess, path)
    assert {"t1-keys", "t1-values", "v"} <= {
        name for name, _ in tf.train.list_variables(path)}
    with tf.Graph().as_default():
        table = MutableHashTable(tf.string, tf.int64, -1, name="t1")
        v = tf.Variable(-1.0, name="v")
        saver = tf.train.Saver([table, v] if in_var_list else None)
        with tf.Session() as sess:
            sess.run(table.insert(tf.constant(["a"]), tf.constant([9], tf.int64)))
            saver.restore(sess, path)  # replaces the contents
            assert sess.run(v) == 10.0 and sess.run(table.size()) == 2
            np.testing.assert_array_equal(
                sess.run(table.lookup(tf.constant(["a", "b", "c"]))), [-1, 0, 1])


# ---- DenseHashTable (tf.lookup.experimental / tf.contrib.lookup.MutableDenseHashTable)
DenseHashTable = tf.lookup.experimental.DenseHashTable


def test_dense_table_grows_and_exports_its_buckets():
    assert tf.contrib.lookup.MutableDenseHashTable is DenseHashTable
    assert tf.lookup.experimental.MutableHashTable is MutableHashTable
    table = DenseHashTable(tf.int64, tf.int64, default_value=-1, empty_key=0,
                           deleted_key=-1, initial_num_buckets=4)
    with tf.Session() as sess:
        sess.run(table.insert(tf.constant([11, 12, 13], tf.int64),
                              tf.constant([0, 1, 2], tf.int64)))
        assert sess.run(table.size()) == 3 and len(sess.run(table.export()[0])) == 4
        sess.run(table.remove(tf.constant([12, 99], tf.int64)))
        keys, values = sess.run(table.export())
        # Free buckets export the empty key, removed ones the deleted key (value kept).
        assert sorted(zip(keys.tolist(), values.tolist())) == [(-1, 1), (0, 0), (11, 0),
                                                              (13, 2)]
        # 2 entries + 5 pending > 0.8 * 4, and > 0.8 * 8: the buckets double twice.
        sess.run(table.insert(tf.constant([13, 14, 15, 16, 17], tf.int64),
                              tf.constant([3, 4, 5, 6, 7], tf.int64)))
        assert sess.run(table.size()) == 6 and len(sess.run(table.export()[0])) == 16
        np.testing.assert_array_equal(
            sess.run(table.lookup(tf.constant([10, 11, 12, 13, 17], tf.int64))),
            [-1, 0, -1, 3, 7])


def test_dense_table_vector_keys_and_values():
    table = DenseHashTable(tf.int64, tf.float32, default_value=[-1., -1.],
                           empty_key=[0, 0], deleted_key=[-1, -1], initial_num_buckets=8)
    out = table.lookup(tf.constant([[1, 2], [3, 4]], tf.int64))
    assert out.shape.as_list() == [2, 2]
    with tf.Session() as sess:
        sess.run(table.insert(tf.constant([[1, 2]], tf.int64), tf.constant([[5., 6.]])))
        np.testing.assert_allclose(sess.run(out), [[5., 6.], [-1., -1.]])
        assert sess.run(table.export()[0]).shape == (8, 2)


def test_dense_table_errors_use_tfs_words():
    table = DenseHashTable(tf.int64, tf.int64, -1, empty_key=0, deleted_key=-1)
    with tf.Session() as sess:
        for key, which in ((0, "empty_key"), (-1, "deleted_key")):
            with pytest.raises(tf.errors.InvalidArgumentError, match=which):
                sess.run(table.insert(tf.constant([11, key], tf.int64),
                                      tf.constant([1, 2], tf.int64)))
            with pytest.raises(tf.errors.InvalidArgumentError, match=which):
                sess.run(table.lookup(tf.constant([key], tf.int64)))
        with pytest.raises(tf.errors.InvalidArgumentError, match="Expected key shape"):
            sess.run(table.lookup(tf.constant([[11, 12]], tf.int64)))
    for kwargs, match in (({"initial_num_buckets": 12}, "Number of buckets must be"),
                          ({"deleted_key": [1, 2]}, "must have same shape"),
                          ({"deleted_key": 0}, "cannot be equal")):
        args = dict({"empty_key": 0, "deleted_key": -1}, **kwargs)
        bad = DenseHashTable(tf.int64, tf.int64, -1, **args)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=match):
                sess.run(bad.size())


def test_dense_table_saver_round_trip(tmp_path):
    path = str(tmp_path / "dense")
    with tf.Graph().as_default():
        table = DenseHashTable(tf.int64, tf.int64, -1, 0, -1, name="t1",
                               initial_num_buckets=32)
        saver = tf.train.Saver([table])
        with tf.Session() as sess:
            sess.run(table.insert(tf.constant([11, 12, 13], tf.int64),
                                  tf.constant([0, 1, 2], tf.int64)))
            sess.run(table.remove(tf.constant([12], tf.int64)))
            saver.save(sess, path)
    with tf.Graph().as_default():
        table = DenseHashTable(tf.int64, tf.int64, -1, 0, -1, name="t1",
                               initial_num_buckets=64)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(table.insert(tf.constant([11, 14], tf.int64),
                                  tf.constant([12, 24], tf.int64)))
            saver.restore(sess, path)
            # The saved buckets come back: 32 of them, with the saved entries only.
            assert sess.run(table.size()) == 2 and len(sess.run(table.export()[0])) == 32
            np.testing.assert_array_equal(
                sess.run(table.lookup(tf.constant([11, 12, 13, 14], tf.int64))),
                [0, -1, 2, -1])
