"""Math ops, continued: matmul, reductions, where/select, segment sums, IndexedSlices,
broadcast_to and clipping."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.ops.math import math_ops
from tensorweave.testing import check_gradients

from math_helpers import rand, run

pytestmark = pytest.mark.usefixtures("fresh_graph")


# ---- matmul --------------------------------------------------------------------------
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_transposes_forward_and_gradient(ta, tb):
    a, b = rand(2, 3), rand(3, 4)
    a_in, b_in = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
    out = tf.matmul(a_in, b_in, transpose_a=ta, transpose_b=tb)
    assert out.op.type == "MatMul" and out.shape.as_list() == [2, 4]
    np.testing.assert_allclose(run(out), a @ b, rtol=1e-12)
    check_gradients(lambda x, y: tf.matmul(x, y, transpose_a=ta, transpose_b=tb),
                    [a_in, b_in], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("sa,sb", [((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (3, 4)),
                                   ((2, 3), (2, 5, 3, 4)), ((1, 2, 3), (4, 3, 2))])
def test_batched_matmul_broadcasts_batch_dims(sa, sb):
    a, b = rand(*sa), rand(*sb)
    out = tf.matmul(a, b)
    assert out.op.type == "BatchMatMulV2"
    ref = np.matmul(a, b)
    assert out.shape.as_list() == list(ref.shape)
    np.testing.assert_allclose(run(out), ref, rtol=1e-12)
    check_gradients(tf.matmul, [a, b], rtol=1e-6, atol=1e-8)
    check_gradients(lambda x, y: tf.matmul(x, y, transpose_a=True, transpose_b=True),
                    [np.swapaxes(a, -1, -2).copy(), np.swapaxes(b, -1, -2).copy()],
                    rtol=1e-6, atol=1e-8)


def test_matmul_ints_and_batch_mismatch():
    a = tf.constant([[1, 2]], tf.int32)
    got = run(tf.matmul(a, a, transpose_b=True))
    assert got.dtype == np.int32 and got.tolist() == [[5]]
    with pytest.raises(ValueError, match=r"\(2, 2, 3\).*\(3, 3, 4\)"):
        tf.matmul(rand(2, 2, 3), rand(3, 3, 4))


# ---- reductions ----------------------------------------------------------------------
REDUCE = [(tf.reduce_sum, np.sum), (tf.reduce_mean, np.mean), (tf.reduce_max, np.max),
          (tf.reduce_min, np.min), (tf.reduce_prod, np.prod)]
AXES = [None, 0, 1, -1, [0, 2], [-1, 0], []]


@pytest.mark.parametrize("fn,ref", REDUCE, ids=lambda v: getattr(v, "__name__", None))
@pytest.mark.parametrize("keep", [False, True])
def test_reductions_forward(fn, ref, keep):
    x = rand(2, 3, 4)
    for axis in AXES:
        np_axis = None if axis is None else tuple(axis) if isinstance(axis, list) else axis
        out = fn(x, axis=axis, keepdims=keep)
        want = ref(x, axis=np_axis, keepdims=keep)
        assert out.shape.as_list() == list(np.shape(want)), axis
        np.testing.assert_allclose(run(out), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn,ref", REDUCE, ids=lambda v: getattr(v, "__name__", None))
def test_reductions_gradient(fn, ref):
    x = rand(2, 3, 4) + 0.1 * np.arange(24).reshape(2, 3, 4)  # distinct: no max ties
    for axis, keep in [(None, False), (1, False), ([0, -1], True), (-1, False)]:
        check_gradients(lambda v: fn(v, axis=axis, keepdims=keep),  # noqa: B023 - called now
                        [x], rtol=1e-5, atol=1e-6)


def test_reduce_prod_gradient_with_zeros():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]])
    check_gradients(lambda v: tf.reduce_prod(v, axis=1), [x], rtol=1e-6, atol=1e-8)


def test_reduce_max_ties_share_the_gradient():
    x = tf.constant([[1.0, 3.0, 3.0]])
    (g,) = tf.gradients(tf.reduce_max(x), [x])
    np.testing.assert_allclose(run(g), [[0.0, 0.5, 0.5]])


def test_reduction_dtypes_axis_tensor_and_aliases():
    ints = tf.constant([[1, 2], [4, 4]], tf.int32)
    out = run([tf.reduce_mean(ints), tf.reduce_sum(ints, 0), tf.reduce_prod(ints)])
    assert out[0] == 2 and out[0].dtype == np.int32
    assert out[1].dtype == np.int32 and out[2].dtype == np.int32
    half = tf.constant(np.full(1000, 0.1, np.float16))
    s = run(tf.reduce_sum(half))
    assert s.dtype == np.float16 and abs(float(s) - 100.0) < 0.2
    x = rand(2, 3)
    ax = tf.placeholder(tf.int32, [None])
    t = tf.reduce_sum(x, axis=ax, keep_dims=True)
    assert t.shape.as_list() == [None, None]
    np.testing.assert_allclose(run(t, {ax: [1]}), x.sum(1, keepdims=True))
    np.testing.assert_allclose(run(tf.reduce_sum(x, reduction_indices=[0])), x.sum(0))
    with pytest.raises(ValueError, match="Invalid reduction dimension 2.*\\(2, 3\\)"):
        tf.reduce_sum(x, axis=2)


def test_reduction_of_unknown_rank_over_all_axes():
    p = tf.placeholder(tf.float64)
    t = tf.reduce_mean(p)
    x = rand(2, 5)
    np.testing.assert_allclose(run(t, {p: x}), x.mean())
    (g,) = tf.gradients(t, [p])
    np.testing.assert_allclose(run(g, {p: x}), np.full((2, 5), 0.1))


def test_reduce_logsumexp_is_stable_and_differentiable():
    x = np.array([[1000.0, 1000.0], [-1.0, 2.0]])
    want = np.log(np.sum(np.exp(x - x.max(1, keepdims=True)), 1)) + x.max(1)
    np.testing.assert_allclose(run(tf.reduce_logsumexp(x, axis=1)), want, rtol=1e-12)
    assert tf.reduce_logsumexp(x, 1, keepdims=True).shape.as_list() == [2, 1]
    check_gradients(lambda v: tf.reduce_logsumexp(v, axis=-1), [rand(3, 4)], rtol=1e-5)


def test_conj_of_real_is_identity_and_complex_conjugates():
    r = tf.constant([1.0])
    assert tf.conj(r) is r
    np.testing.assert_array_equal(run(tf.conj(tf.constant([1 + 2j]))), [1 - 2j])


def test_reduce_any_all():
    b = np.array([[True, False], [True, True]])
    got = run([tf.reduce_any(b), tf.reduce_all(b), tf.reduce_all(b, 1), tf.reduce_any(
        b, 0, keepdims=True)])
    assert got[0] and not got[1]
    np.testing.assert_array_equal(got[2], [False, True])
    np.testing.assert_array_equal(got[3], [[True, True]])


def test_argmax_argmin():
    x = rand(3, 4)
    got = run([tf.argmax(x), tf.argmax(x, 1), tf.argmin(x, axis=-1),
               tf.argmax(x, 1, output_type=tf.int32)])
    np.testing.assert_array_equal(got[0], x.argmax(0))
    assert got[0].dtype == np.int64 and got[3].dtype == np.int32
    np.testing.assert_array_equal(got[1], x.argmax(1))
    np.testing.assert_array_equal(got[2], x.argmin(-1))
    assert tf.argmax(x, 1).shape.as_list() == [3]


# ---- where / select / segments / IndexedSlices ----------------------------------------
def test_where_select_and_indices():
    c = np.array([[True, False], [False, True]])
    x, y = rand(2, 2), rand(2, 2)
    got = run([tf.where(c, x, y), tf.where([True, False], x, y), tf.where(c)])
    np.testing.assert_allclose(got[0], np.where(c, x, y))
    np.testing.assert_allclose(got[1], np.stack([x[0], y[1]]))
    np.testing.assert_array_equal(got[2], [[0, 0], [1, 1]])
    assert got[2].dtype == np.int64
    with pytest.raises(ValueError):
        tf.where(c, x)
    check_gradients(lambda a, b: tf.where(c, a, b), [x, y])
    check_gradients(lambda a, b: tf.where([True, False], a, b), [x, y])


def test_unsorted_segment_sum():
    data = rand(5, 2)
    ids = np.array([0, 2, 0, -1, 2])
    out = tf.unsorted_segment_sum(data, ids, 3)
    assert out.shape.as_list() == [3, 2]
    want = np.zeros((3, 2))
    for i, s in enumerate(ids):
        if s >= 0:
            want[s] += data[i]
    np.testing.assert_allclose(run(out), want)
    check_gradients(lambda d: tf.unsorted_segment_sum(d, ids, 3), [data])
    with pytest.raises(errors.InvalidArgumentError, match="num_segments"):
        run(tf.unsorted_segment_sum(data, np.array([0, 1, 2, 3, 4]), 3))


def test_indexed_slices_convert_to_dense():
    s = IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([2, 0]),
                      tf.constant([3, 2]))
    dense = tf.convert_to_tensor(s)
    assert dense.shape.as_list() == [3, 2]
    np.testing.assert_allclose(run(dense), [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]])
    np.testing.assert_allclose(run(math_ops._indexed_slices_to_dense(s)), run(dense))
    np.testing.assert_allclose(run(tf.add(s, 1.0))[1], [1.0, 1.0])


def test_broadcast_to_and_sum_to_shape():
    x = rand(3)
    out = tf.broadcast_to(x, [2, 3])
    assert out.op.type == "BroadcastTo" and out.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(out), np.broadcast_to(x, (2, 3)))
    check_gradients(lambda v: tf.broadcast_to(v, [4, 3]), [x])
    with pytest.raises(ValueError, match=r"\(3,\).*\(2, 4\)"):
        tf.broadcast_to(x, [2, 4])
    like = tf.placeholder(tf.float64, [None, 1])
    g = math_ops.sum_to_shape(tf.constant(np.ones((2, 4, 3))), like)
    np.testing.assert_allclose(run(g, {like: np.zeros((4, 1))}), np.full((4, 1), 6.0))


# ---- clipping ------------------------------------------------------------------------
def test_clip_by_value_and_gradient():
    x = np.array([-2.0, 0.5, 3.0])
    np.testing.assert_allclose(run(tf.clip_by_value(x, 0.0, 1.0)), [0.0, 0.5, 1.0])
    check_gradients(lambda v: tf.clip_by_value(v, -1.0, 1.0), [np.array([-2.0, 0.3, 2.5])])


def test_global_norm_and_clip_by_global_norm():
    a, b = np.array([3.0, 0.0]), np.array([[4.0]])
    s = IndexedSlices(tf.constant([[4.0]]), tf.constant([1]), tf.constant([3, 1]))
    clipped, norm = tf.clip_by_global_norm([tf.constant(a), None, s], 2.5)
    assert clipped[1] is None and isinstance(clipped[2], IndexedSlices)
    got = run([clipped[0], clipped[2].values, norm, tf.global_norm([a, b])])
    np.testing.assert_allclose(got[2], 5.0)
    np.testing.assert_allclose(got[0], a / 2)
    np.testing.assert_allclose(got[1], [[2.0]])
    np.testing.assert_allclose(got[3], 5.0)
    unclipped, _ = tf.clip_by_global_norm([tf.constant(a)], 10.0, use_norm=5.0)
    np.testing.assert_allclose(run(unclipped[0]), a)
    np.testing.assert_allclose(run(tf.clip_by_norm([3.0, 4.0], 1.0)), [0.6, 0.8], rtol=1e-6)
