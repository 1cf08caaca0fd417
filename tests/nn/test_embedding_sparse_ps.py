"""Sparse features on a 2-ps cluster: an embedding partitioned across both ps tasks,
looked up with embedding_lookup_sparse and trained with each sparse optimizer.

Checks what the placer and partitioner make of it (each ps gathers and updates its
own shard; the ids are split on the worker, so each ps receives only its ids) and
that a step changes only the rows, and slot rows, its batch touched.

Specification: the issue's "a ps applies only the rows a step touched" and "sparse
gather on a partitioned variable sends each ps only its ids"; our own tests.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import tensorweave as tf

pytestmark = [pytest.mark.usefixtures("graph"), pytest.mark.cluster_shape(ps=2, workers=1)]

OPTIMIZERS = {
    "adagrad": lambda: tf.train.AdagradOptimizer(0.5),
    "ftrl": lambda: tf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.01),
    "proximal_adagrad": lambda: tf.train.ProximalAdagradOptimizer(0.5),
    "adadelta": lambda: tf.train.AdadeltaOptimizer(1.0),
    "lazy_adam": lambda: tf.contrib.opt.LazyAdamOptimizer(0.5),
}


def _model(spec, make_opt):
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        emb = tf.get_variable("emb", [10, 4], partitioner=tf.fixed_size_partitioner(2),
                              initializer=tf.ones_initializer())
        ids = tf.sparse_placeholder(tf.int64, shape=[None, None], name="ids")
        vecs = tf.nn.embedding_lookup_sparse(emb, ids, None, combiner="sum")  # "mod"
        loss = tf.reduce_sum(vecs * vecs)
        opt = make_opt()
        train = opt.minimize(loss)
    return emb, ids, opt, train


def _nodes_by_task(md):
    out = {}
    for gd in md.partition_graphs:
        for node in gd.node:
            task = node.device.split("/device:")[0].replace("/replica:0", "")
            out.setdefault(task, []).append(node)
    return out


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_each_ps_gathers_and_updates_only_its_shard(inprocess_cluster, name):
    spec, servers = inprocess_cluster
    emb, ids, opt, train = _model(spec, OPTIMIZERS[name])
    shards = list(emb)
    # With "mod", id 1 -> shard 1 row 0, ids 4 and 6 -> shard 0 rows 2 and 3.
    batch = tf.SparseTensorValue([[0, 0], [0, 1], [1, 0]], [1, 4, 6], [2, 2])
    md = tf.RunMetadata()
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        # A first step touches every row, so that no slot is at a value a full-table
        # update (like TF's non-lazy Adam) would leave unchanged.
        sess.run(train, {ids: tf.SparseTensorValue([[i, 0] for i in range(10)],
                                                   list(range(10)), [10, 1])})
        before = sess.run(shards)
        slots = {s: sess.run([opt.get_slot(v, s) for v in shards]) for s in opt.get_slot_names()}
        sess.run(train, {ids: batch}, options=tf.RunOptions(output_partition_graphs=True),
                 run_metadata=md)
        after = sess.run(shards)
        slots_after = {s: sess.run([opt.get_slot(v, s) for v in shards]) for s in slots}
    touched = [np.array([2, 3]), np.array([0])]
    for k in range(2):
        rest = np.setdiff1d(np.arange(5), touched[k])
        assert not np.allclose(after[k][touched[k]], before[k][touched[k]]), \
            f"shard {k}'s touched rows did not move"
        np.testing.assert_array_equal(after[k][rest], before[k][rest])
        for s in slots:
            np.testing.assert_array_equal(slots_after[s][k][rest], slots[s][k][rest])
    by_task = _nodes_by_task(md)
    ps_ops = {t: {n.op for n in nodes} for t, nodes in by_task.items() if "/job:ps" in t}
    assert set(ps_ops) == {"/job:ps/task:0", "/job:ps/task:1"}
    for task, ops in ps_ops.items():
        assert "GatherV2" in ops, f"no gather on {task}"
        assert any(op.startswith("SparseApply") for op in ops), f"no sparse update on {task}"
        assert not {"DynamicPartition", "ShardIds", "Unique"} & ops
    worker_ops = {n.op for n in by_task["/job:worker/task:0"]}
    assert {"ShardIds", "Unique"} <= worker_ops  # the ids are split on the worker


@pytest.mark.parametrize("lookup_fn", [tf.nn.embedding_lookup, tf.gather],
                         ids=["embedding_lookup", "gather"])
def test_each_ps_receives_only_its_ids(inprocess_cluster, lookup_fn):
    # tf.gather on a PartitionedVariable reads each shard where it lives too (TF 1.x
    # would concatenate every shard on the worker first).
    spec, servers = inprocess_cluster
    emb, ids, _, _ = _model(spec, OPTIMIZERS["adagrad"])
    lookup = lookup_fn(emb, tf.constant([1, 4, 6, 8], tf.int64))
    md = tf.RunMetadata()
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(lookup, options=tf.RunOptions(output_partition_graphs=True),
                 run_metadata=md)
    by_task = _nodes_by_task(md)
    for task in ("/job:ps/task:0", "/job:ps/task:1"):
        nodes = {n.name: n for n in by_task[task]}
        gathers = [n for n in nodes.values() if n.op == "GatherV2"]
        assert len(gathers) == 1
        # The gather's ids arrive from the worker (a _Recv), already split by shard.
        ids_input = nodes[gathers[0].input[1].split(":")[0]]
        assert ids_input.op == "_Recv"


def test_a_training_step_moves_rows_not_shards(inprocess_cluster):
    # Every tensor received in a step is batch-sized: no shard (nor its shape op's
    # input) crosses to the worker, and each ps receives only its ids and rows.
    spec, servers = inprocess_cluster
    emb, ids, _, train = _model(spec, OPTIMIZERS["adagrad"])
    md = tf.RunMetadata()
    batch = tf.SparseTensorValue([[0, 0], [0, 1], [1, 0]], [1, 4, 6], [2, 2])
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {ids: batch}, run_metadata=md, options=tf.RunOptions(
            trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True))
    recv_nodes = {n.name for g in md.partition_graphs for n in g.node if n.op == "_Recv"}
    received = [(dev.device, ns.node_name,
                 sum(o.tensor_description.allocation_description.requested_bytes
                     for o in ns.output))
                for dev in md.step_stats.dev_stats for ns in dev.node_stats
                if ns.node_name in recv_nodes]
    assert received
    shard_bytes = 5 * 4 * 4
    assert all(nbytes < shard_bytes for _, _, nbytes in received), received


@pytest.mark.cluster_shape(ps=2, workers=2)
def test_sync_replicas_ftrl_on_partitioned_embeddings(inprocess_cluster):
    # Sync training: each step's sparse gradients of both workers are aggregated on the
    # shards' ps tasks (sparse accumulators) and applied once by FTRL.
    spec, servers = inprocess_cluster
    losses: dict[int, list[float]] = {0: [], 1: []}
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            with tf.Graph().as_default(), tf.device(tf.train.replica_device_setter(
                    cluster=spec, worker_device=f"/job:worker/task:{k}")):
                emb = tf.get_variable("emb", [20, 4], partitioner=tf.fixed_size_partitioner(2),
                                      initializer=tf.ones_initializer())
                ids = tf.sparse_placeholder(tf.int64, shape=[None, None])
                vecs = tf.nn.embedding_lookup_sparse(emb, ids, None, combiner="sum")
                loss = tf.reduce_sum(vecs * vecs)
                step = tf.train.get_or_create_global_step()
                opt = tf.train.SyncReplicasOptimizer(tf.train.FtrlOptimizer(0.1), 2, 2)
                train = opt.minimize(loss, global_step=step)
                hooks = [opt.make_session_run_hook(k == 0), tf.train.StopAtStepHook(last_step=6)]
                batch = tf.SparseTensorValue([[0, 0], [1, 0]], [1, 4 + 7 * k], [2, 1])
                with tf.train.MonitoredTrainingSession(
                        master=servers[("worker", k)].target, is_chief=(k == 0),
                        hooks=hooks) as sess:
                    while not sess.should_stop():
                        losses[k].append(sess.run([loss, train], {ids: batch})[0])
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    assert losses[0] and losses[0][-1] < losses[0][0]
