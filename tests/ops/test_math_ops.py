"""Math ops: forward values against NumPy, gradients against finite differences,
dtypes, static shapes and build-time errors."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.testing import check_gradients

from math_helpers import rand, run

pytestmark = pytest.mark.usefixtures("fresh_graph")


# ---- element-wise binary ops ---------------------------------------------------------
BINARY = [
    (tf.add, np.add, None), (tf.subtract, np.subtract, None), (tf.multiply, np.multiply, None),
    (tf.truediv, np.true_divide, "nonzero"), (tf.divide, np.true_divide, "nonzero"),
    (tf.floordiv, np.floor_divide, "nonzero"), (tf.mod, np.mod, "nonzero"),
    (tf.pow, np.power, "positive"), (tf.maximum, np.maximum, None),
    (tf.minimum, np.minimum, None),
    (tf.squared_difference, lambda a, b: (a - b) ** 2, None),
]


def _operands(domain, xs=(2, 3), ys=(3,), dtype=np.float32):
    x, y = rand(*xs, dtype=dtype), rand(*ys, dtype=dtype)
    if domain == "nonzero":
        y = np.where(np.abs(y) < 0.3, 0.7, y).astype(dtype)
    if domain == "positive":
        x = np.abs(x).astype(dtype) + dtype(0.5)
    return x, y


@pytest.mark.parametrize("fn,ref,domain", BINARY, ids=lambda v: getattr(v, "__name__", None))
def test_binary_forward_broadcasts_like_numpy(fn, ref, domain):
    x, y = _operands(domain)
    out = fn(x, tf.constant(y))
    assert out.dtype == tf.float32 and out.shape.as_list() == [2, 3]
    got = run(out)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref(x, y), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn,ref,domain", [b for b in BINARY if b[0] is not tf.floordiv],
                         ids=lambda v: getattr(v, "__name__", None))
def test_binary_gradient_matches_finite_differences(fn, ref, domain):
    x, y = _operands(domain, xs=(2, 3), ys=(1, 3), dtype=np.float64)
    if fn in (tf.maximum, tf.minimum):  # keep away from the kink at x == y
        y = np.where(np.abs(x[:1] - y) < 0.1, y + 0.5, y)
    if fn is tf.mod:  # keep away from the jumps of x mod y
        x = (np.floor(x / y) * y + 0.3 * np.abs(y)).astype(np.float64)
    check_gradients(fn, [x, y], rtol=1e-5, atol=1e-6)


def test_floordiv_is_piecewise_constant_so_has_no_gradient():
    x = tf.constant([3.5, -2.5])
    assert tf.gradients(tf.floordiv(x, 2.0), [x]) == [None]


def test_integer_arithmetic_keeps_dtype_and_floors():
    a = tf.constant([7, -7], tf.int32)
    out = run([a + 1, a * 2, a // 2, a % 3, tf.maximum(a, 0), tf.pow(a, 2)])
    for v in out:
        assert v.dtype == np.int32
    np.testing.assert_array_equal(out[2], [3, -4])
    np.testing.assert_array_equal(out[3], [1, 2])
    np.testing.assert_array_equal(out[5], [49, 49])


def test_truediv_of_ints_is_float64():
    a = tf.constant([3, 4], tf.int32)
    q = a / 2
    assert q.dtype == tf.float64
    np.testing.assert_allclose(run(q), [1.5, 2.0])
    assert tf.truediv(tf.constant([3], tf.int16), tf.constant([2], tf.int16)).dtype == tf.float32


def test_comparisons_and_logic():
    x, y = rand(3, 4), rand(4)
    xt = tf.constant(x)
    got = run([tf.equal(xt, x), tf.not_equal(xt, y), tf.less(xt, y), tf.less_equal(xt, y),
               tf.greater(xt, y), tf.greater_equal(xt, y)])
    for g, ref in zip(got, [x == x, x != y, x < y, x <= y, x > y, x >= y]):
        assert g.dtype == np.bool_
        np.testing.assert_array_equal(g, ref)
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    got = run([tf.logical_and(p, q), tf.logical_or(p, q), tf.logical_not(p),
               tf.logical_xor(p, q)])
    for g, ref in zip(got, [p & q, p | q, ~p, p ^ q]):
        np.testing.assert_array_equal(g, ref)


def test_string_equality_and_concatenation():
    s = tf.constant(["a", "b"])
    np.testing.assert_array_equal(run(tf.equal(s, "a")), [True, False])
    np.testing.assert_array_equal(run(tf.add(s, "x")), [b"ax", b"bx"])


# ---- unary ops -----------------------------------------------------------------------
UNARY = [
    (tf.negative, np.negative, None), (tf.abs, np.abs, "away0"), (tf.square, np.square, None),
    (tf.sqrt, np.sqrt, "positive"), (tf.rsqrt, lambda v: 1 / np.sqrt(v), "positive"),
    (tf.exp, np.exp, None), (tf.log, np.log, "positive"), (tf.log1p, np.log1p, "positive"),
    (tf.sigmoid, lambda v: 1 / (1 + np.exp(-v)), None), (tf.tanh, np.tanh, None),
    (tf.reciprocal, np.reciprocal, "away0"),
]


def _unary_input(domain, dtype):
    x = rand(2, 3, dtype=dtype)
    if domain == "positive":
        x = np.abs(x).astype(dtype) + dtype(0.2)
    if domain == "away0":
        x = np.where(np.abs(x) < 0.2, 0.5, x).astype(dtype)
    return x


@pytest.mark.parametrize("fn,ref,domain", UNARY, ids=lambda v: getattr(v, "__name__", None))
def test_unary_forward(fn, ref, domain):
    for dtype, tol in [(np.float32, 1e-6), (np.float64, 1e-12), (np.float16, 2e-3)]:
        x = _unary_input(domain, dtype)
        got = run(fn(tf.constant(x)))
        assert got.dtype == dtype, (fn.__name__, dtype)
        np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=tol, atol=tol)


@pytest.mark.parametrize("fn,ref,domain", UNARY, ids=lambda v: getattr(v, "__name__", None))
def test_unary_gradient(fn, ref, domain):
    check_gradients(fn, [_unary_input(domain, np.float64)], rtol=1e-5, atol=1e-6)


def test_sign_and_sigmoid_extremes():
    np.testing.assert_array_equal(run(tf.sign([-2.0, 0.0, 3.0])), [-1.0, 0.0, 1.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = run(tf.sigmoid(tf.constant([-1000.0, 0.0, 1000.0], tf.float32)))
    np.testing.assert_allclose(got, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(run(tf.sigmoid(tf.constant(-30.0, tf.float64))),
                               1 / (1 + np.exp(30.0)), rtol=1e-12)


def test_float_only_ops_reject_integers_naming_the_input():
    x = tf.constant([1, 2], name="ints")
    with pytest.raises(TypeError, match="ints:0.*int32"):
        tf.sqrt(x)


# ---- operators -----------------------------------------------------------------------
def test_operators_and_reflected_operators():
    x = tf.constant([1.0, 2.0, 4.0])
    v = np.array([1.0, 2.0, 4.0], np.float32)
    exprs = [x + 1, 1 + x, x - 1, 1 - x, x * 2, 2 * x, x / 2, 2 / x, x // 3, 7 // x, x % 3,
             7 % x, x ** 2, 2 ** x, -x, abs(-x)]
    refs = [v + 1, 1 + v, v - 1, 1 - v, v * 2, 2 * v, v / 2, 2 / v, v // 3, 7 // v, v % 3,
            7 % v, v ** 2, 2 ** v, -v, v]
    for e in exprs:
        assert e.dtype == tf.float32  # Python scalars take the tensor's dtype
    for g, r in zip(run(exprs), refs):
        np.testing.assert_allclose(g, r, rtol=1e-6)
    m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(run(m @ m), np.array([[7.0, 10.0], [15.0, 22.0]]))
    np.testing.assert_allclose(run(np.eye(2, dtype=np.float32) @ m), [[1, 2], [3, 4]])


def test_comparison_and_bool_operators_but_identity_equality():
    x = tf.constant([1, 2, 3])
    got = run([x < 2, x <= 2, x > 2, x >= 2, 2 < x])
    refs = [[True, False, False], [True, True, False], [False, False, True],
            [False, True, True], [False, False, True]]
    for g, r in zip(got, refs):
        np.testing.assert_array_equal(g, r)
    p, q = tf.constant([True, False]), tf.constant([True, True])
    got = run([p & q, p | q, p ^ q, ~p])
    for g, r in zip(got, [[True, False], [True, True], [False, True], [False, True]]):
        np.testing.assert_array_equal(g, r)
    assert (x == x) is True and (x != x) is False and {x: 1}[x] == 1


def test_numpy_array_on_the_left_defers_to_tensor():
    x = tf.constant([1.0, 2.0])
    y = np.array([10.0, 20.0], np.float32) + x
    assert isinstance(y, tf.Tensor)
    np.testing.assert_allclose(run(y), [11.0, 22.0])


# ---- build-time errors ---------------------------------------------------------------
def test_shape_mismatch_names_both_operands_and_shapes():
    a = tf.placeholder(tf.float32, [2, 3], name="lhs")
    b = tf.placeholder(tf.float32, [4], name="rhs")
    with pytest.raises(ValueError) as e:
        tf.add(a, b)
    msg = str(e.value)
    assert "(2, 3)" in msg and "(4,)" in msg and "lhs" in msg and "rhs" in msg
    with pytest.raises(ValueError, match=r"3 and 4.*\(2, 3\).*\(4, 5\)"):
        tf.matmul(a, tf.placeholder(tf.float32, [4, 5]))


def test_dtype_mismatch_is_type_error_naming_both():
    a = tf.constant([1.0], name="f")
    b = tf.constant([1], name="i")
    with pytest.raises(TypeError, match="f:0.*float32.*i:0.*int32"):
        tf.multiply(a, b)
    with pytest.raises(TypeError):
        a * 2.5j


def test_unknown_dims_broadcast_statically():
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [1, None])
    assert (a + b).shape.as_list() == [None, 3]
    c = tf.placeholder(tf.float32, None)
    assert (a * c).shape.ndims is None


# ---- cast / add_n --------------------------------------------------------------------
def test_cast_and_helpers():
    x = tf.constant([1.7, -1.7, 0.0])
    out = run([tf.cast(x, tf.int32), tf.to_int64(x), tf.cast(x, tf.bool), tf.to_float(
        tf.constant([1, 2])), tf.cast(x, tf.float64)])
    np.testing.assert_array_equal(out[0], [1, -1, 0])
    assert out[0].dtype == np.int32 and out[1].dtype == np.int64
    np.testing.assert_array_equal(out[2], [True, True, False])
    assert out[3].dtype == np.float32 and out[4].dtype == np.float64
    assert tf.cast(x, tf.float32) is x
    check_gradients(lambda v: tf.cast(tf.cast(v, tf.float32) * 3.0, tf.float64),
                    [rand(3)], rtol=1e-3, atol=1e-3, delta=1e-2)


def test_cast_to_int_stops_gradient():
    x = tf.constant([1.5, 2.5])
    (g,) = tf.gradients(tf.reduce_sum(tf.cast(tf.cast(x, tf.int32), tf.float32)), [x])
    assert g is None or np.all(run(g) == 0)


def test_add_n():
    vals = [rand(2, 3) for _ in range(3)]
    out = tf.add_n([tf.constant(v) for v in vals])
    assert out.op.type == "AddN"
    np.testing.assert_allclose(run(out), sum(vals))
    single = tf.constant(vals[0])
    assert tf.add_n([single]) is single
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3,\)"):
        tf.add_n([single, tf.constant(rand(3))])
    check_gradients(lambda a, b, c: tf.add_n([a, b, c]), vals)


# ---- kernels -------------------------------------------------------------------------
def test_add_kernel_is_a_bare_ufunc():
    # bench/ needs per-op overhead <= 2 us: no Python frame around np.add.
    from tensorweave.framework.op_def import get_op_def
    assert get_op_def("AddV2").kernels["CPU"].fn is np.add


def test_every_math_op_has_gradient_or_no_gradient():
    from tensorweave.framework.op_def import registered_ops
    for name, op in registered_ops().items():
        if "math_" in op.where:
            assert op.grad_fn is not None or op.not_differentiable, name
