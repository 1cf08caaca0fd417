"""Stateful ops inside dataset functions run per element, as TF runs them.

A map (filter, flat_map, interleave, map_and_batch, parallel_interleave) function
that dequeues, reads a variable or draws a random number gives each element a new
value; a random op with an op seed replays its sequence on each initialization,
on another iterator of the same dataset and in a new session (TF instantiates the
functions per iterator), one without a seed does not.
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _queue(values):
    q = tf.FIFOQueue(20, tf.int64)
    return q, q.enqueue_many([np.asarray(values, np.int64)])


def _drain(sess, it, n):
    sess.run(it.initializer)
    nx = it.get_next()
    return [sess.run(nx) for _ in range(n)]


def test_map_dequeues_once_per_element():
    q, fill = _queue([10, 20, 30, 40])
    it = tf.data.Dataset.range(4).map(lambda x: x + q.dequeue()).make_initializable_iterator()
    with tf.Session() as sess:
        sess.run(fill)
        assert _drain(sess, it, 4) == [10, 21, 32, 43]


def test_map_reads_the_variable_when_each_element_is_made():
    v = tf.Variable(0, dtype=tf.int64)
    bump = tf.assign_add(v, 1)
    ds = tf.data.Dataset.range(3).map(
        lambda x: (v.read_value(), v.value(), v + 100, tf.identity(v)))
    it = ds.make_initializable_iterator()
    nx = it.get_next()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(it.initializer)
        seen = []
        for _ in range(3):
            seen.append(sess.run(nx))
            sess.run(bump)
    assert [tuple(int(a) for a in s) for s in seen] == [(0, 0, 100, 0), (1, 1, 101, 1),
                                                        (2, 2, 102, 2)]


def test_one_shot_iterator_refuses_a_variable_read_as_tf():
    v = tf.Variable(1.0)
    with pytest.raises(ValueError, match="does not support datasets that capture stateful "
                                         "objects.*reads variable 'Variable'"):
        tf.data.Dataset.range(3).map(lambda x: v * 2.0).make_one_shot_iterator()


def test_one_shot_iterator_dequeues_per_element():
    q, fill = _queue([5, 6, 7])
    nx = tf.data.Dataset.range(3).map(lambda x: q.dequeue()).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        sess.run(fill)
        assert [sess.run(nx) for _ in range(3)] == [5, 6, 7]


def test_random_per_element_and_op_seed_replays_per_iterator():
    ds = tf.data.Dataset.range(4).map(
        lambda x: (tf.random_uniform([], seed=7), tf.random_uniform([])))
    it, other = ds.make_initializable_iterator(), ds.make_initializable_iterator()
    with tf.Session() as sess:
        first = np.array(_drain(sess, it, 4))
        again = np.array(_drain(sess, it, 4))
        second_iterator = np.array(_drain(sess, other, 4))
    with tf.Session() as sess:
        new_session = np.array(_drain(sess, it, 4))
    seeded, unseeded = first[:, 0], first[:, 1]
    assert len(set(seeded)) == 4 and len(set(unseeded)) == 4   # a new number per element
    for replay in (again, second_iterator, new_session):
        np.testing.assert_array_equal(replay[:, 0], seeded)
        assert not np.array_equal(replay[:, 1], unseeded)


def test_filter_predicate_dequeues_per_element():
    q, fill = _queue([2, 3, 4, 5, 6, 7])
    ds = tf.data.Dataset.range(6).filter(lambda x: tf.equal(q.dequeue() % 2, 0))
    it = ds.make_initializable_iterator()
    with tf.Session() as sess:
        sess.run(fill)
        assert _drain(sess, it, 3) == [0, 2, 4]


def test_flat_map_and_interleave_functions_run_per_element():
    for make in (lambda ds, f: ds.flat_map(f),
                 lambda ds, f: ds.interleave(f, cycle_length=1),
                 lambda ds, f: ds.apply(tf.data.experimental.parallel_interleave(f, 1))):
        with tf.Graph().as_default():
            ds = make(tf.data.Dataset.range(3), lambda x: tf.data.Dataset.from_tensors(
                tf.random_uniform([], seed=3)).repeat(2))
            it = ds.make_initializable_iterator()
            with tf.Session() as sess:
                first = _drain(sess, it, 6)
                again = _drain(sess, it, 6)
        assert first[0] == first[1] and len({first[0], first[2], first[4]}) == 3
        assert again == first


def test_map_and_batch_and_prefetch_dequeue_per_element():
    q, fill = _queue(range(1, 9))
    batched = tf.data.Dataset.range(8).apply(
        tf.data.experimental.map_and_batch(lambda x: q.dequeue() * 10, 4))
    prefetched = tf.data.Dataset.range(4).map(lambda x: q.dequeue()).prefetch(2)
    with tf.Session() as sess:
        sess.run(fill)
        got = _drain(sess, batched.make_initializable_iterator(), 2)
        assert [list(b) for b in got] == [[10, 20, 30, 40], [50, 60, 70, 80]]
        sess.run(q.enqueue_many([np.arange(100, 104, dtype=np.int64)]))
        assert _drain(sess, prefetched.make_initializable_iterator(), 4) == \
            [100, 101, 102, 103]


def test_table_lookup_inside_map_and_cond_runs_per_call():
    table = tf.lookup.index_table_from_tensor(tf.constant(["a", "b"]), num_oov_buckets=0)
    ds = tf.data.Dataset.from_tensor_slices(tf.constant(["b", "a", "zz"])).map(
        lambda s: (table.lookup(s), table.size()))
    it = ds.make_initializable_iterator()
    flag = tf.placeholder(tf.bool, [])
    picked = tf.cond(flag, lambda: table.lookup(tf.constant("b")),
                     lambda: tf.constant(-5, tf.int64))
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        assert [tuple(int(v) for v in e) for e in _drain(sess, it, 3)] == [(1, 2), (0, 2),
                                                                           (-1, 2)]
        assert sess.run(picked, {flag: True}) == 1 and sess.run(picked, {flag: False}) == -5
