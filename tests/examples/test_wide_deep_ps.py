"""A small wide & deep trainer, written as a TF1 user writes it, on 2 ps + 2 workers
(between-graph replication, async): sparse placeholders fed with SparseTensorValues,
a wide linear part over partitioned weights trained with FTRL, a deep part of
partitioned embeddings, tf.layers.dense and Adagrad. The loss on a planted signal falls.

Specification: the program the issue describes (its first line used to fail with
"no attribute 'sparse_placeholder'"); our own test.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.cluster_shape(ps=2, workers=2)

VOCAB = 50
POSITIVE = set(range(0, VOCAB, 5))  # a click is likely when one of these ids is present


def _batch(rng, n=32):
    indices, ids, labels = [], [], []
    for row in range(n):
        k = rng.randint(1, 4)
        row_ids = rng.choice(VOCAB, size=k, replace=False)
        indices += [[row, j] for j in range(k)]
        ids += list(row_ids)
        labels.append([1.0 if POSITIVE & set(row_ids.tolist()) else 0.0])
    value = tf.SparseTensorValue(np.array(indices, np.int64), np.array(ids, np.int64),
                                 np.array([n, 3], np.int64))
    return value, np.array(labels, np.float32)


def _build(spec, task):
    """One worker's graph; the variables (same names) live on the two ps tasks."""
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(
            cluster=spec, worker_device=f"/job:worker/task:{task}")):
        ids = tf.sparse_placeholder(tf.int64, shape=[None, None], name="ids")
        labels = tf.placeholder(tf.float32, [None, 1], name="labels")
        partitioner = tf.fixed_size_partitioner(2)
        with tf.variable_scope("wide"):
            wide_w = tf.get_variable("w", [VOCAB, 1], partitioner=partitioner,
                                     initializer=tf.zeros_initializer())
            wide = tf.nn.embedding_lookup_sparse(wide_w, ids, None, combiner="sum")
        with tf.variable_scope("deep"):
            emb = tf.get_variable("emb", [VOCAB, 8], partitioner=partitioner,
                                  initializer=tf.random_normal_initializer(stddev=0.1, seed=1))
            h = tf.nn.safe_embedding_lookup_sparse(emb, ids, None, combiner="mean")
            h = tf.layers.dense(h, 16, activation=tf.nn.relu)
            deep = tf.layers.dense(h, 1)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=wide + deep))
        step = tf.train.get_or_create_global_step()
        wide_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, "wide")
        deep_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, "deep")
        train = tf.group(
            tf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.001).minimize(
                loss, var_list=wide_vars, global_step=step),
            tf.train.AdagradOptimizer(0.2).minimize(loss, var_list=deep_vars))
        init = tf.global_variables_initializer()
    return g, ids, labels, loss, train, init


def test_wide_and_deep_trains_on_two_ps_and_two_workers(inprocess_cluster):
    spec, servers = inprocess_cluster
    rng = np.random.RandomState(0)
    eval_ids, eval_labels = _batch(rng, 256)
    workers = [_build(spec, k) for k in range(2)]
    sessions = [tf.Session(servers[("worker", k)].target, graph=w[0])
                for k, w in enumerate(workers)]
    try:
        _, ids0, labels0, loss0, _, init0 = workers[0]
        sessions[0].run(init0)  # the chief initializes; worker 1 shares the variables
        before = sessions[0].run(loss0, {ids0: eval_ids, labels0: eval_labels})
        for _ in range(60):
            for (_, ids, labels, _, train, _), sess in zip(workers, sessions):
                batch, y = _batch(rng)
                sess.run(train, {ids: batch, labels: y})
        after = [sess.run(w[3], {w[1]: eval_ids, w[2]: eval_labels})
                 for w, sess in zip(workers, sessions)]
    finally:
        for sess in sessions:
            sess.close()
    assert after[0] == pytest.approx(after[1])  # one model, shared through the ps tasks
    assert after[0] < 0.3 * before, (before, after)  # about 0.68 -> 0.03 here
