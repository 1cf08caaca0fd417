"""categorical_column_with_vocabulary_file, weighted_categorical_column and
shared_embedding_columns: ids, weighted sums and shared variables against hand-computed
values (cases modelled on TF 1.x feature_column_test.py), and a wide & deep model using
them, fed by tf.parse_example, that trains.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.feature_column.more_columns import (
    categorical_column_with_vocabulary_file, shared_embedding_columns,
    weighted_categorical_column)
from tensorweave.kernels.fingerprint import fingerprint64

fc = tf.feature_column


def _write(tmp_path, name, lines, trailing_newline=True):
    path = tmp_path / name
    path.write_text("\n".join(lines) + ("\n" if trailing_newline else ""))
    return str(path)


def _oov(key, vocab_size, buckets):
    return vocab_size + fingerprint64(str(key).encode()) % buckets


def _sp(indices, values, shape, dtype=None):
    return tf.SparseTensor(indices=np.array(indices, np.int64),
                           values=np.array(values, dtype=dtype),
                           dense_shape=np.array(shape, np.int64))


def _ids(col, features):
    """The column's sparse ids, evaluated after the table initializers ran."""
    from tensorweave.feature_column.builder import FeatureBuilder
    ids, _ = col._get_sparse_tensors(FeatureBuilder(features))
    with tf.Session() as sess:
        sess.run(tf.tables_initializer())
        return sess.run(ids)


WIRE = ("marlo", "skywalker", "omar", "heisenberg")
WIRE_INDICES = ((0, 0), (1, 0), (1, 1), (2, 0))


@pytest.fixture
def wire_vocab(tmp_path):
    return _write(tmp_path, "wire.txt", ["omar", "stringer", "marlo"])


# ---- vocabulary file --------------------------------------------------------------------
def test_vocabulary_file_ids_without_oov_buckets(graph, wire_vocab):
    col = categorical_column_with_vocabulary_file("wire", wire_vocab)
    assert col.name == "wire" and col._num_buckets == 3  # size counted from the file
    assert col._parse_example_spec == {"wire": tf.VarLenFeature(tf.string)}
    got = _ids(col, {"wire": _sp(WIRE_INDICES, WIRE, (3, 2), object)})
    np.testing.assert_array_equal(got.values, [2, -1, 0, -1])
    np.testing.assert_array_equal(got.indices, WIRE_INDICES)
    np.testing.assert_array_equal(got.dense_shape, [3, 2])


def test_vocabulary_file_oov_buckets_as_tf(graph, wire_vocab):
    col = categorical_column_with_vocabulary_file("wire", wire_vocab, num_oov_buckets=100)
    assert col._num_buckets == 103
    got = _ids(col, {"wire": _sp(WIRE_INDICES, WIRE, (3, 2), object)})
    # 33 and 62 are the ids TF 1.x's own test expects for these words.
    np.testing.assert_array_equal(got.values, [2, 33, 0, 62])
    assert got.values[1] == _oov("skywalker", 3, 100)


def test_vocabulary_size_truncates_and_default_value(graph, wire_vocab, tmp_path):
    short = categorical_column_with_vocabulary_file("wire", wire_vocab, vocabulary_size=2)
    assert short._num_buckets == 2
    feats = {"wire": _sp(WIRE_INDICES, WIRE, (3, 2), object)}
    np.testing.assert_array_equal(_ids(short, feats).values, [-1, -1, 0, -1])  # marlo cut
    short_oov = categorical_column_with_vocabulary_file("wire", wire_vocab, vocabulary_size=2,
                                                        num_oov_buckets=5)
    np.testing.assert_array_equal(_ids(short_oov, feats).values,
                                  [_oov("marlo", 2, 5), _oov("skywalker", 2, 5), 0,
                                   _oov("heisenberg", 2, 5)])
    dflt = categorical_column_with_vocabulary_file("wire", wire_vocab, default_value=2)
    np.testing.assert_array_equal(_ids(dflt, feats).values, [2, 2, 0, 2])
    # A last line with no newline still counts, as TF counts lines.
    no_nl = _write(tmp_path, "no_nl.txt", ["a", "b"], trailing_newline=False)
    assert categorical_column_with_vocabulary_file("x", no_nl)._num_buckets == 2


def test_vocabulary_file_int64_keys(graph, tmp_path):
    path = _write(tmp_path, "warriors.txt", ["30", "35", "11", "23", "22"])
    col = categorical_column_with_vocabulary_file("wire", path, dtype=tf.int64)
    assert col._parse_example_spec == {"wire": tf.VarLenFeature(tf.int64)}
    feats = {"wire": _sp(((0, 0), (1, 0), (1, 1), (2, 0)), (11, 100, 30, 22), (3, 2),
                         np.int64)}
    np.testing.assert_array_equal(_ids(col, feats).values, [2, -1, 0, 4])
    # int32 inputs (and a dense tensor, -1 meaning missing) go through int64 keys too.
    col32 = categorical_column_with_vocabulary_file("wire", path, dtype=tf.int32,
                                                    num_oov_buckets=7)
    got = _ids(col32, {"wire": tf.constant([[11, -1], [100, 30]], tf.int32)})
    np.testing.assert_array_equal(got.indices, [[0, 0], [1, 0], [1, 1]])
    np.testing.assert_array_equal(got.values, [2, _oov(100, 5, 7), 0])
    with pytest.raises(ValueError, match="dtype must be compatible"):
        _ids(col, {"wire": _sp(((0, 0),), ("x",), (1, 1), object)})


def test_vocabulary_file_errors(graph, wire_vocab, tmp_path):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(ValueError, match="nope.txt in wire does not exist"):
        categorical_column_with_vocabulary_file("wire", missing)
    with pytest.raises(ValueError, match="Missing vocabulary_file"):
        categorical_column_with_vocabulary_file("wire", "")
    with pytest.raises(ValueError, match="Invalid vocabulary_size"):
        categorical_column_with_vocabulary_file("wire", wire_vocab, vocabulary_size=0)
    with pytest.raises(ValueError, match="both num_oov_buckets and default_value"):
        categorical_column_with_vocabulary_file("wire", wire_vocab, num_oov_buckets=1,
                                                default_value=0)
    with pytest.raises(ValueError, match="Invalid num_oov_buckets"):
        categorical_column_with_vocabulary_file("wire", wire_vocab, num_oov_buckets=-1)
    with pytest.raises(ValueError, match="dtype"):
        categorical_column_with_vocabulary_file("wire", wire_vocab, dtype=tf.float32)
    # With a size the file is only read by the table initializer (as TF): its error
    # names the file.
    late = categorical_column_with_vocabulary_file("wire", missing, vocabulary_size=3)
    with pytest.raises(tf.errors.NotFoundError, match="nope.txt"):
        _ids(late, {"wire": _sp(((0, 0),), ("omar",), (1, 1), object)})


@pytest.mark.transports()
def test_vocabulary_file_in_input_layer_and_monitored_session(graph, wire_vocab):
    col = categorical_column_with_vocabulary_file("wire", wire_vocab, num_oov_buckets=1)
    net = fc.input_layer({"wire": tf.constant([["omar"], ["marlo"], ["zzz"]])},
                         [fc.indicator_column(col)])
    # The Scaffold's local init op runs the table initializers.
    with tf.train.MonitoredTrainingSession() as sess:
        got = sess.run(net)
    np.testing.assert_array_equal(got, [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


# ---- weighted categorical -----------------------------------------------------------------
IDS = ((0, 0), (1, 0), (1, 1))


def _weighted_features(weight_indices=IDS, weights=(.5, 1., .1)):
    return {"ids": _sp(IDS, (0, 2, 1), (2, 2), np.int64),
            "values": _sp(weight_indices, weights, (2, 2), np.float32)}


def test_weighted_column_properties():
    ids = fc.categorical_column_with_identity("ids", 3)
    col = weighted_categorical_column(ids, "values")
    assert col.name == "ids_weighted_by_values"
    assert col._num_buckets == 3
    assert col._parse_example_spec == {"ids": tf.VarLenFeature(tf.int64),
                                       "values": tf.VarLenFeature(tf.float32)}
    with pytest.raises(ValueError, match="already exists"):
        fc.make_parse_example_spec([weighted_categorical_column(ids, "ids")])
    with pytest.raises(ValueError, match="not convertible to float"):
        weighted_categorical_column(ids, "values", dtype=tf.string)
    with pytest.raises(ValueError, match="categorical column"):
        weighted_categorical_column(fc.numeric_column("x"), "values")


def test_weighted_column_linear_model(graph):
    col = weighted_categorical_column(fc.categorical_column_with_identity("ids", 3), "values")
    cols_to_vars: dict = {}
    pred = fc.linear_model(_weighted_features(), [col], cols_to_vars=cols_to_vars)
    (w,) = cols_to_vars[col]
    assert w.name == "linear_model/ids_weighted_by_values/weights:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(pred), [[0.], [0.]])
        sess.run(w.assign([[1.], [2.], [3.]]))
        # row 0: .5 * w[0]; row 1: 1 * w[2] + .1 * w[1]
        np.testing.assert_allclose(sess.run(pred), [[.5], [3.2]], rtol=1e-6)


TABLE = np.array([[1., 2.], [3., 5.], [7., 11.]], np.float32)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.transports()
def test_weighted_column_embedding_combiners(graph, combiner):
    col = weighted_categorical_column(fc.categorical_column_with_identity("ids", 3), "values")
    emb = fc.embedding_column(col, 2, combiner=combiner,
                              initializer=tf.constant_initializer(TABLE))
    net = fc.input_layer(_weighted_features(), [emb])
    row0 = .5 * TABLE[0]
    row1 = 1. * TABLE[2] + .1 * TABLE[1]
    denom = {"sum": (1., 1.), "mean": (.5, 1.1),
             "sqrtn": (.5, math.sqrt(1. + .01))}[combiner]
    # The same as tf.nn.embedding_lookup_sparse with sp_weights.
    direct = tf.nn.embedding_lookup_sparse(tf.constant(TABLE),
                                           _weighted_features()["ids"],
                                           _weighted_features()["values"], combiner=combiner)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, want = sess.run([net, direct])
    np.testing.assert_allclose(got, [row0 / denom[0], row1 / denom[1]], rtol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_weighted_column_dense_inputs(graph):
    col = weighted_categorical_column(fc.categorical_column_with_identity("ids", 3), "values")
    pred = fc.linear_model({"ids": tf.constant([[0, 2], [1, -1]], tf.int64),
                            "values": tf.constant([[2., 3.], [4., 0.]])}, [col])
    w = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, "linear_model/ids_weighted")[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(w.assign([[1.], [10.], [100.]]))
        np.testing.assert_allclose(sess.run(pred), [[302.], [40.]])


def test_weighted_column_mismatched_indices(graph):
    col = weighted_categorical_column(fc.categorical_column_with_identity("ids", 3), "values")
    w_idx = tf.placeholder(tf.int64, [None, 2])
    w_val = tf.placeholder(tf.float32, [None])
    feats = {"ids": _sp(IDS, (0, 2, 1), (2, 2), np.int64),
             "values": tf.SparseTensor(w_idx, w_val, tf.constant([2, 3], tf.int64))}
    pred = fc.linear_model(feats, [col])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(pred, {w_idx: IDS, w_val: [1., 1., 1.]}),
                                   [[0.], [0.]])
        # As TF, weight k goes with id k whatever the weights' own positions.
        np.testing.assert_allclose(
            sess.run(pred, {w_idx: ((0, 0), (1, 0), (1, 2)), w_val: [1., 1., 1.]}),
            [[0.], [0.]])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Incompatible shapes.*ids 'ids' and weights 'values'"):
            sess.run(pred, {w_idx: ((0, 0), (1, 0)), w_val: [1., 1.]})  # fewer weights
    # Counts known to differ at graph construction fail there, as TF's shape check.
    with pytest.raises(ValueError, match="Incompatible shapes.*ids 'ids' and weights"):
        fc.linear_model(_weighted_features(((0, 0), (1, 0)), (.5, 1.)), [col])


def test_weighted_column_bad_weight_dtype(graph):
    col = weighted_categorical_column(fc.categorical_column_with_identity("ids", 3), "values")
    feats = _weighted_features()
    feats["values"] = _sp(IDS, (1, 2, 3), (2, 2), np.int64)
    with pytest.raises(ValueError, match="Bad dtype, expected float32"):
        fc.linear_model(feats, [col])


# ---- shared embeddings ------------------------------------------------------------------
def _shared(dimension=2, **kw):
    a = fc.categorical_column_with_identity("aaa", 3)
    b = fc.categorical_column_with_identity("bbb", 3)
    return shared_embedding_columns(
        [b, a], dimension, initializer=tf.constant_initializer(TABLE), **kw)


@pytest.mark.transports()
def test_shared_embedding_one_variable_same_vectors_and_gradients(graph):
    emb_b, emb_a = _shared()
    assert (emb_a.name, emb_b.name) == ("aaa_shared_embedding", "bbb_shared_embedding")
    aaa = tf.placeholder(tf.int64, [None, 1])
    bbb = tf.placeholder(tf.int64, [None, 1])
    net = fc.input_layer({"aaa": aaa, "bbb": bbb}, [emb_b, emb_a])
    (var,) = tf.global_variables()
    assert var.name == "input_layer/aaa_bbb_shared_embedding/embedding_weights:0"
    assert var.shape.as_list() == [3, 2]
    train = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(net))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(net, {aaa: [[0], [1]], bbb: [[1], [2]]})
        # Columns in name order: aaa's vector then bbb's, from the one table.
        np.testing.assert_allclose(got, [np.r_[TABLE[0], TABLE[1]],
                                         np.r_[TABLE[1], TABLE[2]]])
        same = sess.run(net, {aaa: [[2]], bbb: [[2]]})
        np.testing.assert_allclose(same[0, :2], same[0, 2:])
        sess.run(train, {aaa: [[0], [1]], bbb: [[1], [2]]})
        # Row 1 got a gradient of 1 from each column, rows 0 and 2 one each.
        np.testing.assert_allclose(sess.run(var), TABLE - [[1.], [2.], [1.]])


def test_shared_embedding_reused_across_input_layers(graph):
    emb_b, emb_a = _shared()
    first = fc.input_layer({"aaa": tf.constant([[0]], tf.int64)}, [emb_a])
    second = fc.input_layer({"bbb": tf.constant([[0]], tf.int64)}, [emb_b])
    assert [v.name for v in tf.global_variables()] == [
        "input_layer/aaa_bbb_shared_embedding/embedding_weights:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([first, second])
    np.testing.assert_allclose(a, b)


@pytest.mark.transports()
def test_shared_embedding_with_weighted_columns_and_collection_name(graph):
    ids = fc.categorical_column_with_identity("ids", 3)
    weighted = weighted_categorical_column(ids, "values")
    other = fc.categorical_column_with_identity("other", 3)
    cols = shared_embedding_columns([weighted, other], 2, combiner="sum",
                                    initializer=tf.constant_initializer(TABLE),
                                    shared_embedding_collection_name="shared")
    feats = _weighted_features()
    feats["other"] = tf.constant([[1], [0]], tf.int64)
    net = fc.input_layer(feats, cols)
    assert [v.name for v in tf.global_variables()] == [
        "input_layer/shared/embedding_weights:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(net)
    np.testing.assert_allclose(got, [np.r_[.5 * TABLE[0], TABLE[1]],
                                     np.r_[TABLE[2] + .1 * TABLE[1], TABLE[0]]], rtol=1e-6)


def test_shared_embedding_errors(tmp_path):
    a = fc.categorical_column_with_identity("aaa", 3)
    with pytest.raises(ValueError, match=r"same number of buckets.*aaa.*bbb"):
        shared_embedding_columns([a, fc.categorical_column_with_identity("bbb", 4)], 2)
    with pytest.raises(ValueError, match="same type"):
        shared_embedding_columns([a, fc.categorical_column_with_hash_bucket("bbb", 3)], 2)
    with pytest.raises(ValueError, match="Invalid dimension"):
        shared_embedding_columns([a], 0)
    bad = shared_embedding_columns([a], 2, combiner="max")  # TF checks it when built
    with pytest.raises(ValueError, match="combiner"):
        fc.input_layer({"aaa": tf.constant([[1]], tf.int64)}, bad)
    with pytest.raises(ValueError, match="Must specify both"):
        shared_embedding_columns([a], 2, ckpt_to_load_from="ckpt")
    with pytest.raises(ValueError, match="subclasses of _CategoricalColumn"):
        shared_embedding_columns([fc.numeric_column("x")], 2)


@pytest.mark.transports()
def test_partitioned_shared_embedding_builds_two_parts(graph):
    a = fc.categorical_column_with_identity("aaa", 3)
    b = fc.categorical_column_with_identity("bbb", 3)
    emb_a, emb_b = shared_embedding_columns([a, b], 2, initializer=tf.ones_initializer())
    cols_to_vars: dict = {}
    with tf.variable_scope("model", partitioner=tf.fixed_size_partitioner(2)):
        net = fc.input_layer({"aaa": tf.constant([[0], [2]], tf.int64),
                              "bbb": tf.constant([[2], [1]], tf.int64)},
                             [emb_a, emb_b], cols_to_vars=cols_to_vars)
    parts = cols_to_vars[emb_a]
    assert [v.name for v in parts] == [
        "model/input_layer/aaa_bbb_shared_embedding/embedding_weights/part_0:0",
        "model/input_layer/aaa_bbb_shared_embedding/embedding_weights/part_1:0"]
    assert [v.shape.as_list() for v in parts] == [[2, 2], [1, 2]]
    assert len(tf.global_variables()) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(net)
        sess.run(tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(net)))
        part0, part1 = sess.run(parts)
    np.testing.assert_allclose(got, np.ones((2, 4)))
    # "div" split: rows 0-1 in part 0, row 2 in part 1; rows 0, 1 looked up once, row 2 twice.
    np.testing.assert_allclose(part0, [[0., 0.], [0., 0.]])
    np.testing.assert_allclose(part1, [[-1., -1.]])


# ---- a wide & deep model fed by tf.parse_example ----------------------------------------
def _bytes(*v):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[s.encode() for s in v]))


def _floats(*v):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(v)))


def _batch(rng, n=64):
    """Clicked iff the query and the doc share a topic (topics: token index % 2)."""
    serialized, labels = [], []
    for _ in range(n):
        q, d = rng.integers(0, 8, 2)
        terms = rng.integers(0, 6, 2)
        labels.append([float(q % 2 == d % 2)])
        serialized.append(tf.train.Example(features=tf.train.Features(feature={
            "query": _bytes(f"t{q}"), "doc": _bytes(f"t{d}"),
            "terms": _bytes(*[f"w{t}" for t in terms]),
            "term_weights": _floats(*[float(1 + t) / 6. for t in terms])})
        ).SerializeToString())
    return serialized, np.array(labels, np.float32)


@pytest.mark.slow
def test_wide_and_deep_with_new_columns_trains_from_parse_example(graph, tmp_path):
    tokens = _write(tmp_path, "tokens.txt", [f"t{i}" for i in range(6)])  # t6, t7: OOV
    words = _write(tmp_path, "words.txt", [f"w{i}" for i in range(6)])
    query = categorical_column_with_vocabulary_file("query", tokens, num_oov_buckets=2)
    doc = categorical_column_with_vocabulary_file("doc", tokens, num_oov_buckets=2)
    terms = weighted_categorical_column(
        categorical_column_with_vocabulary_file("terms", words), "term_weights")
    q_emb, d_emb = shared_embedding_columns([query, doc], 4)
    spec = fc.make_parse_example_spec([terms, q_emb, d_emb])
    serialized = tf.placeholder(tf.string, [None])
    label = tf.placeholder(tf.float32, [None, 1])
    features = tf.parse_example(serialized, spec)
    wide = fc.linear_model(features, [terms, fc.crossed_column(["query", "doc"], 100)])
    deep = fc.input_layer(features, [q_emb, d_emb, fc.embedding_column(terms, 3)])
    hidden = tf.layers.dense(deep, 16, activation=tf.nn.relu)
    logits = wide + tf.layers.dense(hidden, 1)
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=label, logits=logits))
    shared = [v for v in tf.global_variables() if "shared_embedding" in v.name]
    assert [v.name for v in shared] == [
        "input_layer/doc_query_shared_embedding/embedding_weights:0"]
    train = tf.train.AdagradOptimizer(0.3).minimize(loss)
    rng = np.random.default_rng(0)
    test_x, test_y = _batch(rng, 256)
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
        before = sess.run(loss, {serialized: test_x, label: test_y})
        for _ in range(150):
            x, y = _batch(rng)
            sess.run(train, {serialized: x, label: y})
        after = sess.run(loss, {serialized: test_x, label: test_y})
    assert after < 0.6 * before, (before, after)
