"""Sorted-segment reductions (SegmentSum, SparseSegmentSum/Mean/SqrtN), Unique, GatherNd
and ScatterNd: the pieces embedding_lookup_sparse and the sparse gradients are built from.

Specification: TF 1.x kernel_tests segment_reduction_ops_test.py (SegmentReductionOpTest,
SparseSegmentReductionOpTest), unique_op_test.py, gather_nd_op_test.py,
scatter_nd_ops_test.py; our own values.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.testing.gradient_checker import check_gradients

pytestmark = pytest.mark.usefixtures("graph")

DATA = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])


def _run(x):
    with tf.Session() as sess:
        return sess.run(x)


def test_segment_sum_leaves_missing_segments_zero():
    got = _run(tf.segment_sum(DATA, [0, 0, 2, 2]))
    np.testing.assert_array_equal(got, [[4, 6], [0, 0], [12, 14]])
    check_gradients(lambda d: tf.segment_sum(d, [0, 1, 1, 3]) ** 2, [DATA])


def test_segment_ids_must_be_sorted():
    with pytest.raises(tf.errors.InvalidArgumentError, match="not increasing"):
        _run(tf.segment_sum(DATA, [0, 2, 1, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not increasing"):
        _run(tf.sparse_segment_sum(DATA, [0, 1], [1, 0]))


@pytest.mark.parametrize("fn, scale", [
    (tf.sparse_segment_sum, lambda n: 1.0),
    (tf.sparse_segment_mean, lambda n: 1.0 / n),
    (tf.sparse_segment_sqrt_n, lambda n: 1.0 / np.sqrt(n)),
])
def test_sparse_segment_reductions(fn, scale):
    indices, ids = [3, 0, 3, 1], [0, 0, 0, 2]
    got = _run(fn(DATA, indices, ids))
    want = np.zeros([3, 2])
    want[0] = (DATA[3] + DATA[0] + DATA[3]) * scale(3)
    want[2] = DATA[1] * scale(1)
    np.testing.assert_allclose(got, want)
    check_gradients(lambda d: fn(d, indices, ids) * np.array([[1.0, 2.0]]), [DATA])


@pytest.mark.parametrize("row_shape", [(), (16,), (2, 3)])
def test_sparse_segment_sum_and_mean_against_a_row_by_row_sum(row_shape):
    rng = np.random.default_rng(7)
    data = rng.standard_normal((50,) + row_shape).astype(np.float32)
    ids = np.sort(rng.integers(0, 40, 300))            # many entries a segment, some none
    indices = rng.integers(0, 50, 300)
    want = np.zeros((ids[-1] + 1,) + row_shape)
    for i, seg in zip(indices, ids):
        want[seg] += data[i]
    counts = np.maximum(np.bincount(ids, minlength=want.shape[0]), 1)
    got_sum, got_mean = _run([tf.sparse_segment_sum(data, indices, ids),
                              tf.sparse_segment_mean(data, indices, ids)])
    np.testing.assert_allclose(got_sum, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_mean, want / counts.reshape((-1,) + (1,) * len(row_shape)),
                               rtol=1e-5, atol=1e-5)


def test_sparse_segment_index_out_of_range_is_named():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 9"):
        _run(tf.sparse_segment_mean(DATA, [0, 9], [0, 1]))


def test_unique_keeps_first_appearance_order():
    y, idx = tf.unique(tf.constant([7, 1, 7, 4, 1, 9], tf.int64))
    got_y, got_idx = _run([y, idx])
    np.testing.assert_array_equal(got_y, [7, 1, 4, 9])
    np.testing.assert_array_equal(got_idx, [0, 1, 0, 2, 1, 3])
    assert got_idx.dtype == np.int32
    _, idx64 = tf.unique([b"a", b"b", b"a"], out_idx=tf.int64)
    assert _run(idx64).dtype == np.int64


def test_gather_nd_and_scatter_nd_are_each_others_gradient():
    params = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(_run(tf.gather_nd(params, [[1, 2], [0, 0]])),
                                  [params[1, 2], params[0, 0]])
    np.testing.assert_array_equal(_run(tf.gather_nd(params, [[1, 2, 3]])), [23.0])
    np.testing.assert_array_equal(_run(tf.scatter_nd([[1], [3], [1]], [9, 10, 1], [5])),
                                  [0, 10, 0, 10, 0])
    check_gradients(lambda p: tf.gather_nd(p, [[1, 2], [1, 2]]), [params])
    check_gradients(lambda u: tf.scatter_nd([[0, 1], [1, 0]], u, [2, 2]) * 3.0,
                    [np.array([1.0, 2.0])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        _run(tf.gather_nd(params, [[2, 0]]))


def test_div_no_nan_and_its_gradient():
    got = _run(tf.div_no_nan(tf.constant([1.0, 2.0, -3.0]), tf.constant([0.0, 4.0, 2.0])))
    np.testing.assert_array_equal(got, [0.0, 0.5, -1.5])
    check_gradients(lambda x, y: tf.div_no_nan(x, y), [np.array([1.0, 2.0]),
                                                      np.array([3.0, -0.5])])
    x, y = tf.constant([5.0]), tf.constant([0.0])
    gx, gy = _run(tf.gradients(tf.reduce_sum(tf.div_no_nan(x, y)), [x, y]))
    np.testing.assert_array_equal([gx, gy], [[0.0], [0.0]])
