"""Conv3D (+ backprops, conv3d_transpose) and 3-D pooling: values against loops written
from the definitions, shapes, NCDHW, TF's tie rule for MaxPool3DGrad, gradients, errors."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.nn import conv3d_ops as c3
from tensorweave.ops.nn import pool3d_ops as p3

from nn_helpers import RNG, check_grads, ref_pad, run


def ref_conv3d(x, w, s, padding):
    n = x.shape[0]
    outs, fronts = zip(*(ref_pad(x.shape[1 + i], w.shape[i], s[i], padding) for i in range(3)))
    out = np.zeros((n, *outs, w.shape[4]))
    for o in itertools.product(*(range(v) for v in outs)):
        for t in itertools.product(*(range(k) for k in w.shape[:3])):
            p = [o[i] * s[i] - fronts[i] + t[i] for i in range(3)]
            if all(0 <= p[i] < x.shape[1 + i] for i in range(3)):
                out[(slice(None), *o)] += x[(slice(None), *p)] @ w[t]
    return out


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("s", [(1, 1, 1), (2, 1, 2), (1, 3, 2)])
def test_conv3d_matches_naive(padding, s):
    x, w = RNG.normal(size=(2, 5, 6, 4, 2)), RNG.normal(size=(2, 3, 2, 2, 3))
    out = run(lambda a, b: c3.conv3d(a, b, [1, *s, 1], padding), x, w)
    np.testing.assert_allclose(out, ref_conv3d(x, w, s, padding), rtol=1e-10, atol=1e-12)


def test_conv3d_ncdhw_shapes_gradients_and_transpose():
    x, w = RNG.normal(size=(1, 4, 5, 3, 2)), RNG.normal(size=(2, 2, 3, 2, 2))
    nd = run(lambda a, b: c3.conv3d(a, b, [1, 2, 1, 1, 1], "SAME"), x, w)
    nc = run(lambda a, b: c3.conv3d(a, b, [1, 1, 2, 1, 1], "SAME", data_format="NCDHW"),
             x.transpose(0, 4, 1, 2, 3), w)
    np.testing.assert_allclose(nc.transpose(0, 2, 3, 4, 1), nd, rtol=1e-12)
    for pad, st in (("SAME", [1, 2, 1, 2, 1]), ("VALID", [1, 1, 2, 1, 1])):
        check_grads(lambda a, b, st=st, pad=pad: c3.conv3d(a, b, st, pad), x, w)
    check_grads(lambda a, b: c3.conv3d(a, b, [1] * 5, "SAME", dilations=[1, 2, 1, 1, 1]),
                x, w)
    with tf.Graph().as_default():
        xp = tf.placeholder(tf.float32, [None, 8, 16, 16, 1])
        y = c3.conv3d(xp, tf.ones([3, 3, 3, 1, 4]), [1, 2, 2, 2, 1], "SAME")
        assert y.shape.as_list() == [None, 4, 8, 8, 4]
        gx = tf.gradients(tf.reduce_sum(y), xp)[0]
        assert gx.op.type == "Conv3DBackpropInputV2"
        up = c3.conv3d_transpose(tf.ones([2, 4, 4, 4, 3]), tf.ones([3, 3, 3, 5, 3]),
                                 [2, 8, 8, 8, 5], [1, 2, 2, 2, 1])
        assert up.shape.as_list() == [2, 8, 8, 8, 5]
        with pytest.raises(ValueError, match=r"input channels \(1\).*in_channels \(2\)"):
            c3.conv3d(xp, tf.ones([3, 3, 3, 2, 4]), [1] * 5, "SAME")
        with pytest.raises(ValueError, match="must be 1 in the batch and channel"):
            c3.conv3d(xp, tf.ones([3, 3, 3, 1, 4]), [2, 1, 1, 1, 1], "SAME")


def test_conv3d_second_order():
    w = RNG.normal(size=(2, 2, 2, 1, 2))
    dy = RNG.normal(size=(1, 2, 2, 2, 2))
    check_grads(lambda f, g: c3.conv3d_backprop_input_v2([1, 3, 3, 3, 1], f, g, [1] * 5,
                                                         "VALID"), w, dy)


def ref_pool3d(x, k, s, padding, kind):
    outs, fronts = zip(*(ref_pad(x.shape[1 + i], k[i], s[i], padding) for i in range(3)))
    out = np.zeros((x.shape[0], *outs, x.shape[4]))
    for o in itertools.product(*(range(v) for v in outs)):
        lo = [o[i] * s[i] - fronts[i] for i in range(3)]
        win = x[:, max(lo[0], 0):lo[0] + k[0], max(lo[1], 0):lo[1] + k[1],
                max(lo[2], 0):lo[2] + k[2]]
        out[(slice(None), *o)] = win.max(axis=(1, 2, 3)) if kind == "max" else \
            win.mean(axis=(1, 2, 3))
    return out


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool3d_matches_naive_and_gradients(padding, kind):
    x = RNG.permutation(2 * 5 * 4 * 5 * 2).reshape(2, 5, 4, 5, 2).astype(np.float64)
    fn = p3.max_pool3d if kind == "max" else p3.avg_pool3d
    k, s = (2, 3, 2), (2, 1, 2)
    out = run(lambda a: fn(a, [1, *k, 1], [1, *s, 1], padding), x)
    np.testing.assert_allclose(out, ref_pool3d(x, k, s, padding, kind), rtol=1e-12)
    check_grads(lambda a: fn(a, [1, *k, 1], [1, *s, 1], padding), x / 10)
    nc = run(lambda a: fn(a, [1, 1, *k], [1, 1, *s], padding, data_format="NCDHW"),
             x.transpose(0, 4, 1, 2, 3))
    np.testing.assert_allclose(nc.transpose(0, 2, 3, 4, 1), out, rtol=1e-12)


def test_max_pool3d_grad_goes_to_every_tied_max_as_tf():
    # TF's MaxPool3DGrad selects by equality: all tied maxima get the gradient
    # (checked against TF 2.21: a 2x2x2 window of ones gives eight ones).
    with tf.Graph().as_default():
        x = tf.ones([1, 2, 2, 2, 1])
        g = tf.gradients(p3.max_pool3d(x, 2, 2, "VALID"), x)[0]
        with tf.Session() as sess:
            assert sess.run(g).ravel().tolist() == [1.0] * 8
    # MaxPool3DGradGrad: the gradient's derivative w.r.t. the incoming gradient.
    xv = RNG.permutation(4 * 4 * 4).reshape(1, 4, 4, 4, 1).astype(np.float64)

    def grad_of(dy):
        xt = tf.constant(xv)
        return tf.gradients(p3.max_pool3d(xt, 2, 2, "SAME"), xt, grad_ys=dy)[0]
    check_grads(grad_of, RNG.normal(size=(1, 2, 2, 2, 1)))


def test_pool3d_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="MaxPool3D: input must be 5-D"):
            p3.max_pool3d(tf.placeholder(tf.float32, [1, 4, 4, 1]), 2, 2, "SAME")
        with pytest.raises(ValueError, match="data_format must be 'NDHWC' or 'NCDHW'"):
            p3.avg_pool3d(tf.placeholder(tf.float32, [1, 4, 4, 4, 1]), 2, 2, "SAME",
                          data_format="NHWC")
