"""tf.variable_scope as TF 1.x: re-entering, default-name numbering, nesting checks,
partitioned reuse, and default initial values."""
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def test_reentering_the_root_scope_keeps_the_name_scope():
    root = tf.get_variable_scope()
    with tf.name_scope("outer"):
        with tf.variable_scope(root):
            with tf.name_scope("inner") as ns:
                assert ns == "outer/inner/"


def test_reentering_a_scope_object_keeps_default_name_numbering():
    with tf.variable_scope("default") as default:
        with tf.variable_scope(None, "layer"):
            a = tf.get_variable("w", [])
        with tf.variable_scope(None, "layer"):
            b = tf.get_variable("w", [])
        with tf.variable_scope(default):
            pass
        with tf.variable_scope(None, "layer"):
            c = tf.get_variable("w", [])
    assert [v.name for v in (a, b, c)] == ["default/layer/w:0", "default/layer_1/w:0",
                                           "default/layer_2/w:0"]


def test_leaving_a_scope_by_name_restarts_its_subscope_numbering():
    names = []
    for _ in range(2):
        with tf.variable_scope("block", reuse=tf.AUTO_REUSE):
            with tf.variable_scope(None, "unit"):
                names.append(tf.get_variable("w", []).name)
    assert names == ["block/unit/w:0", "block/unit/w:0"]


def test_exiting_out_of_order_is_an_error_and_leaves_the_scopes_usable():
    with tf.variable_scope("aa"):
        bb = tf.variable_scope("bb")
        bb.__enter__()
        with tf.variable_scope("cc"):
            with pytest.raises(RuntimeError, match="Improper nesting of variable_scope"):
                bb.__exit__(None, None, None)
        bb.__exit__(None, None, None)
        assert tf.get_variable_scope().name == "aa"


def test_scope_argument_checks():
    with pytest.raises(TypeError, match="auxiliary_name_scope must be `True` or `False`"):
        tf.variable_scope("x", auxiliary_name_scope="no")
    with pytest.raises(TypeError, match="If default_name is None then name_or_scope"):
        tf.variable_scope(None)
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name"):
        with tf.variable_scope(None, "d", reuse=True):
            pass


def test_partitioned_variable_reused_without_its_partitioner():
    with tf.variable_scope("s0", partitioner=tf.fixed_size_partitioner(2)):
        v = tf.get_variable("table", shape=(4, 1))
    with tf.variable_scope("s0", reuse=True):
        assert tf.get_variable("table") is v
    with tf.variable_scope("s0"):
        with pytest.raises(ValueError, match="partitioned version of the variable was "
                                             "found: s0/table/part_0"):
            tf.get_variable("table", [4, 1])


def test_string_variable_defaults_to_empty_strings():
    v = tf.get_variable("names", shape=[2], dtype=tf.string)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(v).tolist() == [b"", b""]


def test_create_partitioned_variables():
    parts = tf.create_partitioned_variables([4, 3], [2, 1], tf.ones_initializer(), name="pv")
    assert [p.name for p in parts] == ["pv/part_0:0", "pv/part_1:0"]
    assert [p._save_slice_info.spec for p in parts] == ["4 3 0,2:0,3", "4 3 2,2:0,3"]
    unnamed = tf.create_partitioned_variables([4, 3], [1, 3], tf.zeros_initializer())
    assert unnamed[0].name == "PartitionedVariable/part_0:0" and len(unnamed) == 3
    with pytest.raises(ValueError, match="'shape' and 'slicing' of a partitioned Variable"):
        tf.create_partitioned_variables([4, 3], [2], tf.ones_initializer())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(tf.concat(parts, 0)).tolist() == [[1.0] * 3] * 4


def test_reading_a_partitioned_variable_takes_no_control_dependencies():
    gate = tf.constant(1.0)
    with tf.control_dependencies([gate]):
        pv = tf.get_variable("x", [4], partitioner=tf.fixed_size_partitioner(2))
        before = set(tf.get_default_graph().get_operations())
        pv.as_tensor()
    new = [op for op in tf.get_default_graph().get_operations() if op not in before]
    assert new and all(not op.control_inputs for op in new)
