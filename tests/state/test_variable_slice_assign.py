"""`v[index].assign(value)`: assignment to a slice of a ref or resource variable."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


@pytest.mark.parametrize("use_resource", [False, True])
@pytest.mark.parametrize("index, value, want", [
    (np.s_[1:], [[1.0, 2.0], [3.0, 4.0]], [[0, 0], [1, 2], [3, 4]]),
    (np.s_[:, 0], [7.0, 8.0, 9.0], [[7, 0], [8, 0], [9, 0]]),
    (np.s_[-1], [5.0, 6.0], [[0, 0], [0, 0], [5, 6]]),
    (np.s_[::2, 1], [1.0, 2.0], [[0, 1], [0, 0], [0, 2]]),
    (np.s_[..., 1], [3.0, 3.0, 3.0], [[0, 3], [0, 3], [0, 3]]),
])
def test_slice_assign_writes_only_the_slice(index, value, want, use_resource):
    v = tf.Variable(tf.zeros([3, 2]), use_resource=use_resource)
    update = v[index].assign(value)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(update), want)
        np.testing.assert_allclose(sess.run(v), want)


def test_index_may_be_a_tensor_and_the_update_is_named():
    v = tf.Variable([1.0, 2.0, 3.0])
    i = tf.placeholder(tf.int32, [])
    update = v[i].assign(0.0, name="zero_one")
    assert update.op.name == "zero_one" and update.op.type == "StridedSliceAssign"
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(update, {i: 1})
        np.testing.assert_allclose(sess.run(v), [1.0, 0.0, 3.0])


def test_wrong_value_shape_is_refused_when_building_and_running():
    v = tf.Variable(tf.zeros([3, 2]), name="grid")
    with pytest.raises(ValueError, match=r"sliced l-value shape \(2,\) does not match"):
        v[0].assign([1.0, 2.0, 3.0])
    fed = tf.placeholder(tf.float32, None)
    update = v[0].assign(fed)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.UnimplementedError,
                           match=r"sliced l-value shape \[2\] does not match r-value shape "
                                 r"\[3\].*grid"):
            sess.run(update, {fed: [1.0, 2.0, 3.0]})


def test_slice_assign_runs_with_the_variable():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.zeros([2]))
    with tf.device("/job:worker/task:0"):
        update = v[0].assign(1.0)
    assert update.device == v.device


def test_slices_of_plain_tensors_have_no_assign():
    t = tf.constant([1.0, 2.0])
    assert not hasattr(t[0], "assign")
