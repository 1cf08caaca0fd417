"""GatherV2's sparse gradient reads the shape of a row from the incoming gradient when
the rank of the indices is known (index_ops._row_shape), instead of from the params'
Shape: on a ps variable that Shape would cross to the worker every step; a vector
of indices needs no reshape at all (the "vector" case). Checked against the general
path (indices of unknown rank) and on a 2-ps cluster."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


@pytest.mark.parametrize("ids_shape", [[3], [2, 2]], ids=["vector", "matrix"])
def test_values_and_dense_shape_match_the_general_path(ids_shape):
    params = tf.Variable(np.arange(24, dtype=np.float32).reshape(6, 2, 2))
    ids_value = np.array([4, 0, 4, 1][:int(np.prod(ids_shape))]).reshape(ids_shape)
    known = tf.placeholder(tf.int32, [None] * len(ids_shape))    # rank known: fast path
    unknown = tf.placeholder(tf.int32, None)                    # rank unknown: general
    weights = tf.constant(np.arange(1, 5, dtype=np.float32).reshape(1, 2, 2))
    grads = []
    for ids in (known, unknown):
        out = tf.gather(params, ids)
        g = tf.gradients(tf.reduce_sum(out * weights), params)[0]
        assert isinstance(g, tf.IndexedSlices)
        grads.append((g.values, g.indices, g.dense_shape))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fast, general = sess.run(grads, {known: ids_value, unknown: ids_value})
    for a, b in zip(fast, general):
        np.testing.assert_array_equal(a, b)
    n = ids_value.size
    np.testing.assert_array_equal(fast[0], np.broadcast_to(weights.op.get_attr("value")[0],
                                                           (n, 2, 2)))
    np.testing.assert_array_equal(fast[1], ids_value.reshape(-1))
    np.testing.assert_array_equal(fast[2], [6, 2, 2])


def test_gradient_of_a_gathered_sparse_gradient_still_reshapes():
    # An incoming IndexedSlices (a gather of a gather) takes the general path.
    params = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2))
    ids = tf.placeholder(tf.int32, [None])
    inner = tf.gather(params, ids)
    outer = tf.gather(inner, tf.constant([1, 1]))
    g = tf.gradients(tf.reduce_sum(outer), params)[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        dense = sess.run(tf.convert_to_tensor(g), {ids: [3, 0]})
    np.testing.assert_array_equal(dense, [[2, 2], [0, 0], [0, 0], [0, 0]])


@pytest.mark.cluster_shape(ps=2, workers=1)
def test_a_sparse_update_on_the_ps_needs_no_shape_from_it(inprocess_cluster):
    spec, servers = inprocess_cluster
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        emb = tf.get_variable("emb", [10, 4], partitioner=tf.fixed_size_partitioner(2),
                              initializer=tf.ones_initializer())
        ids = tf.placeholder(tf.int64, [None])
        loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids))
        train = tf.train.AdagradOptimizer(0.5).minimize(loss)
    md = tf.RunMetadata()
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {ids: [1, 4, 6]}, options=tf.RunOptions(output_partition_graphs=True),
                 run_metadata=md)
        after = sess.run(list(emb))
    on_ps = [n.op for gd in md.partition_graphs for n in gd.node if "/job:ps" in n.device]
    assert "SparseApplyAdagrad" in on_ps and "Shape" not in on_ps
    # "mod": ids 4 and 6 are rows 2 and 3 of shard 0, id 1 row 0 of shard 1.
    assert (after[0][[2, 3]] < 1).all() and (after[1][0] < 1).all()
    np.testing.assert_array_equal(after[0][[0, 1, 4]], np.ones((3, 4)))
