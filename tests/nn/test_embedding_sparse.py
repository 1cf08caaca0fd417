"""tf.nn.embedding_lookup_sparse and safe_embedding_lookup_sparse, over plain and
partitioned embeddings ("mod" and "div"), with their IndexedSlices gradients.

Specification: TF 1.x kernel_tests/embedding_ops_test.py (EmbeddingLookupSparseTest,
SafeEmbeddingLookupSparseTest); our own reference in NumPy below.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.testing.gradient_checker import check_gradients

pytestmark = pytest.mark.usefixtures("graph")

TABLE = np.arange(20, dtype=np.float64).reshape(10, 2) / 10.0
# Rows: 0 -> ids [1, 7]; 1 -> empty; 2 -> [3, 3, 9]; 3 -> empty (last row: absent).
IDX = np.array([[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]], np.int64)
IDS = np.array([1, 7, 3, 3, 9], np.int64)
WTS = np.array([1.0, 2.0, 0.5, 0.5, 3.0])


def reference(table, idx, ids, weights, combiner, rows):
    """The TF formula: sum_k w_k e_k, divided by sum w (mean) or sqrt(sum w^2) (sqrtn)."""
    out = np.zeros((rows, table.shape[1]))
    for r in range(rows):
        sel = idx[:, 0] == r
        if not sel.any():
            continue
        w = np.ones(sel.sum()) if weights is None else weights[sel]
        total = (table[ids[sel]] * w[:, None]).sum(0)
        div = {"sum": 1.0, "mean": w.sum(), "sqrtn": np.sqrt((w * w).sum())}[combiner]
        out[r] = total / div
    return out


def _sp(values, idx=IDX, shape=(4, 3)):
    return tf.SparseTensor(idx, values, list(shape))


def _run(x, init=False):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(x)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_lookup_sparse_matches_the_formula(combiner, weighted):
    w = _sp(WTS) if weighted else None
    out = tf.nn.embedding_lookup_sparse(tf.constant(TABLE), _sp(IDS), w, combiner=combiner)
    # As TF: the result stops at the last row holding an id (row 3 is absent).
    want = reference(TABLE, IDX, IDS, WTS if weighted else None, combiner, 3)
    np.testing.assert_allclose(_run(out), want, rtol=1e-12)


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_lookup_sparse_over_shards_equals_the_whole_table(strategy, combiner):
    if strategy == "mod":  # id i lives in shard i % 3 at row i // 3
        shards = [TABLE[s::3] for s in range(3)]
    else:  # contiguous: 4, 3, 3 rows
        shards = [TABLE[:4], TABLE[4:7], TABLE[7:]]
    variables = [tf.Variable(s, name=f"shard{k}") for k, s in enumerate(shards)]
    out = tf.nn.embedding_lookup_sparse(variables, _sp(IDS), _sp(WTS), combiner=combiner,
                                        partition_strategy=strategy)
    np.testing.assert_allclose(_run(out, init=True),
                               reference(TABLE, IDX, IDS, WTS, combiner, 3), rtol=1e-12)


def test_lookup_sparse_over_a_partitioned_variable_and_its_gradients():
    emb = tf.get_variable("emb", [10, 2], tf.float64, partitioner=tf.fixed_size_partitioner(3),
                          initializer=tf.random_normal_initializer(seed=1))
    out = tf.nn.embedding_lookup_sparse(emb, _sp(IDS), None, combiner="mean",
                                        partition_strategy="div")
    grads = tf.gradients(tf.reduce_sum(out), list(emb))
    assert all(isinstance(g, tf.IndexedSlices) for g in grads)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        table = np.concatenate(sess.run(list(emb)))
        got, grad_values = sess.run([out, grads])
    np.testing.assert_allclose(got, reference(table, IDX, IDS, None, "mean", 3), rtol=1e-12)
    # Shards hold 4, 3, 3 rows. Only the rows of ids 1, 3 (shard 0) and 7, 9 (shard 2)
    # appear; each id's gradient is its share of its rows' means.
    np.testing.assert_array_equal(grad_values[0].indices, [1, 3])
    np.testing.assert_allclose(grad_values[0].values, [[0.5, 0.5], [2 / 3, 2 / 3]])
    assert grad_values[1].indices.size == 0
    np.testing.assert_array_equal(grad_values[2].indices, [0, 2])
    np.testing.assert_allclose(grad_values[2].values, [[0.5, 0.5], [1 / 3, 1 / 3]])


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_lookup_sparse_gradient_checks(combiner):
    # The row count is known only at run time (the last row holding an id): fix it.
    def fn(table, weights):
        out = tf.nn.embedding_lookup_sparse(table, _sp(IDS), _sp(weights), combiner=combiner)
        return tf.reshape(out, [3, 2])
    check_gradients(fn, [TABLE, WTS])
    check_gradients(lambda t: tf.reshape(tf.nn.embedding_lookup_sparse(
        t, _sp(IDS), None, combiner=combiner), [3, 2]), [TABLE])


def test_lookup_sparse_bad_arguments_are_named():
    with pytest.raises(ValueError, match="combiner must be one of"):
        tf.nn.embedding_lookup_sparse(TABLE, _sp(IDS), None, combiner="max")
    with pytest.raises(TypeError, match="sp_ids must be a tf.SparseTensor"):
        tf.nn.embedding_lookup_sparse(TABLE, IDS, None)
    with pytest.raises(ValueError, match="sp_weights' values have shape"):
        tf.nn.embedding_lookup_sparse(TABLE, _sp(IDS), _sp([1.0, 2.0], IDX[:2]))


# ---- safe_embedding_lookup_sparse ----------------------------------------------------------
def test_safe_lookup_drops_invalid_ids_and_zero_fills_empty_rows():
    ids = np.array([1, -1, 3, 3, 9], np.int64)  # -1 is pruned, as TF
    out = tf.nn.safe_embedding_lookup_sparse(tf.constant(TABLE), _sp(ids), None,
                                             combiner="sum")
    assert out.shape.as_list() == [4, 2]
    want = reference(TABLE, IDX[[0, 2, 3, 4]], ids[[0, 2, 3, 4]], None, "sum", 4)
    np.testing.assert_allclose(_run(out), want)


def test_safe_lookup_default_id_fills_empty_rows_and_prunes_weights():
    # Non-positive weights are pruned for mean (not for sum); row 0 keeps only id 7.
    weights = np.array([0.0, 2.0, 0.5, 0.5, 3.0])
    out = tf.contrib.layers.safe_embedding_lookup_sparse(
        tf.constant(TABLE), _sp(IDS), _sp(weights), combiner="mean", default_id=5)
    want = reference(TABLE, IDX[1:], IDS[1:], weights[1:], "mean", 4)
    want[1] = want[3] = TABLE[5]
    np.testing.assert_allclose(_run(out), want)


def test_safe_lookup_of_rank_3_ids_and_partitioned_table():
    idx = np.array([[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 1, 0]], np.int64)
    ids = np.array([2, 8, 5, 9], np.int64)
    emb = tf.get_variable("emb3", [10, 2], tf.float64,
                          partitioner=tf.fixed_size_partitioner(2),
                          initializer=tf.random_normal_initializer(seed=2))
    out = tf.nn.safe_embedding_lookup_sparse(emb, _sp(ids, idx, (2, 2, 2)), None,
                                             combiner="mean")  # TF's default here: "div"
    assert out.shape.as_list() == [2, 2, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        table = np.concatenate(sess.run(list(emb)))
        got = sess.run(out)
    flat_idx = np.stack([idx[:, 0] * 2 + idx[:, 1], idx[:, 2]], 1)
    want = reference(table, flat_idx, ids, None, "mean", 4).reshape(2, 2, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_array_equal(got[1, 0], [0.0, 0.0])


def test_safe_lookup_gradient_check():
    def fn(table):
        return tf.nn.safe_embedding_lookup_sparse(table, _sp(IDS), _sp(WTS), combiner="sqrtn",
                                                  default_id=0)
    check_gradients(fn, [TABLE])


def test_shards_that_disagree_are_named():
    sp = _sp(IDS)
    with pytest.raises(ValueError, match="one row shape.*rows \\(2,\\).*rows \\(3,\\)"):
        tf.nn.safe_embedding_lookup_sparse([tf.zeros([5, 2], tf.float64),
                                            tf.zeros([5, 3], tf.float64)], sp)
    with pytest.raises(TypeError, match="one dtype.*float64.*float32"):
        tf.nn.embedding_lookup_sparse([tf.zeros([5, 2], tf.float64), tf.zeros([5, 2])], sp,
                                      None)


def test_lookups_gather_from_the_variable_without_a_snapshot_copy():
    # The gather (and its gradient's Shape) borrow the variable's buffer: no Identity
    # "read" copies the whole shard every step, the way TF 1.x's aliasing reads behave.
    emb = tf.get_variable("big", [10, 2], tf.float64, partitioner=tf.fixed_size_partitioner(2))
    out = tf.nn.embedding_lookup_sparse(emb, _sp(IDS), None, combiner="sum",
                                        partition_strategy="div")
    tf.train.AdagradOptimizer(0.1).minimize(tf.reduce_sum(out))
    readers = {op.type for op in tf.get_default_graph().get_operations()
               for t in op.inputs if t.dtype.is_ref_dtype and t.op.type == "VariableV2"
               and t.op.name.startswith("big/")}
    assert readers == {"Assign", "Identity", "GatherV2", "Shape", "SparseApplyAdagrad"}
    gathers = [op for op in tf.get_default_graph().get_operations() if op.type == "GatherV2"
               and op.inputs[0].dtype.is_ref_dtype]
    assert len(gathers) == 2 and all(op.op_def.borrows_refs for op in gathers)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        table = np.concatenate(sess.run(list(emb)))
        np.testing.assert_allclose(sess.run(out), reference(table, IDX, IDS, None, "sum", 3))


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_lookup_sparse_with_matrix_rows_over_three_shards_gradient(combiner, weighted):
    # Embedding rows may themselves be matrices ([vocab, 2, 3]); every shard gets its
    # gradient, checked against finite differences.
    rng = np.random.RandomState(7)
    shards = [rng.randn(4, 2, 3), rng.randn(4, 2, 3), rng.randn(4, 2, 3)]
    idx = np.array([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1], [3, 0]], np.int64)
    ids = np.array([0, 11, 5, 5, 2, 7], np.int64)
    wts = np.array([0.5, 1.5, 2.0, 1.0, 0.25, 3.0])

    def fn(a, b, c):
        out = tf.nn.embedding_lookup_sparse([a, b, c], _sp(ids, idx, (4, 2)),
                                            _sp(wts, idx, (4, 2)) if weighted else None,
                                            combiner=combiner)
        return tf.reshape(out, [4, 2, 3])
    check_gradients(fn, shards)
    table = np.stack([shards[i % 3][i // 3] for i in range(12)])  # "mod" layout
    with tf.Session() as sess:
        got = sess.run(fn(*[tf.constant(s) for s in shards]))
    w = wts if weighted else None
    want = reference(table.reshape(12, 6), idx, ids, w, combiner, 4).reshape(4, 2, 3)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_gather_on_a_partitioned_variable_reads_each_shard_and_gives_sparse_gradients():
    emb = tf.get_variable("pv", [7, 2], tf.float64, partitioner=tf.fixed_size_partitioner(3),
                          initializer=tf.random_normal_initializer(seed=3))
    ids = tf.constant([[6, 0], [3, 3]], tf.int64)
    rows = tf.gather(emb, ids)
    assert rows.shape.as_list() == [2, 2, 2]
    # No concatenation of the shards (TF 1.x's tf.gather would build "pv/ConcatPartitions").
    assert not [op for op in tf.get_default_graph().get_operations()
                if "ConcatPartitions" in op.name]
    grads = tf.gradients(tf.reduce_sum(rows), list(emb))
    assert all(isinstance(g, tf.IndexedSlices) for g in grads)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        table = np.concatenate(sess.run(list(emb)))   # shards of 3, 2, 2 rows
        got, grad_values = sess.run([rows, grads])
    np.testing.assert_allclose(got, table[[[6, 0], [3, 3]]])
    np.testing.assert_array_equal(grad_values[0].indices, [0])
    np.testing.assert_array_equal(sorted(grad_values[1].indices), [0, 0])
    np.testing.assert_array_equal(grad_values[2].indices, [1])


def test_gather_on_a_variable_reads_its_buffer_and_orders_after_dependencies():
    v = tf.Variable(np.arange(6.0).reshape(3, 2))
    rows = tf.gather(v, [2, 0])
    assert rows.op.inputs[0].dtype.is_ref_dtype  # no snapshot of the whole variable
    assert isinstance(tf.gradients(tf.reduce_sum(rows), v)[0], tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(rows), [[4.0, 5.0], [0.0, 1.0]])
        with tf.control_dependencies([tf.assign_add(v, tf.ones([3, 2], tf.float64))]):
            after = tf.gather(v, [0])
        np.testing.assert_array_equal(sess.run(after), [[1.0, 2.0]])
