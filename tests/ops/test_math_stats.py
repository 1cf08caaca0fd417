"""Composite statistics: count_nonzero, zero_fraction, reduce_variance/std/euclidean_norm,
scalar_mul, is_non_decreasing / is_strictly_increasing, bincount, confusion_matrix.

Specification: TF 1.x python/kernel_tests/reduction_ops_test.py (count_nonzero,
euclidean norm), nn_test.py (zero_fraction), bincount_op_test.py,
confusion_matrix_test.py, check_ops_test.py (monotonicity) and math_ops_test.py
(scalar_mul); expected values are NumPy's or computed by hand.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.math_impl import stats_ops as M
from tensorweave.testing.tf_gradient_checker import compute_gradient_error

pytestmark = pytest.mark.usefixtures("graph")


def run(*fetches, feed=None):
    with tf.Session() as s:
        out = s.run(list(fetches), feed)
    return out[0] if len(fetches) == 1 else out


# ---- count_nonzero ---------------------------------------------------------------
def test_count_nonzero_all_axes_and_dtype():
    x = np.array([[0, 1, 2], [0, 0, 3]], np.float32)
    y = M.count_nonzero(x)
    assert y.dtype == tf.int64 and y.shape.as_list() == []
    assert run(y) == 3
    z = M.count_nonzero(x, dtype=tf.int32)
    assert z.dtype == tf.int32 and run(z) == 3


@pytest.mark.parametrize("axis", [0, 1, -1, [0, 1]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_count_nonzero_axis_keepdims_against_numpy(axis, keepdims):
    x = np.random.RandomState(3).randint(-1, 2, [3, 4]).astype(np.int32)
    y = M.count_nonzero(x, axis=axis, keepdims=keepdims)
    expect = np.count_nonzero(x, axis=tuple(np.atleast_1d(axis)), keepdims=keepdims)
    assert y.shape.as_list() == list(np.shape(expect))
    np.testing.assert_array_equal(run(y), expect)


def test_count_nonzero_deprecated_aliases():
    x = [[True, False], [True, True]]
    a, b = run(M.count_nonzero(x, reduction_indices=[1], keep_dims=True),
               M.count_nonzero(input=x, axis=0))
    np.testing.assert_array_equal(a, [[1], [2]])
    np.testing.assert_array_equal(b, [2, 1])
    with pytest.raises(ValueError, match="axis or reduction_indices"):
        M.count_nonzero(x, axis=0, reduction_indices=0)
    with pytest.raises(ValueError, match="not both"):
        M.count_nonzero(x, input=x)


def test_count_nonzero_strings_compare_against_empty_string():
    x = tf.constant([["", "a", " "], ["b", "", ""]])
    got = run(M.count_nonzero(x, axis=1))
    np.testing.assert_array_equal(got, [2, 1])


def test_count_nonzero_fed_and_name_scope():
    p = tf.placeholder(tf.float64, [None])
    y = M.count_nonzero(p, name="nnz")
    assert y.op.name.startswith("nnz/")
    assert run(y, feed={p: [0.0, -0.0, 1e-300, np.nan]}) == 2  # NaN != 0, as in TF
    assert run(y, feed={p: []}) == 0


def test_count_nonzero_bad_axis_names_the_input():
    with pytest.raises(ValueError, match=r"Invalid reduction dimension 2.*scores:0"):
        M.count_nonzero(tf.constant([[1, 0]], name="scores"), axis=2)
    with pytest.raises(ValueError, match=r"Invalid reduction dimension -3.*input_tensor"):
        M.count_nonzero([[1, 0]], reduction_indices=[-3])


# ---- zero_fraction ---------------------------------------------------------------
def test_zero_fraction_values():
    x = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]], np.float32)
    y = M.zero_fraction(x)
    assert y.dtype == tf.float32 and y.shape.as_list() == []
    assert y.op.name.endswith("fraction")
    assert run(y) == pytest.approx(4 / 6)
    assert run(M.zero_fraction(tf.constant([1, 2, 3]))) == 0.0
    assert run(M.zero_fraction(tf.zeros([5]))) == 1.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's 0 / 0
def test_zero_fraction_of_empty_is_nan():
    assert np.isnan(run(M.zero_fraction(np.zeros([0], np.float32))))


# ---- variance, std, euclidean norm -----------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, -1, [0, 2]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_variance_std_norm_against_numpy(axis, keepdims):
    x = np.random.RandomState(5).normal(size=[2, 3, 4])
    np_axis = None if axis is None else tuple(np.atleast_1d(axis))
    v, s, n = run(M.reduce_variance(x, axis=axis, keepdims=keepdims),
                  M.reduce_std(x, axis=axis, keepdims=keepdims),
                  M.reduce_euclidean_norm(x, axis=axis, keepdims=keepdims))
    np.testing.assert_allclose(v, np.var(x, axis=np_axis, keepdims=keepdims), rtol=1e-12)
    np.testing.assert_allclose(s, np.std(x, axis=np_axis, keepdims=keepdims), rtol=1e-12)
    np.testing.assert_allclose(
        n, np.sqrt(np.sum(x * x, axis=np_axis, keepdims=keepdims)), rtol=1e-12)


def test_variance_float32_shapes_names_and_gradient():
    x = tf.placeholder(tf.float32, [None, 3])
    v = M.reduce_variance(x, axis=1, name="var")
    assert v.shape.as_list() == [None] and v.dtype == tf.float32
    assert v.op.name.startswith("var/")
    assert M.reduce_std(x, axis=0, keepdims=True).shape.as_list() == [1, 3]
    np.testing.assert_allclose(run(v, feed={x: [[1, 2, 3], [2, 2, 2]]}), [2 / 3, 0.0],
                               rtol=1e-6)
    xv = np.random.RandomState(0).normal(size=[2, 3])
    c = tf.constant(xv)
    with tf.Session():
        for fn in (M.reduce_variance, M.reduce_std, M.reduce_euclidean_norm):
            assert compute_gradient_error(c, [2, 3], fn(c, axis=1), [2], x_init_value=xv) \
                < 1e-6


def test_euclidean_norm_of_integers_truncates_like_tf():
    y = M.reduce_euclidean_norm(tf.constant([[1, 2, 3], [1, 1, 1]]), axis=1)
    assert y.dtype == tf.int32
    np.testing.assert_array_equal(run(y), [3, 1])  # sqrt(14) = 3.74, sqrt(3) = 1.73
    assert run(M.reduce_euclidean_norm([3, 4])) == 5


def test_variance_of_integers_or_strings_is_a_type_error_naming_the_input():
    with pytest.raises(TypeError, match="reduce_variance.*counts.*int32"):
        M.reduce_variance(tf.constant([1, 2], name="counts"))
    with pytest.raises(TypeError, match="reduce_std.*floating-point"):
        M.reduce_std([1, 2])
    with pytest.raises(TypeError, match="reduce_euclidean_norm.*words.*string"):
        M.reduce_euclidean_norm(tf.constant(["a"], name="words"))


# ---- scalar_mul ------------------------------------------------------------------
def test_scalar_mul_dense_and_indexed_slices():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(run(M.scalar_mul(2, x)), [[2, 4], [6, 8]])
    slices = tf.IndexedSlices(tf.constant([[1.0, -1.0]]), tf.constant([1]),
                              tf.constant([3, 2]))
    y = M.scalar_mul(tf.constant(-3.0), slices)
    assert isinstance(y, tf.IndexedSlices)
    assert y.indices is slices.indices and y.dense_shape is slices.dense_shape
    np.testing.assert_array_equal(run(y.values), [[-3.0, 3.0]])


def test_scalar_mul_needs_a_scalar():
    with pytest.raises(ValueError, match=r"Only scalar multiply works.*scalar.*\(2,\)"):
        M.scalar_mul([1.0, 2.0], tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="Only scalar multiply"):
        M.scalar_mul(tf.placeholder(tf.float32), tf.constant([1.0]))


# ---- monotonicity ----------------------------------------------------------------
@pytest.mark.parametrize("x, non_decreasing, strictly", [
    ([], True, True),
    ([7], True, True),
    ([1, 1, 2], True, False),
    ([1, 2, 3], True, True),
    ([3, 2], False, False),
    ([[1, 2], [2, 3]], True, False),   # row-major: 1, 2, 2, 3
    ([[1, 2], [3, 4]], True, True),
    ([[1, 5], [2, 6]], False, False),
    ([-np.inf, 0.0, np.inf], True, True),
])
def test_is_non_decreasing_and_strictly_increasing(x, non_decreasing, strictly):
    a, b = run(M.is_non_decreasing(x), M.is_strictly_increasing(x))
    assert bool(a) is non_decreasing and bool(b) is strictly


def test_monotonicity_on_unsigned_and_fed_inputs():
    # Neighbours are compared, not subtracted: no unsigned wrap-around.
    assert bool(run(M.is_non_decreasing(tf.constant([5, 0], dtype=tf.uint8)))) is False
    p = tf.placeholder(tf.int32, None)
    y = M.is_strictly_increasing(p)
    assert y.dtype == tf.bool and y.shape.as_list() == []
    assert bool(run(y, feed={p: [[0]]})) is True
    assert bool(run(y, feed={p: [0, 2, 1]})) is False


def test_monotonicity_needs_a_real_numeric_tensor():
    with pytest.raises(TypeError, match="is_non_decreasing.*flags.*bool"):
        M.is_non_decreasing(tf.constant([True], name="flags"))
    with pytest.raises(TypeError, match="is_strictly_increasing.*string"):
        M.is_strictly_increasing(tf.constant(["a", "b"]))


# ---- bincount --------------------------------------------------------------------
def test_bincount_values_and_size():
    y = M.bincount([1, 1, 1, 2, 2, 3])
    assert y.dtype == tf.int32
    np.testing.assert_array_equal(run(y), [0, 3, 2, 1])
    np.testing.assert_array_equal(run(M.bincount([[1, 5], [2, 5]])), [0, 1, 1, 0, 0, 2])
    np.testing.assert_array_equal(run(M.bincount([1, 2], dtype=tf.float64)), [0.0, 1.0, 1.0])
    assert M.bincount([1, 2], dtype=tf.float64).dtype == tf.float64


def test_bincount_minlength_and_maxlength():
    arr = [1, 1, 3, 6]
    got = run(M.bincount(arr, minlength=9), M.bincount(arr, maxlength=3),
              M.bincount(arr, minlength=2, maxlength=5), M.bincount(arr, minlength=3))
    np.testing.assert_array_equal(got[0], [0, 2, 0, 1, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(got[1], [0, 2, 0])   # values >= maxlength are skipped
    np.testing.assert_array_equal(got[2], [0, 2, 0, 1, 0])
    np.testing.assert_array_equal(got[3], [0, 2, 0, 1, 0, 0, 1])


def test_bincount_empty():
    for arr in ([], np.zeros([0, 3], np.int32)):
        assert run(M.bincount(arr)).shape == (0,)
        np.testing.assert_array_equal(run(M.bincount(arr, minlength=4)), [0, 0, 0, 0])
    p = tf.placeholder(tf.int32, [None])
    assert run(M.bincount(p, maxlength=2), feed={p: []}).shape == (0,)


def test_bincount_weights_against_numpy():
    rng = np.random.RandomState(42)
    arr = rng.randint(0, 100, 1000).astype(np.int32)
    w = rng.uniform(size=1000)
    y = M.bincount(arr, weights=w, minlength=120)
    assert y.dtype == tf.float64
    np.testing.assert_allclose(run(y), np.bincount(arr, w, 120), rtol=1e-12)
    yi = M.bincount([0, 2, 2], weights=[5, 6, 7])
    assert yi.dtype == tf.int32
    np.testing.assert_array_equal(run(yi), [5, 0, 13])
    np.testing.assert_allclose(run(M.bincount([0, 2, 5], weights=[0.5, 1.5, 9.0],
                                              maxlength=3)), [0.5, 0.0, 1.5])


def test_bincount_errors_name_the_input():
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative.*-1"):
        run(M.bincount([1, 2, 3, -1, 6, 8]))
    with pytest.raises(ValueError, match="weights.*shape.*arr"):
        M.bincount([1, 2], weights=[1.0])
    with pytest.raises((TypeError, ValueError)):
        M.bincount(tf.constant([1.0, 2.0]))


# ---- confusion_matrix ------------------------------------------------------------
def test_confusion_matrix_without_num_classes():
    cm = M.confusion_matrix([1, 2, 4], [2, 2, 4])
    assert cm.dtype == tf.int32
    expect = np.zeros([5, 5], np.int32)
    expect[1, 2] = expect[2, 2] = expect[4, 4] = 1
    np.testing.assert_array_equal(run(cm), expect)
    # the size comes from the larger of labels and predictions
    assert run(M.confusion_matrix([0, 3], [1, 0])).shape == (4, 4)


def test_confusion_matrix_with_num_classes_and_dtype():
    labels = np.array([0, 1, 2, 2, 1], np.int64)
    preds = np.array([0, 2, 2, 1, 1], np.int64)
    cm = M.confusion_matrix(labels, preds, num_classes=4, dtype=tf.int64)
    assert cm.dtype == tf.int64 and cm.shape.as_list() == [4, 4]
    expect = np.zeros([4, 4], np.int64)
    for lab, p in zip(labels, preds):
        expect[lab, p] += 1   # rows are labels, columns predictions
    np.testing.assert_array_equal(run(cm), expect)
    n = tf.placeholder(tf.int32, [])
    np.testing.assert_array_equal(run(M.confusion_matrix(labels, preds, num_classes=n),
                                      feed={n: 3}), expect[:3, :3])


def test_confusion_matrix_weights():
    cm = M.confusion_matrix([0, 1, 1, 2], [0, 1, 1, 0], num_classes=3,
                            weights=[0.5, 1.0, 2.0, 4.0], dtype=tf.float32)
    assert cm.dtype == tf.float32
    np.testing.assert_array_equal(run(cm), [[0.5, 0, 0], [0, 3.0, 0], [4.0, 0, 0]])
    w = M.confusion_matrix([1, 0], [1, 1], weights=tf.constant([3, 5], tf.int64))
    np.testing.assert_array_equal(run(w), [[0, 5], [0, 3]])  # weights cast to int32
    assert w.dtype == tf.int32


def test_confusion_matrix_squeezes_a_trailing_unit_dimension():
    cm = M.confusion_matrix([[1], [0]], [1, 1])
    np.testing.assert_array_equal(run(cm), [[0, 1], [0, 1]])


def test_confusion_matrix_out_of_range_ids_fail_with_tf_messages():
    lab = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="`labels` out of bound"):
        run(M.confusion_matrix(lab, [0, 2], num_classes=3), feed={lab: [1, 4]})
    pred = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="`predictions` out of bound"):
        run(M.confusion_matrix([0, 1], pred, num_classes=2), feed={pred: [0, 2]})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="`labels` contains negative values"):
        run(M.confusion_matrix(lab, [0, 0]), feed={lab: [-1, 0]})


def test_confusion_matrix_shape_errors_name_the_tensors():
    with pytest.raises(ValueError, match="labels.*predictions.*same length"):
        M.confusion_matrix([0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="vectors.*shape"):
        M.confusion_matrix([[0, 1], [1, 0]], [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="weights.*shape"):
        M.confusion_matrix([0, 1], [0, 1], weights=[1.0, 2.0, 3.0])


def test_confusion_matrix_of_empty_inputs_is_zero_by_zero():
    p = tf.placeholder(tf.int32, [None])
    assert run(M.confusion_matrix(p, p), feed={p: []}).shape == (0, 0)
