"""Conditional accumulators: averaging, stale drops, blocking take_grad, sparse rows."""
import threading
import time

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_average_and_global_step_increment():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    g = tf.placeholder(tf.float32, [2])
    step = tf.placeholder(tf.int64, [])
    apply = acc.apply_grad(g, local_step=step)
    take = acc.take_grad(2)
    assert take.shape.as_list() == [2]
    with tf.Session() as sess:
        sess.run(apply, {g: [1, 2], step: 0})
        sess.run(apply, {g: [3, 6], step: 0})
        assert sess.run(acc.num_accumulated()) == 2
        np.testing.assert_allclose(sess.run(take), [2, 4])
        assert sess.run(acc.num_accumulated()) == 0
        # take_grad moved the global step to 1: a step-0 gradient is now stale.
        sess.run(apply, {g: [100, 100], step: 0})
        assert sess.run(acc.num_accumulated()) == 0
        sess.run(apply, {g: [5, 5], step: 1})
        sess.run(apply, {g: [7, 7], step: 3})
        np.testing.assert_allclose(sess.run(take), [6, 6])


def test_set_global_step_drops_older_gradients_and_sum_reduction():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[], reduction_type="SUM")
    with tf.Session() as sess:
        sess.run(acc.set_global_step(5))
        sess.run(acc.apply_grad(1.0, local_step=4))  # stale: dropped
        sess.run(acc.apply_grad(2.0, local_step=5))
        sess.run(acc.apply_grad(3.0, local_step=9))
        assert sess.run(acc.num_accumulated()) == 2
        assert sess.run(acc.take_grad(2)) == 5.0


def test_take_grad_blocks_until_enough_gradients():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[])
    apply = acc.apply_grad(4.0)
    take = acc.take_grad(3)
    with tf.Session() as sess:
        box = []
        t = threading.Thread(target=lambda: box.append(sess.run(take)))
        t.start()
        for _ in range(2):
            sess.run(apply)
        time.sleep(0.1)
        assert t.is_alive() and not box  # 2 of 3
        sess.run(apply)
        t.join(5)
        assert box == [4.0]


def test_take_grad_errors_and_deadline():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_required must be positive"):
            sess.run(acc.take_grad(0))
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(acc.take_grad(1), options=tf.RunOptions(timeout_in_ms=100))
    with pytest.raises(ValueError, match="Shape mismatch"):
        acc.apply_grad([1.0, 2.0, 3.0])


def test_sparse_accumulator_rows_averaged_per_index():
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[4, 2])
    g1 = tf.IndexedSlices(tf.constant([[1., 1.], [2., 2.], [3., 3.]]),
                          tf.constant([0, 2, 0], tf.int64), tf.constant([4, 2], tf.int64))
    apply1 = acc.apply_indexed_slices_grad(g1)
    apply2 = acc.apply_grad([2], [[4., 4.]], local_step=0)
    stale = acc.apply_grad([1], [[9., 9.]], local_step=0)
    out = acc.take_indexed_slices_grad(2)
    with tf.Session() as sess:
        sess.run(apply1)
        sess.run(apply2)
        idx, vals, shape = sess.run([out.indices, out.values, out.dense_shape])
        np.testing.assert_array_equal(idx, [0, 2])
        # index 0: one gradient with duplicates summed (1 + 3); index 2: (2 + 4) / 2.
        np.testing.assert_allclose(vals, [[4, 4], [3, 3]])
        np.testing.assert_array_equal(shape, [4, 2])
        sess.run(stale)  # global step is 1 now
        assert sess.run(acc.num_accumulated()) == 0


def test_accumulator_shared_by_name_across_graph_ops():
    a = tf.ConditionalAccumulator(tf.float32, shape=[], shared_name="acc")
    b = tf.ConditionalAccumulator(tf.float32, shape=[], shared_name="acc", name="other")
    with tf.Session() as sess:
        sess.run(a.apply_grad(2.0))
        sess.run(b.apply_grad(4.0))
        assert sess.run(b.take_grad(2)) == 3.0


@pytest.mark.parametrize("reduction,count", [("MEAN", 6), ("SUM", 6), ("MEAN", 70)])
def test_sparse_accumulator_many_gradients_against_a_row_by_row_sum(reduction, count):
    # 70 gradients before the take: the stored ones are folded into one entry twice.
    rng = np.random.RandomState(3)
    grads = [(rng.randint(0, 12, size=rng.randint(0, 9)).astype(np.int64), None)
             for _ in range(count)]
    grads = [(i, rng.randn(i.size, 3).astype(np.float32)) for i, _ in grads]
    # The reference: per row, the sum over gradients (duplicates in one gradient summed)
    # and, for the mean, the number of gradients that touched the row.
    sums, touched = {}, {}
    for idx, vals in grads:
        for k in set(idx.tolist()):
            touched[k] = touched.get(k, 0) + 1
        for k, row in zip(idx.tolist(), vals.astype(np.float64)):
            sums[k] = sums.get(k, 0.0) + row
    keys = sorted(sums)
    want = np.array([sums[k] / (touched[k] if reduction == "MEAN" else 1) for k in keys])
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[12, 3], reduction_type=reduction)
    applies = [acc.apply_grad(i, v, local_step=0) for i, v in grads]
    out = acc.take_indexed_slices_grad(len(grads))
    with tf.Session() as sess:
        for op in applies:
            sess.run(op)
        idx, vals, shape = sess.run([out.indices, out.values, out.dense_shape])
    np.testing.assert_array_equal(idx, keys)
    np.testing.assert_allclose(vals, want.reshape(-1, 3), rtol=1e-5, atol=1e-6)
    assert vals.dtype == np.float32 and shape.tolist() == [12, 3]


def test_sparse_accumulator_integer_mean_floors_and_empty_take():
    acc = tf.SparseConditionalAccumulator(tf.int32, shape=[5])
    a = acc.apply_grad([1, 3], [7, 2], local_step=0)
    b = acc.apply_grad([3], [5], local_step=0)
    out = acc.take_indexed_slices_grad(2)
    empty = tf.SparseConditionalAccumulator(tf.float32, shape=[5, 2])
    none = empty.apply_grad(np.zeros(0, np.int64), np.zeros((0, 2), np.float32), local_step=0)
    got = empty.take_indexed_slices_grad(1)
    with tf.Session() as sess:
        sess.run([a])
        sess.run([b])
        idx, vals = sess.run([out.indices, out.values])
        sess.run(none)
        e_idx, e_vals, e_shape = sess.run([got.indices, got.values, got.dense_shape])
    assert idx.tolist() == [1, 3] and vals.tolist() == [7, 3]  # (2 + 5) // 2
    assert vals.dtype == np.int32
    assert e_idx.size == 0 and e_vals.shape == (0, 2) and e_shape.tolist() == [5, 2]
