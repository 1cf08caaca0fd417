"""DeepRec's `tf.contrib.layers.sparse_column_with_embedding` with contrib's
`embedding_column`, `input_from_feature_columns` and `weighted_sum_from_feature_columns`.

Specification: DeepRec's docs/docs_en/Embedding-Variable.md (the signature and the
sparse_column_with_embedding example) and its contrib feature_column.py /
feature_column_ops.py (tables named `weights` under the column's scope, an
EmbeddingVariable of dimension num_outputs for the linear weights, combiner "sum",
`bias_weight`, steps_to_live and partition_num handed to the table). Values are
checked against the same model built by tf.feature_column on an identity column.
Our own tests and values.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

L = tf.contrib.layers
fc = tf.feature_column
pytestmark = pytest.mark.usefixtures("fresh_graph")


def _features():
    return {"col_emb": tf.SparseTensor([[0, 0], [1, 1], [2, 2], [3, 3], [4, 4], [4, 0]],
                                       tf.constant([1, 2, 3, 4, 5, 1], tf.int64), [5, 5]),
            "age": tf.constant([[1.0], [2.0], [3.0], [4.0], [5.0]])}


def _ftrl():
    return tf.train.FtrlOptimizer(0.1, l1_regularization_strength=2.0,
                                  l2_regularization_strength=0.00001)


def _run(outs, trains, steps=3):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(trains)
        return sess.run(outs)


def test_deeprec_doc_example_trains_as_an_identity_embedding():
    ids = L.sparse_column_with_embedding(column_name="col_emb", dtype=tf.dtypes.int64,
                                         partition_num=2)
    ones = tf.ones_initializer(tf.dtypes.float32)
    emb = L.input_from_feature_columns(
        columns_to_tensors=_features(),
        feature_columns=[L.embedding_column(sparse_id_column=ids, dimension=3,
                                            initializer=ones)])
    with tf.variable_scope("core"):
        ref = fc.input_layer(_features(), [fc.embedding_column(
            fc.categorical_column_with_identity("col_emb", 8), 3, initializer=ones)])
    assert [v.op.name for v in tf.global_variables()][:2] == [
        "input_from_feature_columns/col_emb_embedding/weights/part_0",
        "input_from_feature_columns/col_emb_embedding/weights/part_1"]
    got, want = _run([emb, ref], [_ftrl().minimize(tf.reduce_sum(emb * 2.0)),
                                  _ftrl().minimize(tf.reduce_sum(ref * 2.0))])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[0, 0] < 1.0


def test_input_from_feature_columns_orders_and_reports_columns():
    ids = L.sparse_column_with_embedding("col_emb", tf.int64)
    emb = L.embedding_column(ids, 2, initializer=tf.zeros_initializer())
    outs = {}
    # Contrib's order: embedding columns before real-valued ones, whatever is given.
    deep = L.input_from_feature_columns(_features(), [L.real_valued_column("age"), emb],
                                       cols_to_outs=outs, scope="deep")
    assert deep.shape.as_list() == [5, 3] and set(outs) == {emb, L.real_valued_column("age")}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(deep)[:, 2], [1, 2, 3, 4, 5])
    assert [v.op.name for v in tf.global_variables()] == ["deep/col_emb_embedding/weights"]


def test_weighted_sum_trains_as_a_linear_model_on_an_identity_column():
    ids = L.sparse_column_with_embedding("col_emb", tf.int64, partition_num=2)
    age = L.real_valued_column("age")
    logits, col_vars, bias = L.weighted_sum_from_feature_columns(
        _features(), [ids, age], num_outputs=2, weight_collections=["wide"])
    with tf.variable_scope("core"):
        ref = fc.linear_model(_features(), [fc.categorical_column_with_identity("col_emb", 8),
                                            fc.numeric_column("age")], units=2)
    assert [v.op.name for v in col_vars[ids]] == [
        "weighted_sum_from_feature_columns/col_emb/weights/part_0",
        "weighted_sum_from_feature_columns/col_emb/weights/part_1"]
    assert all(v._embedding_dim == 2 for v in col_vars[ids])
    assert [v.op.name for v in col_vars[age]] == ["weighted_sum_from_feature_columns/age/weight"]
    assert bias.op.name == "weighted_sum_from_feature_columns/bias_weight"
    assert len(tf.get_collection("wide")) == 4
    mix = np.array([1.0, -0.5])
    got, want = _run([logits, ref], [_ftrl().minimize(tf.reduce_sum(logits * mix)),
                                     _ftrl().minimize(tf.reduce_sum(ref * mix))])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.abs(got).max() > 0.01


def test_string_ids_and_the_sum_combiner():
    words = L.sparse_column_with_embedding("w")
    feats = {"w": tf.SparseTensor([[0, 0], [0, 1], [1, 0]], ["cat", "dog", "cat"], [2, 2])}
    logits, _, _ = L.weighted_sum_from_feature_columns(feats, [words], num_outputs=1)
    train = tf.train.GradientDescentOptimizer(1.0).minimize(-tf.reduce_sum(logits))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        # Summed per example (contrib's sparse combiner): cat 2, dog 1, bias 2.
        np.testing.assert_allclose(sess.run(logits), [[5.0], [4.0]])


def test_steps_to_live_evicts_at_save(tmp_path):
    step = tf.train.get_or_create_global_step()
    ids = L.sparse_column_with_embedding("u", tf.int64, steps_to_live=2)
    feed = tf.placeholder(tf.int64, [None, 1])
    deep = L.input_from_feature_columns({"u": feed}, [L.embedding_column(ids, 2)])
    train = tf.train.AdagradOptimizer(0.1).minimize(tf.reduce_sum(deep), global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for batch in ([[1]], [[2]], [[3]], [[4]]):   # looked up at global steps 0..3
            sess.run(train, {feed: batch})
        path = tf.train.Saver().save(sess, str(tmp_path / "m.ckpt"))
    keys = tf.train.load_variable(path, "input_from_feature_columns/u_embedding/weights-keys")
    assert sorted(keys.tolist()) == [3, 4]   # at step 4: ids last seen before step 2 go


def test_errors_name_what_to_do():
    ids = L.sparse_column_with_embedding("col_emb", tf.int64)
    with pytest.raises(ValueError, match="init_data_source"):
        L.sparse_column_with_embedding("x", init_data_source="some/table")
    with pytest.raises(ValueError, match="sparse_column_with_embedding"):
        L.embedding_column(fc.categorical_column_with_identity("x", 3), 2)
    with pytest.raises(ValueError, match="Combiner"):
        L.embedding_column(ids, 2, combiner="max")
    with pytest.raises(ValueError, match="not supported in linear models"):
        L.weighted_sum_from_feature_columns(_features(), [L.embedding_column(ids, 2)], 1)
    with pytest.raises(ValueError, match="wrap it in embedding_column"):
        L.input_from_feature_columns(_features(), [ids])
    with pytest.raises(ValueError, match="Duplicate"):
        L.input_from_feature_columns(_features(), [
            L.embedding_column(ids, 2), L.embedding_column(ids, 3)])
