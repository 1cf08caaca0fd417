"""tf.losses.log_loss, hinge_loss, huber_loss, cosine_distance (TF 1.x losses_test.py).

Values are computed by hand from the definitions; each loss lands in LOSSES with
TF's `<scope>/value` name and honours weights and reductions.
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def _run(*tensors):
    with tf.Session() as sess:
        return sess.run(list(tensors))


def test_log_loss_values_weights_and_epsilon():
    labels = [[1.0, 0.0, 1.0]]
    preds = [[0.9, 0.2, 0.5]]
    each = -np.log(np.array([0.9, 0.8, 0.5]) + 1e-7)
    plain = tf.losses.log_loss(labels, preds)
    weighted = tf.losses.log_loss(labels, preds, weights=[[1.0, 0.0, 2.0]])
    summed = tf.losses.log_loss(labels, preds, reduction=tf.losses.Reduction.SUM)
    at_zero = tf.losses.log_loss([1.0], [0.0])
    got = _run(plain, weighted, summed, at_zero)
    np.testing.assert_allclose(got[:3], [each.mean(), (each[0] + 2 * each[2]) / 2, each.sum()],
                               rtol=1e-5)
    assert np.isfinite(got[3]) and got[3] == pytest.approx(-np.log(1e-7), rel=1e-4)
    assert plain.name == "log_loss/value:0"
    assert tf.get_collection(tf.GraphKeys.LOSSES)[:2] == [plain, weighted]


def test_log_loss_shape_mismatch_is_named():
    with pytest.raises(ValueError, match="log_loss.*incompatible"):
        tf.losses.log_loss(tf.zeros([3]), tf.zeros([4]))


def test_hinge_loss():
    loss = tf.losses.hinge_loss(labels=[[1.0, 0.0, 1.0, 0.0]], logits=[[0.5, -2.0, 2.0, 0.3]])
    # relu(1 - y*z) with y in {-1, 1}: 0.5, 0, 0, 1.3
    assert _run(loss)[0] == pytest.approx(1.8 / 4)


def test_huber_loss_quadratic_then_linear():
    loss = tf.losses.huber_loss(labels=[0.0, 0.0, 0.0], predictions=[0.5, 3.0, -2.0],
                                delta=1.0, reduction=tf.losses.Reduction.NONE)
    np.testing.assert_allclose(_run(loss)[0], [0.125, 2.5, 1.5])
    wide = tf.losses.huber_loss([0.0], [3.0], delta=4.0)
    assert _run(wide)[0] == pytest.approx(4.5)


def test_cosine_distance_and_required_axis():
    labels = [[1.0, 0.0], [0.0, 1.0]]
    preds = [[0.0, 1.0], [0.0, 1.0]]
    loss = tf.losses.cosine_distance(labels, preds, axis=1)
    assert _run(loss)[0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="axis"):
        tf.losses.cosine_distance(labels, preds)


def test_total_loss_includes_regularization_from_tf_layers():
    x = tf.ones([2, 3])
    logits = tf.layers.dense(x, 2, kernel_initializer=tf.ones_initializer(),
                             kernel_regularizer=lambda w: 0.5 * tf.reduce_sum(w))
    data = tf.losses.sparse_softmax_cross_entropy(labels=[0, 1], logits=logits)
    total = tf.losses.get_total_loss()
    reg = tf.losses.get_regularization_loss()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        d, t, r = sess.run([data, total, reg])
    assert r == pytest.approx(3.0) and d == pytest.approx(np.log(2.0))
    assert t == pytest.approx(d + r)
