"""Variables made by get_variable inside function bodies (map_fn, scan, while_loop)."""
import numpy as np
import pytest

import tensorweave as tf


def test_get_variable_inside_a_loop_body_lives_in_the_model_graph():
    """tf.layers.dense inside map_fn: one variable set in the model's graph, found by
    global_variables and the optimizer, initialized once (not per call of the body)."""
    with tf.Graph().as_default():
        x = tf.constant(np.ones((4, 3, 2), np.float32))
        with tf.variable_scope("outer"):
            y = tf.map_fn(lambda r: tf.layers.dense(r, 5, name="d", reuse=tf.AUTO_REUSE), x)
        assert [v.name for v in tf.global_variables()] == ["outer/d/kernel:0", "outer/d/bias:0"]
        loss = tf.reduce_sum(y)
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(loss)
            assert sess.run(loss) == before  # reading does not re-initialize
            sess.run(train)
            assert sess.run(loss) < before


def test_variable_scopes_around_a_while_loop_apply_inside_it():
    with tf.Graph().as_default():
        def body(i, acc):
            w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.0))
            return i + 1, acc * w
        with tf.variable_scope("model"):
            _, out = tf.while_loop(lambda i, acc: i < 3, body, [tf.constant(0), 1.0])
        assert [v.name for v in tf.global_variables()] == ["model/w:0"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(out) == 8.0


def test_tf_variable_in_a_loop_body_needs_a_lambda_initializer(graph):
    def cond(i, _):
        return i < 3

    def from_tensor(i, x):
        v = tf.Variable(tf.zeros([], tf.int32))
        return i + 1, x + v.read_value()

    with pytest.raises(ValueError, match="inside a control-flow construct.*use a lambda"):
        tf.while_loop(cond, from_tensor, [0, 0])

    def from_lambda(i, x):
        v = tf.Variable(lambda: tf.constant(5), name="lifted")
        return i + 1, x + v.read_value()

    out = tf.while_loop(cond, from_lambda, [0, 0])
    assert [v.name for v in tf.global_variables()] == ["lifted:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert [int(x) for x in sess.run(out)] == [3, 15]
