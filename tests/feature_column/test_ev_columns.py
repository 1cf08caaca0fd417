"""DeepRec's categorical_column_with_embedding beyond embedding_column/input_layer:
`linear_model` over it (its weights an EmbeddingVariable of dimension `units`),
`weighted_categorical_column` over it (linear_model and embedding_column combiners) and
`shared_embedding_columns` of such columns (one shared EmbeddingVariable).

Specification: DeepRec's docs/docs_en/Embedding-Variable.md (its weighted example) and
its feature_column.py / feature_column_v2.py (the linear weights `linear_model/<col>/
weights` made with the column's ev_option; the shared table `<scope>/<shared name>/
embedding_weights`, partitioned by partition_num). Each model is checked against the
same model on categorical_column_with_identity over the same ids: an EmbeddingVariable
must train exactly as a dense table does. Our own tests and values.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

fc = tf.feature_column
pytestmark = pytest.mark.usefixtures("fresh_graph")

# DeepRec's weighted example: 5 examples, ids 1..5, one weight per id.
INDICES = [[0, 0], [0, 1], [1, 1], [2, 2], [3, 3], [4, 3], [4, 4]]
IDS = [1, 3, 2, 3, 4, 5, 3]
WEIGHTS = [2.0, 5.0, 4.0, 8.0, 3.0, 1.0, 2.5]


def _ids(key="col_emb"):
    return {key: tf.SparseTensor(INDICES, tf.constant(IDS, tf.int64), [5, 5])}


def _weights():
    return {"weight": tf.SparseTensor(INDICES, WEIGHTS, [5, 5])}


def _ev_and_identity(partition_num=None, key="col_emb"):
    return (fc.categorical_column_with_embedding(key, dtype=tf.int64,
                                                 partition_num=partition_num),
            fc.categorical_column_with_identity(key, 8))


def _train_both(build, steps=3):
    """Runs `build(col)` for the EV column and the identity column (each in its scope),
    trains each output's sum with Adagrad, returns both outputs."""
    outs, trains = [], []
    for i, col in enumerate(_ev_and_identity(2)):
        with tf.variable_scope(f"m{i}"):
            out = build(col)
        outs.append(out)
        trains.append(tf.train.AdagradOptimizer(0.3).minimize(
            tf.reduce_sum(out * np.linspace(-1, 1, out.shape.as_list()[-1]))))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(trains)
        return sess.run(outs)


def test_linear_model_weights_are_an_embedding_variable_of_units(tmp_path):
    col, _ = _ev_and_identity(partition_num=2)
    cols_to_vars = {}
    logits = fc.linear_model(_ids(), [col], units=3, cols_to_vars=cols_to_vars)
    parts = cols_to_vars[col]
    assert [v.op.name for v in parts] == ["linear_model/col_emb/weights/part_0",
                                          "linear_model/col_emb/weights/part_1"]
    assert all(type(v).__name__ == "EmbeddingVariable" and v._embedding_dim == 3
               for v in parts)
    assert [v.op.name for v in cols_to_vars["bias"]] == ["linear_model/bias_weights"]
    train = tf.train.FtrlOptimizer(0.5).minimize(tf.reduce_sum(logits))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(logits), np.zeros([5, 3]))   # from zeros
        sess.run(train)
        path = tf.train.Saver().save(sess, str(tmp_path / "m.ckpt"))
    # DeepRec's layout; ids spread by id % 2 over the parts, slots beside them.
    keys = {n: tf.train.load_variable(path, n).tolist()
            for n, _ in tf.train.list_variables(path) if n.endswith("weights/part_0-keys")
            or n.endswith("weights/part_1-keys")}
    assert sorted(keys["linear_model/col_emb/weights/part_0-keys"]) == [2, 4]
    assert sorted(keys["linear_model/col_emb/weights/part_1-keys"]) == [1, 3, 5]
    assert "linear_model/col_emb/weights/part_1/Ftrl-values" in dict(
        tf.train.list_variables(path))


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_linear_model_trains_as_an_identity_column(combiner):
    got_ev, got_dense = _train_both(
        lambda col: fc.linear_model(_ids(), [col], units=2, sparse_combiner=combiner))
    np.testing.assert_allclose(got_ev, got_dense, rtol=1e-6)
    assert np.abs(got_ev).max() > 0.1


def test_linear_model_over_string_ids():
    col = fc.categorical_column_with_embedding("word", dtype=tf.string)
    words = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], ["cat", "dog", "cat"], [2, 2])
    logits = fc.linear_model({"word": words}, [col])
    train = tf.train.GradientDescentOptimizer(1.0).minimize(-tf.reduce_sum(logits))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        # d/dw_cat = 2 (it appears twice), d/dw_dog = 1; the bias gets 2.
        np.testing.assert_allclose(sess.run(logits), [[2 + 1 + 2], [2 + 2]])


def test_weighted_column_embeds_with_deeprecs_doc_example():
    # The doc passes the weights as a dense [7, 1] tensor: weight k goes with id k.
    col, _ = _ev_and_identity()
    weighted = fc.weighted_categorical_column(col, "weight")
    feats = dict(_ids(), weight=[[w] for w in WEIGHTS])
    outs = {c: fc.input_layer(feats, [fc.embedding_column(
        weighted, 3, combiner=c, initializer=tf.ones_initializer())])
        for c in ("sum", "mean", "sqrtn")}
    assert "input_layer/col_emb_weighted_by_weight_embedding/embedding_weights" in \
        [v.op.name for v in tf.global_variables()]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(outs)
    per_row = [[2.0, 5.0], [4.0], [8.0], [3.0], [1.0, 2.5]]
    np.testing.assert_allclose(got["sum"][:, 0], [sum(w) for w in per_row])
    np.testing.assert_allclose(got["mean"], np.ones([5, 3]))
    np.testing.assert_allclose(got["sqrtn"][:, 0],
                               [sum(w) / np.sqrt(sum(x * x for x in w)) for w in per_row],
                               rtol=1e-6)


@pytest.mark.parametrize("combiner", ["sum", "sqrtn"])
def test_weighted_column_trains_as_an_identity_column(combiner):
    def build(col):
        weighted = fc.weighted_categorical_column(col, "weight")
        feats = dict(_ids(), **_weights())
        wide = fc.linear_model(feats, [weighted], units=2, sparse_combiner=combiner)
        deep = fc.input_layer(feats, [fc.embedding_column(
            weighted, 2, combiner=combiner, initializer=tf.constant_initializer(0.5))])
        return wide + deep
    got_ev, got_dense = _train_both(build)
    np.testing.assert_allclose(got_ev, got_dense, rtol=1e-6)
    names = [v.op.name for v in tf.global_variables()]
    assert "m0/linear_model/col_emb_weighted_by_weight/weights/part_0" in names


def test_shared_embedding_columns_share_one_embedding_variable():
    a = fc.categorical_column_with_embedding("aaa", dtype=tf.int64, partition_num=2)
    b = fc.categorical_column_with_embedding("bbb", dtype=tf.int64)
    ea, eb = fc.shared_embedding_columns([b, a], 4, initializer=tf.ones_initializer())
    feats = dict(_ids("aaa"), **_ids("bbb"))
    both = fc.input_layer(feats, [ea, eb])
    again = fc.input_layer(feats, [eb])   # another call reuses the same table
    evs = [v for v in tf.global_variables() if type(v).__name__ == "EmbeddingVariable"]
    # The table sits under the shared name; the first column made it (aaa: 2 parts).
    assert [v.op.name for v in evs] == [
        "input_layer/aaa_bbb_shared_embedding/embedding_weights/part_0",
        "input_layer/aaa_bbb_shared_embedding/embedding_weights/part_1"]
    assert len(tf.get_collection("aaa_bbb_shared_embedding")) == 1
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, got_again = sess.run([both, again])
    np.testing.assert_array_equal(got, np.ones([5, 8]))
    np.testing.assert_array_equal(got_again, np.ones([5, 4]))


def test_shared_embedding_trains_as_shared_identity_columns():
    outs, trains = [], []
    for i, make in enumerate([
            lambda k: fc.categorical_column_with_embedding(k, dtype=tf.int64),
            lambda k: fc.categorical_column_with_identity(k, 8)]):
        with tf.variable_scope(f"m{i}"):
            cols = fc.shared_embedding_columns(
                [make("aaa"), make("bbb")], 3, initializer=tf.constant_initializer(0.2),
                shared_embedding_collection_name=f"shared{i}")
            # bbb reads other ids than aaa: the gradients of both land in one table.
            feats = dict(_ids("aaa"), bbb=tf.constant([[7, 1], [2, -1], [6, 6], [5, 0],
                                                       [1, 2]], tf.int64))
            outs.append(fc.input_layer(feats, cols))
        trains.append(tf.train.AdagradOptimizer(0.5).minimize(
            tf.reduce_sum(outs[-1] * np.arange(6))))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(trains)
        got_ev, got_dense = sess.run(outs)
    np.testing.assert_allclose(got_ev, got_dense, rtol=1e-6)
    assert not np.allclose(got_ev, 0.2)


def test_shared_embedding_columns_refuse_mismatched_columns():
    ints = fc.categorical_column_with_embedding("aaa", dtype=tf.int64)
    strings = fc.categorical_column_with_embedding("bbb", dtype=tf.string)
    with pytest.raises(ValueError, match="same dtype"):
        fc.shared_embedding_columns([ints, strings], 4)
    with pytest.raises(ValueError, match="same type"):
        fc.shared_embedding_columns([ints, fc.categorical_column_with_identity("c", 8)], 4)
    # A table of another width already under the shared name is refused at build time.
    fc.input_layer(_ids("aaa"), fc.shared_embedding_columns(
        [ints], 4, shared_embedding_collection_name="s"))
    with pytest.raises(ValueError, match="needs 2"):
        fc.input_layer(_ids("aaa"), fc.shared_embedding_columns(
            [ints], 2, shared_embedding_collection_name="s"))
