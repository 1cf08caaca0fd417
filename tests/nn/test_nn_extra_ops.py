"""tf.nn extras: selu (op + gradient), batch_normalization, crelu, swish, xw_plus_b,
weighted_cross_entropy_with_logits, log_poisson_loss: values vs NumPy, gradients, errors."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.nn import nn_extra_ops as N
from tensorweave.testing.tf_gradient_checker import compute_gradient_error

pytestmark = pytest.mark.usefixtures("graph")

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


def run(*fetches, feed=None):
    with tf.Session() as s:
        out = s.run(list(fetches), feed)
    return out[0] if len(fetches) == 1 else out


def grad_err(x_np, fn, delta=1e-3):
    """Largest Jacobian error of fn at x_np (float64 so central differences are exact)."""
    x = tf.constant(x_np)
    y = fn(x)
    with tf.Session():
        return compute_gradient_error(x, list(x_np.shape), y, y.shape.as_list(),
                                      x_init_value=x_np, delta=delta)


def _selu_np(x):
    return np.where(x > 0, SCALE * x, SCALE * ALPHA * np.expm1(np.minimum(x, 0)))


# ---- selu -------------------------------------------------------------------------
def test_selu_values_and_op():
    x = np.array([[-3.0, -1.0, -0.1], [0.0, 0.5, 10.0]], np.float32)
    y = N.selu(x)
    assert y.op.type == "Selu" and y.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(y), _selu_np(x.astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(run(N.selu([-1.0, 1.0])), [-1.1113307, 1.0507010], rtol=1e-6)
    assert run(N.selu(np.float64(-1000.0))) == pytest.approx(-SCALE * ALPHA)


def test_selu_gradient_and_second_order():
    x = np.array([[-2.0, -0.7, -0.2], [0.3, 1.1, 2.5]])  # away from the kink at 0
    assert grad_err(x, N.selu) < 1e-6
    xt = tf.constant(x)
    g = tf.gradients(N.selu(xt), xt)[0]
    assert g.op.type == "SeluGrad"
    expected = np.where(x > 0, SCALE, SCALE * ALPHA * np.exp(x))
    np.testing.assert_allclose(run(g), expected, rtol=1e-10)
    assert grad_err(x, lambda t: tf.gradients(N.selu(t), t)[0]) < 1e-5


def test_selu_rejects_ints():
    with pytest.raises(TypeError, match="Selu requires a floating-point"):
        N.selu(tf.constant([1, 2]))


# ---- batch_normalization ------------------------------------------------------------
def test_batch_normalization_formula():
    rng = np.random.RandomState(0)
    x = rng.randn(4, 3).astype(np.float32)
    mean, var = x.mean(0), x.var(0)
    offset, scale = np.array([0.1, 0.2, 0.3], np.float32), np.array([1., 2., .5], np.float32)
    got = run(N.batch_normalization(x, mean, var, offset, scale, 1e-3))
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-3) * scale + offset,
                               rtol=1e-5, atol=1e-5)
    got = run(N.batch_normalization(x, mean, var, None, None, 1e-3))
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-5, atol=1e-5)
    # hand-computed: (1 - 0.5) * 2 / sqrt(4) + 1 = 1.5
    assert run(N.batch_normalization([1.0], 0.5, 4.0, 1.0, 2.0, 0.0)) == pytest.approx([1.5])


def test_batch_normalization_gradients():
    rng = np.random.RandomState(1)
    x = rng.randn(3, 2)
    mean, var = np.array([0.2, -0.1]), np.array([1.5, 0.7])
    off, sc = np.array([0.3, 0.4]), np.array([1.2, 0.8])
    assert grad_err(x, lambda t: N.batch_normalization(t, mean, var, off, sc, 1e-3)) < 1e-6
    for which in range(4):
        args = [mean, var, off, sc]

        def fn(t, which=which, args=args):
            a = list(args)
            a[which] = t
            return N.batch_normalization(x, a[0], a[1], a[2], a[3], 1e-3)
        assert grad_err(args[which], fn) < 1e-5, which


# ---- crelu, swish, xw_plus_b ----------------------------------------------------------
def test_crelu_values_axis_and_gradient():
    np.testing.assert_array_equal(run(N.crelu([1.0, -2.0])), [1.0, 0.0, 0.0, 2.0])
    x = np.array([[1.0, -2.0], [-3.0, 4.0]], np.float32)
    y = N.crelu(x, axis=0)
    assert y.shape.as_list() == [4, 2]
    np.testing.assert_array_equal(run(y), np.maximum(np.concatenate([x, -x], 0), 0))
    assert N.crelu(x).shape.as_list() == [2, 4]
    assert grad_err(np.array([[0.5, -1.5], [-0.3, 2.0]]), N.crelu) < 1e-6
    with pytest.raises(ValueError, match="axis"):
        N.crelu(x, axis=2)


def test_swish_values_and_gradient():
    x = np.array([-3.0, 0.0, 1.0, 20.0], np.float32)
    np.testing.assert_allclose(run(N.swish(x)), x / (1 + np.exp(-x)), rtol=1e-6)
    assert run(N.swish([0.0, 1.0]))[1] == pytest.approx(0.7310586)
    assert grad_err(np.array([-2.0, -0.5, 0.1, 1.7]), N.swish) < 1e-6


def test_xw_plus_b():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    b = np.array([1, 2, 3, 4], np.float32)
    y = N.xw_plus_b(x, w, b)
    assert y.shape.as_list() == [2, 4]
    np.testing.assert_allclose(run(y), x @ w + b, rtol=1e-6)
    np.testing.assert_allclose(run(N.xw_plus_b([[1.0, 2.0]], [[1.0], [1.0]], [0.5])), [[3.5]])
    w64, b64 = w.astype(np.float64), b.astype(np.float64)
    assert grad_err(x.astype(np.float64), lambda t: N.xw_plus_b(t, w64, b64)) < 1e-6
    assert grad_err(w64, lambda t: N.xw_plus_b(x.astype(np.float64), t, b64)) < 1e-6


# ---- weighted_cross_entropy_with_logits ------------------------------------------------
def _wce_np(t, z, q):
    s = 1 / (1 + np.exp(-z))
    return -(q * t * np.log(s) + (1 - t) * np.log(1 - s))


def test_weighted_cross_entropy_values():
    t = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 0.7]])
    logits = np.array([[-2.0, 0.5, 1.0], [3.0, -1.0, 0.0]])
    for q in (0.5, 1.0, 3.0):
        got = run(N.weighted_cross_entropy_with_logits(t, logits, q))
        np.testing.assert_allclose(got, _wce_np(t, logits, q), rtol=1e-10)
    # hand-computed: t = 1, l = 0, pos_weight 2 -> 2 * log 2
    got = run(N.weighted_cross_entropy_with_logits([1.0], [0.0], 2.0))
    assert got == pytest.approx([2 * np.log(2)])
    # stable for huge logits (the naive formula gives inf / nan)
    got = run(N.weighted_cross_entropy_with_logits([1.0, 0.0], [-200.0, 200.0], 2.0))
    np.testing.assert_allclose(got, [400.0, 200.0], rtol=1e-6)


def test_weighted_cross_entropy_gradient_and_shape_error():
    t = np.array([0.0, 1.0, 0.3, 0.9])
    logits = np.array([-2.0, 0.5, 1.0, -0.3])
    assert grad_err(logits, lambda z: N.weighted_cross_entropy_with_logits(t, z, 2.5)) < 1e-6
    assert grad_err(t, lambda tt: N.weighted_cross_entropy_with_logits(tt, logits, 2.5)) < 1e-6
    with pytest.raises(ValueError, match="targets.*same shape"):
        N.weighted_cross_entropy_with_logits(np.zeros(3), np.zeros(4), 1.0)


# ---- log_poisson_loss -----------------------------------------------------------------
def test_log_poisson_loss_values():
    t = np.array([0.0, 0.5, 1.0, 2.0, 7.0])
    li = np.array([0.3, 1.0, -0.5, 0.0, 2.0])
    np.testing.assert_allclose(run(N.log_poisson_loss(t, li)), np.exp(li) - li * t,
                               rtol=1e-10)
    stirling = np.where(t > 1, t * np.log(np.maximum(t, 1)) - t
                        + 0.5 * np.log(2 * np.pi * np.maximum(t, 1)), 0.0)
    got = run(N.log_poisson_loss(t, li, compute_full_loss=True))
    np.testing.assert_allclose(got, np.exp(li) - li * t + stirling, rtol=1e-10)
    assert not np.any(np.isnan(got))
    # hand-computed: exp(0) - 0 * 2 = 1
    assert run(N.log_poisson_loss([2.0], [0.0])) == pytest.approx([1.0])


def test_log_poisson_loss_gradient_and_shape_error():
    t = np.array([0.0, 0.5, 3.0, 2.0])  # 0.0 is a valid target; no finite difference
    li = np.array([0.3, 1.0, -0.5, 0.1])
    assert grad_err(li, lambda x: N.log_poisson_loss(t, x)) < 1e-6
    assert grad_err(li, lambda x: N.log_poisson_loss(t, x, compute_full_loss=True)) < 1e-6
    t2 = np.array([0.2, 0.5, 3.0, 2.0])
    assert grad_err(t2, lambda x: N.log_poisson_loss(x, li, compute_full_loss=True)) < 1e-5
    tt = tf.constant(t)  # a target of 0: no log(0), so a finite gradient (-log_input)
    g = run(tf.gradients(N.log_poisson_loss(tt, li, compute_full_loss=True), tt)[0])
    assert g[0] == pytest.approx(-li[0])
    with pytest.raises(ValueError, match="log_input and targets"):
        N.log_poisson_loss(np.zeros(2), np.zeros(3))
