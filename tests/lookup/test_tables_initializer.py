"""tf.tables_initializer: runs every op of the TABLE_INITIALIZERS collection."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_without_tables_it_is_a_no_op_that_runs():
    init = tf.tables_initializer()
    assert init.type == "NoOp" and init.name == "init_all_tables"
    with tf.Session() as sess:
        assert sess.run(init) is None


def test_runs_every_table_initializer_of_the_graph():
    a = tf.Variable(0.0, name="a")
    b = tf.Variable(0.0, name="b")
    tf.add_to_collection(tf.GraphKeys.TABLE_INITIALIZERS, tf.assign(a, 3.0).op)
    tf.add_to_collection(tf.GraphKeys.TABLE_INITIALIZERS, tf.assign(b, 4.0).op)
    init = tf.initializers.tables_initializer(name="tables")
    assert init.name == "tables"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run([a, b]), [0.0, 0.0])
        sess.run(init)
        np.testing.assert_allclose(sess.run([a, b]), [3.0, 4.0])
