"""Dataset.cache() (in memory), as the official MNIST Estimator sample uses it:
`cache().shuffle().batch().repeat()`."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def _noisy(n):
    """Elements whose values change on every pass through the input (random noise)."""
    ds = tf.data.Dataset.from_tensor_slices(np.arange(n, dtype=np.int64))
    return ds.map(lambda x: x * 1000 + tf.random_uniform([], 0, 1000, dtype=tf.int64))


def _take(ds, n):
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        return [sess.run(nxt) for _ in range(n)]


def test_later_passes_replay_the_first():
    values = _take(_noisy(4).cache().repeat(3), 12)
    assert values[:4] == values[4:8] == values[8:]
    assert [v // 1000 for v in values[:4]] == [0, 1, 2, 3]


def test_without_cache_the_passes_differ():
    values = _take(_noisy(6).repeat(2), 12)
    assert values[:6] != values[6:]  # 6 draws of 1000 all equal: negligible chance


def test_cache_then_shuffle_batch_repeat_sees_every_element_each_epoch():
    ds = _noisy(6).cache().shuffle(6, seed=3).batch(3).repeat()
    batches = _take(ds, 6)
    epochs = [sorted(np.concatenate(batches[i:i + 2]).tolist()) for i in (0, 2, 4)]
    assert epochs[0] == epochs[1] == epochs[2]


def test_a_partial_first_pass_is_not_cached():
    ds = _noisy(3).cache()
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer)
        sess.run(nxt)  # one element, then re-initialize: the new iterator starts afresh
        sess.run(it.initializer)
        assert [sess.run(nxt) // 1000 for _ in range(3)] == [0, 1, 2]


def test_a_file_cache_is_refused_with_the_filename():
    with pytest.raises(ValueError, match="filename='/tmp/c'.*in-memory"):
        _noisy(2).cache("/tmp/c")
