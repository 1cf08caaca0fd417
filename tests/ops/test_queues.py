"""Queues: order, batching, blocking across threads/sessions, close semantics, wake-ups."""
import re
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.server import Server

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _later(fn, delay=0.1):
    t = threading.Timer(delay, fn)
    t.start()
    return t


def test_fifo_order_size_and_static_shapes():
    q = tf.FIFOQueue(10, [tf.int32, tf.float32], shapes=[[], [2]])
    enq = q.enqueue_many([[1, 2, 3], [[1, 1], [2, 2], [3, 3]]])
    i, x = q.dequeue()
    bi, bx = q.dequeue_many(2)
    assert i.shape == tf.TensorShape([]) and x.shape == tf.TensorShape([2])
    assert bx.shape.as_list() == [2, 2]
    assert q.dequeue_up_to(2)[1].shape.as_list() == [None, 2]
    with tf.Session() as sess:
        sess.run(enq)
        assert sess.run(q.size()) == 3
        assert sess.run(i) == 1
        got_i, got_x = sess.run([bi, bx])
        np.testing.assert_array_equal(got_i, [2, 3])
        np.testing.assert_array_equal(got_x, [[2, 2], [3, 3]])
        assert sess.run(q.size()) == 0


def test_named_components_and_dtype_checks():
    q = tf.FIFOQueue(5, [tf.int32, tf.string], names=["n", "s"], shapes=[[], []])
    with tf.Session() as sess:
        sess.run(q.enqueue({"n": 7, "s": b"seven"}))
        out = sess.run(q.dequeue())
    assert out["n"] == 7 and out["s"] == b"seven"
    with pytest.raises(ValueError, match="incompatible"):
        tf.FIFOQueue(2, [tf.float32], shapes=[[2]]).enqueue([[1.0, 2.0, 3.0]])


def test_enqueue_runtime_shape_mismatch():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[2]])
    p = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected \[2\], got \[3\]"):
            sess.run(q.enqueue([p]), {p: [1.0, 2.0, 3.0]})


def test_blocking_dequeue_woken_by_enqueue_in_other_thread():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[]])
    deq = q.dequeue()
    enq = q.enqueue([5.0])
    with tf.Session() as sess:
        t = _later(lambda: sess.run(enq), 0.2)
        start = time.monotonic()
        assert sess.run(deq) == 5.0
        assert time.monotonic() - start >= 0.15
        t.join()


def test_enqueue_blocks_when_full_and_many_larger_than_capacity():
    q = tf.FIFOQueue(2, [tf.int32], shapes=[[]])
    enq = q.enqueue_many([list(range(5))])
    deq = q.dequeue_many(5)  # more than the capacity: fills up incrementally
    with tf.Session() as sess:
        t = threading.Thread(target=sess.run, args=(enq,))
        t.start()
        time.sleep(0.1)
        assert t.is_alive() and sess.run(q.size()) == 2
        np.testing.assert_array_equal(sess.run(deq), [0, 1, 2, 3, 4])
        t.join(5)
        assert not t.is_alive()


def test_close_semantics_and_messages():
    q = tf.FIFOQueue(5, [tf.float32], shapes=[[]])
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[1.0, 2.0, 3.0]]))
        sess.run(q.close())
        assert sess.run(q.is_closed())
        with pytest.raises(tf.errors.CancelledError,
                           match=r"FIFOQueue '_\d+_fifo_queue' is closed"):
            sess.run(q.enqueue([4.0]))
        with pytest.raises(tf.errors.OutOfRangeError, match=re.escape(
                "is closed and has insufficient elements (requested 5, current size 3)")):
            sess.run(q.dequeue_many(5))
        np.testing.assert_array_equal(sess.run(q.dequeue_up_to(2)), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(q.dequeue_up_to(2)), [3.0])
        with pytest.raises(tf.errors.OutOfRangeError, match=r"FIFOQueue '_\d+_fifo_queue' is "
                           r"closed and has insufficient elements \(requested 1, current size 0\)"):
            sess.run(q.dequeue())


def test_close_wakes_blocked_dequeue_and_cancels_pending_enqueues():
    q = tf.FIFOQueue(1, [tf.int32], shapes=[[]])
    with tf.Session() as sess:
        _later(lambda: sess.run(q.close()))
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(q.dequeue())
    q2 = tf.FIFOQueue(1, [tf.int32], shapes=[[]])
    with tf.Session() as sess:
        sess.run(q2.enqueue([1]))
        _later(lambda: sess.run(q2.close(cancel_pending_enqueues=True)))
        with pytest.raises(tf.errors.CancelledError, match="is closed"):
            sess.run(q2.enqueue([2]))  # was waiting for space
        assert sess.run(q2.dequeue()) == 1


def test_random_shuffle_queue_min_after_dequeue_and_seed():
    def run_once():
        tf.reset_default_graph()
        tf.set_random_seed(7)
        q = tf.RandomShuffleQueue(20, 3, [tf.int32], shapes=[[]], seed=1)
        deq = q.dequeue()
        with tf.Session() as sess:
            sess.run(q.enqueue_many([list(range(4))]))
            first = sess.run(deq)  # 4 > min_after_dequeue: allowed
            assert sess.run(q.size()) == 3
            _later(lambda: sess.run(q.enqueue([10])), 0.15)
            start = time.monotonic()
            second = sess.run(deq)  # waits: only 3 == min_after_dequeue left
            assert time.monotonic() - start >= 0.1
            sess.run(q.close())
            rest = sess.run(q.dequeue_many(3))  # closed: min_after_dequeue ignored
        values = [first, second] + list(rest)
        assert sorted(values) == [0, 1, 2, 3, 10]
        return values
    assert run_once() == run_once()


def test_padding_fifo_queue_pads_batches():
    q = tf.PaddingFIFOQueue(5, [tf.int32], shapes=[[None]])
    p = tf.placeholder(tf.int32, [None])
    with tf.Session() as sess:
        sess.run(q.enqueue([p]), {p: [1]})
        sess.run(q.enqueue([p]), {p: [2, 3, 4]})
        np.testing.assert_array_equal(sess.run(q.dequeue_many(2)), [[1, 0, 0], [2, 3, 4]])


def test_session_close_wakes_blocked_dequeue_with_cancelled():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[]])
    deq = q.dequeue()
    sess = tf.Session()
    _later(sess.close, 0.1)
    with pytest.raises(tf.errors.CancelledError):
        sess.run(deq)


def test_deadline_wakes_blocked_dequeue():
    q = tf.FIFOQueue(2, [tf.float32], shapes=[[]])
    deq = q.dequeue()
    with tf.Session() as sess:
        start = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(deq, options=tf.RunOptions(timeout_in_ms=200))
        assert time.monotonic() - start < 3
        # The timed-out dequeue took nothing: a later enqueue is still there.
        sess.run(q.enqueue([1.0]))
        assert sess.run(q.size()) == 1


@pytest.mark.transports()
def test_queue_shared_between_two_sessions_of_a_server():
    server = Server.create_local_server()
    try:
        q = tf.FIFOQueue(3, [tf.int32], shapes=[[]], shared_name="shared_q")
        deq = q.dequeue()
        enq = q.enqueue([42])
        with tf.Session(server.target) as consumer, tf.Session(server.target) as producer:
            box = []
            t = threading.Thread(target=lambda: box.append(consumer.run(deq)))
            t.start()
            time.sleep(0.2)
            assert t.is_alive()  # blocked in dequeue
            producer.run(enq)
            t.join(10)
            assert box == [42]
            producer.run(enq)
            assert consumer.run(q.size()) == 1
    finally:
        server.stop()
