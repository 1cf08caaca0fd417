"""ShardIds (ops/nn/shard_ids_ops.py) against the single ops it replaces in a sharded
embedding_lookup: the shard and row arithmetic of "mod" and "div", a Cast and two
DynamicPartitions, built by embedding_ops._assign_shards as before."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.ops.nn import embedding_ops
from tensorweave.ops.nn.shard_ids_ops import shard_ids

pytestmark = pytest.mark.usefixtures("graph")


def _single_ops(flat_ids, params, strategy):
    n = len(params)
    positions = tf.range(tf.size(flat_ids))
    shard, rows = embedding_ops._assign_shards(tf.get_default_graph(), params, flat_ids,
                                               strategy)
    shard = tf.cast(shard, tf.int32)
    return (embedding_ops.dynamic_partition(rows, shard, n),
            embedding_ops.dynamic_partition(positions, shard, n))


def _shards(sizes):
    return [tf.zeros([s, 2]) for s in sizes]


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("sizes", [[5, 5], [4, 4, 3], [2, 1, 1], [7, 6]])
@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_matches_the_single_ops(strategy, sizes, dtype):
    total = sum(sizes)
    ids = tf.placeholder(dtype, [None])
    fused = shard_ids(ids, len(sizes), strategy, total)
    single = _single_ops(ids, _shards(sizes), strategy)
    value = np.random.RandomState(total).randint(0, total, 40)
    if strategy == "mod":
        value = np.concatenate([value, [-1, -7, 3 * total]])  # rows out of any shard
    with tf.Session() as sess:
        got, want = sess.run([fused, single], {ids: value})
    for g_list, w_list in zip(got, want):
        for g, w in zip(g_list, w_list):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
    if strategy == "div":  # each id lands on its own shard's row range
        starts = np.cumsum([0] + sizes[:-1])
        for p, (rows, pos) in enumerate(zip(*got)):
            np.testing.assert_array_equal(value[pos], starts[p] + rows)
            assert ((rows >= 0) & (rows < sizes[p])).all()


@pytest.mark.parametrize("bad", [10, -1, 1 << 40])
def test_an_id_outside_every_shard_fails_as_dynamic_partition_does(bad):
    ids = tf.placeholder(tf.int64, [None])
    fused = shard_ids(ids, 2, "div", 10)
    single = _single_ops(ids, _shards([5, 5]), "div")
    messages = []
    with tf.Session() as sess:
        for fetch in (fused, single):
            with pytest.raises(errors.InvalidArgumentError) as info:
                sess.run(fetch, {ids: [3, bad]})
            messages.append(info.value.message.split("\n")[0])
    assert messages[0] == messages[1]
    assert "which is not in [0, 2)" in messages[0]


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_with_known_and_unknown_shard_sizes_agree(strategy):
    # Known sizes take ShardIds; unknown ones ("mod" aside) the single ops.
    table = np.arange(22, dtype=np.float32).reshape(11, 2)
    known = [tf.constant(table[:6]), tf.constant(table[6:])] if strategy == "div" else \
        [tf.constant(table[0::2]), tf.constant(table[1::2])]
    unknown = [tf.placeholder_with_default(k, [None, 2]) for k in known]
    ids = tf.constant([[10, 0], [3, 3], [7, 1]], tf.int64)
    fast = tf.nn.embedding_lookup(known, ids, partition_strategy=strategy)
    general = tf.nn.embedding_lookup(unknown, ids, partition_strategy=strategy)
    ops = {op.type for op in tf.get_default_graph().get_operations()}
    assert "ShardIds" in ops
    with tf.Session() as sess:
        got, want = sess.run([fast, general])
    np.testing.assert_array_equal(got, table[[[10, 0], [3, 3], [7, 1]]])
    np.testing.assert_array_equal(got, want)


def test_gradients_through_a_lookup_of_known_shards_reach_each_shard():
    shards = [tf.Variable(np.ones((3, 2), np.float32)), tf.Variable(np.ones((2, 2), np.float32))]
    out = tf.nn.embedding_lookup(shards, tf.constant([4, 0, 4]), partition_strategy="div")
    grads = tf.gradients(tf.reduce_sum(out), shards)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g0, g1 = sess.run([tf.convert_to_tensor(g) for g in grads])
    np.testing.assert_array_equal(g0, [[1, 1], [0, 0], [0, 0]])
    np.testing.assert_array_equal(g1, [[0, 0], [2, 2]])
