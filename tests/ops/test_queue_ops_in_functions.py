"""Queue ops built inside cond branches and while bodies act on the outer queue each
time the branch or iteration runs, as in TF1: `tf.cond(keep, lambda: q.enqueue(x),
tf.no_op)` is how TF1 programs filter what they enqueue.
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_enqueue_in_a_cond_branch_runs_only_when_taken():
    q = tf.FIFOQueue(10, [tf.int32], shapes=[[]])
    x = tf.placeholder(tf.int32, [])
    enq = tf.cond(tf.equal(tf.mod(x, 2), 0), lambda: q.enqueue([x]), tf.no_op)
    with tf.Session() as sess:
        for i in range(7):
            sess.run(enq, {x: i})
        assert sess.run(q.size()) == 4
        np.testing.assert_array_equal(sess.run(q.dequeue_many(4)), [0, 2, 4, 6])


def test_cond_enqueue_fed_by_queue_runner_threads():
    q = tf.FIFOQueue(4, [tf.int32], shapes=[[]])
    c = tf.Variable(0).count_up_to(20)
    enq = tf.cond(tf.equal(tf.mod(c, 4), 0), lambda: q.enqueue([c]), tf.no_op)
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [enq] * 2))
    batch = q.dequeue_up_to(10)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        got = []
        try:
            while True:
                got += list(sess.run(batch))
        except tf.errors.OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads)
    assert sorted(got) == [0, 4, 8, 12, 16]


def test_dequeue_size_and_close_in_a_while_body_and_branch():
    q = tf.FIFOQueue(10, [tf.float32], shapes=[[]])
    fill = q.enqueue_many([[1.0, 2.0, 3.0, 4.0]])
    _, total = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + q.dequeue()),
                             [tf.constant(0), tf.constant(0.0)])
    flag = tf.placeholder(tf.bool, [])
    left = tf.cond(flag, lambda: q.size(), lambda: tf.constant(-1))
    close = tf.cond(flag, lambda: q.close(), tf.no_op)
    with tf.Session() as sess:
        sess.run(fill)
        assert sess.run(total) == 6.0
        assert sess.run(left, {flag: True}) == 1 and sess.run(left, {flag: False}) == -1
        sess.run(close, {flag: True})
        assert sess.run(q.is_closed())
