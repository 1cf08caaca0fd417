"""LRN, FusedBatchNormV3 and MaxPoolWithArgmax: TF's formulas against NumPy written from
their definitions, gradient checks, data formats, dtypes and error messages (TF's values
for fixed inputs are checked in test_cnn_ops_vs_tf.py)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.nn import norm_ops as nb
from tensorweave.ops.nn import pool_argmax_ops as ax

from nn_helpers import RNG, check_grads, run


# ---- LRN ---------------------------------------------------------------------------
def ref_lrn(x, r, bias, alpha, beta):
    out = np.empty_like(x)
    for d in range(x.shape[-1]):
        lo, hi = max(0, d - r), min(x.shape[-1], d + r + 1)
        sqr = (x[..., lo:hi] ** 2).sum(axis=-1)
        out[..., d] = x[..., d] / (bias + alpha * sqr) ** beta
    return out


@pytest.mark.parametrize("r, bias, alpha, beta", [(5, 1.0, 1.0, 0.5), (2, 2.0, 1e-4, 0.75),
                                                  (0, 0.5, 0.3, 1.0), (1, 1.0, 0.5, 0.0)])
def test_lrn_matches_definition(r, bias, alpha, beta):
    x = RNG.normal(size=(2, 3, 4, 7))
    out = run(lambda a: nb.lrn(a, r, bias, alpha, beta), x)
    np.testing.assert_allclose(out, ref_lrn(x, r, bias, alpha, beta), rtol=1e-12)


@pytest.mark.parametrize("r, beta", [(2, 0.75), (0, 1.0), (5, 0.5)])
def test_lrn_gradient(r, beta):
    check_grads(lambda a: nb.local_response_normalization(a, r, 1.5, 0.2, beta),
                RNG.normal(size=(1, 2, 3, 6)))


def test_lrn_float32_float16_and_errors():
    x = RNG.normal(size=(1, 2, 2, 5)).astype(np.float32)
    out = run(lambda a: nb.lrn(a, 2, 1.0, 0.1, 0.75), x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref_lrn(x.astype(np.float64), 2, 1.0, 0.1, 0.75),
                               rtol=1e-6)
    half = run(lambda a: nb.lrn(a, 2, 1.0, 0.1, 0.75), x.astype(np.float16))
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, out, rtol=2e-3, atol=2e-3)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="LRN: input must be 4-D.*shape"):
            nb.lrn(tf.placeholder(tf.float32, [3, 4], name="flat"))
        with pytest.raises(TypeError, match="floating-point input"):
            nb.lrn(tf.placeholder(tf.int32, [1, 2, 2, 3]))
        x32 = tf.placeholder(tf.float32, [1, 2, 2, 3])
        g = tf.gradients(nb.lrn(x32), x32)[0]
        assert g.op.type == "LRNGrad"
        with pytest.raises(LookupError, match="Second derivatives of LRN"):
            tf.gradients(g, x32)


# ---- FusedBatchNormV3 --------------------------------------------------------------
def ref_bn(x, scale, offset, mean, var, eps):
    return (x - mean) / np.sqrt(var + eps) * scale + offset


def test_fused_batch_norm_training_outputs():
    x = RNG.normal(size=(3, 4, 5, 2)) * 2 + 1
    scale, offset = np.array([1.5, 0.5]), np.array([0.2, -0.1])
    y, m, v = run(lambda a, s, o: nb.fused_batch_norm(a, s, o, epsilon=1e-3), x, scale, offset)
    bm, bv = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    np.testing.assert_allclose(y, ref_bn(x, scale, offset, bm, bv, 1e-3), rtol=1e-10)
    np.testing.assert_allclose(m, bm, rtol=1e-12)
    np.testing.assert_allclose(v, bv * 60 / 59, rtol=1e-12)   # unbiased, as TF's kernel
    old_m, old_v = np.array([0.5, -0.5]), np.array([2.0, 3.0])
    _, m2, v2 = run(lambda a, s, o, mm, vv: nb.fused_batch_norm(
        a, s, o, mm, vv, exponential_avg_factor=0.25), x, scale, offset, old_m, old_v)
    np.testing.assert_allclose(m2, 0.75 * old_m + 0.25 * bm, rtol=1e-12)
    np.testing.assert_allclose(v2, 0.75 * old_v + 0.25 * bv * 60 / 59, rtol=1e-12)


def test_fused_batch_norm_inference_formats_and_epsilon_floor():
    x = RNG.normal(size=(2, 3, 4, 3))
    s, o, m, v = (RNG.uniform(0.5, 2, 3) for _ in range(4))
    y, mo, vo = run(lambda *t: nb.fused_batch_norm(*t, epsilon=0.0, is_training=False),
                    x, s, o, m, v)
    np.testing.assert_allclose(y, ref_bn(x, s, o, m, v, 1.001e-5), rtol=1e-10)
    np.testing.assert_allclose(mo, m)
    np.testing.assert_allclose(vo, v)
    nchw = run(lambda *t: nb.fused_batch_norm(*t, data_format="NCHW", is_training=False)[0],
               x.transpose(0, 3, 1, 2), s, o, m, v)
    np.testing.assert_allclose(nchw.transpose(0, 2, 3, 1), ref_bn(x, s, o, m, v, 1e-3),
                               rtol=1e-10)
    x5 = RNG.normal(size=(2, 2, 3, 2, 3))
    y5 = run(lambda a, b, c: nb.fused_batch_norm(a, b, c, data_format="NCDHW")[0], x5,
             np.ones(2), np.zeros(2))
    bm, bv = x5.mean(axis=(0, 2, 3, 4), keepdims=True), x5.var(axis=(0, 2, 3, 4),
                                                              keepdims=True)
    np.testing.assert_allclose(y5, (x5 - bm) / np.sqrt(bv + 1e-3), rtol=1e-10)


@pytest.mark.parametrize("training, fmt", [(True, "NHWC"), (True, "NCHW"), (False, "NHWC"),
                                           (False, "NCHW")])
def test_fused_batch_norm_gradients(training, fmt):
    x = RNG.normal(size=(2, 3, 2, 3))
    s, o = RNG.uniform(0.5, 2, 3), RNG.normal(size=3)
    m, v = RNG.normal(size=3), RNG.uniform(0.5, 2, 3)
    if fmt == "NCHW":
        x = x.transpose(0, 3, 1, 2)
    check_grads(lambda a, b, c: nb.fused_batch_norm(
        a, b, c, tf.constant(m), tf.constant(v), data_format=fmt, is_training=training)[0],
        x, s, o)


def test_fused_batch_norm_float32_graph_and_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float16, [None, 4, 4, 3])
        y, m, v = nb.fused_batch_norm(x, tf.ones([3]), tf.zeros([3]))
        assert (y.dtype, m.dtype, y.op.type) == (tf.float16, tf.float32, "FusedBatchNormV3")
        assert y.shape.as_list() == [None, 4, 4, 3] and m.shape.as_list() == [3]
        x32 = tf.placeholder(tf.float32, [2, 4, 4, 3])
        gx = tf.gradients(nb.fused_batch_norm(x32, tf.ones([3]), tf.zeros([3]))[0], x32)[0]
        assert gx.op.type == "FusedBatchNormGradV3"
        with pytest.raises(LookupError, match="Second derivatives of fused batch norm"):
            tf.gradients(gx, x32)
        with pytest.raises(ValueError, match="'mean' and 'variance' must be a 1-D tensor"):
            nb.fused_batch_norm(x32, tf.ones([3]), tf.zeros([3]), is_training=False)
        with pytest.raises(ValueError, match="has 4 elements but x .* has 3 channels"):
            nb.fused_batch_norm(x32, tf.ones([4]), tf.zeros([3]))
        with pytest.raises(ValueError, match="x must be 4-D for data_format NHWC"):
            nb.fused_batch_norm(tf.placeholder(tf.float32, [2, 3]), tf.ones([3]),
                                tf.zeros([3]))
        with pytest.raises(ValueError, match="data_format must be one of"):
            nb.fused_batch_norm(x32, tf.ones([3]), tf.zeros([3]), data_format="HWCN")


# ---- MaxPoolWithArgmax -------------------------------------------------------------
def test_max_pool_with_argmax_indices_and_ties():
    x = np.arange(2 * 4 * 4 * 2, dtype=np.float64).reshape(2, 4, 4, 2) % 7
    out, idx = run(lambda a: ax.max_pool_with_argmax(a, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
                   x)
    flat = x.reshape(2, -1)
    for b in range(2):
        np.testing.assert_array_equal(flat[b][idx[b]], out[b])   # index w/o the batch
    np.testing.assert_allclose(out, x.reshape(2, 2, 2, 2, 2, 2).max(axis=(2, 4)))
    ties = np.ones((1, 2, 2, 1))
    _, t = run(lambda a: ax.max_pool_with_argmax(a, [1, 2, 2, 1], [1, 2, 2, 1], "VALID",
                                                 Targmax=tf.int32), ties)
    assert t.dtype == np.int32 and t.ravel().tolist() == [0]   # the first maximum
    _, tb = run(lambda a: ax.max_pool_with_argmax(a, 2, 2, "VALID",
                                                  include_batch_in_index=True), x)
    np.testing.assert_array_equal(x.ravel()[tb], out)


def test_max_pool_with_argmax_gradients():
    x = RNG.permutation(2 * 5 * 5 * 2).reshape(2, 5, 5, 2).astype(np.float64)
    for pad in ("SAME", "VALID"):
        check_grads(lambda a, p=pad: ax.max_pool_with_argmax(a, [1, 3, 3, 1], [1, 2, 2, 1],
                                                             p)[0], x)
    with tf.Graph().as_default():
        xt = tf.constant(x)
        out, idx = ax.max_pool_with_argmax(xt, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        dy = tf.placeholder(tf.float64, out.shape)
        dx = tf.gradients(out, xt, grad_ys=dy)[0]
        assert dx.op.type == "MaxPoolGradWithArgmax"
        ddx = tf.constant(RNG.normal(size=x.shape))
        ddy = tf.gradients(dx, dy, grad_ys=ddx)[0]
        assert ddy.op.type == "MaxPoolGradGradWithArgmax"
        with tf.Session() as sess:
            got, i = sess.run([ddy, idx], {dy: np.ones(out.shape.as_list())})
            want = sess.run(ddx).reshape(2, -1)[np.arange(2)[:, None, None, None], i]
    np.testing.assert_allclose(got, want)


def test_max_pool_with_argmax_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [1, 4, 4, 2])
        with pytest.raises(ValueError, match="other than 'NHWC' are not supported.*transpose"):
            ax.max_pool_with_argmax(x, 2, 2, "SAME", data_format="NCHW")
        with pytest.raises(TypeError, match="Targmax must be int32 or int64"):
            ax.max_pool_with_argmax(x, 2, 2, "SAME", Targmax=tf.float32)
