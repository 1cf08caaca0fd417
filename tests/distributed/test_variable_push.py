"""A big variable read by another task is pushed from its live buffer at the moment of
the read (runtime/blocks.py: the fused read + _Send), over every transport: the
receiver sees the value as of the read, and later updates never change it."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")

_BIG = (256, 256)  # 256 KiB of float32: above the push-at-once threshold


def test_fetched_big_variable_is_not_changed_by_later_updates(net):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.ones(_BIG, np.float32), name="big_v")
        bump = tf.assign_add(v, np.ones(_BIG, np.float32))
    with tf.device("/job:worker/task:0"):
        total = tf.reduce_sum(v * 1.0)
    with tf.Session(net.target("worker", 0)) as sess:
        sess.run(v.initializer)
        first, s1 = sess.run([v, total])
        sess.run(bump)
        second, s2 = sess.run([v, total])
    np.testing.assert_array_equal(first, np.ones(_BIG, np.float32))
    np.testing.assert_array_equal(second, np.full(_BIG, 2.0, np.float32))
    assert (s1, s2) == (_BIG[0] * _BIG[1], 2 * _BIG[0] * _BIG[1])


def test_read_ordered_before_an_update_sees_the_old_value(net):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.zeros(_BIG, np.float32), name="ordered_v")
    with tf.device("/job:worker/task:0"):
        seen = v * 1.0
    with tf.device("/job:ps/task:0"):
        with tf.control_dependencies([seen]):
            update = tf.assign_add(v, np.ones(_BIG, np.float32))
    with tf.Session(net.target("worker", 1)) as sess:
        sess.run(v.initializer)
        for step in range(3):
            got, _ = sess.run([seen, update])
            np.testing.assert_array_equal(got, np.full(_BIG, float(step), np.float32))
