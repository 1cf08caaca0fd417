"""tf.make_template: variables shared across calls, as TF 1.x template_test checks."""
import numpy as np
import pytest

import tensorweave as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def linear(x, units, name="w"):
    w = tf.get_variable(name, [int(x.shape[1]), units],
                        initializer=tf.random_normal_initializer(seed=1))
    return tf.matmul(x, w)


def test_calls_share_variables_and_give_equal_results():
    tmpl = tf.make_template("lin", linear, units=3)
    x = tf.constant(np.ones((2, 4), np.float32))
    a, b = tmpl(x), tmpl(x)
    assert [v.name for v in tf.trainable_variables()] == ["lin/w:0"]
    assert tmpl.variable_scope_name == "lin" and [v.name for v in tmpl.trainable_variables] \
        == ["lin/w:0"] and tmpl.variables == tmpl.global_variables
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        av, bv = sess.run([a, b])
    np.testing.assert_array_equal(av, bv)
    # two templates of one name get two scopes (made unique), each its own weights
    other = tf.make_template("lin", linear, units=3)
    other(x)
    assert other.variable_scope_name == "lin_1"
    assert len(tf.trainable_variables()) == 2


def test_scope_now_unique_name_and_nested_scope():
    with tf.variable_scope("outer"):
        tmpl = tf.make_template("s", linear, create_scope_now_=True, units=2)
    assert tmpl.variable_scope_name == "outer/s"
    tmpl(tf.ones([1, 2]))
    tmpl(tf.ones([3, 2]))
    assert [v.name for v in tf.global_variables()] == ["outer/s/w:0"]
    named = tf.make_template("ignored", linear, unique_name_="exact", units=1)
    named(tf.ones([1, 2]))
    assert [v.name for v in named.trainable_variables] == ["exact/w:0"]


def test_a_new_trainable_variable_on_a_later_call_is_an_error():
    def bad(x):
        return x * tf.Variable(1.0, name="scale")
    tmpl = tf.make_template("bad", bad)
    tmpl(tf.ones([2]))
    with pytest.raises(ValueError, match="Trainable variable created when calling template "
                                         "'bad' after the first time.*bad_1/scale"):
        tmpl(tf.ones([2]))
