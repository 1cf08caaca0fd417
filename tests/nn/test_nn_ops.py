"""tf.nn ops: forward values against NumPy references, gradients against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors

from nn_helpers import RNG, check_grads, ref_log_softmax, run


# ---- activations -------------------------------------------------------------------
X = np.array([[-3.0, -0.5, 0.0, 0.7, 7.5], [1.0, -2.0, 3.0, 6.0, -0.1]], np.float32)


@pytest.mark.parametrize("fn, ref", [
    (tf.nn.relu, lambda x: np.maximum(x, 0)),
    (tf.nn.relu6, lambda x: np.clip(x, 0, 6)),
    (tf.nn.elu, lambda x: np.where(x > 0, x, np.exp(x) - 1)),
    (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x)),
    (lambda x: tf.nn.leaky_relu(x, alpha=0.01), lambda x: np.where(x > 0, x, 0.01 * x)),
])
def test_activation_forward(fn, ref):
    out = run(fn, X)
    assert out.dtype == np.float32 and out.shape == X.shape
    np.testing.assert_allclose(out, ref(X), rtol=1e-6, atol=1e-7)


def test_activation_rejects_ints():
    with tf.Graph().as_default(), pytest.raises(TypeError, match="Relu.*int32"):
        tf.nn.relu(tf.constant([1, 2]))


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(axis):
    x = RNG.normal(size=(3, 4)) * 5
    sm, lsm = run(lambda t: [tf.nn.softmax(t, axis=axis), tf.nn.log_softmax(t, axis=axis)], x)
    np.testing.assert_allclose(lsm, ref_log_softmax(x, axis), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sm, np.exp(ref_log_softmax(x, axis)), rtol=1e-12, atol=1e-14)


def test_softmax_is_stable_for_huge_logits():
    x = np.array([[1000.0, 0.0, -1000.0]], np.float32)
    sm, lsm = run(lambda t: [tf.nn.softmax(t), tf.nn.log_softmax(t)], x)
    assert np.all(np.isfinite(sm)) and np.all(np.isfinite(lsm))
    np.testing.assert_allclose(lsm, [[0.0, -1000.0, -2000.0]], rtol=1e-6)


def test_softmax_bad_axis_is_a_build_error():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="axis 2 is out of range"):
        tf.nn.softmax(tf.zeros_like(tf.constant(X)), axis=2)


def test_bias_add_nhwc_and_nchw():
    x = RNG.normal(size=(2, 3, 4, 5))
    b5, b3 = RNG.normal(size=5), RNG.normal(size=3)
    out = run(lambda t, b: tf.nn.bias_add(t, b), x, b5)
    np.testing.assert_allclose(out, x + b5, rtol=1e-12)
    out = run(lambda t, b: tf.nn.bias_add(t, b, data_format="NCHW"), x, b3)
    np.testing.assert_allclose(out, x + b3[None, :, None, None], rtol=1e-12)


def test_bias_add_mismatch_names_both_shapes():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"3 and 4.*\(2, 3\), \(4,\)"):
            tf.nn.bias_add(tf.constant(np.zeros((2, 3))), tf.constant(np.zeros(4)))


def test_l2_loss():
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(run(tf.nn.l2_loss, x), np.sum(x ** 2) / 2, rtol=1e-6)


# ---- cross-entropies ---------------------------------------------------------------
def test_softmax_xent_forward():
    logits = RNG.normal(size=(4, 5)) * 3
    labels = RNG.dirichlet(np.ones(5), size=4)
    want = -np.sum(labels * ref_log_softmax(logits), axis=-1)
    for fn in (tf.nn.softmax_cross_entropy_with_logits,
               tf.nn.softmax_cross_entropy_with_logits_v2):
        out = run(lambda z, y, fn=fn: fn(labels=y, logits=z), logits, labels)
        np.testing.assert_allclose(out, want, rtol=1e-12)
    out = run(lambda z, y: tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=z,
                                                                      dim=0),
              logits.T, labels.T)
    np.testing.assert_allclose(out, want, rtol=1e-12)


def test_softmax_xent_stable_and_shape_errors():
    big = np.array([[1e4, -1e4]], np.float32)
    out = run(lambda z: tf.nn.softmax_cross_entropy_with_logits_v2(labels=[[0.0, 1.0]],
                                                                   logits=z), big)
    np.testing.assert_allclose(out, [2e4], rtol=1e-6)
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"\(2, 3\).*\(2, 4\)"):
        tf.nn.softmax_cross_entropy_with_logits(labels=np.zeros((2, 4)),
                                                logits=np.zeros((2, 3)))


def test_sparse_softmax_xent_forward():
    logits = RNG.normal(size=(6, 4)) * 4
    labels = np.array([0, 3, 1, 2, 3, 0], np.int64)
    want = -ref_log_softmax(logits)[np.arange(6), labels]
    out = run(lambda z, y: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z),
              logits, labels)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    out = run(lambda z, y: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z),
              logits.reshape(2, 3, 4), labels.reshape(2, 3).astype(np.int32))
    np.testing.assert_allclose(out, want.reshape(2, 3), rtol=1e-12)


def test_sparse_softmax_xent_out_of_range_label():
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"label value of 7 which is outside the valid range of \[0, 4\)"):
        run(lambda z, y: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z),
            np.zeros((2, 4), np.float32), np.array([1, 7], np.int32))
    with pytest.raises(errors.InvalidArgumentError, match="label value of -1"):
        run(lambda z, y: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z),
            np.zeros((2, 4), np.float32), np.array([-1, 0], np.int32))


def test_sparse_softmax_xent_build_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="int32 or int64"):
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=np.zeros(2, np.float32),
                                                           logits=np.zeros((2, 3), np.float32))
        with pytest.raises(ValueError, match="rank mismatch"):
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=np.zeros((2, 1), np.int32),
                                                           logits=np.zeros((2, 3), np.float32))


def test_sigmoid_xent_forward_is_stable():
    x = np.array([-800.0, -3.0, 0.0, 2.5, 800.0])
    z = np.array([0.0, 1.0, 0.5, 0.0, 1.0])
    out = run(lambda a, b: tf.nn.sigmoid_cross_entropy_with_logits(labels=b, logits=a), x, z)
    sig = 1 / (1 + np.exp(-x[1:4]))
    want_mid = -(z[1:4] * np.log(sig) + (1 - z[1:4]) * np.log(1 - sig))
    np.testing.assert_allclose(out[1:4], want_mid, rtol=1e-12)
    np.testing.assert_allclose(out[[0, 4]], [0.0, 0.0], atol=1e-12)


# ---- dropout -----------------------------------------------------------------------
def test_dropout_scales_and_drops():
    g = tf.Graph()
    with g.as_default():
        x = tf.ones([200, 50])
        kp = tf.placeholder(tf.float32, [])
        y = tf.nn.dropout(x, keep_prob=kp, seed=3)
        with tf.Session(graph=g) as sess:
            v = sess.run(y, {kp: 0.25})
            assert set(np.unique(v)) <= {0.0, 4.0}
            assert 0.2 < np.mean(v > 0) < 0.3
            np.testing.assert_allclose(sess.run(y, {kp: 1.0}), 1.0)


def test_dropout_noise_shape_rate_and_errors():
    g = tf.Graph()
    with g.as_default():
        x = tf.ones([100, 8])
        y = tf.nn.dropout(x, rate=0.5, noise_shape=[1, 8], seed=1)
        assert tf.nn.dropout(x, keep_prob=1.0) is x
        with tf.Session(graph=g) as sess:
            v = sess.run(y)
        assert np.all(v == v[:1])  # one mask per column
        with pytest.raises(ValueError, match="exactly one of keep_prob"):
            tf.nn.dropout(x)
        with pytest.raises(ValueError, match=r"\(0, 1\]"):
            tf.nn.dropout(x, keep_prob=1.5)


# ---- gradients ---------------------------------------------------------------------
XG = np.array([[-1.3, -0.4, 0.3, 0.9, 6.7], [2.0, -2.2, 5.1, 6.4, -0.6]])


@pytest.mark.parametrize("fn", [tf.nn.relu, tf.nn.relu6, tf.nn.elu, tf.nn.leaky_relu,
                                tf.nn.softmax, tf.nn.log_softmax, tf.nn.l2_loss,
                                lambda x: tf.nn.softmax(x, axis=0)])
def test_unary_gradients(fn):
    check_grads(fn, XG)


@pytest.mark.parametrize("fn", [tf.nn.elu, tf.nn.softmax, tf.nn.log_softmax, tf.nn.relu])
def test_second_order_gradients(fn):
    from tensorweave.autodiff.gradients import gradients
    check_grads(lambda x: gradients(tf.reduce_sum(fn(x) * fn(x)), [x])[0], XG)


def test_bias_add_gradients():
    x, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=4)
    check_grads(lambda a, c: tf.nn.bias_add(a, c), x, b)
    check_grads(lambda a, c: tf.nn.bias_add(a, c, data_format="NCHW"), x, RNG.normal(size=3))


def test_xent_gradients():
    logits, labels = RNG.normal(size=(3, 4)), RNG.dirichlet(np.ones(4), size=3)
    check_grads(lambda z, y: tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=z),
                logits, labels)
    check_grads(lambda z: tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=z),
                logits)
    check_grads(lambda z, y: tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z),
                logits, RNG.uniform(size=(3, 4)))
    ids = np.array([2, 0, 3], np.int32)
    check_grads(lambda z: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=z),
                logits)


def test_xent_v1_does_not_backprop_into_labels_but_v2_does():
    from tensorweave.autodiff.gradients import gradients
    with tf.Graph().as_default():
        z, y = tf.constant(np.zeros((2, 3))), tf.constant(np.full((2, 3), 1 / 3))
        v1 = tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=z)
        v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=z)
        assert gradients(v1, [y])[0] is None
        assert gradients(v2, [y])[0] is not None


def test_xent_hessian():
    from tensorweave.autodiff.gradients import gradients
    logits, labels = RNG.normal(size=(2, 3)), RNG.dirichlet(np.ones(3), size=2)
    ids = np.array([1, 2], np.int32)
    check_grads(lambda z: gradients(tf.nn.softmax_cross_entropy_with_logits(
        labels=labels, logits=z), [z])[0], logits)
    check_grads(lambda z: gradients(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=ids, logits=z), [z])[0], logits)
    check_grads(lambda z: gradients(tf.nn.sigmoid_cross_entropy_with_logits(
        labels=labels, logits=z), [z])[0], logits)


def test_dropout_gradient_uses_the_same_mask():
    from tensorweave.autodiff.gradients import gradients
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(np.ones((20, 10)))
        y = tf.nn.dropout(x, keep_prob=0.5, seed=7)
        (dx,) = gradients(y, [x])
        with tf.Session(graph=g) as sess:
            yv, dxv = sess.run([y, dx])
    np.testing.assert_array_equal(yv, dxv)


# ---- softplus and composites -------------------------------------------------------
def test_softplus_forward_and_gradients():
    from tensorweave.autodiff.gradients import gradients
    x = np.array([-800.0, -2.0, 0.0, 3.0, 800.0])
    np.testing.assert_allclose(run(tf.nn.softplus, x), np.logaddexp(0, x), rtol=1e-12)
    check_grads(tf.nn.softplus, XG)
    check_grads(lambda t: gradients(tf.reduce_sum(tf.square(tf.nn.softplus(t))), [t])[0], XG)


def test_moments_l2_normalize_embedding_lookup():
    x = RNG.normal(size=(5, 3))
    mean, var = run(lambda t: tf.nn.moments(t, axes=[0]), x)
    np.testing.assert_allclose(mean, x.mean(0), rtol=1e-12)
    np.testing.assert_allclose(var, x.var(0), rtol=1e-12)
    out = run(lambda t: tf.nn.l2_normalize(t, axis=1), x)
    np.testing.assert_allclose(out, x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-12)
    out = run(lambda p, i: tf.nn.embedding_lookup(p, i), x, np.array([4, 0, 4], np.int32))
    np.testing.assert_allclose(out, x[[4, 0, 4]])
    check_grads(lambda t: tf.nn.moments(t, axes=[0])[1], x)
    check_grads(lambda t: tf.nn.l2_normalize(t, axis=1), x)
    assert tf.nn.sigmoid is tf.sigmoid


def test_top_k_and_in_top_k():
    x = np.array([[1.0, 3.0, 2.0, 3.0], [0.5, -1.0, 4.0, 0.0]])
    v, i = run(lambda t: tf.nn.top_k(t, k=2), x)
    np.testing.assert_array_equal(v, [[3.0, 3.0], [4.0, 0.5]])
    np.testing.assert_array_equal(i, [[1, 3], [2, 0]])  # ties: lower index first
    check_grads(lambda t: tf.nn.top_k(t, k=2)[0], RNG.permutation(12).reshape(3, 4) / 3.0)
    hit = run(lambda p, t: tf.nn.in_top_k(p, t, 1), x, np.array([3, 0, ], np.int32))
    np.testing.assert_array_equal(hit, [True, False])  # ties count as in the top k
    hit = run(lambda p, t: tf.nn.in_top_k(p, t, 2), x, np.array([9, 0], np.int32))
    np.testing.assert_array_equal(hit, [False, True])  # out of range: False
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"k \(5\) must be in"):
        tf.nn.top_k(tf.constant(x), k=5)
