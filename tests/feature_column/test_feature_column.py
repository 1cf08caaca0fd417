"""tf.feature_column (TF 1.x v1 semantics): columns, input_layer, linear_model,
make_parse_example_spec.

Specification: tensorflow/python/feature_column/feature_column_test.py (v1 parts), in
our own tests. Ids of hashed/crossed/OOV columns and the input_layer/linear_model values
below were computed by real TF 2.21 (tf.compat.v1.feature_column) on the same features
in a scratch script; the other expectations are worked out by hand.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

fc = tf.feature_column
pytestmark = pytest.mark.usefixtures("graph")


def _features():
    return {
        "city": tf.SparseTensor([[0, 0], [0, 1], [2, 0]], ["paris", "tokyo", "lima"], [3, 2]),
        "uid": tf.constant([[7], [123456], [-1]], dtype=tf.int64),
        "age": tf.constant([[17.], [25.], [60.]]),
        "color": tf.constant([["red"], ["teal"], [""]]),
        "slot": tf.constant([[0], [4], [2]], dtype=tf.int64),
        "word": tf.SparseTensor([[0, 0], [1, 0], [1, 1]], ["a", "b", "c"], [3, 2]),
    }


def _run(t, init=True):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(t)


def _hot(col):
    """(row, bucket) pairs of the column's multi-hot indicator output."""
    dense = _run(fc.input_layer(_features(), [fc.indicator_column(col)]))
    rows, cols = np.nonzero(dense)
    return sorted(zip(rows.tolist(), cols.tolist()))


def test_hash_bucket_ids_equal_tf_for_strings_and_ints():
    # value computed by TF 2.21
    assert _hot(fc.categorical_column_with_hash_bucket("city", 100)) == \
        [(0, 37), (0, 97), (2, 43)]
    # Int ids are hashed as decimal strings; -1 in a dense int input means "missing".
    assert _hot(fc.categorical_column_with_hash_bucket("uid", 50, dtype=tf.int64)) == \
        [(0, 38), (1, 48)]  # value computed by TF 2.21


def test_vocabulary_list_with_oov_buckets_and_empty_string_missing():
    col = fc.categorical_column_with_vocabulary_list("color", ["red", "green"],
                                                     num_oov_buckets=3)
    assert col._num_buckets == 5
    assert _hot(col) == [(0, 0), (1, 3)]  # "teal" -> 3: value computed by TF 2.21


def test_vocabulary_list_default_value_for_unknown():
    col = fc.categorical_column_with_vocabulary_list("color", ["red", "green"],
                                                     default_value=1)
    assert _hot(col) == [(0, 0), (1, 1)]


def test_identity_default_value_replaces_out_of_range_ids():
    col = fc.categorical_column_with_identity("slot", 3, default_value=0)
    assert _hot(col) == [(0, 0), (1, 0), (2, 2)]


def test_identity_without_default_fails_the_run_on_out_of_range_id():
    col = fc.categorical_column_with_identity("slot", 3)
    out = fc.input_layer(_features(), [fc.indicator_column(col)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="slot"):
        _run(out)


def test_bucketized_dense_and_sparse_forms():
    col = fc.bucketized_column(fc.numeric_column("age"), [18., 25., 40.])
    assert col.name == "age_bucketized" and col._num_buckets == 4
    # 17 < 18 -> 0; 25 is a boundary -> bucket above (2); 60 -> 3.
    assert _run(fc.input_layer(_features(), [col])).tolist() == \
        [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    assert _hot(col) == [(0, 0), (1, 2), (2, 3)]


def test_bucketized_multi_dim_ids_are_offset_per_element():
    col = fc.bucketized_column(fc.numeric_column("p", shape=2), [0.])
    ids, _ = col._get_sparse_tensors(fc.builder.FeatureBuilder(
        {"p": tf.constant([[-1., 1.], [1., -1.]])}))
    got = _run(ids, init=False)
    assert got.indices.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert got.values.tolist() == [0, 3, 1, 2]
    assert col._num_buckets == 4


def test_crossed_ids_equal_tf_with_default_and_given_hash_key():
    assert fc.crossed_column(["word", "city"], 1000).name == "city_X_word"
    assert _hot(fc.crossed_column(["city", "word"], 1000)) == [(0, 600), (0, 906)]
    age_b = fc.bucketized_column(fc.numeric_column("age"), [18., 25., 40.])
    # value computed by TF 2.21 (hash_key=12345, a bucketized column crossed with strings)
    assert _hot(fc.crossed_column([age_b, "word"], 77, hash_key=12345)) == \
        [(0, 19), (1, 9), (1, 67)]


def test_numeric_column_shape_default_and_normalizer():
    col = fc.numeric_column("x", shape=[2], default_value=1., normalizer_fn=lambda t: t * 2.)
    assert col.shape == (2,) and col.default_value == (1., 1.)
    out = fc.input_layer({"x": tf.constant([[1., 2.], [3., 4.]])}, [col])
    assert _run(out).tolist() == [[2., 4.], [6., 8.]]
    ints = fc.input_layer({"n": tf.constant([3, 4])}, [fc.numeric_column("n")])
    assert _run(ints).tolist() == [[3.], [4.]]  # rank 1 becomes [batch, 1], cast to float


@pytest.mark.transports()
def test_input_layer_orders_by_name_and_matches_tf():
    age = fc.numeric_column("age")
    age_b = fc.bucketized_column(age, [18., 25., 40.])
    color = fc.categorical_column_with_vocabulary_list("color", ["red", "green"],
                                                       num_oov_buckets=3)
    emb = fc.embedding_column(color, 2, combiner="sum",
                              initializer=tf.constant_initializer(0.5))
    slot = fc.indicator_column(fc.categorical_column_with_identity("slot", 3, default_value=0))
    cols_to_vars: dict = {}
    net = fc.input_layer(_features(), [slot, emb, age_b, age], cols_to_vars=cols_to_vars)
    # value computed by TF 2.21: age | age_bucketized | color_embedding | slot_indicator
    assert _run(net).tolist() == [
        [17., 1., 0., 0., 0., .5, .5, 1., 0., 0.],
        [25., 0., 0., 1., 0., .5, .5, 1., 0., 0.],
        [60., 0., 0., 0., 1., 0., 0., 0., 0., 1.]]
    assert [v.name for v in cols_to_vars[emb]] == \
        ["input_layer/color_embedding/embedding_weights:0"]
    assert cols_to_vars[emb][0].shape.as_list() == [5, 2]
    assert cols_to_vars[age] == []


def test_embedding_column_combiners_and_max_norm():
    col = fc.categorical_column_with_identity("i", 4)
    sp = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([0, 3, 1], tf.int64), [2, 2])
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    outs = {c: fc.input_layer({"i": sp}, [fc.embedding_column(
        col, 2, combiner=c, initializer=tf.constant_initializer(table))]) for c in
        ("sum", "mean", "sqrtn")}
    got = _run(outs)
    np.testing.assert_allclose(got["sum"], [[6., 8.], [2., 3.]])
    np.testing.assert_allclose(got["mean"], [[3., 4.], [2., 3.]])
    np.testing.assert_allclose(got["sqrtn"], [[6 / np.sqrt(2), 8 / np.sqrt(2)], [2., 3.]],
                               rtol=1e-6)
    clipped = fc.input_layer({"i": sp}, [fc.embedding_column(
        col, 2, combiner="sum", max_norm=1., initializer=tf.constant_initializer(table))])
    row1 = _run(clipped)[1]
    np.testing.assert_allclose(row1, np.array([2., 3.]) / np.sqrt(13.), rtol=1e-6)


def test_embedding_column_not_trainable_and_default_initializer_scale():
    col = fc.embedding_column(fc.categorical_column_with_identity("i", 1000), 4,
                              trainable=False)
    fc.input_layer({"i": tf.constant([[1]], tf.int64)}, [col])
    assert tf.trainable_variables() == []
    (var,) = tf.global_variables()
    w = _run(var)
    assert np.abs(w).max() <= 2 / np.sqrt(4) + 1e-6  # truncated normal, stddev 1/sqrt(dim)
    assert 0.3 < w.std() < 0.6


def test_linear_model_values_and_variable_names_equal_tf():
    age = fc.numeric_column("age")
    age_b = fc.bucketized_column(age, [18., 25., 40.])
    city = fc.categorical_column_with_hash_bucket("city", 100)
    cross = fc.crossed_column(["city", "word"], 1000)
    cols_to_vars: dict = {}
    out = fc.linear_model(_features(), [cross, city, age_b, age], units=2,
                          cols_to_vars=cols_to_vars)
    variables = tf.global_variables()
    assert [(v.name, v.shape.as_list()) for v in variables] == [
        ("linear_model/age/weights:0", [1, 2]),
        ("linear_model/age_bucketized/weights:0", [4, 2]),
        ("linear_model/city/weights:0", [100, 2]),
        ("linear_model/city_X_word/weights:0", [1000, 2]),
        ("linear_model/bias_weights:0", [2])]
    assert cols_to_vars["bias"] == [variables[-1]]
    assert _run(out).tolist() == [[0., 0.], [0., 0.], [0., 0.]]  # zero-initialized
    fill = [tf.assign(v, tf.reshape(tf.cast(tf.range(tf.size(v)), tf.float32), v.shape)
                      * 0.01 + 0.1) for v in variables]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(fill)
        got = sess.run(out)
    # value computed by TF 2.21
    np.testing.assert_allclose(got, [[35.1, 35.33], [2.74, 3.01], [7.22, 7.85]], rtol=1e-5)


def test_linear_model_sparse_combiner_mean():
    col = fc.categorical_column_with_identity("i", 3)
    sp = tf.SparseTensor([[0, 0], [0, 1]], tf.constant([0, 2], tf.int64), [1, 2])
    out = fc.linear_model({"i": sp}, [col], sparse_combiner="mean")
    (w, b) = tf.global_variables()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([tf.assign(w, [[1.], [5.], [3.]]), tf.assign(b, [10.])])
        assert sess.run(out).tolist() == [[12.]]  # mean(1, 3) + 10


def test_input_layer_rejects_categorical_and_missing_features():
    col = fc.categorical_column_with_hash_bucket("city", 10)
    with pytest.raises(ValueError, match="embedding_column or indicator_column"):
        fc.input_layer(_features(), [col])
    with pytest.raises(ValueError, match="nope is not in features dictionary"):
        fc.input_layer(_features(), [fc.numeric_column("nope")])
    with pytest.raises(ValueError, match="SparseTensor is not supported"):
        fc.input_layer(_features(), [fc.numeric_column("city")])
    with pytest.raises(ValueError, match="Duplicate feature column name"):
        fc.linear_model(_features(), [col, col])


@pytest.mark.parametrize("make, match", [
    (lambda: fc.numeric_column("x", shape=[0]), "greater than 0"),
    (lambda: fc.numeric_column("x", dtype=tf.string), "convertible to float"),
    (lambda: fc.numeric_column("x", shape=[2], default_value=[1., 2., 3.]), "default_value"),
    (lambda: fc.categorical_column_with_hash_bucket("x", 0), "at least 1"),
    (lambda: fc.categorical_column_with_hash_bucket("x", 3, dtype=tf.float32),
     "string or integer"),
    (lambda: fc.categorical_column_with_vocabulary_list("x", ["a", "a"]), "Duplicate keys"),
    (lambda: fc.categorical_column_with_vocabulary_list("x", ["a"], default_value=0,
                                                        num_oov_buckets=1), "both"),
    (lambda: fc.categorical_column_with_vocabulary_list("x", ["a"], dtype=tf.int64),
     "do not match"),
    (lambda: fc.categorical_column_with_identity("x", 3, default_value=3), "not in range"),
    (lambda: fc.bucketized_column(fc.numeric_column("x"), [2., 1.]), "sorted"),
    (lambda: fc.bucketized_column(fc.categorical_column_with_identity("x", 3), [1.]),
     "numeric_column"),
    (lambda: fc.crossed_column(["a"], 10), "length > 1"),
    (lambda: fc.crossed_column(["a", fc.categorical_column_with_hash_bucket("b", 5)], 10),
     "use the feature name"),
    (lambda: fc.embedding_column(fc.categorical_column_with_identity("x", 3), 0),
     "Invalid dimension"),
    # As TF, the combiner is checked when the embedding is built, not by the column.
    (lambda: fc.input_layer({"x": tf.constant([[1]], tf.int64)}, [fc.embedding_column(
        fc.categorical_column_with_identity("x", 3), 2, combiner="max")]), "combiner"),
])
def test_bad_column_arguments_raise_naming_the_value(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_dtype_mismatch_between_column_and_feature_is_an_error():
    col = fc.categorical_column_with_hash_bucket("uid", 10)  # string column, int feature
    with pytest.raises(ValueError, match="dtype must be compatible"):
        fc.input_layer(_features(), [fc.indicator_column(col)])


def test_make_parse_example_spec():
    age = fc.numeric_column("age", shape=[2], default_value=0.)
    city = fc.categorical_column_with_hash_bucket("city", 10)
    spec = fc.make_parse_example_spec([
        fc.bucketized_column(age, [1.]), fc.embedding_column(city, 3),
        fc.indicator_column(fc.categorical_column_with_identity("slot", 4)),
        fc.crossed_column(["word", fc.categorical_column_with_vocabulary_list(
            "n", [1, 2])], 5)])
    assert spec == {
        "age": tf.FixedLenFeature((2,), tf.float32, (0., 0.)),
        "city": tf.VarLenFeature(tf.string), "slot": tf.VarLenFeature(tf.int64),
        "word": tf.VarLenFeature(tf.string), "n": tf.VarLenFeature(tf.int64)}
    with pytest.raises(ValueError, match="different parse_spec"):
        fc.make_parse_example_spec([fc.numeric_column("k"),
                                    fc.categorical_column_with_hash_bucket("k", 3)])


def test_weight_collections_trainable_and_model_variables_as_tf():
    feats = {"a": tf.constant([[1.]]), "i": tf.constant([[1]], tf.int64)}
    ident = fc.categorical_column_with_identity("i", 3)
    fc.input_layer(feats, [fc.numeric_column("a"), fc.embedding_column(ident, 2)],
                   weight_collections=["mine"])
    fc.linear_model(feats, [fc.numeric_column("a"), ident], weight_collections=["lin"],
                    trainable=False)
    names = {k: [v.name for v in tf.get_collection(k)] for k in
             ("mine", "lin", tf.GraphKeys.MODEL_VARIABLES, tf.GraphKeys.TRAINABLE_VARIABLES,
              tf.GraphKeys.GLOBAL_VARIABLES)}
    emb = "input_layer/i_embedding/embedding_weights:0"
    lin = ["linear_model/a/weights:0", "linear_model/i/weights:0",
           "linear_model/bias_weights:0"]
    assert names == {"mine": [emb], "lin": lin, tf.GraphKeys.MODEL_VARIABLES: [emb] + lin,
                     tf.GraphKeys.TRAINABLE_VARIABLES: [emb],
                     tf.GraphKeys.GLOBAL_VARIABLES: [emb] + lin}  # as TF 2.21 lists them


def test_int_inputs_multi_dim_numeric_and_sqrtn_linear_model_equal_tf():
    # Every expected value below was computed by TF 2.21 on the same graph.
    feats = {
        "i32": tf.constant([[1], [-1], [2]], tf.int32),
        "sint": tf.SparseTensor([[0, 0], [2, 1]], tf.constant([10, 20], tf.int64), [3, 2]),
        "v": tf.constant([[5, -1], [7, 6], [-1, -1]], tf.int64),
        "m": tf.constant([[1., 2., 3., 4.], [5., 6., 7., 8.], [0., 1., 0., 1.]]),
        "s": tf.SparseTensor([[0, 0], [0, 1], [1, 0]], ["x", "y", "x"], [3, 2]),
    }
    ind = fc.indicator_column
    m22 = fc.numeric_column("m", shape=[2, 2])
    s_vocab = fc.categorical_column_with_vocabulary_list("s", ["x", "y"])
    outs = {
        "ident32": fc.input_layer(feats, [ind(fc.categorical_column_with_identity("i32", 3))]),
        "hashint": fc.input_layer(feats, [ind(fc.categorical_column_with_hash_bucket(
            "sint", 13, dtype=tf.int64))]),
        "vocint": fc.input_layer(feats, [ind(fc.categorical_column_with_vocabulary_list(
            "v", [6, 5], num_oov_buckets=2))]),
        "m22": fc.input_layer(feats, [m22]),
        "emb": fc.input_layer(feats, [fc.embedding_column(
            s_vocab, 3, combiner="mean",
            initializer=tf.constant_initializer(np.arange(6.).reshape(2, 3)))]),
        "lin": fc.linear_model(feats, [m22, s_vocab], units=3, sparse_combiner="sqrtn"),
    }
    fill = [tf.assign(v, tf.reshape(tf.cast(tf.range(tf.size(v)), tf.float32), v.shape)
                      * 0.5 + 1.) for v in tf.global_variables()
            if v.name.startswith("linear_model")]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(fill)
        got = {k: np.round(v, 4).tolist() for k, v in sess.run(outs).items()}
    assert got["ident32"] == [[0., 1., 0.], [0., 0., 0.], [0., 0., 1.]]
    assert [c.tolist() for c in np.nonzero(got["hashint"])] == [[0, 2], [1, 4]]
    assert got["vocint"] == [[0., 1., 0., 0.], [1., 0., 1., 0.], [0., 0., 0., 0.]]
    assert got["m22"] == [[1., 2., 3., 4.], [5., 6., 7., 8.], [0., 1., 0., 1.]]
    assert got["emb"] == [[1.5, 2.5, 3.5], [0., 1., 2.], [0., 0., 0.]]  # empty row -> 0
    np.testing.assert_allclose(got["lin"], [[43.4749, 49.682, 55.8891], [94., 108., 122.],
                                            [9., 10.5, 12.]], rtol=1e-5)
