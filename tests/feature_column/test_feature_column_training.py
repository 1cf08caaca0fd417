"""Feature columns in training: a wide (linear_model + FTRL) and deep (input_layer of
embedding columns + tf.layers.dense + Adagrad) model learns a planted signal, locally;
and embedding_column variables partitioned across 2 ps tasks of an in-process cluster.

Our own tests (the issue's wide & deep workload).
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

fc = tf.feature_column


def _batch(rng, n=64):
    """Click log: clicked iff the item is even XOR the user is in the first half."""
    users = rng.integers(0, 20, n)
    items = rng.integers(0, 10, n)
    label = ((items % 2 == 0) ^ (users < 10)).astype(np.float32)
    return ({"user": np.array([[f"u{u}"] for u in users], dtype=object),
             "item": items.reshape(-1, 1).astype(np.int64),
             "hour": rng.uniform(0, 24, (n, 1)).astype(np.float32)}, label.reshape(-1, 1))


def _wide_deep(features):
    user = fc.categorical_column_with_hash_bucket("user", 64)
    item = fc.categorical_column_with_identity("item", 10)
    hour = fc.bucketized_column(fc.numeric_column("hour"), [6., 12., 18.])
    wide = fc.linear_model(features, [user, item, hour, fc.crossed_column(["user", item], 500)])
    net = fc.input_layer(features, [fc.embedding_column(user, 4), fc.embedding_column(item, 4),
                                    fc.numeric_column("hour", normalizer_fn=lambda x: x / 24.)])
    net = tf.layers.dense(net, 16, activation=tf.nn.relu)
    return wide + tf.layers.dense(net, 1)


@pytest.mark.transports()
def test_wide_and_deep_loss_falls_on_a_planted_signal(graph):
    feeds = {"user": tf.placeholder(tf.string, [None, 1]),
             "item": tf.placeholder(tf.int64, [None, 1]),
             "hour": tf.placeholder(tf.float32, [None, 1])}
    label = tf.placeholder(tf.float32, [None, 1])
    logits = _wide_deep(feeds)
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=label, logits=logits))
    wide_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="linear_model")
    deep_vars = [v for v in tf.trainable_variables() if v not in wide_vars]
    assert wide_vars and deep_vars
    train = tf.group(
        tf.train.FtrlOptimizer(1.0).minimize(loss, var_list=wide_vars),
        tf.train.AdagradOptimizer(0.3).minimize(loss, var_list=deep_vars))
    rng = np.random.default_rng(0)
    test_x, test_y = _batch(rng, 512)
    test_feed = {**{feeds[k]: v for k, v in test_x.items()}, label: test_y}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(loss, test_feed)
        for _ in range(300):
            x, y = _batch(rng)
            sess.run(train, {**{feeds[k]: v for k, v in x.items()}, label: y})
        after = sess.run(loss, test_feed)
    assert before == pytest.approx(np.log(2.), abs=0.1)
    assert after < 0.5 * before, (before, after)  # the XOR is learned (via the cross)


@pytest.mark.cluster_shape(ps=2, workers=1)
def test_embedding_column_partitioned_across_two_ps_tasks(graph, inprocess_cluster):
    spec, servers = inprocess_cluster
    item = fc.categorical_column_with_identity("item", 10)
    ids = tf.placeholder(tf.int64, [None, 1])
    cols_to_vars: dict = {}
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        with tf.variable_scope("model", partitioner=tf.fixed_size_partitioner(2)):
            emb = fc.embedding_column(item, 3, initializer=tf.ones_initializer())
            net = fc.input_layer({"item": ids}, [emb], cols_to_vars=cols_to_vars)
        loss = tf.reduce_sum(net)
        train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
    shards = cols_to_vars[emb]
    assert [v.name for v in shards] == [
        "model/input_layer/item_embedding/embedding_weights/part_0:0",
        "model/input_layer/item_embedding/embedding_weights/part_1:0"]
    assert [v.shape.as_list() for v in shards] == [[5, 3], [5, 3]]
    assert [v.device for v in shards] == ["/job:ps/task:0", "/job:ps/task:1"]
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(net, {ids: [[1], [7]]}).tolist() == [[1.] * 3] * 2
        sess.run(train, {ids: [[1], [7]]})
        part0, part1 = sess.run(shards)
    # "div" split of 10 rows: ids 0-4 on ps 0, 5-9 on ps 1; only rows 1 and 7 moved.
    want0, want1 = np.ones((5, 3)), np.ones((5, 3))
    want0[1] = 0.
    want1[2] = 0.
    np.testing.assert_allclose(part0, want0)
    np.testing.assert_allclose(part1, want1)
