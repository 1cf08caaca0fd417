"""QueueRunner and start_queue_runners against TF 1.x's training/queue_runner_test.py
(our own tests).

Not covered: QueueRunner.to_proto/from_proto (and the queue_runner_def constructor
argument): tensorweave has no QueueRunnerDef proto or MetaGraph export of runners.
"""
import threading

import pytest

import tensorweave as tf
from tensorweave.ops.data_flow.count_ops import count_up_to

pytestmark = pytest.mark.usefixtures("fresh_graph")


# Without a coordinator a failing runner thread records the error and re-raises it, as in
# TF 1.x, so pytest sees an unhandled thread exception: expected here.
_THREAD_RAISES = pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnhandledThreadExceptionWarning")


def _counter(limit):
    var = tf.Variable(tf.constant(0, dtype=tf.int64))
    return var, count_up_to(var, limit)


def test_basic_runs_until_out_of_range():
    var, count = _counter(3)
    qr = tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), [count])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        threads = qr.create_threads(sess)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert qr.exceptions_raised == []
        assert sess.run(var) == 3


def test_two_ops_each_get_a_thread():
    var0, count3 = _counter(3)
    var1, count30 = _counter(30)
    qr = tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), [count3, count30])
    with tf.Session() as sess:
        threads = qr.create_threads(sess)
        assert len(threads) == 2
        sess.run(tf.global_variables_initializer())
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert qr.exceptions_raised == []
        assert sess.run([var0, var1]) == [3, 30]


@_THREAD_RAISES
def test_exceptions_captured_without_coordinator():
    qr = tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), ["i fail", "so fail"])
    with tf.Session() as sess:
        threads = qr.create_threads(sess, start=True)
        for t in threads:
            t.join()
    errors = qr.exceptions_raised
    assert len(errors) == 2
    assert all("i fail" in str(e) or "so fail" in str(e) for e in errors)


def test_real_dequeue_enqueue_closes_the_downstream_queue():
    q0 = tf.FIFOQueue(3, tf.float32)
    enqueue0, close0 = q0.enqueue((10.0,)), q0.close()
    q1 = tf.FIFOQueue(30, tf.float32)
    enqueue1 = q1.enqueue((q0.dequeue(),))
    dequeue1 = q1.dequeue()
    qr = tf.train.QueueRunner(q1, [enqueue1])
    with tf.Session() as sess:
        threads = qr.create_threads(sess, start=True)
        sess.run(enqueue0)
        sess.run(enqueue0)
        sess.run(close0)
        for t in threads:
            t.join()
        assert qr.exceptions_raised == []
        assert sess.run(dequeue1) == 10.0
        assert sess.run(dequeue1) == 10.0
        with pytest.raises(tf.errors.OutOfRangeError, match="closed"):
            sess.run(dequeue1)


def test_respects_a_stop_requested_before_start():
    var, count = _counter(3)
    qr = tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), [count])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        coord.request_stop()
        threads = qr.create_threads(sess, coord, start=True)
        coord.join(threads)
        assert qr.exceptions_raised == []
        assert sess.run(var) == 0


def test_error_requests_stop_and_is_reraised_by_join():
    qr = tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), ["not an op"])
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = qr.create_threads(sess, coord, start=True)
        with pytest.raises(Exception, match="not an op"):
            coord.join(threads)


def test_stop_cancels_an_enqueue_blocked_on_a_full_queue():
    queue = tf.FIFOQueue(2, tf.float32)
    enqueue, size = queue.enqueue((10.0,)), queue.size()
    dequeue = queue.dequeue()
    qr = tf.train.QueueRunner(queue, [enqueue])
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = qr.create_threads(sess, coord, start=True)
        sess.run(dequeue)
        while sess.run(size) < 2:  # the runner refills the queue, then blocks
            pass
        coord.request_stop()  # closes the queue with cancel_pending_enqueues
        coord.join(threads, stop_grace_period_secs=30)
        assert not any(t.is_alive() for t in threads)


def test_second_create_threads_in_a_running_session_makes_none():
    var, count = _counter(3)
    qr = tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), [count])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = qr.create_threads(sess, coord=coord)
        assert qr.create_threads(sess, coord=coord) == []
        coord.request_stop()
        for t in threads:
            t.start()
        coord.join(threads)


def test_separate_sessions_each_get_threads():
    var, count = _counter(3)
    qr = tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), [count])
    with tf.Session() as s1, tf.Session() as s2:
        coord = tf.train.Coordinator()
        t1 = qr.create_threads(s1, coord=coord)
        t2 = qr.create_threads(s2, coord=coord)
        assert t1 and t2 and not set(t1) & set(t2)
        coord.request_stop()
        for t in t1 + t2:
            t.start()
        coord.join(t1 + t2)


@_THREAD_RAISES
def test_exceptions_are_reset_by_each_create_threads():
    var, count = _counter(3)
    qr = tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), [count, "bad op"])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(2):
            threads = qr.create_threads(sess, start=True)
            for t in threads:
                t.join()
            assert len(qr.exceptions_raised) == 1
            assert "bad op" in str(qr.exceptions_raised[0])


def test_name_and_collection():
    with tf.name_scope("scope"):
        queue = tf.FIFOQueue(10, tf.float32, name="queue")
    qr = tf.train.QueueRunner(queue, [tf.no_op()])
    assert qr.name == "scope/queue"
    tf.train.add_queue_runner(qr)
    assert tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS, "scope") == [qr]


def test_constructor_needs_a_queue_and_ops():
    with pytest.raises(ValueError, match="at least one enqueue op"):
        tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), [])


def test_start_queue_runners_from_the_collection():
    var, count = _counter(3)
    tf.train.add_queue_runner(tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), [count]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        threads = tf.train.start_queue_runners(sess)
        for t in threads:
            t.join()
        assert sess.run(var) == 3


def test_start_queue_runners_uses_the_sessions_graph():
    graph = tf.Graph()
    with graph.as_default():
        var, count = _counter(3)
        tf.train.add_queue_runner(tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32),
                                                       [count]))
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph) as sess:  # the default graph is another one
        sess.run(init)
        threads = tf.train.start_queue_runners(sess)
        for t in threads:
            t.join()
        assert sess.run(var) == 3


def test_start_queue_runners_refuses_a_non_session():
    with pytest.raises(TypeError, match="tf.Session"):
        tf.train.start_queue_runners("NotASession")


def test_start_queue_runners_returns_nothing_for_a_monitored_session():
    var, count = _counter(3)
    tf.train.add_queue_runner(tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), [count]))
    with tf.train.MonitoredSession() as sess:  # it starts the runners itself
        assert tf.train.start_queue_runners(sess) == []


def test_start_queue_runners_with_the_default_session():
    var, count = _counter(2)
    tf.train.add_queue_runner(tf.train.QueueRunner(tf.FIFOQueue(10, tf.float32), [count]))
    with pytest.raises(ValueError, match="needs a session"):
        tf.train.start_queue_runners()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        threads = tf.train.start_queue_runners()
        for t in threads:
            t.join()
        assert sess.run(var) == 2
    assert threading.active_count() >= 1
