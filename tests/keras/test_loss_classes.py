"""tf.keras.losses' loss classes: per-example functions, weighting and reductions.
Expected values computed by hand from Keras' definitions (and matched against TF 2.21)."""
import numpy as np
import pytest

import tensorweave as tf

L = tf.keras.losses
Y = [[1.0], [0.0], [1.0]]
P = [[0.9], [0.2], [0.4]]
YC = [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
PC = [[0.2, 0.7, 0.1], [0.5, 0.3, 0.2]]
YR = [[1.0, 2.0], [3.0, 0.5]]
PR = [[1.5, 1.0], [2.0, 1.0]]


def _run(t):
    with tf.Session() as sess:
        return sess.run(t)


@pytest.mark.parametrize("loss, y, p, want", [
    (L.BinaryCrossentropy(), Y, P, -(np.log(0.9) + np.log(0.8) + np.log(0.4)) / 3),
    (L.BinaryCrossentropy(label_smoothing=0.2), Y, P, 0.5208667),
    (L.MeanSquaredError(), Y, P, (0.01 + 0.04 + 0.36) / 3),
    (L.Huber(), Y, P, 0.5 * (0.01 + 0.04 + 0.36) / 3),
    (L.Hinge(), Y, P, (0.1 + 0.8 + 1.0) / 3),   # 0/1 labels taken as -1/1
    (L.LogCosh(), Y, P, np.mean(np.log(np.cosh([0.1, 0.2, 0.6])))),
    (L.CosineSimilarity(), Y, P, -2 / 3),
    (L.CategoricalCrossentropy(), YC, PC, -(np.log(0.7) + np.log(0.5)) / 2),
    (L.CategoricalCrossentropy(label_smoothing=0.3), YC, PC, 0.756201),
    (L.SparseCategoricalCrossentropy(), [1, 0], PC, -(np.log(0.7) + np.log(0.5)) / 2),
    (L.SparseCategoricalCrossentropy(from_logits=True), [1, 0], PC, 0.85389),
    (L.KLDivergence(), YC, PC, 0.524908),
    (L.Poisson(), YR, PR, 0.753773),
    (L.MeanAbsolutePercentageError(), YR, PR, 100 * (0.5 + 0.5 + 1 / 3 + 1.0) / 4),
    (L.MeanSquaredLogarithmicError(), YR, PR, 0.094929),
    (L.SquaredHinge(), YR, PR, 0.0625),
    (L.CategoricalHinge(), YC, PC, (max(0, 1 + 0.2 - 0.7) + max(0, 1 + 0.3 - 0.5)) / 2),
    (L.MeanAbsoluteError(reduction=L.Reduction.SUM), YR, PR, 1.5),
    (L.Huber(delta=0.5), YR, PR, 0.25),
])
def test_loss_objects_match_keras(loss, y, p, want):
    got = _run(loss(tf.constant(y), tf.constant(p, tf.float32)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_sample_weight_and_reduction_none():
    per = L.MeanSquaredError(reduction=L.Reduction.NONE)(Y, P, sample_weight=[1.0, 2.0, 0.0])
    np.testing.assert_allclose(_run(per), [0.01, 0.08, 0.0], rtol=1e-5)
    mean = L.MeanSquaredError()(Y, P, sample_weight=[[1.0], [2.0], [0.0]])
    np.testing.assert_allclose(_run(mean), 0.09 / 3, rtol=1e-5)   # over all 3, as Keras


def test_a_subclass_defines_call_and_the_reduction_applies():
    class Absolute(L.Loss):
        def call(self, y_true, y_pred):
            return tf.reduce_mean(tf.abs(y_pred - y_true), axis=-1)
    got = _run(Absolute(reduction=L.Reduction.SUM)(tf.constant(Y), tf.constant(P)))
    np.testing.assert_allclose(got, 0.1 + 0.2 + 0.6, rtol=1e-5)
    with pytest.raises(ValueError, match="Invalid Reduction Key 'mean'"):
        L.MeanSquaredError(reduction="mean")


def test_functions_are_offered_by_name_and_alias():
    assert L.get("msle") is L.mean_squared_logarithmic_error
    assert L.kld is L.kullback_leibler_divergence and L.MAPE is L.mape
    assert L.get("huber_loss") is L.huber_loss
