"""tf.data: sources, transformations, iterators and end of input."""
import numpy as np
import pytest

import tensorweave as tf
from data_helpers import drain

pytestmark = pytest.mark.usefixtures("fresh_graph")

Dataset = tf.data.Dataset


_all = drain


def test_from_tensor_slices_tuple_map_batch_one_shot():
    ds = Dataset.from_tensor_slices((np.arange(5, dtype=np.float32), np.arange(5)))
    ds = ds.map(lambda x, y: (x * 2, y + 1)).batch(2)
    assert ds.output_types == (tf.float32, tf.int64)
    assert ds.output_shapes[0].as_list() == [None]
    x, y = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        got = _all(sess, [x, y])
    np.testing.assert_array_equal(np.concatenate([g[0] for g in got]), [0, 2, 4, 6, 8])
    np.testing.assert_array_equal(np.concatenate([g[1] for g in got]), [1, 2, 3, 4, 5])
    assert [len(g[0]) for g in got] == [2, 2, 1]


def test_list_is_one_component_and_dict_elements():
    assert Dataset.from_tensor_slices([1, 2, 3]).output_types == tf.int32
    ds = Dataset.from_tensor_slices({"a": [1, 2], "b": [[1.0], [2.0]]})
    assert ds.output_shapes["b"].as_list() == [1]
    nxt = tf.data.make_one_shot_iterator(
        ds.map(lambda d: {"s": tf.to_float(d["a"]) + d["b"][0]})).get_next()
    with tf.Session() as sess:
        assert [v["s"] for v in _all(sess, nxt)] == [2.0, 4.0]


def test_initializable_iterator_with_placeholder_and_captured_tensor():
    p = tf.placeholder(tf.int32, [None])
    offset = tf.constant(100)
    it = Dataset.from_tensor_slices(p).map(lambda v: v + offset).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(nxt)
        sess.run(it.initializer, {p: [1, 2]})
        assert _all(sess, nxt) == [101, 102]
        sess.run(it.initializer, {p: [7]})  # re-initialize with a new feed
        assert _all(sess, nxt) == [107]
    with pytest.raises(ValueError, match="placeholders"):
        Dataset.from_tensor_slices(p).make_one_shot_iterator()


def test_range_repeat_take_skip_filter():
    ds = Dataset.range(6).filter(lambda x: tf.equal(x % 2, 0)).repeat(2).skip(1).take(4)
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert _all(sess, nxt) == [2, 4, 0, 2]


def test_shuffle_seeded_reproducible_and_reshuffled_per_epoch():
    def order():
        tf.reset_default_graph()
        ds = Dataset.range(10).shuffle(4, seed=5).repeat(2)
        nxt = ds.make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            return _all(sess, nxt)
    a, b = order(), order()
    assert a == b
    assert sorted(a[:10]) == list(range(10)) and sorted(a[10:]) == list(range(10))
    assert a[:10] != a[10:] and a[:10] != list(range(10))
    tf.reset_default_graph()
    nxt = Dataset.range(10).shuffle(4, seed=5, reshuffle_each_iteration=False).repeat(2) \
        .make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        c = _all(sess, nxt)
    assert c[:10] == c[10:]


def test_from_generator_and_batch_drop_remainder():
    def gen():
        for i in range(5):
            yield i, [float(i)] * 2
    ds = Dataset.from_generator(gen, (tf.int64, tf.float32), (tf.TensorShape([]), [2]))
    ds = ds.batch(2, drop_remainder=True).prefetch(1)
    assert ds.output_shapes[1].as_list() == [2, 2]
    i, v = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        got = _all(sess, [i, v])
    assert [g[0].tolist() for g in got] == [[0, 1], [2, 3]]


def test_generator_shape_error_and_batch_shape_error():
    ds = Dataset.from_generator(lambda: iter([[1, 2], [3]]), tf.int32)
    nxt = ds.batch(2).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="different shapes"):
            sess.run(nxt)
    ds2 = Dataset.from_generator(lambda: iter([[1, 2]]), tf.int32, [3])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="expected"):
            sess.run(ds2.make_one_shot_iterator().get_next())


def test_reinitializable_iterator_zip_concatenate():
    a = Dataset.range(3)
    b = Dataset.from_tensor_slices(np.array([10, 20, 30], np.int64))
    z = Dataset.zip((a, b))
    it = tf.data.Iterator.from_structure(z.output_types, z.output_shapes)
    nxt = it.get_next()
    init_z = it.make_initializer(z)
    init_c = it.make_initializer(Dataset.zip((a, a)).concatenate(z))
    with tf.Session() as sess:
        sess.run(init_z)
        assert [tuple(map(int, e)) for e in _all(sess, nxt)] == [(0, 10), (1, 20), (2, 30)]
        sess.run(init_c)
        assert len(_all(sess, nxt)) == 6
    with pytest.raises(TypeError):
        it.make_initializer(Dataset.range(2))


def test_iterators_are_per_session_resources():
    nxt = Dataset.range(3).make_one_shot_iterator().get_next()
    with tf.Session() as s1, tf.Session() as s2:
        assert s1.run(nxt) == 0
        assert s2.run(nxt) == 0
        assert s1.run(nxt) == 1
