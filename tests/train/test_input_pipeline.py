"""QueueRunner + Coordinator + batch/shuffle_batch input pipelines, end to end."""
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.train.coordinator import Coordinator, LooperThread
from tensorweave.train.input import (
    batch, limit_epochs, shuffle_batch, slice_input_producer, string_input_producer)
from tensorweave.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _drain(sess, fetches):
    coord = Coordinator()
    threads = start_queue_runners(sess, coord=coord)
    out = []
    try:
        while not coord.should_stop():
            out.append(sess.run(fetches))
    except tf.errors.OutOfRangeError:
        pass
    finally:
        coord.request_stop()
    coord.join(threads, stop_grace_period_secs=5)
    return out


def _init(sess):
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])


def test_slice_input_producer_batch_num_epochs_clean_stop():
    xs = np.arange(10, dtype=np.float32)
    ys = np.arange(10, dtype=np.int32) * 10
    x, y = slice_input_producer([xs, ys], num_epochs=2, shuffle=False)
    xb, yb = batch([x, y], batch_size=3, allow_smaller_final_batch=True)
    assert xb.shape.as_list() == [None]
    assert len(tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)) == 2
    with tf.Session() as sess:
        _init(sess)
        got = _drain(sess, [xb, yb])
    flat_x = np.concatenate([b[0] for b in got])
    np.testing.assert_array_equal(flat_x, np.concatenate([xs, xs]))
    for bx, by in got:
        np.testing.assert_array_equal(by, bx.astype(np.int32) * 10)  # rows stay aligned
    assert [len(b[0]) for b in got] == [3, 3, 3, 3, 3, 3, 2]


def test_shuffle_batch_covers_every_example_once_per_epoch():
    x, = slice_input_producer([np.arange(20, dtype=np.int64)], num_epochs=1, shuffle=True,
                              seed=3)
    xb = shuffle_batch([x], batch_size=4, capacity=20, min_after_dequeue=5, seed=1)
    assert xb.shape.as_list() == [4]  # a one-tensor list gives one tensor, as in TF 1.x
    with tf.Session() as sess:
        _init(sess)
        got = np.concatenate(_drain(sess, xb))
    assert sorted(got.tolist()) == list(range(20))
    assert got.tolist() != list(range(20))


def test_batch_of_dict_with_enqueue_many_and_threads():
    data = {"a": np.arange(12).reshape(6, 2), "b": np.arange(6)}
    out = batch(data, batch_size=2, enqueue_many=True, num_threads=2)
    assert set(out) == {"a", "b"} and out["a"].shape.as_list() == [2, 2]
    with tf.Session() as sess:
        coord = Coordinator()
        threads = start_queue_runners(sess, coord=coord)
        first = sess.run(out)
        assert first["a"].shape == (2, 2)
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)  # blocked enqueues are cancelled


def test_limit_epochs_needs_local_init_then_stops():
    t = limit_epochs(tf.constant([1, 2]), num_epochs=2)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(t)
        sess.run(tf.local_variables_initializer())
        sess.run(t)
        sess.run(t)
        with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
            sess.run(t)


def test_string_input_producer():
    q = string_input_producer(["a", "b", "c"], num_epochs=1, shuffle=False)
    name = q.dequeue()
    with tf.Session() as sess:
        _init(sess)
        assert _drain(sess, name) == [b"a", b"b", b"c"]


def test_queue_runner_error_reaches_coordinator_join():
    q = tf.FIFOQueue(10, [tf.float32], shapes=[[]])
    p = tf.placeholder(tf.float32, [])  # never fed: the enqueue fails
    add_queue_runner(QueueRunner(q, [q.enqueue([p])]))
    with tf.Session() as sess:
        coord = Coordinator()
        threads = start_queue_runners(sess, coord=coord)
        assert coord.wait_for_stop(5)
        with pytest.raises(tf.errors.InvalidArgumentError):
            coord.join(threads, stop_grace_period_secs=5)


def test_coordinator_semantics():
    coord = Coordinator()
    assert not coord.should_stop()

    def worker():
        with coord.stop_on_exception():
            raise ValueError("boom")
    t = threading.Thread(target=worker)
    t.start()
    with pytest.raises(ValueError, match="boom"):
        coord.join([t])
    coord.clear_stop()
    assert not coord.should_stop()
    coord.request_stop(tf.errors.OutOfRangeError(None, None, "done"))  # clean stop
    coord.join([])
    coord.clear_stop()
    stuck = threading.Thread(target=time.sleep, args=(0.5,), name="stuck")
    stuck.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="stuck"):
        coord.join([stuck], stop_grace_period_secs=0.01)
    coord.clear_stop()
    coord.join([stuck], stop_grace_period_secs=0.01, ignore_live_threads=True)


def test_looper_thread_runs_until_stop():
    coord = Coordinator()
    calls = []
    LooperThread.loop(coord, 0.01, calls.append, args=(1,))
    time.sleep(0.1)
    coord.request_stop()
    coord.join(stop_grace_period_secs=2)
    assert len(calls) >= 2
