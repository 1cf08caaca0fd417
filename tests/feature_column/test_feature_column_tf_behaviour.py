"""Feature columns as TF 1.15's feature_column.py behaves: features given as
SparseTensorValues or rank-1 sparse tensors, TF's IdWeightPair from categorical
columns, and TF's wording for bad keys, bucket sizes, column containers and
batch sizes that differ between features.

Specification: TF 1.15 python/feature_column/feature_column.py (_LazyBuilder,
_CategoricalColumn, _verify_static_batch_size_equality).
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.feature_column.builder import FeatureBuilder

fc = tf.feature_column
pytestmark = pytest.mark.usefixtures("graph")


@pytest.mark.transports()
def test_sparse_tensor_value_features():
    col = fc.categorical_column_with_identity("ids", num_buckets=4)
    emb = fc.embedding_column(col, 2, combiner="sum",
                              initializer=tf.constant_initializer(
                                  np.arange(8, dtype=np.float32).reshape(4, 2)))
    ids = tf.SparseTensorValue(indices=((0, 0), (1, 0), (1, 1)), values=(3, 0, 1),
                               dense_shape=(2, 2))
    net = fc.input_layer({"ids": ids}, [emb])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(net), [[6., 7.], [2., 4.]])


def test_rank1_sparse_and_rank0_features():
    words = tf.SparseTensor(indices=[[0], [2]], values=["a", "b"], dense_shape=[3])
    col = fc.categorical_column_with_vocabulary_list("w", ["a", "b"])
    ids = col._get_sparse_tensors(FeatureBuilder({"w": words})).id_tensor
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        got = sess.run(ids)
    np.testing.assert_array_equal(got.indices, [[0, 0], [2, 0]])
    np.testing.assert_array_equal(got.dense_shape, [3, 1])
    np.testing.assert_array_equal(got.values, [0, 1])
    with pytest.raises(ValueError, match=r"Feature \(key: x\) cannot have rank 0"):
        fc.input_layer({"x": tf.constant(1.)}, [fc.numeric_column("x")])
    with pytest.raises(TypeError, match='"key" must be either a "str" or "_FeatureColumn"'):
        FeatureBuilder({"x": [1.]}).get(3)


def test_categorical_columns_give_id_weight_pairs():
    builder = FeatureBuilder({"a": tf.constant([[1], [2]], tf.int64),
                              "w": tf.constant([[0.5], [2.]])})
    plain = fc.categorical_column_with_identity("a", 3)
    weighted = fc.weighted_categorical_column(plain, "w")
    bucketized = fc.bucketized_column(fc.numeric_column("w"), [1.])
    for col, has_weights in ((plain, False), (weighted, True), (bucketized, False)):
        pair = col._get_sparse_tensors(builder, weight_collections=None, trainable=None)
        assert isinstance(pair, plain.IdWeightPair)
        assert isinstance(pair.id_tensor, tf.SparseTensor)
        assert (pair.weight_tensor is not None) == has_weights


def test_tf_wording_for_bad_columns():
    for make in (lambda: fc.numeric_column(("aaa",)),
                 lambda: fc.categorical_column_with_identity(("aaa",), 3),
                 lambda: fc.categorical_column_with_hash_bucket(("aaa",), 3)):
        with pytest.raises(ValueError, match="key must be a string"):
            make()
    with pytest.raises(ValueError, match="hash_bucket_size must be set"):
        fc.categorical_column_with_hash_bucket("aaa", None)
    with pytest.raises(ValueError, match="Expected feature_columns to be iterable, found dict"):
        fc.input_layer({"a": [[1.]]}, {"a": fc.numeric_column("a")})


def test_static_batch_sizes_must_agree():
    features = {"p1": [[1.], [2.], [3.]], "p2": [[1.], [2.]]}
    cols = [fc.numeric_column("p1"), fc.numeric_column("p2")]
    with pytest.raises(ValueError, match=r"Batch size \(first dimension\) of each feature "
                                         r"must be same\. Batch size of columns \(p1, p2\): "
                                         r"\(3, 2\)"):
        fc.input_layer(features, cols)
    with pytest.raises(ValueError, match=r"Batch size \(first dimension\)"):
        fc.linear_model(features, cols)


def test_numeric_column_shape_and_default_checks():
    assert fc.numeric_column("a", shape=[2, 3], default_value=2.).default_value == \
        ((2., 2., 2.), (2., 2., 2.))
    assert fc.numeric_column("a", shape=[2], default_value=[1, 2],
                             dtype=tf.int32).default_value == (1, 2)
    with pytest.raises(TypeError, match="shape dimensions must be integer"):
        fc.numeric_column("a", shape=[1.0])
    with pytest.raises(ValueError, match="shape dimensions must be greater than 0"):
        fc.numeric_column("a", shape=[0])
    with pytest.raises(TypeError, match="default_value must be compatible with dtype"):
        fc.numeric_column("a", shape=[2], default_value=[1, 2.], dtype=tf.int32)
    with pytest.raises(TypeError, match="default_value must be compatible with dtype"):
        fc.numeric_column("a", default_value=["string"])
    with pytest.raises(ValueError, match="The shape of default_value must be equal"):
        fc.numeric_column("a", shape=[2], default_value=[1., 2., 3.])
    for bad in (None, 1., [1, 0], [1, 1]):
        with pytest.raises(ValueError, match="boundaries must be a sorted list"):
            fc.bucketized_column(fc.numeric_column("a"), boundaries=bad)
    with pytest.raises(ValueError, match="boundaries must not be empty"):  # TF 1.15's v2
        fc.bucketized_column(fc.numeric_column("a"), boundaries=None)


def test_nested_crosses_cross_their_leaves():
    b = fc.bucketized_column(fc.numeric_column("a", dtype=tf.int32), [0, 1])
    inner = fc.crossed_column(["d2", "c"], 10)
    outer = fc.crossed_column([inner, "d1", b], 10)
    assert outer.name == "a_bucketized_X_c_X_d1_X_d2"
    flat = fc.crossed_column(["d2", "c", "d1", b], 10)  # the leaves, in order
    features = {"a": tf.constant([[0], [1]], tf.int32),
                "c": tf.constant([["x"], ["y"]]), "d1": tf.constant([["p"], ["q"]]),
                "d2": tf.constant([["m"], ["n"]])}
    nested_ids = outer._get_sparse_tensors(FeatureBuilder(features)).id_tensor
    flat_ids = flat._get_sparse_tensors(FeatureBuilder(features)).id_tensor
    with tf.Session() as sess:
        # The inner cross's hash_bucket_size plays no part: the same ids as one cross.
        np.testing.assert_array_equal(sess.run(nested_ids).values, sess.run(flat_ids).values)
    weighted = fc.weighted_categorical_column(fc.categorical_column_with_identity("i", 3),
                                              "w")
    crossed = fc.crossed_column([weighted, "c"], 10)
    with pytest.raises(ValueError, match="crossed_column does not support weight_tensor"):
        fc.input_layer({"i": tf.constant([[1]], tf.int64), "w": tf.constant([[1.]]),
                        "c": tf.constant([["x"]])}, [fc.indicator_column(crossed)])


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.transports()
def test_embedding_initialized_from_a_checkpoint(tmp_path, shared):
    path = str(tmp_path / "emb")
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    with tf.Graph().as_default():
        v = tf.Variable(table, name="my_embedding")
        with tf.Session() as sess:
            sess.run(v.initializer)
            tf.train.Saver([v]).save(sess, path)
    ids = fc.categorical_column_with_identity("ids", 3)
    args = dict(ckpt_to_load_from=path, tensor_name_in_ckpt="my_embedding")
    col = fc.shared_embedding_columns([ids], 2, **args)[0] if shared else \
        fc.embedding_column(ids, 2, **args)
    assert col.ckpt_to_load_from == path and col.tensor_name_in_ckpt == "my_embedding"
    net = fc.input_layer({"ids": tf.constant([[2], [0]], tf.int64)}, [col])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(net), [[4., 5.], [0., 1.]])
    with pytest.raises(ValueError, match="Must specify both"):
        fc.embedding_column(ids, 2, ckpt_to_load_from=path)


def test_column_variables_are_global_and_in_the_given_collections():
    col = fc.embedding_column(fc.categorical_column_with_identity("aaa", 3), 2)
    col._get_dense_tensor(FeatureBuilder({"aaa": tf.constant([[1]], tf.int64)}),
                          weight_collections=("my_vars",))
    assert [v.name for v in tf.global_variables()] == ["embedding_weights:0"]
    assert [v.name for v in tf.get_collection("my_vars")] == ["embedding_weights:0"]


def test_vocabulary_dtypes_and_input_dtype_errors():
    col = fc.categorical_column_with_vocabulary_list(
        "v", np.array([30, 35, 11], dtype=np.int32))
    assert col.dtype == tf.int32  # the vocabulary's own dtype, as TF
    ids = col._get_sparse_tensors(FeatureBuilder(
        {"v": tf.SparseTensorValue(((0, 0), (1, 0)), np.array([11, 99], np.int32),
                                   (2, 1))})).id_tensor
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        assert sess.run(ids).values.tolist() == [2, -1]
    with pytest.raises(ValueError, match="vocabulary dtype must be string or integer"):
        fc.categorical_column_with_vocabulary_list("v", (12., 24.))
    floats = {"x": tf.SparseTensor([[0, 0]], [1.5], [1, 1])}
    with pytest.raises(ValueError, match="input_tensor dtype must be string or integer"):
        fc.categorical_column_with_hash_bucket("x", 10)._get_sparse_tensors(
            FeatureBuilder(floats))
    with pytest.raises(ValueError, match="Invalid input, not integer"):
        fc.categorical_column_with_identity("x", 3)._get_sparse_tensors(
            FeatureBuilder({"x": tf.SparseTensor([[0, 0]], ["a"], [1, 1])}))


def test_indicator_shape_and_linear_model_of_rank3_ids():
    col = fc.indicator_column(fc.categorical_column_with_hash_bucket("a", 4))
    assert col._variable_shape.as_list() == [1, 4]
    wire = fc.categorical_column_with_identity("w", 4)
    ids = tf.sparse_placeholder(tf.int64)
    out = fc.linear_model({"w": ids}, [wire])
    value = tf.SparseTensorValue([[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 0, 1]],
                                 [2, 0, 3, 2], [2, 2, 2])
    var = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, "linear_model/w/")[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(var.assign([[10.], [100.], [1000.], [10000.]]))
        # Every id of an example counts, whatever the rank of the ids.
        np.testing.assert_allclose(sess.run(out, {ids: value}), [[1010.], [11000.]])


def test_weights_pair_with_ids_by_position_as_tf():
    ids = fc.categorical_column_with_identity("ids", 4)
    col = fc.weighted_categorical_column(ids, "w")
    features = {"ids": tf.SparseTensor([[0, 0], [1, 0], [1, 1]],
                                       tf.constant([2, 0, 3], tf.int64), [2, 2]),
                # Dense weights of another layout: the k-th weight goes with the k-th id.
                "w": tf.constant([[1., 1., -1.]])}
    out = fc.linear_model(features, [col])
    var = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, "linear_model/ids_weighted_by_w/")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(var[0].assign([[10.], [100.], [1000.], [10000.]]))
        np.testing.assert_allclose(sess.run(out), [[1000.], [-9990.]])
    with tf.Graph().as_default():
        fewer = {"ids": tf.SparseTensor([[0, 0], [1, 0], [1, 1]],
                                        tf.constant([2, 0, 3], tf.int64), [2, 2]),
                 "w": tf.constant([[1., 1.]])}
        out = fc.linear_model(fewer, [col])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError, match="Incompatible shapes"):
                sess.run(out)


@pytest.mark.transports()
def test_input_layer_reports_each_columns_output():
    a, b = fc.numeric_column("a"), fc.numeric_column("b", shape=[2])
    parts = {}
    net = fc.input_layer({"a": [[1.], [2.]], "b": [[3., 4.], [5., 6.]]}, [b, a],
                         cols_to_output_tensors=parts)
    with tf.Session() as sess:
        got_net, got_a, got_b = sess.run([net, parts[a], parts[b]])
    np.testing.assert_allclose(got_a, [[1.], [2.]])
    np.testing.assert_allclose(got_b, [[3., 4.], [5., 6.]])
    np.testing.assert_allclose(got_net, [[1., 3., 4.], [2., 5., 6.]])


@pytest.mark.transports()
def test_features_of_unknown_rank():
    price = tf.placeholder(tf.float32)  # rank known only when fed
    net = fc.input_layer({"price": price}, [fc.numeric_column("price")])
    assert net.shape.as_list() == [None, 1]
    words = tf.sparse_placeholder(tf.string)
    col = fc.indicator_column(fc.categorical_column_with_vocabulary_list("w", ["a", "b"]))
    multi_hot = fc.input_layer({"w": words}, [col])
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_allclose(sess.run(net, {price: [1., 2.]}), [[1.], [2.]])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Feature \(key: price\) cannot have rank 0"):
            sess.run(net, {price: np.array(1.)})
        got = sess.run(multi_hot, {words: tf.SparseTensorValue([[0], [2]], ["a", "b"], [3])})
        np.testing.assert_allclose(got, [[1., 0.], [0., 0.], [0., 1.]])


def test_public_column_properties_of_tf_1_15():
    # tf.feature_column's columns in TF 1.15 also carry the v2 public properties.
    ident = fc.categorical_column_with_identity("i", 4)
    cases = [(fc.categorical_column_with_hash_bucket("h", 5), 5),
             (fc.categorical_column_with_vocabulary_list("v", ["a", "b"],
                                                         num_oov_buckets=1), 3),
             (fc.crossed_column(["a", "b"], 7), 7),
             (fc.weighted_categorical_column(ident, "w"), 4),
             (fc.bucketized_column(fc.numeric_column("x"), [1., 2.]), 3), (ident, 4)]
    for col, buckets in cases:
        assert col.num_buckets == buckets == col._num_buckets
        assert col.parse_example_spec == col._parse_example_spec
    for col, shape in ((fc.numeric_column("x", shape=[2]), [2]),
                       (fc.indicator_column(ident), [1, 4]),
                       (fc.embedding_column(ident, 3), [3])):
        assert col.variable_shape.as_list() == shape
        assert col.parse_example_spec == col._parse_example_spec


def test_add_n_does_not_broadcast_so_batch_sizes_must_agree_at_run_time():
    # linear_model sums the columns with AddN; features fed with different batch sizes
    # fail the run in TF's words instead of broadcasting.
    a, b = tf.placeholder(tf.float32, [None, 1]), tf.placeholder(tf.float32, [None, 1])
    out = fc.linear_model({"a": a, "b": b}, [fc.numeric_column("a"), fc.numeric_column("b")])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out, {a: [[1.]], b: [[2.]]}).shape == (1, 1)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"must have the same size and shape.  Input 0: \[3,1\] != "
                                 r"input 1: \[1,1\]"):
            sess.run(out, {a: [[1.], [2.], [3.]], b: [[1.]]})


def test_indicator_of_a_weighted_column_sums_weights_per_bucket():
    ids = fc.categorical_column_with_vocabulary_list("ids", ("a", "b", "c"))
    indicator = fc.indicator_column(fc.weighted_categorical_column(ids, "weights"))
    full = fc.input_layer({"ids": tf.constant([["c", "b", "a", "c"]]),
                           "weights": tf.constant([[2., 4., 6., 1.]])}, [indicator])
    missing = fc.input_layer({"ids": tf.constant([["c", "b", "unknown"]]),
                              "weights": tf.constant([[2., 4., 6.]])}, [indicator])
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        np.testing.assert_allclose(sess.run(full), [[6., 4., 3.]])  # c: 2 + 1
        np.testing.assert_allclose(sess.run(missing), [[0., 4., 2.]])  # 'unknown' drops out


def test_transform_outputs_and_weight_checks_follow_tf():
    ids = fc.categorical_column_with_identity("ids", 3)
    builder = FeatureBuilder({"ids": tf.SparseTensor([[0, 0]], tf.constant([2], tf.int64),
                                                     [1, 1])})
    # An embedding column's transformation is its categorical column's output.
    assert builder.get(fc.embedding_column(ids, 2)) is builder.get(ids)
    weighted = fc.weighted_categorical_column(ids, "values")
    strings = {"ids": tf.SparseTensor([[0, 0]], ["x"], [1, 1])}
    with pytest.raises(ValueError, match="values is not in features dictionary"):
        FeatureBuilder(strings).get(weighted)  # weights first, as TF
    with pytest.raises(ValueError, match="Bad dtype"):
        FeatureBuilder(dict(strings, values=tf.constant([[1]]))).get(weighted)
