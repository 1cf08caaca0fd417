"""SegmentMean/Max/Min/Prod, UnsortedSegmentMax/Min/Prod, unsorted_segment_mean/sqrt_n.

Specification: TF 1.x kernel_tests segment_reduction_ops_test.py (SegmentReductionOpTest,
UnsortedSegmentTest) and math_grad.py's segment gradients; values are checked against a
row-by-row reference written here.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.sparse import segment_reduce_ops as sro
from tensorweave.testing.tf_gradient_checker import compute_gradient_error

pytestmark = pytest.mark.usefixtures("graph")

SORTED = {"mean": sro.segment_mean, "max": sro.segment_max, "min": sro.segment_min,
          "prod": sro.segment_prod}
UNSORTED = {"max": sro.unsorted_segment_max, "min": sro.unsorted_segment_min,
            "prod": sro.unsorted_segment_prod}


def _run(x):
    with tf.Session() as sess:
        return sess.run(x)


def _reduce(kind, rows, dtype):
    """One segment's value from its list of rows, the way TF's kernels define it."""
    stacked = np.stack(rows).astype(np.float64)
    if kind == "mean":
        mean = stacked.sum(0) / len(rows)
        return np.trunc(mean) if np.issubdtype(dtype, np.integer) else mean
    return {"max": np.max, "min": np.min, "prod": np.prod}[kind](stacked, axis=0)


def _sorted_reference(kind, data, ids):
    rows = int(ids[-1]) + 1 if len(ids) else 0
    out = np.full((rows,) + data.shape[1:], 1 if kind == "prod" else 0, np.float64)
    for seg in range(rows):
        members = [data[j] for j in range(len(ids)) if ids[j] == seg]
        if members:
            out[seg] = _reduce(kind, members, data.dtype)
    return out


def _unsorted_reference(kind, data, ids, num):
    if kind in ("max", "min"):
        info = np.finfo(data.dtype) if np.issubdtype(data.dtype, np.floating) \
            else np.iinfo(data.dtype)
        empty = info.min if kind == "max" else info.max
    else:
        empty = {"prod": 1, "mean": 0, "sqrt_n": 0}[kind]
    out = np.full((num,) + data.shape[ids.ndim:], empty, np.float64)
    for seg in range(num):
        members = [data[j] for j in np.ndindex(ids.shape) if ids[j] == seg]  # < 0: dropped
        if members and kind == "sqrt_n":
            out[seg] = np.sum(members, axis=0) / np.sqrt(len(members))
        elif members:
            out[seg] = _reduce(kind, members, data.dtype)
    return out


def _data(rng, shape, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 5, shape).astype(dtype)  # small: products stay in range
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("kind", sorted(SORTED))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("row_shape", [(), (3,), (2, 3)])
def test_sorted_ops_match_a_row_by_row_reference(kind, dtype, row_shape):
    rng = np.random.default_rng(3)
    ids = np.sort(rng.integers(0, 12, 25))               # repeats and empty segments
    data = _data(rng, (25,) + row_shape, dtype)
    got = _run(SORTED[kind](data, ids.astype(np.int64)))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, _sorted_reference(kind, data, ids), rtol=1e-5)


def test_sorted_ops_on_tf_examples():
    c = tf.constant([[1, 2, 3, 4], [4, 3, 2, 1], [5, 6, 7, 8]])
    got = _run([f(c, [0, 0, 1]) for f in SORTED.values()])
    np.testing.assert_array_equal(got[0], [[2, 2, 2, 2], [5, 6, 7, 8]])  # int mean
    np.testing.assert_array_equal(got[1], [[4, 3, 3, 4], [5, 6, 7, 8]])
    np.testing.assert_array_equal(got[2], [[1, 2, 2, 1], [5, 6, 7, 8]])
    np.testing.assert_array_equal(got[3], [[4, 6, 6, 4], [5, 6, 7, 8]])


def test_empty_segments_hold_zero_or_one_for_the_sorted_ops():
    got = _run([f([2.0, 3.0], [1, 3]) for f in SORTED.values()])
    for kind, g in zip(SORTED, got):
        empty = 1.0 if kind == "prod" else 0.0
        np.testing.assert_array_equal(g, [empty, 2.0, empty, 3.0])


def test_integer_segment_mean_truncates_toward_zero():
    got = _run(sro.segment_mean(tf.constant([-3, -4, 3, 4], tf.int64), [0, 0, 1, 1]))
    np.testing.assert_array_equal(got, [-3, 3])


@pytest.mark.parametrize("kind", sorted(UNSORTED))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("ids_shape", [(10,), (5, 2)])
def test_unsorted_ops_match_a_row_by_row_reference(kind, dtype, ids_shape):
    rng = np.random.default_rng(5)
    ids = np.array([0, 4, 0, -1, 3, -1, 4, 7, 7, 3]).reshape(ids_shape)  # -1: dropped
    data = _data(rng, ids_shape + (2,), dtype)
    op = UNSORTED[kind](data, ids, 12)
    assert op.shape.as_list() == [12, 2]
    got = _run(op)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, _unsorted_reference(kind, data, ids, 12), rtol=1e-5)


def test_unsorted_empty_segments_hold_the_dtypes_identity():
    for dtype in (tf.float32, tf.int32, tf.int64, tf.float64):
        x = tf.constant([5], dtype)
        mx, mn, pr = _run([f(x, [1], 3) for f in UNSORTED.values()])
        np.testing.assert_array_equal(mx, [dtype.min, 5, dtype.min])
        np.testing.assert_array_equal(mn, [dtype.max, 5, dtype.max])
        np.testing.assert_array_equal(pr, [1, 5, 1])


@pytest.mark.parametrize("kind, fn", [("mean", sro.unsorted_segment_mean),
                                      ("sqrt_n", sro.unsorted_segment_sqrt_n)])
@pytest.mark.parametrize("ids_shape", [(10,), (5, 2)])
def test_unsorted_mean_and_sqrt_n(kind, fn, ids_shape):
    ids = np.array([0, 4, 0, -1, 3, -1, 4, 7, 7, 3]).reshape(ids_shape)
    data = np.random.default_rng(9).standard_normal(ids_shape + (2, 3))
    got = _run(fn(data, ids, 9))
    np.testing.assert_allclose(got, _unsorted_reference(kind, data, ids, 9), rtol=1e-10)


def test_unsorted_mean_of_integers_is_float64_and_sqrt_n_needs_floats():
    got = _run(sro.unsorted_segment_mean(tf.constant([1, 2, 4]), [0, 0, 2], 3))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [1.5, 0.0, 4.0])
    with pytest.raises(TypeError, match="floating point"):
        sro.unsorted_segment_sqrt_n(tf.constant([1, 2]), [0, 0], 1)


def test_no_rows_at_all():
    empty = np.zeros((0, 2), np.float32)
    no_ids = np.zeros([0], np.int32)
    assert _run(sro.segment_max(empty, no_ids)).shape == (0, 2)
    np.testing.assert_array_equal(_run(sro.unsorted_segment_prod(empty, no_ids, 2)),
                                  np.ones((2, 2)))


# ---- gradients ---------------------------------------------------------------------------
def _gradient_error(fn, data, *args):
    with tf.Session():
        x = tf.constant(data)
        y = fn(x, *args)
        return compute_gradient_error(x, list(data.shape), y, y.shape.as_list(),
                                      x_init_value=data)


# Distinct values per segment (spaced well above delta) so max/min are differentiable.
SPREAD = np.random.default_rng(1).permutation(24).reshape(8, 3).astype(np.float64) / 4


@pytest.mark.parametrize("kind", sorted(SORTED))
def test_sorted_gradients(kind):
    data = SPREAD + 0.5
    if kind == "prod":
        data[0, 0] = 0.0                 # one zero in segment 0's first column
        data[5, 1] = data[6, 1] = 0.0    # two zeros in segment 3's second column
    err = _gradient_error(SORTED[kind], data, [0, 0, 0, 1, 3, 3, 3, 3])
    assert err < 1e-6


@pytest.mark.parametrize("kind", sorted(UNSORTED))
@pytest.mark.parametrize("ids", [[0, 4, 0, -1, 3, -1, 4, 2], [[0, 4], [0, -1], [3, -1],
                                                              [4, 0]]])
def test_unsorted_gradients(kind, ids):
    data = SPREAD + 0.5
    if len(np.shape(ids)) == 2:
        data = data.reshape(4, 2, 3)
    if kind == "prod":
        data.flat[0] = 0.0
    assert _gradient_error(UNSORTED[kind], data, ids, 6) < 1e-6


@pytest.mark.parametrize("fn", [sro.unsorted_segment_mean, sro.unsorted_segment_sqrt_n])
def test_unsorted_mean_and_sqrt_n_gradients(fn):
    ids = [[0, 4], [0, -1], [3, -1], [4, 0]]
    assert _gradient_error(fn, SPREAD.reshape(4, 2, 3), ids, 6) < 1e-6


def test_max_and_min_split_the_gradient_among_ties():
    x = tf.constant([[3.0, 1.0], [3.0, 2.0], [1.0, 2.0], [5.0, 5.0], [7.0, 5.0]])
    dy = tf.constant([[10.0, 20.0], [30.0, 40.0]])
    ys = [sro.segment_max(x, [0, 0, 0, 1, 1]), sro.unsorted_segment_max(x, [0, 0, 0, 1, 1], 2),
          sro.segment_min(x, [0, 0, 0, 1, 1])]
    g_max, g_umax, g_min = _run([tf.gradients(y, x, grad_ys=dy)[0] for y in ys])
    np.testing.assert_allclose(g_max, [[5, 0], [5, 10], [0, 10], [0, 20], [30, 20]])
    np.testing.assert_allclose(g_umax, g_max)
    np.testing.assert_allclose(g_min, [[0, 20], [0, 0], [10, 0], [30, 20], [0, 20]])


def test_unsorted_min_ties_across_multi_dim_ids_and_dropped_rows():
    x = tf.constant([[0.0, 2.0], [2.0, 0.0]])     # the dropped 0.0 must get nothing
    y = sro.unsorted_segment_min(x, [[0, 1], [0, -1]], 2)
    got, grad = _run([y, tf.gradients(y, x, grad_ys=tf.constant([4.0, 6.0]))[0]])
    np.testing.assert_array_equal(got, [0.0, 2.0])
    np.testing.assert_array_equal(grad, [[4.0, 6.0], [0.0, 0.0]])


def test_gradients_with_unknown_shapes():
    x, ids = tf.placeholder(tf.float64), tf.placeholder(tf.int32)
    ys = [sro.segment_mean(x, ids), sro.unsorted_segment_mean(x, ids, 3),
          sro.unsorted_segment_max(x, ids, 3)]
    got = _run_fed(tf.gradients(ys, x)[0], {x: [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
                                           ids: [0, 0, 2]})
    np.testing.assert_allclose(got, [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])


# ---- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", list(SORTED.values()))
def test_sorted_ops_reject_unsorted_and_negative_ids(fn):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Segment\w+: .*segment_ids\[2\] = 1 follows 3; sort them"):
        _run(fn([1.0, 2.0, 3.0], [0, 3, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Segment\w+: segment id -1 is "
                                                             "negative"):
        _run(fn([1.0, 2.0], [-1, 0]))


def test_sorted_ops_reject_bad_ids_shape_and_length():
    with pytest.raises(ValueError, match="SegmentMax: segment_ids .* one segment id per row"):
        sro.segment_max([1.0, 2.0, 3.0], [0, 1])
    with pytest.raises(ValueError, match="SegmentMean: segment_ids must be a vector"):
        sro.segment_mean([[1.0, 2.0]], [[0, 0]])
    data, ids = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    y = sro.segment_prod(data, ids)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"SegmentProd: segment_ids has 2 entries but data has "
                                 r"shape \[3\]"):
            sess.run(y, {data: [1.0, 2.0, 3.0], ids: [0, 0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be a vector"):
            sess.run(y, {data: [1.0, 2.0], ids: [[0, 0]]})


@pytest.mark.parametrize("fn", list(UNSORTED.values()))
def test_unsorted_ids_out_of_range_are_named(fn):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"UnsortedSegment\w+: segment_ids\[1,0\] = 7 is out of range "
                             r"\[0, 2\); raise num_segments"):
        _run(fn([[1.0], [2.0]], [[0], [7]], 2))


def test_unsorted_ids_shape_must_be_a_prefix_of_data():
    with pytest.raises(ValueError, match="UnsortedSegmentMin: segment_ids shape .* prefix"):
        sro.unsorted_segment_min([[1.0, 2.0]], [0, 0], 2)
    data, ids = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="UnsortedSegmentProd: .* prefix"):
        _run_fed(sro.unsorted_segment_prod(data, ids, 2), {data: [1.0], ids: [0, 1]})


def _run_fed(y, feed):
    with tf.Session() as sess:
        return sess.run(y, feed)


def test_dtype_errors_name_the_op():
    with pytest.raises(TypeError, match="SegmentMax: data .* real number type"):
        sro.segment_max(tf.constant([True]), [0])
    with pytest.raises(TypeError, match="UnsortedSegmentProd: segment_ids .* int32 or int64"):
        sro.unsorted_segment_prod([1.0], tf.constant([0.0]), 1)
