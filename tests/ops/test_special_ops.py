"""Special element-wise math ops: values vs numpy / the math module / known constants,
broadcasting, edge cases, gradients (finite differences) and dtype errors.

Specification: TF 1.x python/kernel_tests/cwise_ops_unary_test.py,
cwise_ops_binary_test.py and python/ops/math_grad_test.py; our own values.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.math import special_ops as S
from tensorweave.testing.tf_gradient_checker import compute_gradient_error

pytestmark = [pytest.mark.usefixtures("graph"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]  # numpy on nan/inf
NAN, INF = float("nan"), float("inf")
EULER = 0.5772156649015329
ZETA3 = 1.2020569031595942
TOL = {np.float32: 2e-6, np.float64: 1e-12}


def run(*fetches, feed=None):
    with tf.Session() as s:
        out = s.run(list(fetches), feed)
    return out[0] if len(fetches) == 1 else out


def _math(fn):
    return np.vectorize(fn, otypes=[np.float64])


def _lgamma_ref(v):
    return math.lgamma(v) if v > 0 or v != math.floor(v) else INF


WIDE = np.linspace(-3, 3, 13)
UNIT = np.linspace(-0.9, 0.9, 7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn, ref, x", [
    (S.tan, np.tan, np.linspace(-1.4, 1.4, 9)), (S.sinh, np.sinh, WIDE),
    (S.cosh, np.cosh, WIDE), (S.asin, np.arcsin, UNIT), (S.acos, np.arccos, UNIT),
    (S.atan, np.arctan, WIDE * 10), (S.asinh, np.arcsinh, WIDE),
    (S.acosh, np.arccosh, np.linspace(1, 5, 9)), (S.atanh, np.arctanh, UNIT),
    (S.erf, _math(math.erf), WIDE), (S.erfc, _math(math.erfc), WIDE),
    (S.expm1, np.expm1, np.array([-2, -1e-9, 0, 1e-12, 0.5, 3])),
    (S.lgamma, _math(_lgamma_ref), np.array([-2.5, -0.5, 0.1, 1, 2, 3.5, 30, 1e3])),
    (S.rint, np.rint, np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.2])),
    (S.softsign, lambda v: v / (1 + np.abs(v)), WIDE * 100),
])
def test_unary_values_match_numpy_and_math(fn, ref, x, dtype):
    x = x.astype(dtype)
    y = fn(tf.constant(x))
    got = run(y)
    assert got.dtype == dtype and y.dtype.as_numpy_dtype == dtype
    assert y.shape.as_list() == list(x.shape)
    want = ref(x.astype(np.float64))
    np.testing.assert_allclose(got, want.astype(dtype), rtol=TOL[dtype], atol=TOL[dtype])


def test_op_types_are_tensorflows():
    x, y = tf.constant([0.5]), tf.constant([2.0])
    ops = [S.tan, S.sinh, S.cosh, S.asin, S.acos, S.atan, S.asinh, S.acosh, S.atanh,
           S.erf, S.erfc, S.expm1, S.lgamma, S.digamma, S.rint, S.softsign]
    assert [f(x).op.type for f in ops] == [
        "Tan", "Sinh", "Cosh", "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh", "Erf",
        "Erfc", "Expm1", "Lgamma", "Digamma", "Rint", "Softsign"]
    binary = [S.atan2, S.xdivy, S.xlogy, S.multiply_no_nan, S.polygamma]
    assert [f(x, y).op.type for f in binary] == [
        "Atan2", "Xdivy", "Xlogy", "MulNoNan", "Polygamma"]
    assert S.tan(x, name="my_tan").op.name == "my_tan"
    assert S.softsign(features=x).op.type == "Softsign"  # TF 1.x argument name


def test_domain_edges():
    got = run(S.acosh([0.5, -1.0, 1.0]), S.asin([2.0, -1.0]), S.acos([-1.5, -1.0]),
              S.atanh([1.0, -1.0, 2.0]), S.erf([INF, -INF]), S.erfc([INF, -INF]),
              S.lgamma([0.0, -1.0, -2.0, 1.0, 2.0]), S.expm1([1e-10]), S.tan([0.0]))
    np.testing.assert_array_equal(got[0][:2], [NAN, NAN])
    assert got[0][2] == 0
    assert np.isnan(got[1][0]) and got[1][1] == pytest.approx(-math.pi / 2)
    assert np.isnan(got[2][0]) and got[2][1] == pytest.approx(math.pi)
    np.testing.assert_array_equal(got[3][:2], [INF, -INF])
    assert np.isnan(got[3][2])
    np.testing.assert_array_equal(got[4], [1, -1])
    np.testing.assert_array_equal(got[5], [0, 2])
    np.testing.assert_array_equal(got[6], [INF, INF, INF, 0, 0])
    assert got[7][0] == pytest.approx(1e-10, rel=1e-6)  # exp(x) - 1 would lose it all
    assert got[8][0] == 0
    # lgamma(-1.5) = log|Gamma(-1.5)| = log(4 sqrt(pi) / 3)
    assert run(S.lgamma(tf.constant(-1.5, tf.float64))) == \
        pytest.approx(math.log(4 * math.sqrt(math.pi) / 3), rel=1e-14)


def test_complex_inputs_where_tf_allows_them():
    z = np.array([0.3 + 0.4j, -1.2 + 0.1j], np.complex128)
    got = run(S.tan(z), S.sinh(z), S.asinh(z), S.expm1(z), S.atanh(z))
    for g, ref in zip(got, [np.tan, np.sinh, np.arcsinh, np.expm1, np.arctanh]):
        np.testing.assert_allclose(g, ref(z), rtol=1e-12)


def test_scalars_and_empty_tensors():
    got = run(S.digamma(np.float64(1.0)), S.lgamma(np.float32(3.0)), S.erf(np.zeros([0, 2])),
              S.digamma(np.zeros([0])), S.polygamma(np.float64(1.0), np.float64(1.0)),
              S.xlogy(np.float64(0.0), np.float64(0.0)), S.digamma(np.float16(0.5)))
    assert got[0] == pytest.approx(-EULER, rel=1e-14) and np.shape(got[0]) == ()
    assert got[1] == pytest.approx(math.log(2), rel=1e-6) and got[1].dtype == np.float32
    assert got[2].shape == (0, 2) and got[3].shape == (0,)
    assert got[4] == pytest.approx(math.pi ** 2 / 6, rel=1e-14) and got[5] == 0
    assert got[6].dtype == np.float16 and got[6] == pytest.approx(-1.9635, rel=1e-3)


# ---- digamma / polygamma ---------------------------------------------------------
def test_digamma_at_known_points():
    x = np.array([1.0, 0.5, 0.25, 2.0, 5.0, -0.5, 1e-8, 100.0])
    want = [-EULER, -EULER - 2 * math.log(2), -EULER - math.pi / 2 - 3 * math.log(2),
            1 - EULER, 1 + 1 / 2 + 1 / 3 + 1 / 4 - EULER, -EULER - 2 * math.log(2) + 2,
            -1e8 - EULER, 4.600161852738087]
    np.testing.assert_allclose(run(S.digamma(x)), want, rtol=1e-13, atol=0)
    got32 = run(S.digamma(x.astype(np.float32)))
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, np.float32(want), rtol=1e-6)


def test_digamma_poles_and_identities():
    got = run(S.digamma([0.0, -1.0, -7.0, INF, -INF, NAN]))
    assert np.isnan(got[[0, 1, 2, 4, 5]]).all() and got[3] == INF
    x = np.random.default_rng(0).uniform(-40, 40, 200)
    psi_x, psi_x1, psi_1mx = run(S.digamma(x), S.digamma(x + 1), S.digamma(1 - x))
    np.testing.assert_allclose(psi_x1 - psi_x, 1 / x, rtol=1e-10, atol=1e-11)  # recurrence
    np.testing.assert_allclose(psi_1mx - psi_x, math.pi / np.tan(math.pi * x),
                               rtol=1e-9, atol=1e-10)  # reflection


def test_digamma_is_the_derivative_of_lgamma():
    x = np.array([0.3, 1.7, 4.2, 12.5, -0.4, -2.6])
    h = 1e-6
    slope = (_math(math.lgamma)(x + h) - _math(math.lgamma)(x - h)) / (2 * h)
    np.testing.assert_allclose(run(S.digamma(x)), slope, rtol=1e-7, atol=1e-7)


def test_polygamma_known_values_and_recurrence():
    n = np.array([1.0, 1.0, 2.0, 3.0, 1.0, 0.0])
    x = np.array([1.0, 0.5, 1.0, 1.0, 2.0, 1.0])
    want = [math.pi ** 2 / 6, math.pi ** 2 / 2, -2 * ZETA3, math.pi ** 4 / 15,
            math.pi ** 2 / 6 - 1, -EULER]
    np.testing.assert_allclose(run(S.polygamma(n, x)), want, rtol=1e-13)
    # psi^(n)(x + 1) = psi^(n)(x) + (-1)^n n! / x^(n + 1), also for negative x.
    xs = np.array([0.1, 0.7, 3.3, 15.0, -0.3, -4.6])
    for order in (1, 2, 4):
        lo, hi = run(S.polygamma(np.float64(order), xs), S.polygamma(np.float64(order), xs + 1))
        step = (-1) ** order * math.factorial(order) / xs ** (order + 1)
        np.testing.assert_allclose(hi - lo, step, rtol=1e-10)
    got = run(S.polygamma([0.5, -1.0, 1.0, 1.0], [1.0, 1.0, 0.0, -3.0]))
    assert np.isnan(got[:2]).all() and (got[2:] == INF).all()


# ---- binary ops ------------------------------------------------------------------
def test_atan2_quadrants_axes_and_broadcasting():
    y = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 1.0, -1.0])
    x = np.array([1.0, -1.0, -1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    want = np.array([1, 3, -3, -1, 0, 0, 2, -2]) * math.pi / 4
    for dtype in (np.float32, np.float64):
        got = run(S.atan2(y.astype(dtype), x.astype(dtype)))
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=TOL[dtype])
    assert run(S.atan2(0.0, -1.0)) == pytest.approx(math.pi)
    yb, xb = np.arange(6.0).reshape(2, 3) - 2, np.array([-1.0, 0.5, 2.0])
    t = S.atan2(yb, xb)
    assert t.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(t), np.arctan2(yb, xb), rtol=1e-14)


def test_xlogy_xdivy_zero_x_gives_zero():
    x = np.array([0.0, 0.0, 0.0, 2.0, 3.0])
    y = np.array([0.0, NAN, 5.0, 4.0, 0.0])
    xlogy, xdivy = run(S.xlogy(x, y), S.xdivy(x, y))
    np.testing.assert_array_equal(xlogy[:3], [0, 0, 0])
    np.testing.assert_allclose(xlogy[3], 2 * math.log(4), rtol=1e-15)
    assert xlogy[4] == -INF
    np.testing.assert_array_equal(xdivy, [0, 0, 0, 0.5, INF])


def test_multiply_no_nan():
    got = run(S.multiply_no_nan([INF, NAN, 2.0, 0.0, -INF], [0.0, 0.0, 3.0, INF, 2.0]))
    np.testing.assert_array_equal(got[[0, 1, 2, 4]], [0, 0, 6, -INF])
    assert np.isnan(got[3])  # only y == 0 is masked (TF): 0 * inf stays nan


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_ops_broadcast(dtype):
    x = tf.placeholder(dtype, [None, 1])
    y = tf.placeholder(dtype, [3])
    xv = np.array([[0.0], [1.5], [-2.0]], dtype)
    yv = np.array([0.5, 2.0, 0.0], dtype)
    outs = [S.xlogy(x, y), S.xdivy(x, y), S.multiply_no_nan(x, y), S.atan2(x, y)]
    for t in outs:
        assert t.shape.as_list() == [None, 3]
    got = run(*outs, feed={x: xv, y: yv})
    with np.errstate(all="ignore"):
        want = [np.where(xv == 0, 0, xv * np.log(yv)), np.where(xv == 0, 0, xv / yv),
                np.where(yv == 0, 0, xv * yv), np.arctan2(xv, yv)]
    for g, w in zip(got, want):
        assert g.dtype == dtype and g.shape == (3, 3)
        np.testing.assert_allclose(g, w.astype(dtype), rtol=TOL[dtype])


# ---- composites ------------------------------------------------------------------
def test_log_sigmoid_is_stable():
    x = np.array([-1000.0, -20.0, 0.0, 3.0, 40.0, 1000.0], np.float32)
    got = run(tf.math.log_sigmoid(x))
    assert got.dtype == np.float32 and np.isfinite(got).all()
    want = -np.logaddexp(0, -x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[0] == -1000.0 and got[-1] == 0.0


def test_reciprocal_no_nan():
    got = run(S.reciprocal_no_nan(np.array([0.0, 4.0, -0.5], np.float32)))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [0.0, 0.25, -2.0])


# ---- gradients -------------------------------------------------------------------
def _grad_error(fn, values, delta=1e-5):
    values = [np.asarray(v, np.float64) for v in values]
    with tf.Session():
        xs = [tf.placeholder(tf.float64, v.shape) for v in values]
        y = fn(*xs)
        shape = y.shape.as_list()
        if len(xs) == 1:
            return compute_gradient_error(xs[0], list(values[0].shape), y, shape,
                                          x_init_value=values[0], delta=delta)
        # Each input in turn, the others fed their values.
        errors = []
        for i, x in enumerate(xs):
            feed = {o: v for j, (o, v) in enumerate(zip(xs, values)) if j != i}
            errors.append(compute_gradient_error(x, list(values[i].shape), y, shape,
                                                 x_init_value=values[i], delta=delta,
                                                 extra_feed_dict=feed))
        return max(errors)


@pytest.mark.parametrize("fn, x", [
    (S.tan, [-1.0, 0.2, 1.1]), (S.sinh, [-2.0, 0.1, 1.5]), (S.cosh, [-2.0, 0.1, 1.5]),
    (S.asin, [-0.7, 0.1, 0.8]), (S.acos, [-0.7, 0.1, 0.8]), (S.atan, [-3.0, 0.1, 2.0]),
    (S.asinh, [-3.0, 0.1, 2.0]), (S.acosh, [1.2, 2.0, 5.0]), (S.atanh, [-0.7, 0.1, 0.8]),
    (S.erf, [-1.5, 0.1, 0.9]), (S.erfc, [-1.5, 0.1, 0.9]), (S.expm1, [-2.0, 1e-3, 1.5]),
    (S.lgamma, [-1.5, 0.3, 2.5, 7.0]), (S.digamma, [-1.5, 0.3, 2.5, 7.0]),
    (S.softsign, [-3.0, -0.2, 0.5, 4.0]), (tf.math.log_sigmoid, [-30.0, -1.0, 0.0, 2.0, 30.0]),
    (S.reciprocal_no_nan, [-2.0, 0.5, 3.0]),
    (lambda x: S.polygamma(2.0, x), [0.8, 1.5, 6.0]),
])
def test_unary_gradients_match_finite_differences(fn, x):
    assert _grad_error(fn, [x]) < 1e-7


@pytest.mark.parametrize("fn, x, y", [
    (S.atan2, [[1.0, -2.0, 0.5], [-0.3, 1.5, 2.0]], [0.7, -1.2, 2.5]),
    (S.xlogy, [[1.0, -2.0, 0.5], [0.3, 1.5, 2.0]], [0.7, 1.2, 2.5]),
    (S.xdivy, [[1.0, -2.0, 0.5], [0.3, 1.5, 2.0]], [0.7, -1.2, 2.5]),
    (S.multiply_no_nan, [[1.0, -2.0, 0.5], [0.3, 1.5, 2.0]], [0.7, -1.2, 2.5]),
    (S.atan2, [0.4], [[0.7, -1.2], [2.5, 0.1]]),
])
def test_binary_gradients_reduce_over_broadcast_dims(fn, x, y):
    assert _grad_error(fn, [x, y]) < 1e-7


def test_gradients_at_masked_points_and_second_order():
    x = tf.constant([0.0, 2.0], tf.float64)
    y = tf.constant([0.0, 0.0], tf.float64)
    gx_logy, gy_logy = tf.gradients(S.xlogy(x, y), [x, y])
    big = tf.constant([INF, 1.0], tf.float64)
    scale = tf.constant([0.0, 3.0], tf.float64)
    (gx_mul,) = tf.gradients(S.multiply_no_nan(big, scale), [big])
    xx = tf.constant([0.7, 3.0], tf.float64)
    (d1,) = tf.gradients(S.lgamma(xx), [xx])
    (d2,) = tf.gradients(d1, [xx])  # lgamma'' = trigamma, through Digamma's gradient
    got = run(gx_logy, gy_logy, d1, d2, gx_mul)
    assert got[0][0] == 0 and got[1][0] == 0  # TF's not_zero_x / xdivy masking at x == 0
    np.testing.assert_allclose(got[2], run(S.digamma(xx)), rtol=1e-14)
    np.testing.assert_allclose(got[3], run(S.polygamma(1.0, xx)), rtol=1e-14)
    np.testing.assert_array_equal(got[4], [0.0, 3.0])  # d/dx = y, 0 where y == 0


def test_no_gradient_for_rint_and_polygamma_order():
    x = tf.constant([0.4, 1.6])
    a = tf.constant(1.0)
    assert tf.gradients(S.rint(x), [x]) == [None]
    ga, gx = tf.gradients(S.polygamma(a, x), [a, x])
    assert ga is None and gx is not None


# ---- dtype and shape errors --------------------------------------------------------
def test_bad_dtypes_raise_type_errors_naming_the_tensor():
    ints = tf.constant([1, 2], name="my_ints")
    with pytest.raises(TypeError, match=r"Tan requires a floating-point dtype.*my_ints"):
        S.tan(ints)
    cplx = tf.constant([1 + 1j], tf.complex64, name="my_cplx")
    for fn, op in [(S.erf, "Erf"), (S.lgamma, "Lgamma"), (S.digamma, "Digamma"),
                   (S.rint, "Rint"), (S.softsign, "Softsign")]:
        with pytest.raises(TypeError, match=rf"{op} requires a real floating-point.*my_cplx"):
            fn(cplx)
    with pytest.raises(TypeError, match="Atan2 requires a real floating-point"):
        S.atan2(cplx, cplx)
    f32 = tf.constant([1.0], tf.float32, name="f32")
    f64 = tf.constant([1.0], tf.float64, name="f64")
    with pytest.raises(TypeError, match=r"Xlogy requires both inputs.*f32.*f64"):
        S.xlogy(f32, f64)
    with pytest.raises(TypeError, match=r"MulNoNan requires a floating-point.*my_ints"):
        S.multiply_no_nan(ints, ints)


def test_incompatible_broadcast_raises_value_error():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3 for Xdivy"):
        S.xdivy(tf.zeros([4, 2]), tf.ones([3]))
