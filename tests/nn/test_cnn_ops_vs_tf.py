"""The CNN ops against values real TensorFlow 2.21 computed for the same fixed inputs
(tests/cnn_reference_values.py): outputs and first-order gradients of depthwise /
separable / atrous / 1-D / 3-D / N-d convolution, LRN, fused batch norm (training and
inference), max_pool_with_argmax (values and both index layouts), 3-D and N-d pooling."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.nn_impl import conv_wrappers, depthwise_conv
from tensorweave.ops.nn import conv3d_ops, norm_ops, pool3d_ops, pool_argmax_ops

from cnn_reference_values import REF


def arr(shape, k=0.37, ph=0.0):
    """The fixed inputs the reference values were computed from."""
    n = int(np.prod(shape))
    return np.sin(np.arange(n).reshape(shape) * k + ph).astype(np.float32)


X, W = arr((2, 7, 6, 4)), arr((3, 3, 4, 2), 0.51, 1.0)
PW = arr((1, 1, 8, 3), 0.29, 0.5)
X5, W5 = arr((2, 5, 6, 4, 3), 0.23), arr((2, 3, 2, 3, 2), 0.41, 0.3)
S1, W1 = arr((2, 9, 3), 0.31), arr((3, 3, 4), 0.47, 0.2)
SCALE, OFFSET = [1.0, 2.0, 0.5, 1.5], [0.1, -0.2, 0.3, 0.0]
MEAN, VAR = [0.1, 0.0, -0.1, 0.2], [0.5, 1.0, 1.5, 0.8]
dc, nb, ax, cw = depthwise_conv, norm_ops, pool_argmax_ops, conv_wrappers


def _cases():
    c = {}
    for pad in ["SAME", "VALID"]:
        c[f"dw_{pad}_s2"] = lambda x, w, p=pad: dc.depthwise_conv2d(x, w, [1, 2, 2, 1], p)
        c[f"dw_{pad}_r2"] = lambda x, w, p=pad: dc.depthwise_conv2d(x, w, [1, 1, 1, 1], p,
                                                                    rate=[2, 2])
        c[f"sep_{pad}"] = lambda x, w, p=pad: dc.separable_conv2d(x, w, tf.constant(PW),
                                                                  [1, 1, 1, 1], p)
        c[f"atrous_{pad}"] = lambda x, w, p=pad: cw.atrous_conv2d(
            x, tf.constant(arr((3, 2, 4, 5), 0.13)), 2, p)
        c[f"mpa_{pad}"] = lambda x, w, p=pad: ax.max_pool_with_argmax(x, [1, 3, 2, 1],
                                                                       [1, 2, 2, 1], p)[0]
    c["lrn"] = lambda x, w: nb.lrn(x, 1, bias=0.5, alpha=0.3, beta=0.75)
    c["lrn_def"] = lambda x, w: nb.lrn(x * 3.0)
    c["fbn_train"] = lambda x, w: nb.fused_batch_norm(x, SCALE, OFFSET)[0]
    c["fbn_infer"] = lambda x, w: nb.fused_batch_norm(x, SCALE, OFFSET, mean=MEAN,
                                                      variance=VAR, is_training=False)[0]
    c["conv1d_s2"] = lambda x, w: cw.conv1d(tf.constant(S1),
                                            tf.constant(W1) * tf.reduce_sum(w), 2, "SAME")
    x5 = lambda x: tf.constant(X5) * tf.reduce_sum(x)   # noqa: E731  (feeds x's gradient)
    c["conv3d"] = lambda x, w: conv3d_ops.conv3d(x5(x), tf.constant(W5), [1, 1, 2, 1, 1],
                                                 "SAME")
    c["conv3d_v"] = lambda x, w: conv3d_ops.conv3d(x5(x), tf.constant(W5), [1, 2, 1, 2, 1],
                                                   "VALID")
    c["mp3d"] = lambda x, w: pool3d_ops.max_pool3d(x5(x), [1, 2, 2, 2, 1], [1, 2, 1, 2, 1],
                                                   "SAME")
    c["ap3d"] = lambda x, w: pool3d_ops.avg_pool3d(x5(x), [1, 2, 3, 2, 1], [1, 2, 2, 1, 1],
                                                   "SAME")
    c["pool_avg"] = lambda x, w: cw.pool(x, [2, 3], "AVG", "SAME", strides=[2, 2])
    c["conv_nd"] = lambda x, w: cw.convolution(x, tf.constant(arr((3, 2, 4, 5), 0.13)),
                                               "SAME", dilation_rate=[2, 1])
    return c


CASES = _cases()


def _check(key, value):
    wsum, samples = REF[key]
    v = np.asarray(value, np.float64).ravel()
    idx = np.linspace(0, v.size - 1, 6).astype(int)
    np.testing.assert_allclose(v[idx], samples, rtol=2e-5, atol=2e-5, err_msg=key)
    np.testing.assert_allclose((v * np.cos(np.arange(v.size) * 0.1)).sum(), wsum,
                               rtol=2e-5, atol=2e-4, err_msg=key)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_tensorflow(name):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, X.shape)
        w = tf.placeholder(tf.float32, W.shape)
        y = CASES[name](x, w)
        proj = tf.constant(arr(y.shape.as_list(), 0.77, 0.1))
        gx, gw = tf.gradients(tf.reduce_sum(y * proj), [x, w])
        with tf.Session() as sess:
            fetch = {k: t for k, t in (("", y), (":gx", gx), (":gw", gw)) if t is not None}
            got = sess.run(fetch, {x: X, w: W})
    assert set(got) == {k[len(name):] for k in REF
                        if k.split(":")[0] == name and "arg" not in k}
    for suffix, value in got.items():
        _check(name + suffix, value)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_argmax_indices_match_tensorflow(padding):
    with tf.Graph().as_default():
        _, with_b = ax.max_pool_with_argmax(X, [1, 3, 2, 1], [1, 2, 2, 1], padding,
                                            include_batch_in_index=True)
        _, plain = ax.max_pool_with_argmax(X, [1, 3, 2, 1], [1, 2, 2, 1], padding)
        with tf.Session() as sess:
            b, p = sess.run([with_b, plain])
    for key, v in ((f"mpa_{padding}:argb", b), (f"mpa_{padding}:arg", p)):
        assert v.dtype == np.int64
        idx = np.linspace(0, v.size - 1, 6).astype(int)
        assert v.ravel()[idx].tolist() == REF[key]
    assert (b - p).reshape(2, -1)[1].tolist() == [7 * 6 * 4] * (b.size // 2)


def test_fused_batch_norm_statistics_match_tensorflow():
    with tf.Graph().as_default():
        r = nb.fused_batch_norm(X, SCALE, OFFSET)
        r2 = nb.fused_batch_norm(X, SCALE, OFFSET, mean=MEAN, variance=VAR,
                                 exponential_avg_factor=0.3)
        with tf.Session() as sess:
            v = sess.run(list(r[1:]) + list(r2[1:]))
    _check("fbn_stats", np.concatenate(v))
