"""tf.multinomial / tf.random.categorical (the Multinomial op), the tf.random namespace,
and the initializers TF1 programs name (orthogonal, identity, He, LeCun)."""
import numpy as np
import pytest

import tensorweave as tf


def test_categorical_frequencies_follow_softmax_and_never_draw_minus_inf():
    probs = np.array([[0.1, 0.6, 0.3, 0.0], [0.0, 0.0, 0.0, 1.0]])
    with np.errstate(divide="ignore"):
        logits = tf.constant(np.log(probs), tf.float32)
    draws = tf.random.categorical(logits, 20000, seed=5)
    assert draws.dtype == tf.int64 and draws.shape.as_list() == [2, 20000]
    with tf.Session() as sess:
        got = sess.run(draws)
    freq = np.bincount(got[0], minlength=4) / 20000.0
    np.testing.assert_allclose(freq, probs[0], atol=0.015)
    assert freq[3] == 0 and set(got[1].tolist()) == {3}


def test_multinomial_seeded_replay_dtype_and_errors():
    logits = tf.constant([[1.0, 2.0, 3.0]])
    a = tf.multinomial(logits, 6, seed=7, output_dtype=tf.int32)
    assert a.dtype == tf.int32 and a.op.type == "Multinomial"
    with tf.Session() as s1:
        first = s1.run(a)
        assert not np.array_equal(first, s1.run(a)) or first.min() == first.max()
    with tf.Session() as s2:  # a fresh session replays the seeded sequence
        np.testing.assert_array_equal(first, s2.run(a))
    n = tf.placeholder(tf.int32, [])
    b = tf.multinomial(tf.constant([[0.0, 0.0]]), n)
    with tf.Session() as sess:
        assert sess.run(b, {n: 0}).shape == (1, 0)
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_samples must be >= 0"):
            sess.run(b, {n: -1})
        bad = tf.multinomial(tf.constant([[-np.inf, -np.inf]]), 2)
        with pytest.raises(tf.errors.InvalidArgumentError, match="row 0 .* no finite"):
            sess.run(bad)
    with pytest.raises(ValueError, match="must be a matrix"):
        tf.multinomial(tf.constant([1.0, 2.0]), 2)
    with pytest.raises(TypeError, match="must be floating point"):
        tf.multinomial(tf.constant([[1, 2]]), 2)


def test_random_namespace_is_the_top_level_functions():
    assert tf.random.normal is tf.random_normal and tf.random.uniform is tf.random_uniform
    assert tf.random.shuffle is tf.random_shuffle and tf.random.set_random_seed is \
        tf.set_random_seed and tf.random.multinomial is tf.multinomial


def test_orthogonal_identity_and_variance_scaling_presets():
    w = tf.get_variable("w_orth", [6, 4], initializer=tf.orthogonal_initializer(gain=2.0,
                                                                                seed=1))
    wide = tf.get_variable("w_wide", [3, 5], initializer=tf.initializers.orthogonal(seed=2))
    eye = tf.get_variable("w_eye", [3, 4], initializer=tf.initializers.identity(gain=0.5))
    he = tf.get_variable("w_he", [400, 300], initializer=tf.initializers.he_normal(seed=3))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        wv, widev, eyev, hev = sess.run([w, wide, eye, he])
    np.testing.assert_allclose(wv.T @ wv, 4.0 * np.eye(4), atol=1e-5)
    np.testing.assert_allclose(widev @ widev.T, np.eye(3), atol=1e-5)
    np.testing.assert_array_equal(eyev, 0.5 * np.eye(3, 4))
    # TF's truncated normal for fan_in 400, widened by 1/0.8796 so that the truncated
    # values' stddev is sqrt(2 / 400), and cut at 2 of its stddevs
    assert abs(hev.std() - np.sqrt(2.0 / 400)) < 0.002
    assert np.abs(hev).max() <= 2 * np.sqrt(2.0 / 400) / 0.87962566 + 1e-6
    with pytest.raises(ValueError, match="only make 2-D"):
        tf.initializers.identity()([2, 2, 2])
    assert tf.keras.initializers.Orthogonal is tf.initializers.Orthogonal
