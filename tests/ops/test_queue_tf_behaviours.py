"""Queue behaviours TF1 programs observe, with TF's wording where they match errors:
shared queues refuse a second definition that disagrees (capacity, shapes, dtypes),
QueueBase.from_list picks a queue at run time, an empty padded batch, batch-size and
shape mismatches, dict enqueues, and a dequeue that times out.
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


@pytest.mark.parametrize("second, phrase", [
    (lambda: tf.FIFOQueue(15, tf.float32, shared_name="q"), "capacity"),
    (lambda: tf.FIFOQueue(10, tf.int32, shared_name="q"), "component types"),
    (lambda: tf.FIFOQueue(10, tf.float32, shapes=[[2]], shared_name="q"), "component shapes"),
])
def test_a_shared_queue_refuses_a_disagreeing_definition(second, phrase):
    first = tf.FIFOQueue(10, tf.float32, shared_name="q")
    other = second()
    with tf.Session() as sess:
        sess.run(first.queue_ref.op)
        with pytest.raises(tf.errors.InvalidArgumentError, match=phrase):
            sess.run(other.queue_ref.op)


def test_from_list_picks_the_queue_when_the_ops_run():
    queues = [tf.FIFOQueue(5, tf.int32, shapes=[[2]]), tf.FIFOQueue(5, tf.int32, shapes=[[3]])]
    which = tf.placeholder(tf.int32, [])
    q = tf.QueueBase.from_list(which, queues)
    assert q.shapes[0].as_list() == [None]  # what both queues' elements have in common
    enq = q.enqueue([tf.placeholder(tf.int32, [None], name="x")])
    x = tf.get_default_graph().get_tensor_by_name("x:0")
    with tf.Session() as sess:
        sess.run(enq, {which: 1, x: [1, 2, 3]})
        assert sess.run([queues[0].size(), queues[1].size()]) == [0, 1]
        np.testing.assert_array_equal(sess.run(q.dequeue(), {which: 1}), [1, 2, 3])
        with pytest.raises(tf.errors.InvalidArgumentError, match="is not in"):
            sess.run(q.size(), {which: 2})
    with pytest.raises(TypeError, match="matching component dtypes"):
        tf.QueueBase.from_list(0, [queues[0], tf.FIFOQueue(5, tf.float32)])


def test_an_empty_padded_batch_has_zero_sized_unknown_dimensions():
    q = tf.PaddingFIFOQueue(10, tf.float32, shapes=[[None, 2]])
    with tf.Session() as sess:
        assert sess.run(q.dequeue_many(0)).shape == (0, 0, 2)
    with pytest.raises(ValueError, match="a list of shapes must be provided"):
        tf.PaddingFIFOQueue(10, tf.float32, None)
    plain = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="specified shapes"):
            sess.run(plain.dequeue_many(0))


def test_enqueue_shape_and_batch_size_errors():
    q = tf.FIFOQueue(10, (tf.int32, tf.int32), ((), (None, 3)))
    with pytest.raises(ValueError, match="one batch size"):
        q.enqueue_many(([1, 2, 3], [[[1, 2, 3]]] * 2))
    bad = tf.placeholder(tf.int32)
    one, many = q.enqueue((1, bad)), q.enqueue_many(([1, 2], bad))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Shape mismatch in tuple component 1. Expected \[\?,3\], "
                                 r"got \[3,4\]"):
            sess.run(one, {bad: np.zeros([3, 4])})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Expected \[2,\?,3\], got \[2,3,4\]"):
            sess.run(many, {bad: np.zeros([2, 3, 4])})


def test_dict_enqueue_errors():
    with pytest.raises(ValueError, match="must have names to enqueue a dictionary"):
        tf.FIFOQueue(10, tf.float32).enqueue({"a": 1.0})
    named = tf.FIFOQueue(10, (tf.float32, tf.int32), names=("f", "i"))
    with pytest.raises(ValueError, match="so you must enqueue a dictionary"):
        named.enqueue((1.0, 2))
    with pytest.raises(ValueError, match="do not match names of Queue"):
        named.enqueue({"f": 1.0, "x": 2})


def test_a_dequeue_that_waits_too_long_times_out_and_the_queue_stays_usable():
    q = tf.FIFOQueue(10, tf.float32)
    deq = q.dequeue()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError,
                           match="Timed out waiting for notification"):
            sess.run(deq, options=tf.RunOptions(timeout_in_ms=20))
        sess.run(q.enqueue(37.0))
        assert sess.run(deq) == 37.0


def test_shared_shuffle_queues_agree_on_min_after_dequeue_and_seeds():
    tf.set_random_seed(5)
    first = tf.RandomShuffleQueue(10, 2, tf.float32, shared_name="s")
    # No op seed: seed2 comes from the graph seed and the shared name, not from how
    # many ops were built in between, so a second definition matches the first.
    tf.constant(0.0)
    same = tf.RandomShuffleQueue(10, 2, tf.float32, shared_name="s")
    assert same.queue_ref.op.get_attr("seed2") == first.queue_ref.op.get_attr("seed2") != 0
    other_min = tf.RandomShuffleQueue(10, 3, tf.float32, shared_name="s")
    other_seed = tf.RandomShuffleQueue(10, 2, tf.float32, seed=9, shared_name="s")
    tf.set_random_seed(None)
    unseeded = tf.RandomShuffleQueue(10, 2, tf.float32, shared_name="s")
    with tf.Session() as sess:
        sess.run([first.queue_ref.op, same.queue_ref.op])
        with pytest.raises(tf.errors.InvalidArgumentError, match="min_after_dequeue"):
            sess.run(other_min.queue_ref.op)
        with pytest.raises(tf.errors.InvalidArgumentError, match="random seeds"):
            sess.run(other_seed.queue_ref.op)
        sess.run(first.enqueue(1.0))
        assert sess.run(unseeded.size()) == 1  # seeds (0, 0) share whatever queue is there


def test_priority_queue_hands_out_the_smallest_priority_first():
    q = tf.queue.PriorityQueue(10, [tf.string], shapes=[[]])
    assert tf.PriorityQueue is tf.io.PriorityQueue is tf.queue.PriorityQueue
    enq_many = q.enqueue_many([tf.constant([5, -1, 3], tf.int64), ["e", "a", "c"]])
    enq_one = q.enqueue([tf.constant(3, tf.int64), "c2"])
    prio, value = q.dequeue_many(3)
    with tf.Session() as sess:
        sess.run([enq_many])
        sess.run(enq_one)
        got_p, got_v = sess.run([prio, value])
        assert list(got_p) == [-1, 3, 3] and list(got_v) == [b"a", b"c", b"c2"]  # ties: FIFO
        last_p, last_v = sess.run(q.dequeue())
        assert last_p == 5 and last_v == b"e"
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Shape mismatch in tuple component 0. Expected \[\], got \[2\]"):
            bad = tf.placeholder(tf.int64)
            sess.run(q.enqueue([bad, "x"]), {bad: [1, 2]})
    with pytest.raises((TypeError, ValueError)):
        q.enqueue_many([["a", "b"], ["a", "b"]])  # priorities must be int64


def test_closing_the_session_cancels_blocked_queue_ops():
    import threading
    import time
    empty = tf.FIFOQueue(5, tf.float32, ())
    full = tf.FIFOQueue(1, tf.float32, ())
    sess = tf.Session()
    sess.run(full.enqueue(1.0))
    errors = {}

    def blocked(name, op):
        try:
            sess.run(op)
        except tf.errors.CancelledError as e:
            errors[name] = str(e)
    threads = [threading.Thread(target=blocked, args=("dequeue", empty.dequeue())),
               threading.Thread(target=blocked, args=("enqueue", full.enqueue(2.0)))]
    for t in threads:
        t.start()
    time.sleep(0.2)
    sess.close()
    for t in threads:
        t.join(10)
    assert sorted(errors) == ["dequeue", "enqueue"]
    assert all("was cancelled" in msg for msg in errors.values())
