"""parse_single_sequence_example / parse_sequence_example (ParseSingleSequenceExample,
ParseSequenceExample). Expected values were printed by real TF 2.21 (compat.v1) for the
same SequenceExamples; the error cases are the ones TF's parsing_ops_test.py covers."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.parsing.sequence_example_ops import (
    parse_sequence_example, parse_single_sequence_example)

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _f(i=None, f=None, b=None):
    if i is not None:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=i))
    if f is not None:
        return tf.train.Feature(float_list=tf.train.FloatList(value=f))
    if b is not None:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=b))
    return tf.train.Feature()  # no list set


def _seq(context, lists):
    return tf.train.SequenceExample(
        context=tf.train.Features(feature=context),
        feature_lists=tf.train.FeatureLists(feature_list={
            k: tf.train.FeatureList(feature=v) for k, v in lists.items()})).SerializeToString()


def _run(fetches):
    with tf.Session() as sess:
        return sess.run(fetches)


def _sparse_equal(got, indices, values, shape):
    np.testing.assert_array_equal(got.indices, indices)
    np.testing.assert_array_equal(got.values, values)
    np.testing.assert_array_equal(got.dense_shape, shape)


S_A = _seq({"len": _f(i=[2]), "tags": _f(b=[b"x"])},
           {"tok": [_f(i=[1]), _f(i=[2])], "sp": [_f(f=[0.5, 1.5]), _f(f=[2.5])],
            "vec": [_f(f=[1, 2])]})
S_B = _seq({"len": _f(i=[3]), "tags": _f(b=[b"y", b"z", b"w"])},
           {"tok": [_f(i=[7]), _f(i=[8]), _f(i=[9])],
            "sp": [_f(f=[]), _f(f=[3.5]), _f(f=[4.5, 5.5, 6.5])]})
S_OK = _seq({"len": _f(i=[3])}, {"tok": [_f(i=[4]), _f(i=[5])]})


def _specs():
    context = {"len": tf.FixedLenFeature([], tf.int64), "tags": tf.VarLenFeature(tf.string),
               "d": tf.FixedLenFeature([], tf.float32, default_value=-1.0)}
    sequence = {"tok": tf.FixedLenSequenceFeature([], tf.int64),
                "sp": tf.VarLenFeature(tf.float32),
                "vec": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True),
                "str": tf.FixedLenSequenceFeature([], tf.string, allow_missing=True)}
    return context, sequence


def test_single_sequence_example_values_and_static_shapes():
    context, lists = parse_single_sequence_example(tf.constant(S_B), *_specs(),
                                                   example_name="in1")
    assert sorted(context) == ["d", "len", "tags"]
    assert sorted(lists) == ["sp", "str", "tok", "vec"]
    assert context["len"].shape.as_list() == [] and context["d"].dtype == tf.float32
    assert lists["vec"].shape.as_list() == [None, 2] and lists["tok"].shape.as_list() == [None]
    assert lists["sp"].indices.shape.as_list() == [None, 2]
    assert context["tags"].dense_shape.shape.as_list() == [1]
    got_c, got_l = _run((context, lists))
    assert got_c["len"] == 3 and got_c["d"] == np.float32(-1.0)
    _sparse_equal(got_c["tags"], [[0], [1], [2]], [b"y", b"z", b"w"], [3])
    _sparse_equal(got_l["sp"], [[1, 0], [2, 0], [2, 1], [2, 2]], [3.5, 4.5, 5.5, 6.5], [3, 3])
    np.testing.assert_array_equal(got_l["tok"], [7, 8, 9])
    assert got_l["vec"].shape == (0, 2) and got_l["str"].shape == (0,)


def test_single_missing_sparse_list_is_empty_and_dense_rows_keep_their_shape():
    rec = _seq({"len": _f(i=[3]), "tags": _f(b=[b"a", b"b"])},
               {"tok": [_f(i=[4]), _f(i=[5]), _f(i=[6])],
                "vec": [_f(f=[1, 2]), _f(f=[3, 4]), _f(f=[5, 6])],
                "sp": [_f(i=[1, 2]), _f(i=[]), _f(i=[3])]})
    context, lists = parse_single_sequence_example(
        rec, {"w": tf.FixedLenFeature([2], tf.float32, default_value=[7.0, 8.0])},
        {"vec": tf.FixedLenSequenceFeature([2], tf.float32), "sp": tf.VarLenFeature(tf.int64),
         "miss": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True),
         "missp": tf.VarLenFeature(tf.float32)})
    got_c, got_l = _run((context, lists))
    np.testing.assert_array_equal(got_c["w"], [7.0, 8.0])
    np.testing.assert_array_equal(got_l["vec"], [[1, 2], [3, 4], [5, 6]])
    _sparse_equal(got_l["sp"], [[0, 0], [0, 1], [2, 0]], [1, 2, 3], [3, 2])
    _sparse_equal(got_l["missp"], np.zeros((0, 2)), [], [0, 0])
    assert got_l["miss"].shape == (0,) and got_l["miss"].dtype == np.int64


def test_empty_feature_in_a_varlen_list_is_zero_values():
    rec = _seq({}, {"tok": [_f(i=[4]), _f()]})
    _, lists = parse_single_sequence_example(rec, None, {"tok": tf.VarLenFeature(tf.int64)})
    _sparse_equal(_run(lists["tok"]), [[0, 0]], [4], [2, 1])


def test_batch_pads_dense_lists_and_reports_lengths():
    context, lists, lengths = parse_sequence_example(
        tf.constant([S_A, S_B]), *_specs(), example_names=["a", "b"])
    assert lists["tok"].shape.as_list() == [2, None]
    assert lists["vec"].shape.as_list() == [2, None, 2]
    assert lists["sp"].indices.shape.as_list() == [None, 3]
    assert context["len"].shape.as_list() == [2] and sorted(lengths) == ["str", "tok", "vec"]
    got_c, got_l, got_n = _run((context, lists, lengths))
    _sparse_equal(got_c["tags"], [[0, 0], [1, 0], [1, 1], [1, 2]],
                  [b"x", b"y", b"z", b"w"], [2, 3])
    np.testing.assert_array_equal(got_c["d"], [-1.0, -1.0])
    np.testing.assert_array_equal(got_c["len"], [2, 3])
    _sparse_equal(got_l["sp"], [[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 1, 0], [1, 2, 0],
                                [1, 2, 1], [1, 2, 2]],
                  [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5], [2, 3, 3])
    assert got_l["str"].shape == (2, 0)
    np.testing.assert_array_equal(got_l["tok"], [[1, 2, 0], [7, 8, 9]])
    np.testing.assert_array_equal(got_l["vec"], [[[1.0, 2.0]], [[0.0, 0.0]]])
    np.testing.assert_array_equal(got_n["str"], [0, 0])
    np.testing.assert_array_equal(got_n["tok"], [2, 3])
    np.testing.assert_array_equal(got_n["vec"], [1, 0])


@pytest.mark.parametrize("context, sequence, rec, pattern", [
    ({"c": tf.FixedLenFeature([], tf.int64)}, None, S_OK,
     r"context: example 0 \(in1\), key 'c': feature 'c' \(int64\) is required"),
    ({"len": tf.FixedLenFeature([], tf.float32)}, None, S_OK,
     r"example 0 \(in1\), key 'len': data types don't match.*int64_list.*float32"),
    ({"len": tf.FixedLenFeature([2], tf.int64)}, None, S_OK,
     r"key 'len': the Example has 1 values.*shape \[2\] needs exactly 2"),
    ({"len": tf.VarLenFeature(tf.string)}, None, S_OK,
     r"key 'len': data types don't match"),
    (None, {"x": tf.FixedLenSequenceFeature([], tf.int64)}, S_OK,
     r"sequence example 0 \(in1\): feature list 'x' is required but could not be found"),
    (None, {"tok": tf.FixedLenSequenceFeature([], tf.float32)}, S_OK,
     r"\(in1\), feature list 'tok', step 0: data types don't match"),
    (None, {"tok": tf.FixedLenSequenceFeature([2], tf.int64)}, S_OK,
     r"feature list 'tok', step 0: the step has 1 values.*shape \[2\] needs exactly 2"),
    (None, {"tok": tf.VarLenFeature(tf.string)}, S_OK,
     r"feature list 'tok', step 0: data types don't match"),
    (None, {"tok": tf.FixedLenSequenceFeature([], tf.int64)}, _seq({}, {"tok": [_f(i=[4]), _f()]}),
     r"feature list 'tok', step 1: the step has 0 values"),
    ({"len": tf.FixedLenFeature([], tf.int64)}, None, b"\xff\xff\x00garbage",
     r"sequence example 0 \(in1\): could not parse the serialized SequenceExample"),
])
def test_errors_name_the_example_the_feature_and_the_step(context, sequence, rec, pattern):
    out = parse_single_sequence_example(rec, context, sequence, example_name="in1")
    with pytest.raises(tf.errors.InvalidArgumentError, match=pattern):
        _run(out)


def test_batch_errors_name_the_failing_example():
    missing = parse_sequence_example(
        [S_A, S_B], None, {"vec": tf.FixedLenSequenceFeature([2], tf.float32)},
        example_names=["a", "b"])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"ParseSequenceExample: sequence example 1 \(b\): feature list 'vec'"):
        _run(missing)
    size = parse_sequence_example([S_A, S_B], None,
                                  {"sp": tf.FixedLenSequenceFeature([1], tf.float32)})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"sequence example 0, feature list 'sp', step 0: the step has 2"):
        _run(size)
    ctx = parse_sequence_example([S_A, S_OK], {"tags": tf.FixedLenFeature([1], tf.string)},
                                 example_names=["a", "b"])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"example 1 \(b\), key 'tags': feature 'tags' \(string\) is required"):
        _run(ctx)


def test_spec_errors_at_build_time():
    with pytest.raises(ValueError, match="Missing features"):
        parse_single_sequence_example(S_OK, None, None)
    with pytest.raises(ValueError, match="Context feature 'len': unsupported spec"):
        parse_single_sequence_example(S_OK, {"len": tf.FixedLenSequenceFeature(
            [], tf.int64, allow_missing=True)})
    with pytest.raises(ValueError, match="Sequence feature 'tok': default_value must be None"):
        parse_sequence_example([S_OK], None, {"tok": tf.FixedLenSequenceFeature(
            [], tf.int64, allow_missing=True, default_value=0)})
    with pytest.raises(ValueError, match="Sequence feature 'tok': unsupported spec"):
        parse_single_sequence_example(S_OK, None, {"tok": tf.FixedLenFeature([], tf.int64)})
    with pytest.raises(ValueError, match="serialized must be a scalar"):
        parse_single_sequence_example([S_OK], {"len": tf.FixedLenFeature([], tf.int64)})


def test_ops_carry_tf_names_and_attrs():
    parse_single_sequence_example(S_OK, {"len": tf.FixedLenFeature([], tf.int64)},
                                  {"tok": tf.FixedLenSequenceFeature([], tf.int64)})
    parse_sequence_example([S_OK], None, {"tok": tf.FixedLenSequenceFeature(
        [], tf.int64, allow_missing=True)})
    ops = {op.type: op for op in tf.get_default_graph().get_operations()}
    single = ops["ParseSingleSequenceExample"]
    assert single.get_attr("Tcontext_dense") == [tf.int64]
    assert single.get_attr("feature_list_dense_types") == [tf.int64]
    batch = ops["ParseSequenceExample"]
    assert batch.get_attr("feature_list_dense_keys") == ["tok"]
    assert batch.get_attr("feature_list_dense_missing_assumed_empty") == ["tok"]
    assert batch.get_attr("Nfeature_list_dense") == 1 and batch.get_attr("Ncontext_dense") == 0


def _write_records(path, rng):
    """Sequences of tokens in [1, 10); the label says whether token 7 occurs."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(64):
            tokens = rng.integers(1, 10, size=int(rng.integers(2, 7))).tolist()
            writer.write(_seq({"label": _f(i=[int(7 in tokens)])},
                              {"tokens": [_f(i=[t]) for t in tokens]}))


def test_tfrecord_sequence_examples_train_an_embedding_rnn(tmp_path):
    _write_records(tmp_path / "seq.tfrecord", np.random.default_rng(0))
    tf.set_random_seed(1)

    def parse(record):
        context, lists = parse_single_sequence_example(
            record, {"label": tf.FixedLenFeature([], tf.int64)},
            {"tokens": tf.FixedLenSequenceFeature([], tf.int64)})
        tokens = lists["tokens"]
        return tokens, tf.shape(tokens)[0], context["label"]

    ds = (tf.data.TFRecordDataset(str(tmp_path / "seq.tfrecord")).map(parse).repeat()
          .padded_batch(16, padded_shapes=([None], [], [])))
    tokens, length, label = ds.make_one_shot_iterator().get_next()
    embed = tf.get_variable("embed", [10, 8])
    outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(16),
                                       tf.nn.embedding_lookup(embed, tokens),
                                       sequence_length=length, dtype=tf.float32)
    logits = tf.layers.dense(state, 2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=label, logits=logits))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([loss, train])[0] for _ in range(60)]
    assert np.mean(losses[-10:]) < 0.6 * np.mean(losses[:10]), losses


def test_public_names_are_wired():
    from tensorweave.ops.parsing import sequence_example_ops as m
    assert tf.parse_single_sequence_example is m.parse_single_sequence_example
    assert tf.io.parse_single_sequence_example is m.parse_single_sequence_example
    assert tf.io.parse_sequence_example is m.parse_sequence_example
