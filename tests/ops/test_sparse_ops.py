"""The sparse op family against hand-computed values, with gradient checks.

Specification: TF 1.x kernel_tests sparse_ops_test.py, sparse_to_dense_op_py_test.py,
sparse_reorder_op_test.py, sparse_reshape_op_test.py, sparse_concat_op_test.py,
sparse_add_op_test.py, sparse_tensor_dense_matmul_op_test.py, sparse_slice_op_test.py;
our own tests and values.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.testing.gradient_checker import check_gradients

pytestmark = pytest.mark.usefixtures("graph")


def _run(x, feed=None):
    with tf.Session() as sess:
        return sess.run(x, feed)


def _dense(sp_value):
    out = np.zeros(sp_value.dense_shape, dtype=np.asarray(sp_value.values).dtype)
    for i, v in zip(sp_value.indices, sp_value.values):
        out[tuple(i)] += v
    return out


# ---- to_dense ----------------------------------------------------------------------------
def test_to_dense_with_default_value_and_both_names():
    sp = tf.SparseTensor([[0, 1], [1, 0], [2, 2]], [1, 2, 3], [3, 3])
    a, b = _run([tf.sparse_tensor_to_dense(sp, default_value=-1), tf.sparse.to_dense(sp)])
    np.testing.assert_array_equal(a, [[-1, 1, -1], [2, -1, -1], [-1, -1, 3]])
    np.testing.assert_array_equal(b, [[0, 1, 0], [2, 0, 0], [0, 0, 3]])
    assert tf.sparse_tensor_to_dense(sp).shape.as_list() == [3, 3]


@pytest.mark.parametrize("indices, message", [
    ([[1, 0], [0, 1]], r"indices\[1\] = \[0, 1\] is out of order"),
    ([[0, 1], [0, 1]], r"indices\[1\] = \[0, 1\] is repeated"),
    ([[0, 1], [3, 0]], r"indices\[1\] = \[3, 0\] is out of bounds"),
])
def test_to_dense_validates_indices(indices, message):
    sp = tf.SparseTensor(indices, [1.0, 2.0], [3, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _run(tf.sparse_tensor_to_dense(sp))


def test_to_dense_unvalidated_accepts_any_order():
    sp = tf.SparseTensor([[1, 0], [0, 1]], [1.0, 2.0], [2, 2])
    np.testing.assert_array_equal(_run(tf.sparse_tensor_to_dense(sp, validate_indices=False)),
                                  [[0, 2], [1, 0]])


def test_legacy_sparse_to_dense_with_scalar_value_and_vector_indices():
    np.testing.assert_array_equal(_run(tf.sparse_to_dense([0, 2], [4], 1.0, -1.0)),
                                  [1, -1, 1, -1])


def test_to_dense_gradient_reaches_values_and_default():
    idx = np.array([[0, 1], [1, 0]], np.int64)

    def fn(values, default):
        return tf.sparse_tensor_to_dense(tf.SparseTensor(idx, values, [2, 3]), default) * 2.0
    check_gradients(fn, [np.array([1.0, 2.0]), np.array(0.5)])


# ---- reorder -----------------------------------------------------------------------------
def test_reorder_sorts_into_row_major_order():
    sp = tf.SparseTensor([[2, 0], [0, 3], [0, 1], [1, 1]], [4.0, 2.0, 1.0, 3.0], [3, 4])
    got = _run(tf.sparse_reorder(sp))
    np.testing.assert_array_equal(got.indices, [[0, 1], [0, 3], [1, 1], [2, 0]])
    np.testing.assert_array_equal(got.values, [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(got.dense_shape, [3, 4])
    assert tf.sparse.reorder(sp).get_shape().as_list() == [3, 4]


def test_reorder_gradient_is_the_inverse_permutation():
    idx = np.array([[2, 0], [0, 3], [0, 1]], np.int64)

    def fn(values):
        weights = tf.constant([1.0, 10.0, 100.0], tf.float64)
        return tf.sparse_reorder(tf.SparseTensor(idx, values, [3, 4])).values * weights
    check_gradients(fn, [np.array([1.0, 2.0, 3.0])])


# ---- reshape -----------------------------------------------------------------------------
def test_reshape_with_inferred_dimension():
    sp = tf.SparseTensor([[0, 0, 0], [0, 1, 2], [1, 0, 3]], [1, 2, 3], [2, 2, 4])
    out = tf.sparse_reshape(sp, [4, -1])
    assert out.get_shape().as_list() == [4, 4]
    unknown = tf.sparse_placeholder(tf.int32, shape=[None, 4])
    assert tf.sparse_reshape(unknown, [-1, 2]).get_shape().as_list() == [None, 2]
    got = _run(out)
    np.testing.assert_array_equal(got.dense_shape, [4, 4])
    np.testing.assert_array_equal(_dense(got), _dense(_run(sp)).reshape(4, 4))


def test_reshape_errors_name_the_shapes():
    sp = tf.SparseTensor([[0, 0]], [1], [2, 3])
    with pytest.raises(ValueError, match="cannot reshape"):
        tf.sparse_reshape(sp, [4, 2])
    feed = tf.placeholder(tf.int64, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="only one output dimension"):
        _run(tf.sparse_reshape(sp, feed).indices, {feed: [-1, -1]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="cannot reshape"):
        _run(tf.sparse_reshape(sp, feed).indices, {feed: [4, -1]})


# ---- retain ------------------------------------------------------------------------------
def test_retain_keeps_marked_entries_and_the_shape():
    sp = tf.SparseTensor([[0, 0], [1, 2], [2, 1]], [5, 6, 7], [3, 3])
    got = _run(tf.sparse_retain(sp, [True, False, True]))
    np.testing.assert_array_equal(got.indices, [[0, 0], [2, 1]])
    np.testing.assert_array_equal(got.values, [5, 7])
    np.testing.assert_array_equal(got.dense_shape, [3, 3])
    with pytest.raises(ValueError, match="2 entries but the SparseTensor has 3"):
        tf.sparse_retain(sp, [True, False])


# ---- fill_empty_rows ---------------------------------------------------------------------
def test_fill_empty_rows_fills_rows_without_entries():
    sp = tf.SparseTensor([[0, 1], [0, 3], [2, 0], [3, 1], [3, 3]], [0, 10, 13, 14, 32],
                         [5, 6])
    filled, empty = tf.sparse_fill_empty_rows(sp, -1)
    got, was_empty = _run([filled, empty])
    np.testing.assert_array_equal(
        got.indices, [[0, 1], [0, 3], [1, 0], [2, 0], [3, 1], [3, 3], [4, 0]])
    np.testing.assert_array_equal(got.values, [0, 10, -1, 13, 14, 32, -1])
    np.testing.assert_array_equal(got.dense_shape, [5, 6])
    np.testing.assert_array_equal(was_empty, [False, True, False, False, True])


def test_fill_empty_rows_of_an_empty_tensor_and_without_empty_rows():
    sp = tf.SparseTensor(np.zeros([0, 2], np.int64), tf.zeros([0]), [2, 3])
    got, was_empty = _run(tf.sparse_fill_empty_rows(sp, 7.0))
    np.testing.assert_array_equal(got.indices, [[0, 0], [1, 0]])
    np.testing.assert_array_equal(got.values, [7.0, 7.0])
    np.testing.assert_array_equal(was_empty, [True, True])
    full = tf.SparseTensor([[0, 0], [1, 1]], [1.0, 2.0], [2, 2])
    got, was_empty = _run(tf.sparse_fill_empty_rows(full, 7.0))
    np.testing.assert_array_equal(got.values, [1.0, 2.0])
    assert not was_empty.any()


def test_fill_empty_rows_gradient_splits_values_and_default():
    idx = np.array([[0, 0], [2, 1]], np.int64)

    def fn(values, default):
        filled, _ = tf.sparse_fill_empty_rows(tf.SparseTensor(idx, values, [4, 2]), default)
        return filled.values * tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64)
    check_gradients(fn, [np.array([1.0, 2.0]), np.array(0.0)])


# ---- concat ------------------------------------------------------------------------------
def _three():
    a = tf.SparseTensor([[0, 2], [1, 0], [1, 1]], ["a", "b", "c"], [2, 3])
    b = tf.SparseTensor([[0, 1], [0, 2]], ["d", "e"], [2, 4])
    c = tf.SparseTensor([[1, 0]], ["f"], [2, 1])
    return a, b, c


def test_concat_along_columns_in_standard_order():
    got = _run(tf.sparse_concat(1, list(_three())))
    np.testing.assert_array_equal(got.indices, [[0, 2], [0, 4], [0, 5], [1, 0], [1, 1],
                                                [1, 7]])
    assert list(got.values) == [b"a", b"d", b"e", b"b", b"c", b"f"]
    np.testing.assert_array_equal(got.dense_shape, [2, 8])
    neg = _run(tf.sparse.concat(-1, list(_three())))
    np.testing.assert_array_equal(neg.indices, got.indices)


def test_concat_along_rows_and_mismatched_shapes():
    a = tf.SparseTensor([[0, 0]], [1.0], [1, 3])
    b = tf.SparseTensor([[1, 2]], [2.0], [2, 3])
    got = _run(tf.sparse_concat(0, [a, b]))
    np.testing.assert_array_equal(got.indices, [[0, 0], [2, 2]])
    np.testing.assert_array_equal(got.dense_shape, [3, 3])
    wide = tf.SparseTensor([[0, 3]], [3.0], [1, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not match"):
        _run(tf.sparse_concat(0, [a, wide]).values)
    grown = _run(tf.sparse_concat(0, [a, wide], expand_nonconcat_dim=True))
    np.testing.assert_array_equal(grown.dense_shape, [2, 4])
    np.testing.assert_array_equal(grown.indices, [[0, 0], [1, 3]])
    tall = tf.SparseTensor([[2, 0]], [4.0], [3, 2])
    side = _run(tf.sparse_concat(-1, [a, tall], expand_nonconcat_dim=True))
    np.testing.assert_array_equal(side.dense_shape, [3, 5])
    np.testing.assert_array_equal(side.indices, [[0, 0], [2, 3]])


# ---- sparse_tensor_dense_matmul -----------------------------------------------------------
@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
def test_sparse_dense_matmul_matches_dense_matmul(adjoint_a, adjoint_b):
    rng = np.random.RandomState(3)
    a = rng.randn(4, 5) * (rng.rand(4, 5) < 0.4)
    a[1, 1] = 2.0  # at least one entry
    b = rng.randn(*((4, 3) if adjoint_a else (5, 3)))
    b = b.T if adjoint_b else b
    idx = np.argwhere(a).astype(np.int64)
    sp = tf.SparseTensor(idx, a[a != 0], a.shape)
    y = tf.sparse_tensor_dense_matmul(sp, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)
    want = (a.T if adjoint_a else a) @ (b.T if adjoint_b else b)
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(_run(y), want, rtol=1e-10)
    np.testing.assert_allclose(_run(tf.sparse.sparse_dense_matmul(sp, b, adjoint_a, adjoint_b)),
                               want, rtol=1e-10)

    def fn(values, dense):
        return tf.sparse_tensor_dense_matmul(tf.SparseTensor(idx, values, a.shape), dense,
                                             adjoint_a=adjoint_a, adjoint_b=adjoint_b)
    check_gradients(fn, [a[a != 0], b])


def test_sparse_dense_matmul_shape_errors():
    sp = tf.SparseTensor([[0, 0]], [1.0], [2, 3])
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.sparse_tensor_dense_matmul(sp, tf.zeros([4, 2]))
    with pytest.raises(ValueError, match="float64"):  # as TF's convert_to_tensor
        tf.sparse_tensor_dense_matmul(sp, tf.zeros([3, 2], tf.float64))


# ---- sparse_add --------------------------------------------------------------------------
def test_sparse_add_merges_and_thresholds_only_overlapping_entries():
    a = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 0.5, 2.0], [2, 3])
    b = tf.SparseTensor([[0, 2], [1, 0], [1, 1]], [-0.4, 0.05, 3.0], [2, 3])
    got = _run(tf.sparse_add(a, b, thresh=0.2))
    # 0.5 - 0.4 = 0.1 < 0.2 is dropped; 0.05 is b's alone, so it stays.
    np.testing.assert_array_equal(got.indices, [[0, 0], [1, 0], [1, 1]])
    np.testing.assert_allclose(got.values, [1.0, 0.05, 5.0])
    assert isinstance(tf.sparse.add(a, b), tf.SparseTensor)


def test_sparse_add_with_a_dense_operand_is_dense():
    a = tf.SparseTensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 2])
    dense = tf.constant([[10.0, 20.0], [30.0, 40.0]])
    want = [[10.0, 21.0], [32.0, 40.0]]
    np.testing.assert_array_equal(_run(tf.sparse_add(a, dense)), want)
    np.testing.assert_array_equal(_run(tf.sparse_add(dense, a)), want)
    with pytest.raises(TypeError, match="at least one operand"):
        tf.sparse_add(dense, dense)


def test_sparse_add_gradients():
    ia, ib = np.array([[0, 0], [1, 1]], np.int64), np.array([[1, 1], [1, 2]], np.int64)

    def fn(va, vb):
        s = tf.sparse_add(tf.SparseTensor(ia, va, [2, 3]), tf.SparseTensor(ib, vb, [2, 3]))
        return tf.sparse_tensor_to_dense(s) * tf.constant(np.arange(6.0).reshape(2, 3))
    check_gradients(fn, [np.array([1.0, 2.0]), np.array([3.0, 4.0])])

    def fn_dense(va, dense):
        return tf.sparse_add(tf.SparseTensor(ia, va, [2, 3]), dense) ** 2
    check_gradients(fn_dense, [np.array([1.0, 2.0]), np.ones([2, 3])])


def test_sparse_add_shape_mismatch_names_both_shapes():
    a = tf.SparseTensor([[0, 0]], [1.0], [2, 3])
    b = tf.SparseTensor([[0, 0]], [1.0], [3, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[2, 3\] vs. \[3, 3\]"):
        _run(tf.sparse_add(a, b).values)


# ---- slice, to_indicator -----------------------------------------------------------------
def test_sparse_slice_rebases_and_clips():
    sp = tf.SparseTensor([[0, 0], [0, 3], [1, 1], [2, 4]], [1, 2, 3, 4], [3, 5])
    got = _run(tf.sparse_slice(sp, [0, 1], [2, 10]))
    np.testing.assert_array_equal(got.indices, [[0, 2], [1, 0]])
    np.testing.assert_array_equal(got.values, [2, 3])
    np.testing.assert_array_equal(got.dense_shape, [2, 4])


def test_sparse_to_indicator_marks_each_rows_ids():
    ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0]], tf.constant([3, 0, 2], tf.int64), [3, 2])
    got = _run(tf.sparse.to_indicator(ids, 4))
    np.testing.assert_array_equal(got, [[True, False, False, True], [False] * 4,
                                        [False, False, True, False]])


# ---- reduce_sum --------------------------------------------------------------------------
def test_sparse_reduce_sum_over_axes_with_and_without_keepdims():
    idx = np.array([[0, 0, 1], [0, 2, 0], [1, 1, 1], [1, 1, 0]], np.int64)
    vals = np.array([1.0, 2.0, 3.0, 4.0])
    sp = tf.SparseTensor(idx, vals, [2, 3, 2])
    dense = np.zeros([2, 3, 2])
    dense[tuple(idx.T)] = vals
    got = _run([tf.sparse_reduce_sum(sp), tf.sparse_reduce_sum(sp, 1),
                tf.sparse.reduce_sum(sp, [0, -1], keepdims=True),
                tf.sparse_reduce_sum(sp, axis=2)])
    np.testing.assert_allclose(got[0], dense.sum())
    np.testing.assert_allclose(got[1], dense.sum(1))
    np.testing.assert_allclose(got[2], dense.sum((0, 2), keepdims=True))
    np.testing.assert_allclose(got[3], dense.sum(2))
    assert tf.sparse_reduce_sum(sp, 1).shape.as_list() == [2, 2]
    assert tf.sparse.reduce_sum(sp, [0, -1], keepdims=True).shape.as_list() == [1, 3, 1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 3 is out of range"):
        _run(tf.sparse_reduce_sum(sp, tf.constant(3) + 0))


@pytest.mark.parametrize("axis", [None, 0, 1, [0, 1], -1])
def test_sparse_reduce_sum_gradient(axis):
    idx = np.array([[0, 1], [1, 0], [2, 2]], np.int64)

    def fn(values):
        out = tf.sparse_reduce_sum(tf.SparseTensor(idx, values, [3, 3]), axis)
        return out * tf.constant(np.arange(1.0, 1.0 + np.prod(out.shape.as_list())).reshape(
            out.shape.as_list()))
    check_gradients(fn, [np.array([1.0, 2.0, 3.0])])


def test_sparse_add_gradient_is_zero_for_entries_dropped_by_thresh():
    va, vb = tf.constant([1.0, 0.5]), tf.constant([-0.4, 2.0])
    a = tf.SparseTensor([[0, 0], [0, 2]], va, [2, 3])
    b = tf.SparseTensor([[0, 2], [1, 1]], vb, [2, 3])
    s = tf.sparse_add(a, b, thresh=0.2)  # [0, 2]: 0.5 - 0.4 = 0.1 is dropped
    ga, gb = _run(tf.gradients(tf.reduce_sum(s.values * 3.0), [va, vb]))
    np.testing.assert_allclose(ga, [3.0, 0.0])
    np.testing.assert_allclose(gb, [0.0, 3.0])
