"""Dataset.prefetch: elements produced ahead on a background thread, in order.

After TF 1.x's prefetch_dataset_op_test (buffer sizes -1, 0 and 5 fed through a
placeholder; below -1 is an error), plus what a real background producer must keep:
order, errors raised in place, a bounded buffer, and the thread stopping with its
iterator.
"""
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.data.dataset import Dataset

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "tw-prefetch" and t.is_alive()]


def _eventually(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _range_with_fed_buffer():
    """Dataset.range(10).prefetch(<placeholder>): (placeholder, iterator, next element)."""
    size = tf.placeholder(tf.int64, shape=[])
    it = Dataset.range(10).prefetch(buffer_size=size).make_initializable_iterator()
    return size, it, it.get_next()


@pytest.mark.parametrize("buffer_size", [-1, 0, 5])
def test_buffer_size_fed_through_a_placeholder(buffer_size):
    size, it, nxt = _range_with_fed_buffer()
    with tf.Session() as sess:
        sess.run(it.initializer, {size: buffer_size})
        assert [sess.run(nxt) for _ in range(10)] == list(range(10))
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt)


@pytest.mark.parametrize("buffer_size", [-2, -42])
def test_invalid_buffer_size(buffer_size):
    size, it, nxt = _range_with_fed_buffer()
    with tf.Session() as sess:
        sess.run(it.initializer, {size: buffer_size})
        with pytest.raises(tf.errors.InvalidArgumentError, match=f"got {buffer_size}"):
            sess.run(nxt)
    with pytest.raises(ValueError, match=">= -1"):
        Dataset.range(3).prefetch(buffer_size)


def test_autotune_constant_and_map_functions_in_order():
    assert tf.contrib.data.AUTOTUNE == tf.data.experimental.AUTOTUNE == -1
    ds = Dataset.range(50).map(lambda x: x * 3).batch(4).prefetch(tf.data.experimental.AUTOTUNE)
    nxt = ds.make_one_shot_iterator().get_next()
    got = []
    with tf.Session() as sess:
        with pytest.raises(tf.errors.OutOfRangeError):
            while True:
                got.append(sess.run(nxt))
    np.testing.assert_array_equal(np.concatenate(got), np.arange(50) * 3)
    assert [len(g) for g in got] == [4] * 12 + [2]


def test_it_runs_ahead_by_at_most_its_buffer():
    produced = []

    def gen():
        for i in range(100):
            produced.append(i)
            yield i
    ds = Dataset.from_generator(gen, tf.int64, tf.TensorShape([])).prefetch(3)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(nxt) == 0
        # Without a step asking, the thread fills the buffer: 3 waiting, one more in
        # hand blocked on the full buffer, and the one already returned.
        assert _eventually(lambda: len(produced) >= 4), produced
        time.sleep(0.3)
        assert len(produced) <= 5, produced
        assert [sess.run(nxt) for _ in range(5)] == [1, 2, 3, 4, 5]


def test_an_error_upstream_comes_after_the_elements_before_it():
    def gen():
        yield from range(3)
        raise RuntimeError("bad record 3")

    def run(prefetch):
        with tf.Graph().as_default():
            ds = Dataset.from_generator(gen, tf.int64, tf.TensorShape([]))
            nxt = (ds.prefetch(2) if prefetch else ds).make_one_shot_iterator().get_next()
            with tf.Session() as sess:
                got = [sess.run(nxt) for _ in range(3)]
                with pytest.raises(tf.errors.OpError) as e:
                    sess.run(nxt)
                with pytest.raises(tf.errors.OutOfRangeError):
                    sess.run(nxt)   # a failed iterator does not resume
        return got, type(e.value), e.value.message
    plain, with_prefetch = run(False), run(True)
    assert with_prefetch[0] == [0, 1, 2]
    assert with_prefetch[1] is plain[1] and "bad record 3" in with_prefetch[2]


def test_the_thread_stops_when_its_iterator_is_reinitialized_or_its_session_closes():
    before = len(_prefetch_threads())
    it = Dataset.range(10).repeat().prefetch(2).make_initializable_iterator()
    nxt = it.get_next()
    sess = tf.Session()
    for _ in range(3):
        sess.run(it.initializer)
        assert sess.run(nxt) == 0
    assert _eventually(lambda: len(_prefetch_threads()) == before + 1), _prefetch_threads()
    sess.close()
    assert _eventually(lambda: len(_prefetch_threads()) == before), _prefetch_threads()


def test_a_map_function_outlives_the_step_that_started_it():
    # The producer runs map functions on its own step: the first get_next's deadline
    # (operation timeout) passing does not fail the elements produced after it.
    ds = Dataset.range(20).map(lambda x: tf.cast(x, tf.float32) * 0.5).prefetch(4)
    nxt = ds.make_one_shot_iterator().get_next()
    opts = tf.RunOptions(timeout_in_ms=50)
    with tf.Session() as sess:
        assert sess.run(nxt, options=opts) == 0.0
        time.sleep(0.2)
        assert [sess.run(nxt) for _ in range(19)] == [i * 0.5 for i in range(1, 20)]
