"""tf.RegisterGradient, Graph.gradient_override_map and tf.NotDifferentiable, as TF1
programs use them (straight-through estimators, guided backprop)."""
import itertools

import numpy as np
import pytest

import tensorweave as tf

_ids = itertools.count()


def fresh(name):
    return f"{name}{next(_ids)}"  # the registry is per process, as TF's


def test_override_map_swaps_the_gradient_of_matching_ops_only():
    name = fresh("StraightThrough")

    @tf.RegisterGradient(name)
    def _(op, grad):
        return grad * 3.0

    g = tf.Graph()
    with g.as_default():
        x = tf.constant([0.2, 1.7, -0.6])
        with g.gradient_override_map({"Round": name}):
            q = tf.round(x)
            sq = tf.square(x)  # not in the map: its own gradient
        plain = tf.round(x)  # outside: its own gradient
        assert q.op.get_attr("_gradient_op_type") == name
        dq, dsq = tf.gradients(tf.reduce_sum(q), x)[0], tf.gradients(tf.reduce_sum(sq), x)[0]
        with tf.Session() as sess:
            qv, dqv, dsqv = sess.run([q, dq, dsq])
        np.testing.assert_array_equal(qv, [0.0, 2.0, -1.0])
        np.testing.assert_allclose(dqv, [3.0, 3.0, 3.0])
        np.testing.assert_allclose(dsqv, [0.4, 3.4, -1.2], rtol=1e-6)
        assert tf.gradients(tf.reduce_sum(plain), x) == [None]  # Round's own: none, as TF


def test_register_gradient_for_an_op_type_with_one_is_an_error():
    with pytest.raises(KeyError, match="Registering two gradient with name 'Square'"):
        tf.RegisterGradient("Square")(lambda op, grad: grad)
    name = fresh("Twice")
    tf.RegisterGradient(name)(lambda op, grad: grad)
    with pytest.raises(KeyError, match=f"'{name}'"):
        tf.RegisterGradient(name)(lambda op, grad: grad)


def test_unregistered_override_names_it():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0)
        with g.gradient_override_map({"Square": "NobodyRegisteredThis"}):
            y = tf.square(x)
        with pytest.raises(LookupError, match="asks for gradient 'NobodyRegisteredThis'"):
            tf.gradients(y, x)


def test_not_differentiable_op_type_is_skipped():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([1.0, 2.0])
        name = fresh("Stopped")
        tf.NotDifferentiable(name)
        with g.gradient_override_map({"Exp": name}):
            e = tf.exp(x)
        assert tf.gradients(tf.reduce_sum(e) + tf.reduce_sum(x), x)[0] is not None
        with tf.Session() as sess:
            np.testing.assert_allclose(
                sess.run(tf.gradients(tf.reduce_sum(e) + tf.reduce_sum(x), x)[0]), [1.0, 1.0])
