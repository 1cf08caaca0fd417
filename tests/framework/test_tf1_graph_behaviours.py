import numpy as np
import pytest
import tensorweave as tf

def test_variable_inside_control_dependencies_takes_none_of_them():
    g = tf.Graph()
    with g.as_default():
        a = tf.Variable(1.0, name="a")
        bump = a.assign_add(1.0)
        with tf.control_dependencies([bump]):
            b = tf.Variable(5.0, name="b")
        assert b.op.control_inputs == [] and b.initializer.control_inputs == []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(b.initializer)
            assert sess.run(a) == 1.0  # initializing b did not bump a

def test_count_up_to_public_and_method():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(0, dtype=tf.int64)
        n = v.count_up_to(2)
        m = tf.count_up_to(v, 3)
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(n) == 0 and sess.run(n) == 1
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(n)
            assert sess.run(m) == 2

def test_cos_sin_public():
    with tf.Graph().as_default(), tf.Session() as sess:
        c, s = sess.run([tf.cos(tf.constant(0.0)), tf.sin(tf.constant(np.pi / 2))])
        np.testing.assert_allclose([c, s], [1.0, 1.0])


def test_fetching_an_unknown_name_is_a_value_error_naming_it():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(ValueError, match="'i fail'"):
            sess.run("i fail")
        with pytest.raises(ValueError, match="nope:0"):
            sess.run("nope:0")
