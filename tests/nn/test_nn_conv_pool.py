"""Convolution and pooling: forward against per-pixel NumPy loops, shapes, errors, gradients."""
from __future__ import annotations


import numpy as np
import pytest

import tensorweave as tf

from nn_helpers import RNG, check_grads, ref_conv2d, ref_pool, run


# ---- convolution -------------------------------------------------------------------
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("shape, fshape", [((2, 7, 6, 3), (3, 2, 3, 4)),
                                           ((1, 5, 5, 1), (1, 1, 1, 2))])
def test_conv2d_forward_matches_naive(padding, stride, shape, fshape):
    x, w = RNG.normal(size=shape), RNG.normal(size=fshape)
    out = run(lambda a, b: tf.nn.conv2d(a, b, [1, stride, stride, 1], padding), x, w)
    np.testing.assert_allclose(out, ref_conv2d(x, w, stride, padding), rtol=1e-10, atol=1e-12)


def test_conv2d_dilations_and_nchw():
    x, w = RNG.normal(size=(2, 9, 8, 2)), RNG.normal(size=(3, 3, 2, 3))
    out = run(lambda a, b: tf.nn.conv2d(a, b, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1]),
              x, w)
    np.testing.assert_allclose(out, ref_conv2d(x, w, 1, "SAME", d=2), rtol=1e-10, atol=1e-12)
    out = run(lambda a, b: tf.nn.conv2d(a, b, [1, 1, 2, 2], "SAME", data_format="NCHW"),
              x.transpose(0, 3, 1, 2), w)
    np.testing.assert_allclose(out.transpose(0, 2, 3, 1), ref_conv2d(x, w, 2, "SAME"),
                               rtol=1e-10, atol=1e-12)


def test_conv2d_static_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 28, 28, 1])
        w = tf.placeholder(tf.float32, [5, 5, 1, 32])
        assert tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME").shape.as_list() == [None, 28, 28, 32]
        assert tf.nn.conv2d(x, w, [1, 2, 2, 1], "VALID").shape.as_list() == [None, 12, 12, 32]
        u = tf.placeholder(tf.float32, [None, None, None, 1])
        assert tf.nn.conv2d(u, w, [1, 2, 2, 1], "SAME").shape.as_list() == [None] * 3 + [32]


def test_conv2d_channel_mismatch_names_both_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [8, 28, 28, 3], name="images")
        w = tf.placeholder(tf.float32, [5, 5, 4, 16], name="kernel")
        with pytest.raises(ValueError, match=r"input channels \(3\).*in_channels \(4\).*"
                           r"\(8, 28, 28, 3\).*\(5, 5, 4, 16\)"):
            tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")


def test_conv2d_bad_padding_and_strides():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [1, 4, 4, 1])
        w = tf.placeholder(tf.float32, [5, 5, 1, 1])
        with pytest.raises(ValueError, match="'SAME' or 'VALID'"):
            tf.nn.conv2d(x, w, [1, 1, 1, 1], "FULL")
        with pytest.raises(ValueError, match="batch and channel"):
            tf.nn.conv2d(x, w, [2, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match="larger than the input"):
            tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID")


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_backprop_ops_match_transposed_conv(padding, stride):
    # <conv(x, w), dy> = <x, backprop_input(dy)> = <w, backprop_filter(dy)>.
    x, w = RNG.normal(size=(2, 7, 6, 3)), RNG.normal(size=(3, 2, 3, 4))
    y = ref_conv2d(x, w, stride, padding)
    dy = RNG.normal(size=y.shape)
    s = [1, stride, stride, 1]
    dx, dw = run(lambda a, b, c: [tf.nn.conv2d_backprop_input(list(x.shape), b, c, s, padding),
                                  tf.nn.conv2d_backprop_filter(a, list(w.shape), c, s, padding)],
                 x, w, dy)
    assert dx.shape == x.shape and dw.shape == w.shape
    np.testing.assert_allclose(np.sum(dx * x), np.sum(y * dy), rtol=1e-10)
    np.testing.assert_allclose(np.sum(dw * w), np.sum(y * dy), rtol=1e-10)


# ---- pooling -----------------------------------------------------------------------
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("k, stride", [(2, 2), (3, 1), (3, 2)])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_forward_matches_naive(padding, k, stride, kind):
    x = RNG.normal(size=(2, 7, 6, 3))
    fn = tf.nn.max_pool if kind == "max" else tf.nn.avg_pool
    out = run(lambda a: fn(a, [1, k, k, 1], [1, stride, stride, 1], padding), x)
    np.testing.assert_allclose(out, ref_pool(x, k, stride, padding, kind), rtol=1e-12)


def test_pool_nchw_and_shapes():
    x = RNG.normal(size=(2, 7, 6, 3))
    out = run(lambda a: tf.nn.max_pool(a, [1, 1, 2, 2], [1, 1, 2, 2], "SAME",
                                       data_format="NCHW"), x.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(out.transpose(0, 2, 3, 1), ref_pool(x, 2, 2, "SAME", "max"))
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 28, 28, 32])
        assert tf.nn.max_pool(p, [1, 2, 2, 1], [1, 2, 2, 1], "SAME").shape.as_list() == \
            [None, 14, 14, 32]
        with pytest.raises(ValueError, match="must be 4-D"):
            tf.nn.avg_pool(tf.placeholder(tf.float32, [3, 3]), [1, 2, 2, 1], [1, 1, 1, 1],
                           "SAME")

@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_gradients(padding, stride):
    x, w = RNG.normal(size=(2, 5, 4, 2)), RNG.normal(size=(3, 2, 2, 3))
    check_grads(lambda a, b: tf.nn.conv2d(a, b, [1, stride, stride, 1], padding), x, w)


def test_conv2d_gradients_dilated_nchw_and_second_order():
    from tensorweave.autodiff.gradients import gradients
    x, w = RNG.normal(size=(1, 2, 6, 5)), RNG.normal(size=(2, 2, 2, 2))
    check_grads(lambda a, b: tf.nn.conv2d(a, b, [1, 1, 1, 1], "SAME", data_format="NCHW",
                                          dilations=[1, 1, 2, 2]), x, w)
    xh = x.transpose(0, 2, 3, 1)
    check_grads(lambda a, b: gradients(tf.reduce_sum(tf.square(
        tf.nn.conv2d(a, b, [1, 2, 2, 1], "SAME"))), [a, b]), xh, w)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("k, stride", [(2, 2), (3, 2), (2, 1)])
def test_pool_gradients(padding, k, stride):
    x = RNG.permutation(2 * 5 * 5 * 2).reshape(2, 5, 5, 2) / 7.0  # distinct: unique maxima
    check_grads(lambda a: tf.nn.max_pool(a, [1, k, k, 1], [1, stride, stride, 1], padding), x)
    check_grads(lambda a: tf.nn.avg_pool(a, [1, k, k, 1], [1, stride, stride, 1], padding), x)


def test_pool_second_order():
    from tensorweave.autodiff.gradients import gradients
    x = RNG.permutation(50).reshape(1, 5, 5, 2) / 7.0
    for fn in (tf.nn.max_pool, tf.nn.avg_pool):
        check_grads(lambda a, fn=fn: gradients(tf.reduce_sum(tf.square(
            fn(a, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"))), [a])[0], x)

def test_max_pool_gradient_goes_to_first_max_among_ties():
    from tensorweave.autodiff.gradients import gradients
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(np.ones((1, 2, 3, 1)))
        (dx,) = gradients(tf.nn.max_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], "VALID"), [x])
        with tf.Session(graph=g) as sess:
            np.testing.assert_array_equal(sess.run(dx)[0, :, :, 0], [[1, 1, 0], [0, 0, 0]])
