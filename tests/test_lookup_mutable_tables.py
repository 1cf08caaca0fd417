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
