"""Sparse variable updates beyond add/sub/update: by rows (mul, div, max, min), at N-d
indices (scatter_nd_*), per batch (batch_scatter_update), as functions and methods."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def _after(var, update):
    with tf.Session() as sess:
        sess.run(var.initializer)
        sess.run(update)
        return sess.run(var)


@pytest.mark.parametrize("use_resource", [False, True])
@pytest.mark.parametrize("fn, want", [
    (tf.scatter_mul, [[2.0, 4.0], [3.0, 4.0], [15.0, 18.0]]),
    (tf.scatter_div, [[0.5, 1.0], [3.0, 4.0], [5.0 / 12, 0.5]]),
    (tf.scatter_max, [[4.0, 2.0], [3.0, 4.0], [6.0, 7.0]]),
    (tf.scatter_min, [[0.0, 2.0], [3.0, 4.0], [0.5, 0.5]]),
])
def test_row_updates_with_a_repeated_index(fn, want, use_resource):
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], use_resource=use_resource)
    # Row 2 appears twice: both of its updates apply.
    updates = {tf.scatter_mul: [[2.0, 2.0], [3.0, 3.0], [1.0, 1.0]],
               tf.scatter_div: [[2.0, 2.0], [3.0, 3.0], [4.0, 4.0]],
               tf.scatter_max: [[4.0, 0.0], [1.0, 7.0], [6.0, 2.0]],
               tf.scatter_min: [[0.0, 9.0], [0.5, 0.5], [2.0, 2.0]]}[fn]
    np.testing.assert_allclose(_after(v, fn(v, [0, 2, 2], updates)), want, rtol=1e-6)


def test_integer_scatter_div_truncates_toward_zero():
    v = tf.Variable([7, -7, 6])
    np.testing.assert_array_equal(_after(v, tf.scatter_div(v, [0, 1, 2], [2, 2, -4])),
                                  [3, -3, -1])


def test_row_index_out_of_range_names_the_variable():
    v = tf.Variable([1.0, 2.0], name="short")
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"indices\[1\] = 5 is not in \[0, 2\).*short"):
            sess.run(tf.scatter_max(v, [0, 5], [1.0, 1.0]))


def test_scatter_nd_update_add_sub():
    v = tf.Variable(tf.zeros([2, 3]))
    np.testing.assert_allclose(
        _after(v, tf.scatter_nd_update(v, [[0, 1], [1, 2]], [5.0, 6.0])),
        [[0, 5, 0], [0, 0, 6]])
    w = tf.Variable(tf.ones([2, 2]))
    np.testing.assert_allclose(
        _after(w, tf.scatter_nd_add(w, [[0, 0], [0, 0], [1, 1]], [1.0, 2.0, 3.0])),
        [[4, 1], [1, 4]])
    u = tf.Variable(tf.ones([3, 2]))
    np.testing.assert_allclose(_after(u, tf.scatter_nd_sub(u, [[2]], [[1.0, 0.5]])),
                               [[1, 1], [1, 1], [0, 0.5]])


def test_scatter_nd_checks_shapes_and_ranges():
    v = tf.Variable(tf.zeros([2, 3]), name="grid")
    with pytest.raises(ValueError, match="more than the rank"):
        tf.scatter_nd_update(v, [[0, 1, 2]], [1.0])
    with pytest.raises(ValueError, match=r"expected indices.shape\[:-1\]"):
        tf.scatter_nd_update(v, [[0]], [1.0, 2.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[1, 3\].*grid"):
            sess.run(tf.scatter_nd_add(v, [[1, 3]], [1.0]))


def test_batch_scatter_update_sets_one_position_per_row():
    v = tf.Variable(tf.zeros([2, 3]))
    got = _after(v, tf.batch_scatter_update(v, [[0], [2]], [[1.0], [2.0]]))
    np.testing.assert_allclose(got, [[1, 0, 0], [0, 0, 2]])
    w = tf.Variable(tf.zeros([4]))
    np.testing.assert_allclose(_after(w, tf.batch_scatter_update(w, [3], [7.0])),
                               [0, 0, 0, 7])


def test_batch_scatter_update_refuses_other_batch_dims():
    v = tf.Variable(tf.zeros([2, 3]), name="b")
    with pytest.raises(ValueError, match="batch dimensions"):
        tf.batch_scatter_update(v, [[0], [1], [2]], [[1.0], [1.0], [1.0]])


def test_a_scalar_update_applies_to_every_indexed_row():
    v = tf.Variable([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    np.testing.assert_allclose(_after(v, tf.scatter_mul(v, [0, 2], 10.0)),
                               [[10, 10], [2, 2], [30, 30]])


@pytest.mark.parametrize("use_resource", [False, True])
def test_the_same_updates_as_variable_methods(use_resource):
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]], use_resource=use_resource)
    rows = tf.IndexedSlices(tf.constant([[10.0, 0.0]]), tf.constant([1]))
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(v.scatter_max(rows))
        sess.run(v.scatter_mul(tf.IndexedSlices(tf.constant([[2.0, 2.0]]),
                                                tf.constant([0]))))
        sess.run(v.scatter_nd_add([[0, 1]], [0.5]))
        sess.run(v.batch_scatter_update(     # v[0, 0] = 9, v[1, 1] = 8
            tf.IndexedSlices(tf.constant([[9.0], [8.0]]), tf.constant([[0], [1]]))))
        np.testing.assert_allclose(sess.run(v), [[9.0, 4.5], [10.0, 8.0]])


def test_updates_run_where_the_variable_lives():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0, 2.0])
    with tf.device("/job:worker/task:0"):
        ops = [tf.scatter_min(v, [0], [0.0]), tf.scatter_nd_update(v, [[1]], [3.0])]
    assert all(op.device == v.device for op in ops)


def test_method_locking_defaults_are_tf_variables():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    rows = tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([0]))
    assert v.scatter_update(rows).op.get_attr("use_locking") is False
    assert tf.scatter_update(v, [0], [[1.0, 1.0]]).op.get_attr("use_locking") is True
    assert v.scatter_nd_add([[0, 0]], [1.0]).op.get_attr("use_locking") is True
    assert tf.scatter_nd_add(v, [[0, 0]], [1.0]).op.get_attr("use_locking") is False
