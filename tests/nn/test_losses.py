"""tf.losses: values and reductions against NumPy, collections, gradients."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

RNG = np.random.default_rng(7)
R = tf.losses.Reduction


def evaluate(build):
    g = tf.Graph()
    with g.as_default():
        out = build()
        with tf.Session(graph=g) as sess:
            return sess.run(out)


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


LABELS = RNG.normal(size=(4, 3))
PREDS = RNG.normal(size=(4, 3))
SQ = (PREDS - LABELS) ** 2


@pytest.mark.parametrize("weights, reduction, want", [
    (1.0, R.SUM_BY_NONZERO_WEIGHTS, SQ.mean()),
    (2.0, R.SUM_BY_NONZERO_WEIGHTS, 2 * SQ.mean()),
    (np.array([[1.0], [0.0], [2.0], [0.0]]), R.SUM_BY_NONZERO_WEIGHTS,
     (SQ[0].sum() + 2 * SQ[2].sum()) / 6),
    (np.array([[1.0], [0.0], [2.0], [0.0]]), R.MEAN, (SQ[0].sum() + 2 * SQ[2].sum()) / 9),
    (np.array([[1.0], [0.0], [2.0], [0.0]]), R.SUM, SQ[0].sum() + 2 * SQ[2].sum()),
    (np.array([[1.0], [0.0], [2.0], [0.0]]), R.SUM_OVER_BATCH_SIZE,
     (SQ[0].sum() + 2 * SQ[2].sum()) / 12),
    (np.array([1.0, 0.5, 0.0]), R.NONE, SQ * [1.0, 0.5, 0.0]),
    (0.0, R.SUM_BY_NONZERO_WEIGHTS, 0.0),  # all weights zero: 0, not NaN
    (np.zeros((4, 1)), R.MEAN, 0.0),
])
def test_mean_squared_error_reductions(weights, reduction, want):
    out = evaluate(lambda: tf.losses.mean_squared_error(LABELS, PREDS, weights=weights,
                                                        reduction=reduction))
    assert np.shape(out) == np.shape(want)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-15)


def test_default_reduction_is_sum_by_nonzero_weights():
    import inspect
    for fn in (tf.losses.mean_squared_error, tf.losses.softmax_cross_entropy,
               tf.losses.sparse_softmax_cross_entropy, tf.losses.sigmoid_cross_entropy,
               tf.losses.compute_weighted_loss):
        assert inspect.signature(fn).parameters["reduction"].default == \
            R.SUM_BY_NONZERO_WEIGHTS == "weighted_sum_by_nonzero_weights"
    with pytest.raises(ValueError, match="Invalid Reduction key"):
        evaluate(lambda: tf.losses.mean_squared_error(LABELS, PREDS, reduction="mean"))


def test_mean_squared_error_dtype_and_errors():
    out = evaluate(lambda: tf.losses.mean_squared_error([1, 2], [1.0, 4.0]))
    assert out.dtype == np.float32 and out == 2.0
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"predictions \(2, 3\).*labels \(3, 2\)"):
            tf.losses.mean_squared_error(np.zeros((3, 2)), np.zeros((2, 3)))
        with pytest.raises(ValueError, match=r"weights can not be broadcast.*\(4,\)"):
            tf.losses.mean_squared_error(np.zeros((2, 3)), np.zeros((2, 3)),
                                         weights=np.ones(4))


def test_absolute_difference():
    out = evaluate(lambda: tf.losses.absolute_difference(LABELS, PREDS))
    np.testing.assert_allclose(out, np.abs(PREDS - LABELS).mean(), rtol=1e-12)


def test_softmax_cross_entropy_with_smoothing_and_weights():
    logits = RNG.normal(size=(5, 4)) * 2
    onehot = np.eye(4)[[0, 3, 1, 1, 2]]
    w = np.array([1.0, 0.0, 2.0, 1.0, 0.0])
    for smooth in (0.0, 0.2):
        labels = onehot * (1 - smooth) + smooth / 4
        per = -(labels * log_softmax(logits)).sum(-1)
        out = evaluate(lambda: tf.losses.softmax_cross_entropy(
            onehot, logits, weights=w, label_smoothing=smooth))  # noqa: B023 - called now
        np.testing.assert_allclose(out, (per * w).sum() / 3, rtol=1e-12)


def test_sparse_softmax_cross_entropy():
    logits = RNG.normal(size=(5, 4)) * 2
    ids = np.array([0, 3, 1, 1, 2], np.int32)
    per = -log_softmax(logits)[np.arange(5), ids]
    out = evaluate(lambda: tf.losses.sparse_softmax_cross_entropy(ids, logits))
    np.testing.assert_allclose(out, per.mean(), rtol=1e-12)
    out = evaluate(lambda: tf.losses.sparse_softmax_cross_entropy(ids, logits, weights=3.0,
                                                                  reduction=R.NONE))
    np.testing.assert_allclose(out, 3 * per, rtol=1e-12)


def test_sigmoid_cross_entropy_with_smoothing():
    logits, labels = RNG.normal(size=(3, 4)) * 3, RNG.integers(0, 2, size=(3, 4)).astype(float)
    for smooth in (0.0, 0.1):
        z = labels * (1 - smooth) + 0.5 * smooth
        per = np.maximum(logits, 0) - logits * z + np.log1p(np.exp(-np.abs(logits)))
        out = evaluate(lambda: tf.losses.sigmoid_cross_entropy(
            labels, logits, label_smoothing=smooth))  # noqa: B023 - called now
        np.testing.assert_allclose(out, per.mean(), rtol=1e-12)


def test_losses_collection_and_total_loss():
    g = tf.Graph()
    with g.as_default():
        a = tf.losses.mean_squared_error(LABELS, PREDS)
        b = tf.losses.absolute_difference(LABELS, PREDS, loss_collection=None)
        c = tf.losses.sigmoid_cross_entropy(np.ones((2, 2)), np.zeros((2, 2)))
        assert tf.losses.get_losses() == [a, c]
        assert tf.get_collection(tf.GraphKeys.LOSSES) == [a, c]
        assert b not in tf.losses.get_losses()
        assert a.name == "mean_squared_error/value:0"
        tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, tf.constant(np.float64(0.5)))
        total = tf.losses.get_total_loss()
        no_reg = tf.losses.get_total_loss(add_regularization_losses=False)
        with tf.Session(graph=g) as sess:
            av, cv, tv, nv = sess.run([a, c, total, no_reg])
    np.testing.assert_allclose(tv, av + cv + 0.5, rtol=1e-12)
    np.testing.assert_allclose(nv, av + cv, rtol=1e-12)


def test_get_total_loss_without_losses_raises():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="no losses found"):
        tf.losses.get_total_loss()


def test_loss_gradients():
    from tensorweave.testing.gradient_checker import check_gradients
    w = np.array([1.0, 0.0, 2.0, 1.0])
    ids = np.array([0, 2, 1, 1], np.int32)
    check_gradients(lambda p: tf.losses.mean_squared_error(LABELS, p, weights=w[:, None]),
                    [PREDS], rtol=1e-6, atol=1e-8)
    check_gradients(lambda z: tf.losses.sparse_softmax_cross_entropy(ids, z, weights=w),
                    [RNG.normal(size=(4, 3))], rtol=1e-6, atol=1e-8)
    check_gradients(lambda z: tf.losses.softmax_cross_entropy(np.eye(3)[ids], z,
                                                              label_smoothing=0.1),
                    [RNG.normal(size=(4, 3))], rtol=1e-6, atol=1e-8)
