"""tf.sparse_split / sparse_softmax (+ gradient) / sparse_maximum / sparse_minimum; the
expected values were printed by real TF 2.21 (compat.v1) for the same inputs."""
import numpy as np
import pytest

import tensorweave as tf


def sp_value(r):
    return r.indices.tolist(), r.values.tolist(), r.dense_shape.tolist()


def test_sparse_split_pieces_as_tf():
    sp = tf.SparseTensor([[0, 0], [0, 3], [0, 4], [1, 1], [1, 5], [2, 2]],
                         [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 6])
    cols = tf.sparse_split(sp_input=sp, num_split=4, axis=1)
    rows = tf.sparse.split(sp_input=sp, num_split=2, axis=0)
    with tf.Session() as sess:
        got = [sp_value(p) for p in sess.run(cols + rows)]
    assert got == [
        ([[0, 0], [1, 1]], [1.0, 4.0], [3, 2]), ([[0, 1], [2, 0]], [2.0, 6.0], [3, 2]),
        ([[0, 0]], [3.0], [3, 1]), ([[1, 0]], [5.0], [3, 1]),
        ([[0, 0], [0, 3], [0, 4], [1, 1], [1, 5]], [1.0, 2.0, 3.0, 4.0, 5.0], [2, 6]),
        ([[0, 2]], [6.0], [1, 6])]
    with pytest.raises(ValueError, match="exactly one of axis and split_dim"):
        tf.sparse_split(sp_input=sp, num_split=2)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_split 7 is larger"):
            sess.run(tf.sparse_split(sp_input=sp, num_split=7, axis=1)[0].values)


def test_sparse_softmax_values_and_gradient_as_tf():
    v = tf.constant([1.0, 2.0, 3.0, -1.0, 0.0, 1.0])
    sp = tf.SparseTensor([[0, 0], [0, 2], [1, 1], [2, 0], [2, 1], [2, 2]], v, [3, 3])
    sm = tf.sparse_softmax(sp)
    g = tf.gradients(tf.reduce_sum(sm.values * tf.constant([1.0, -2.0, 0.5, 3.0, 1.0, -1.0])),
                     v)[0]
    with tf.Session() as sess:
        out, gv = sess.run([sm.values, g])
    np.testing.assert_allclose(out, [0.26894099, 0.73105901, 1.0, 0.090031, 0.244728,
                                     0.665241], rtol=1e-5)
    np.testing.assert_allclose(gv, [0.589836, -0.589836, 0.0, 0.283634, 0.281541, -0.565175],
                               atol=1e-5)
    with tf.Session() as sess:  # finite differences agree too
        err = tf.test.compute_gradient_error(v, [6], sm.values, [6])
    assert err < 1e-3
    with pytest.raises(ValueError, match="rank >= 2"):
        tf.sparse_softmax(tf.SparseTensor([[0]], [1.0], [3]))


def test_sparse_maximum_minimum_over_the_union():
    a = tf.SparseTensor([[0, 0], [1, 2], [2, 1]], [3.0, -1.0, 2.0], [3, 3])
    b = tf.SparseTensor([[0, 0], [0, 1], [2, 1]], [1.0, -2.0, 5.0], [3, 3])
    with tf.Session() as sess:
        mx, mn = sess.run([tf.sparse_maximum(a, b), tf.sparse.minimum(a, b)])
    assert sp_value(mx) == ([[0, 0], [0, 1], [1, 2], [2, 1]], [3.0, 0.0, 0.0, 5.0], [3, 3])
    assert sp_value(mn) == ([[0, 0], [0, 1], [1, 2], [2, 1]], [1.0, -2.0, -1.0, 2.0], [3, 3])
    c = tf.SparseTensor([[0, 0]], [1.0], [4, 3])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="shapes do not match"):
            sess.run(tf.sparse_maximum(a, c).values)
