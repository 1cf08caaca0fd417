"""Partitioned variables, partitioners and sharded embedding_lookup (checked vs NumPy)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.ops.nn.embedding_ops import dynamic_partition, dynamic_stitch, embedding_lookup
from tensorweave.state.partitioned_variables import (
    PartitionedVariable, fixed_size_partitioner, min_max_variable_partitioner,
    variable_axis_size_partitioner)
from tensorweave.state.variable_scope import get_variable, variable_scope
from tensorweave.train.device_setter import (
    GreedyLoadBalancingStrategy, byte_size_load_fn, replica_device_setter)

pytestmark = pytest.mark.usefixtures("graph")

FULL = np.arange(44, dtype=np.float32).reshape(11, 4)
ID_SETS = [np.array([0, 10, 5]), np.array([[3, 3, 7], [1, 0, 3]]), np.array([4, 4, 4, 9]),
           np.array([2], dtype=np.int64)]


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# ---- partitioners -------------------------------------------------------------------
def test_fixed_size_partitioner_shapes_and_offsets():
    assert fixed_size_partitioner(3)(shape=tf.TensorShape([10, 4]), dtype=tf.float32) == [3, 1]
    assert fixed_size_partitioner(5, axis=1)(shape=tf.TensorShape([2, 3])) == [1, 3]
    v = get_variable("v", [10, 4], partitioner=fixed_size_partitioner(3))
    assert isinstance(v, PartitionedVariable)
    infos = [p._save_slice_info for p in v]
    assert [p.name for p in v] == ["v/part_0:0", "v/part_1:0", "v/part_2:0"]
    assert [i.var_offset for i in infos] == [[0, 0], [4, 0], [7, 0]]
    assert [i.var_shape for i in infos] == [[4, 4], [3, 4], [3, 4]]
    assert {i.full_name for i in infos} == {"v"} and infos[0].full_shape == [10, 4]
    assert infos[1].spec == "10 4 4,3:0,4"
    assert v.get_shape().as_list() == [10, 4] and v.name == "v" and v.dtype == tf.float32
    assert len(v) == 3 and v._get_partitions() == [3, 1]
    assert v.get_variable_list() == list(v)


def test_min_max_partitioner():
    p = min_max_variable_partitioner(max_partitions=4, min_slice_size=1024)
    assert p(shape=tf.TensorShape([1000, 1]), dtype=tf.float32) == [4, 1]   # 4000 B
    assert p(shape=tf.TensorShape([300, 1]), dtype=tf.float32) == [2, 1]    # 1200 B
    assert p(shape=tf.TensorShape([10, 1]), dtype=tf.float32) == [1, 1]
    assert p(shape=tf.TensorShape([3, 1000]), dtype=tf.float32) == [3, 1]   # rows cap it
    assert min_max_variable_partitioner(8, min_slice_size=16)(
        shape=tf.TensorShape([10]), dtype=tf.string) == [8]
    v = get_variable("mm", [1000, 1], partitioner=p)
    assert [x.get_shape().as_list() for x in v] == [[250, 1]] * 4
    with pytest.raises(ValueError, match="axis 2"):
        min_max_variable_partitioner(axis=2)(shape=tf.TensorShape([3, 3]), dtype=tf.float32)


def test_variable_axis_size_partitioner():
    p = variable_axis_size_partitioner(max_shard_bytes=64)
    assert p(shape=tf.TensorShape([10, 4]), dtype=tf.float32) == [3, 1]
    assert variable_axis_size_partitioner(64, max_shards=2)(
        shape=tf.TensorShape([10, 4]), dtype=tf.float32) == [2, 1]


def test_value_initializer_is_sliced_and_concat_gives_the_full_value():
    v = get_variable("c", initializer=FULL, partitioner=fixed_size_partitioner(3))
    assert v.get_shape().as_list() == [11, 4]
    parts, full = _run([list(v), tf.convert_to_tensor(v)])
    np.testing.assert_array_equal(full, FULL)
    np.testing.assert_array_equal(parts[0], FULL[:4])
    np.testing.assert_array_equal(_run(v.as_tensor()), FULL)


def test_saver_round_trip_restores_onto_a_different_partitioning(tmp_path):
    from tensorweave.train.saver import Saver
    get_variable("w", initializer=FULL, partitioner=fixed_size_partitioner(3))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = Saver().save(sess, str(tmp_path / "model.ckpt"))
    with tf.Graph().as_default():
        w = get_variable("w", [11, 4], initializer=tf.zeros_initializer(),
                         partitioner=fixed_size_partitioner(2))
        full = tf.convert_to_tensor(w)
        with tf.Session() as sess:
            Saver().restore(sess, path)
            np.testing.assert_array_equal(sess.run(full), FULL)


def test_reuse_and_errors():
    part = fixed_size_partitioner(2)
    with variable_scope("s", partitioner=part):   # a scope's partitioner applies too
        v = get_variable("w", [4, 2])
    with variable_scope("s", reuse=True):
        assert get_variable("w", [4, 2], partitioner=part) is v
    with variable_scope("s", reuse=tf.AUTO_REUSE):
        assert get_variable("w", [4, 2], partitioner=part) is v
    with pytest.raises(ValueError, match="already exists"):
        with variable_scope("s"):
            get_variable("w", [4, 2], partitioner=part)
    with pytest.raises(ValueError, match="partitions"):
        with variable_scope("s", reuse=True):
            get_variable("w", [4, 2], partitioner=fixed_size_partitioner(4))
    with pytest.raises(ValueError, match="does not exist"):
        with variable_scope("s", reuse=True):
            get_variable("nope", [4, 2], partitioner=part)
    get_variable("plain", [4])
    with pytest.raises(ValueError, match="unpartitioned"):
        get_variable("plain", [4], partitioner=part)
    with pytest.raises(ValueError, match="one dimension"):
        get_variable("two", [4, 4], partitioner=lambda shape, dtype: [2, 2])
    # A scalar is never partitioned (as TF).
    assert isinstance(get_variable("scalar", [], partitioner=part), tf.Variable)


def test_parts_are_spread_over_ps_tasks_by_the_device_setter():
    with tf.device(replica_device_setter(ps_tasks=2)):
        v = get_variable("emb", [10, 4], partitioner=fixed_size_partitioner(4))
        b = tf.Variable(0.0, name="b")
    assert [p.device for p in v] == ["/job:ps/task:0", "/job:ps/task:1",
                                     "/job:ps/task:0", "/job:ps/task:1"]
    assert b.device == "/job:ps/task:0"
    assert all(p.initializer.device == p.device for p in v)


def test_greedy_placement_of_parts_and_a_big_variable():
    strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    with tf.device(replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        big = tf.Variable(tf.zeros([100, 10]), name="big")
        v = get_variable("emb", [40, 10], partitioner=fixed_size_partitioner(4))
    assert big.device == "/job:ps/task:0"
    assert [p.device for p in v] == ["/job:ps/task:1"] * 4   # task 1 catches up to task 0


# ---- embedding_lookup -------------------------------------------------------------------
@pytest.mark.parametrize("ids", ID_SETS, ids=lambda a: str(a.tolist()))
@pytest.mark.parametrize("num_shards", [1, 3, 4])
def test_embedding_lookup_div_matches_numpy(ids, num_shards):
    v = get_variable("e", initializer=FULL, partitioner=fixed_size_partitioner(num_shards))
    out = embedding_lookup(v, ids, partition_strategy="div")
    assert out.shape.as_list() == list(ids.shape) + [4]
    np.testing.assert_array_equal(_run(out), FULL[ids])


@pytest.mark.parametrize("ids", ID_SETS, ids=lambda a: str(a.tolist()))
@pytest.mark.parametrize("num_shards", [2, 3])
def test_embedding_lookup_mod_matches_numpy(ids, num_shards):
    shards = [tf.Variable(FULL[p::num_shards]) for p in range(num_shards)]
    out = embedding_lookup(shards, ids, partition_strategy="mod")
    assert out.shape.as_list() == list(ids.shape) + [4]
    np.testing.assert_array_equal(_run(out), FULL[ids])


def test_embedding_lookup_single_tensor_and_fed_ids():
    ids = tf.placeholder(tf.int32, [None])
    out = embedding_lookup(tf.constant(FULL), ids)
    np.testing.assert_array_equal(_run(out, {ids: [1, 1, 6]}), FULL[[1, 1, 6]])
    shards = [tf.Variable(FULL[p::2]) for p in range(2)]
    out2 = embedding_lookup(shards, ids)
    np.testing.assert_array_equal(_run(out2, {ids: [10, 3]}), FULL[[10, 3]])


def test_embedding_lookup_max_norm_clips_rows():
    out = embedding_lookup([tf.Variable(FULL[:6]), tf.Variable(FULL[6:])], [0, 7],
                           partition_strategy="div", max_norm=1.0)
    got = _run(out)
    np.testing.assert_allclose(np.linalg.norm(got[1]), 1.0, rtol=1e-5)
    np.testing.assert_allclose(got[0], FULL[0] / max(1.0, np.linalg.norm(FULL[0])), rtol=1e-5)


def test_shard_gathers_are_colocated_with_their_shards():
    with tf.device(replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")):
        v = get_variable("e", [10, 4], partitioner=fixed_size_partitioner(2))
        out = embedding_lookup(v, [1, 8], partition_strategy="div")
    gathers = [op for op in tf.get_default_graph().get_operations() if op.type == "GatherV2"]
    assert sorted(op.device for op in gathers) == ["/job:ps/task:0", "/job:ps/task:1"]
    assert out.device == "/job:worker/task:0"


def test_gradients_are_indexed_slices_touching_only_looked_up_rows():
    v = get_variable("e", initializer=FULL, partitioner=fixed_size_partitioner(3))
    ids = np.array([[0, 9], [0, 5]])
    out = embedding_lookup(v, ids, partition_strategy="div")
    grads = tf.gradients(tf.reduce_sum(out * 2.0), list(v))
    assert all(isinstance(g, IndexedSlices) for g in grads)
    got = _run([(g.indices, g.values) for g in grads])
    # shards hold rows [0..3], [4..7], [8..10]
    assert sorted(got[0][0].tolist()) == [0, 0]
    assert got[1][0].tolist() == [1] and got[2][0].tolist() == [1]
    assert all(np.all(vals == 2.0) for _, vals in got)


def test_sparse_sgd_update_changes_only_looked_up_rows():
    v = get_variable("e", initializer=FULL, partitioner=fixed_size_partitioner(2))
    ids = [1, 1, 8]
    loss = tf.reduce_sum(embedding_lookup(v, ids, partition_strategy="div"))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, var_list=list(v))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        after = sess.run(tf.convert_to_tensor(v))
    expected = FULL.copy()
    expected[1] -= 0.5 * 2   # looked up twice
    expected[8] -= 0.5
    np.testing.assert_array_equal(after, expected)


def test_bad_strategy_and_empty_params():
    with pytest.raises(ValueError, match="partition strategy 'bogus'"):
        embedding_lookup([tf.constant(FULL)], [0], partition_strategy="bogus")
    with pytest.raises(ValueError, match="at least one"):
        embedding_lookup([], [0])


# ---- DynamicPartition / DynamicStitch --------------------------------------------------
def test_dynamic_partition_and_stitch_round_trip_with_gradient():
    data = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    parts = dynamic_partition(data, [1, 0, 1], 2)
    stitched = dynamic_stitch([[1], [0, 2]], parts)
    (grad,) = tf.gradients(tf.reduce_sum(stitched * tf.constant([[1.0], [2.0], [3.0]])),
                           [data])
    p0, p1, s, g = _run([parts[0], parts[1], stitched, grad])
    np.testing.assert_array_equal(p0, [[3.0, 4.0]])
    np.testing.assert_array_equal(p1, [[1.0, 2.0], [5.0, 6.0]])
    np.testing.assert_array_equal(s, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])  # round trip
    np.testing.assert_array_equal(g, [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    np.testing.assert_array_equal(_run(dynamic_stitch([[0, 1], [1]], [[1, 2], [9]])), [1, 9])
    np.testing.assert_array_equal(_run(dynamic_stitch([[2, 0], [1]], [[7, 8], [9]])),
                                  [8, 9, 7])


# ---- on a real cluster: shards on two ps processes, lookup and update from a worker ----
def test_nn_embedding_lookup_is_the_sharding_aware_one():
    assert tf.nn.embedding_lookup is embedding_lookup


@pytest.mark.cluster_shape(ps=2, workers=1)
def test_sharded_embedding_training_on_a_local_cluster(local_cluster):
    lc = local_cluster
    setter = replica_device_setter(cluster=lc.spec, worker_device="/job:worker/task:0")
    with tf.device(setter):
        v = get_variable("emb", initializer=FULL, partitioner=fixed_size_partitioner(2))
        loss = tf.reduce_sum(embedding_lookup(v, [0, 10, 10], partition_strategy="div"))
        train = tf.train.GradientDescentOptimizer(1.0).minimize(loss, var_list=list(v))
        full = tf.convert_to_tensor(v)
    assert [p.device for p in v] == ["/job:ps/task:0", "/job:ps/task:1"]
    with tf.Session(lc.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        after = sess.run(full)
    expected = FULL.copy()
    expected[0] -= 1.0
    expected[10] -= 2.0
    np.testing.assert_array_equal(after, expected)


def test_slots_of_a_partitioned_variable_save_under_the_full_name(tmp_path):
    # As TF's slot_creator: the part "emb/part_0"'s slot "emb/part_0/Adagrad" is a slice
    # of "emb/Adagrad", so checkpoints trade with TF and warm-start by the full name.
    emb = tf.get_variable("emb", [6, 2], partitioner=tf.fixed_size_partitioner(2),
                          initializer=tf.ones_initializer())
    train = tf.train.AdagradOptimizer(0.1).minimize(
        tf.reduce_sum(tf.nn.embedding_lookup(emb, [0, 4])))
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        acc = sess.run(tf.get_default_graph().get_tensor_by_name("emb/part_0/Adagrad:0"))
        path = saver.save(sess, str(tmp_path / "m"))
    assert dict(tf.train.list_variables(path)) == {"emb": [6, 2], "emb/Adagrad": [6, 2]}
    full = tf.train.load_variable(path, "emb/Adagrad")
    np.testing.assert_allclose(full[:3], acc)  # part 0 is rows 0-2 of the full slot
    with tf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_allclose(
            sess.run(tf.get_default_graph().get_tensor_by_name("emb/part_0/Adagrad:0")), acc)
