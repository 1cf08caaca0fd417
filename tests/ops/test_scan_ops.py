"""Cumsum / Cumprod (values, axes, exclusive x reverse, errors, gradients),
invert_permutation and the Bincount op.

Specification: TF 1.x python/kernel_tests/scan_ops_test.py, bincount_op_test.py,
array_ops_test.py (InvertPermutation) and math_grad.py; expected values are NumPy's
or computed by hand.
"""
import itertools

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.op_def import get_op_def
from tensorweave.ops.stats import count_ops as C
from tensorweave.ops.math import scan_ops as S
from tensorweave.testing.tf_gradient_checker import compute_gradient_error

pytestmark = pytest.mark.usefixtures("graph")

COMBOS = list(itertools.product([False, True], [False, True]))  # (exclusive, reverse)


def run(*fetches, feed=None):
    with tf.Session() as s:
        out = s.run(list(fetches), feed)
    return out[0] if len(fetches) == 1 else out


def np_scan(fn, x, axis, exclusive, reverse):
    """The reference: flip, scan with NumPy, shift in the identity, flip back."""
    identity = 0 if fn is np.cumsum else 1
    axis = axis % x.ndim
    v = np.flip(x, axis) if reverse else x
    out = fn(v, axis=axis, dtype=x.dtype)
    if exclusive:
        first = np.full_like(np.take(out, [0], axis=axis), identity)
        out = np.concatenate([first, np.take(out, np.arange(out.shape[axis] - 1), axis=axis)],
                             axis=axis)
    return np.flip(out, axis) if reverse else out


# ---- values ----------------------------------------------------------------------
def test_hand_computed_values_for_all_four_combinations():
    x = [1, 2, 3]
    expect_sum = {(False, False): [1, 3, 6], (True, False): [0, 1, 3],
                  (False, True): [6, 5, 3], (True, True): [5, 3, 0]}
    expect_prod = {(False, False): [1, 2, 6], (True, False): [1, 1, 2],
                   (False, True): [6, 6, 3], (True, True): [6, 3, 1]}
    for excl, rev in COMBOS:
        s, p = run(S.cumsum(x, exclusive=excl, reverse=rev),
                   S.cumprod(x, exclusive=excl, reverse=rev))
        assert s.tolist() == expect_sum[excl, rev]
        assert p.tolist() == expect_prod[excl, rev]


@pytest.mark.parametrize("fn, np_fn", [(S.cumsum, np.cumsum), (S.cumprod, np.cumprod)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_every_axis_including_negative_against_numpy(fn, np_fn, dtype):
    x = (np.arange(1, 25).reshape(2, 3, 4) % 5 + 1).astype(dtype)
    for axis in range(-3, 3):
        for excl, rev in COMBOS:
            t = fn(tf.constant(x), axis, exclusive=excl, reverse=rev)
            assert t.dtype.as_numpy_dtype == dtype
            assert t.shape.as_list() == [2, 3, 4]
            got = run(t)
            assert got.dtype == dtype
            np.testing.assert_allclose(got, np_scan(np_fn, x, axis, excl, rev), rtol=1e-6)


def test_axis_may_be_an_int64_or_int32_tensor_and_a_fed_one():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a64 = tf.constant(1, dtype=tf.int64)
    a = tf.placeholder(tf.int32, [])
    got64, got_fed = run(S.cumsum(x, a64), S.cumsum(x, a), feed={a: -2})
    np.testing.assert_array_equal(got64, np.cumsum(x, 1))
    np.testing.assert_array_equal(got_fed, np.cumsum(x, 0))


def test_unknown_shape_input_keeps_unknown_shape_and_runs():
    p = tf.placeholder(tf.float32)
    y = S.cumprod(p, 0, exclusive=True)
    assert y.shape.ndims is None
    np.testing.assert_array_equal(run(y, feed={p: [2.0, 3.0, 4.0]}), [1.0, 2.0, 6.0])


def test_empty_and_half_inputs():
    for excl, rev in COMBOS:
        got = run(S.cumsum(np.zeros([0, 3], np.float32), 0, excl, rev))
        assert got.shape == (0, 3)
    half = np.full([2048], 1.0, np.float16)
    # float16 accumulates in float32: 2048 ones sum exactly (fp16 steps are 2 there).
    assert run(S.cumsum(half))[-1] == 2048


def test_op_has_tf_attrs_and_name():
    y = S.cumsum([1.0, 2.0], exclusive=True, name="running")
    assert y.op.type == "Cumsum" and y.op.name == "running"
    assert y.op.get_attr("exclusive") is True and y.op.get_attr("reverse") is False
    assert get_op_def("Cumprod").attrs == {"exclusive": False, "reverse": False}


# ---- errors ----------------------------------------------------------------------
def test_constant_axis_out_of_range_is_a_value_error_naming_axis_and_rank():
    x = tf.constant([[1.0, 2.0]], name="scores")
    with pytest.raises(ValueError, match=r"scores.*\[-2, 2\).*rank 2.*axis 2"):
        S.cumsum(x, 2)
    with pytest.raises(ValueError, match=r"\[-2, 2\).*axis -3"):
        S.cumprod(x, -3)


def test_fed_axis_out_of_range_fails_the_step_naming_axis_and_rank():
    a = tf.placeholder(tf.int32, [])
    y = S.cumsum(tf.constant([1.0, 2.0]), a, name="csum")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"range \[-1, 1\) .*rank 1.*axis -2") as info:
        run(y, feed={a: -2})
    assert "csum" in str(info.value)


def test_axis_must_be_an_integer_scalar():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="axis must be a scalar"):
        S.cumsum(x, [0])
    with pytest.raises(TypeError, match="int32/int64 axis"):
        S.cumsum(x, tf.constant(0.0))
    with pytest.raises(TypeError, match="integer"):
        S.cumsum(x, 0.5)
    with pytest.raises(TypeError, match="Cumsum.*numeric.*flags"):
        S.cumsum(tf.constant([True, False], name="flags"))


def test_scalar_input_has_no_valid_axis():
    with pytest.raises(ValueError, match=r"range \[0, 0\)"):
        S.cumsum(tf.constant(3.0), 0)


# ---- gradients -------------------------------------------------------------------
@pytest.mark.parametrize("excl, rev", COMBOS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_gradient_checks(excl, rev, axis):
    x_val = np.random.RandomState(0).uniform(-1, 1, [3, 4])
    x = tf.constant(x_val)
    y = S.cumsum(x, axis, exclusive=excl, reverse=rev)
    with tf.Session():
        assert compute_gradient_error(x, [3, 4], y, [3, 4], x_init_value=x_val) < 1e-8


@pytest.mark.parametrize("excl, rev", COMBOS)
@pytest.mark.parametrize("axis", [0, 1, -2])
def test_cumprod_gradient_checks_on_nonzero_inputs(excl, rev, axis):
    # The gradient divides by x (as TF's): inputs are kept away from zero.
    x_val = np.random.RandomState(1).uniform(0.5, 2.0, [3, 4])
    x = tf.constant(x_val)
    y = S.cumprod(x, axis, exclusive=excl, reverse=rev)
    with tf.Session():
        assert compute_gradient_error(x, [3, 4], y, [3, 4], x_init_value=x_val) < 1e-8


def test_cumsum_gradient_values_by_hand():
    x = tf.constant([1.0, 2.0, 3.0])
    w = tf.constant([1.0, 10.0, 100.0])
    g_plain, g_excl_rev = tf.gradients(
        [tf.reduce_sum(S.cumsum(x) * w)], [x])[0], \
        tf.gradients(tf.reduce_sum(S.cumsum(x, exclusive=True, reverse=True) * w), [x])[0]
    # y_j = sum_{i<=j} x_i -> dL/dx_i = sum_{j>=i} w_j.
    np.testing.assert_array_equal(run(g_plain), [111.0, 110.0, 100.0])
    # y_j = sum_{i>j} x_i -> dL/dx_i = sum_{j<i} w_j.
    np.testing.assert_array_equal(run(g_excl_rev), [0.0, 1.0, 11.0])


def test_cumprod_gradient_values_by_hand():
    x = tf.constant([1.0, 2.0, 3.0])
    (g,) = tf.gradients(tf.reduce_sum(S.cumprod(x)), [x])
    # sum(a, ab, abc): d/da = 1 + b + bc, d/db = a + ac, d/dc = ab.
    np.testing.assert_allclose(run(g), [9.0, 4.0, 2.0])


def test_cumsum_second_derivative_is_zero():
    x = tf.constant([1.0, 2.0, 3.0])
    (g,) = tf.gradients(tf.reduce_sum(S.cumsum(x) * x), [x])
    (gg,) = tf.gradients(tf.reduce_sum(g), [x])
    # L = sum_j x_j * sum_{i<=j} x_i; d2L/dx_i dx_k summed over i gives 2 + (n-1) per k.
    np.testing.assert_allclose(run(gg), [4.0, 4.0, 4.0])


# ---- invert_permutation ----------------------------------------------------------
@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_invert_permutation(dtype):
    y = C.invert_permutation(tf.constant([3, 4, 0, 2, 1], dtype=dtype))
    assert y.dtype == dtype and y.shape.as_list() == [5]
    np.testing.assert_array_equal(run(y), [2, 4, 3, 0, 1])
    p = tf.placeholder(dtype, [None])
    np.testing.assert_array_equal(run(C.invert_permutation(p), feed={p: []}), [])


def test_invert_permutation_errors_name_the_bad_value():
    with pytest.raises(ValueError, match=r"perm:0\[1\] = 0 is duplicated"):
        C.invert_permutation(tf.constant([0, 0, 2], name="perm"))
    with pytest.raises(ValueError, match=r"\[2\] = 3 is not between 0 and 3"):
        C.invert_permutation([0, 1, 3])
    p = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"x\[1\] = 1 is duplicated"):
        run(C.invert_permutation(p), feed={p: [1, 1]})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"x\[0\] = 5 is out of range"):
        run(C.invert_permutation(p), feed={p: [5, 0]})
    with pytest.raises(TypeError, match="int32/int64"):
        C.invert_permutation([0.0, 1.0])
    with pytest.raises(ValueError, match="vector"):
        C.invert_permutation([[0, 1]])


def test_invert_permutation_has_no_gradient():
    assert get_op_def("InvertPermutation").not_differentiable


# ---- the Bincount op -------------------------------------------------------------
def bincount_op(arr, size, weights):
    return tf.get_default_graph().create_op(
        "Bincount", [tf.convert_to_tensor(arr, dtype=tf.int32),
                     tf.convert_to_tensor(size, dtype=tf.int32),
                     tf.convert_to_tensor(weights)], name="Bincount").outputs[0]


def test_bincount_op_counts_and_skips_values_at_or_above_size():
    y = bincount_op([1, 1, 2, 9, 0], 4, np.zeros([0], np.int32))
    assert y.dtype == tf.int32 and y.shape.as_list() == [4]
    np.testing.assert_array_equal(run(y), [1, 2, 1, 0])
    two_d = bincount_op([[0, 1], [1, 1]], 3, np.zeros([0], np.int64))
    assert two_d.dtype == tf.int64
    np.testing.assert_array_equal(run(two_d), [1, 3, 0])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_bincount_op_weights_give_the_output_dtype(dtype):
    rng = np.random.RandomState(42)
    arr = rng.randint(0, 50, 500).astype(np.int32)
    w = (rng.uniform(0, 10, 500)).astype(dtype)
    y = bincount_op(arr, 50, w)
    assert y.dtype.as_numpy_dtype == dtype
    np.testing.assert_allclose(run(y), np.bincount(arr, w, 50).astype(dtype), rtol=1e-5)


def test_bincount_op_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative.*-1"):
        run(bincount_op([1, 2, 3, -1, 6, 8], 9, np.zeros([0], np.int32)))
    s = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="size must be non-negative"):
        run(bincount_op([1], s, np.zeros([0], np.int32)), feed={s: -1})
    with pytest.raises(ValueError, match="weights must be empty or have arr's shape"):
        bincount_op([1, 2], 3, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="int32 arr"):
        tf.get_default_graph().create_op("Bincount", [tf.constant([1.0]), tf.constant(2),
                                                      tf.constant([1.0])])
    with pytest.raises(TypeError, match="weights must be one of"):
        bincount_op([1], 2, [True])


def test_bincount_op_has_no_gradient():
    assert get_op_def("Bincount").not_differentiable
