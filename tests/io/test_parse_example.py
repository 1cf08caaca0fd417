"""tf.parse_example / parse_single_example / decode_raw against hand-computed values."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _feature(values):
    if values is None:
        return tf.train.Feature()  # a feature with no list set
    if isinstance(values, tf.train.Feature):
        return values
    if values and isinstance(values[0], bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    if values and isinstance(values[0], float):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _ex(**feats):
    return tf.train.Example(features=tf.train.Features(
        feature={k: _feature(v) for k, v in feats.items()})).SerializeToString()


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_dense_features_with_shapes_and_tricky_names():
    ser = [_ex(a=[1.0, 1.0], **{"b*has+a:tricky": [b"b0"]}),
           _ex(a=[-1.0, -1.0], **{"b*has+a:tricky": [b"b1"]})]
    out = tf.parse_example(ser, {
        "a": tf.FixedLenFeature((1, 2, 1), tf.float32),
        "b*has+a:tricky": tf.FixedLenFeature((1, 1, 1, 1), tf.string)})
    assert out["a"].shape.as_list() == [2, 1, 2, 1]
    assert out["b*has+a:tricky"].shape.as_list() == [2, 1, 1, 1, 1]
    got = _run(out)
    np.testing.assert_array_equal(got["a"], np.array([[1, 1], [-1, -1]],
                                                     np.float32).reshape(2, 1, 2, 1))
    assert got["a"].dtype == np.float32
    assert got["b*has+a:tricky"].reshape(-1).tolist() == [b"b0", b"b1"]


def test_defaults_fill_missing_features():
    ser = [_ex(a=[1.0, 1.0]), _ex(b=[b"b1"]), b""]  # b"" is an Example with no features
    out = _run(tf.parse_example(tf.constant(ser), {
        "a": tf.FixedLenFeature([2], tf.float32, default_value=[3.0, -3.0]),
        "b": tf.FixedLenFeature([], tf.string, default_value="tmp"),
        "n": tf.FixedLenFeature([1, 3], tf.int64, default_value=[0, 42, 0]),
        "s": tf.FixedLenFeature([1], tf.float32, default_value=-1)}))
    np.testing.assert_array_equal(out["a"], [[1, 1], [3, -3], [3, -3]])
    assert out["b"].tolist() == [b"tmp", b"b1", b"tmp"]
    np.testing.assert_array_equal(out["n"], [[[0, 42, 0]]] * 3)
    assert out["n"].dtype == np.int64
    np.testing.assert_array_equal(out["s"], [[-1], [-1], [-1]])


def test_var_len_features_become_sparse_tensors():
    empty_floats = tf.train.Feature(float_list=tf.train.FloatList())
    ser = [_ex(c=[3.0, 4.0]), _ex(c=empty_floats), _ex(d=None),
           _ex(c=[1.0, 2.0, -1.0], d=[b"hi"])]
    out = tf.parse_example(tf.constant(ser), {"c": tf.VarLenFeature(tf.float32),
                                             "d": tf.VarLenFeature(tf.string)})
    assert isinstance(out["c"], tf.SparseTensor)
    assert out["c"].indices.shape.as_list() == [None, 2]
    assert out["c"].dense_shape.shape.as_list() == [2]
    c, d = _run([out["c"], out["d"]])
    assert c.indices.tolist() == [[0, 0], [0, 1], [3, 0], [3, 1], [3, 2]]
    np.testing.assert_array_equal(c.values, np.float32([3, 4, 1, 2, -1]))
    assert c.dense_shape.tolist() == [4, 3]
    assert d.indices.tolist() == [[3, 0]] and d.values.tolist() == [b"hi"]
    assert d.dense_shape.tolist() == [4, 1]


def test_var_len_with_nothing_anywhere_is_empty_with_batch_shape():
    st = _run(tf.parse_example(["", ""], {"st": tf.VarLenFeature(tf.int64)})["st"])
    assert st.indices.shape == (0, 2) and st.values.shape == (0,)
    assert st.values.dtype == np.int64 and st.dense_shape.tolist() == [2, 0]


def test_sparse_output_feeds_sparse_ops():
    out = tf.parse_example([_ex(ids=[5, 7]), _ex(ids=[9])], {"ids": tf.VarLenFeature(tf.int64)})
    dense = tf.sparse_tensor_to_dense(out["ids"], default_value=-1)
    np.testing.assert_array_equal(_run(dense), [[5, 7], [9, -1]])


def test_fixed_len_sequence_pads_to_the_longest():
    ser = [_ex(s=[1, 2, 3, 4]), _ex(), _ex(s=[5, 6]), _ex(t=[b"x", b"y"])]
    out = tf.parse_example(ser, {
        "s": tf.FixedLenSequenceFeature([2], tf.int64, allow_missing=True),
        "t": tf.FixedLenSequenceFeature([], tf.string, allow_missing=True),
        "p": tf.FixedLenSequenceFeature([], tf.float32, allow_missing=True,
                                        default_value=-1.0)})
    assert out["s"].shape.as_list() == [4, None, 2]
    got = _run(out)
    np.testing.assert_array_equal(got["s"], [[[1, 2], [3, 4]], [[0, 0], [0, 0]],
                                             [[5, 6], [0, 0]], [[0, 0], [0, 0]]])
    assert got["t"].tolist() == [[b"", b""], [b"", b""], [b"", b""], [b"x", b"y"]]
    assert got["p"].shape == (4, 0)  # nobody has it: zero rows


def test_fixed_len_sequence_padding_value():
    ser = [_ex(p=[1.5]), _ex(p=[2.0, 3.0, 4.0])]
    got = _run(tf.parse_example(ser, {"p": tf.FixedLenSequenceFeature(
        [], tf.float32, allow_missing=True, default_value=-1.0)})["p"])
    np.testing.assert_array_equal(got, np.float32([[1.5, -1, -1], [2, 3, 4]]))


def test_fixed_len_sequence_needs_whole_rows():
    op = tf.parse_example([_ex(s=[1, 2, 3])], {
        "s": tf.FixedLenSequenceFeature([2], tf.int64, allow_missing=True)})["s"]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"example 0, key 's'.*3 values"):
        _run(op)


def test_fixed_len_sequence_without_allow_missing_is_refused():
    with pytest.raises(ValueError, match="allow_missing=True"):
        tf.parse_example([_ex()], {"s": tf.FixedLenSequenceFeature([], tf.int64)})


def test_missing_required_feature_names_key_and_example():
    ser = [_ex(c=[1.0, 2.0]), _ex(a=[1])]
    op = tf.parse_example(ser, {"c": tf.FixedLenFeature([2], tf.float32)},
                          example_names=["in1", "in2"])["c"]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"example 1 \(in2\), key 'c'.*required"):
        _run(op)


def test_wrong_number_of_values_is_an_error():
    ser = [_ex(a=[1.0, 1.0, 3.0]), _ex(a=[-1.0, -1.0])]
    op = tf.parse_example(tf.constant(ser), {"a": tf.FixedLenFeature((1, 3), tf.float32)},
                          example_names=["passing", "failing"])["a"]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"example 1 \(failing\), key 'a': the Example has 2 values"):
        _run(op)


def test_type_mismatch_is_an_error():
    op = tf.parse_example([_ex(a=[1, 2])], {"a": tf.VarLenFeature(tf.float32)})["a"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="int64_list.*float32"):
        _run(op.values)


def test_type_mismatch_is_an_error_for_dense_and_for_an_empty_list():
    dense = tf.parse_example([_ex(a=[1.5]), _ex(a=[b"x"])],
                             {"a": tf.FixedLenFeature([1], tf.float32)})["a"]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"example 1, key 'a'.*bytes_list.*float32"):
        _run(dense)
    # an empty list of the wrong kind still names its kind (as TF reads it)
    empty = tf.train.Feature(bytes_list=tf.train.BytesList())
    sparse = tf.parse_example([_ex(a=[2]), _ex(a=empty)], {"a": tf.VarLenFeature(tf.int64)})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"example 1, key 'a'.*bytes_list"):
        _run(sparse["a"].values)


def test_garbage_bytes_are_an_error_naming_the_example():
    op = tf.parse_example([_ex(a=[1]), b"\xff\xff\xff"],
                          {"a": tf.VarLenFeature(tf.int64)})["a"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="example 1.*tf.train.Example"):
        _run(op.values)


@pytest.mark.parametrize("spec,match", [
    (tf.FixedLenFeature(None, tf.float32), "shape"),
    (tf.FixedLenFeature([2], tf.float64), "float64"),
    (tf.FixedLenFeature([2], tf.float32, default_value=[1.0]), "default_value"),
    ("int64", "unsupported spec"),
])
def test_bad_feature_specs_are_named(spec, match):
    with pytest.raises(ValueError, match=match):
        tf.parse_example([_ex()], {"key_x": spec})


def test_batch_from_a_placeholder_has_unknown_batch_dimension():
    ser = tf.placeholder(tf.string, [None])
    out = tf.io.parse_example(ser, {"a": tf.io.FixedLenFeature([3], tf.int64)})
    assert out["a"].shape.as_list() == [None, 3]
    got = _run(out["a"], {ser: [_ex(a=[1, 2, 3]), _ex(a=[4, 5, 6])]})
    np.testing.assert_array_equal(got, [[1, 2, 3], [4, 5, 6]])


def test_parse_single_example():
    ser = _ex(c=[3.0, 4.0], st_a=[3.0, 4.0])
    out = tf.parse_single_example(tf.constant(ser), {
        "st_a": tf.VarLenFeature(tf.float32),
        "a": tf.FixedLenFeature((1, 3), tf.int64, default_value=[1, 2, 3]),
        "c": tf.FixedLenFeature((2,), tf.float32),
        "q": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True)},
        example_names=tf.constant("in1"))
    assert out["c"].shape.as_list() == [2] and out["a"].shape.as_list() == [1, 3]
    got = _run(out)
    assert got["st_a"].indices.tolist() == [[0], [1]]
    np.testing.assert_array_equal(got["st_a"].values, [3.0, 4.0])
    assert got["st_a"].dense_shape.tolist() == [2]
    np.testing.assert_array_equal(got["a"], [[1, 2, 3]])
    np.testing.assert_array_equal(got["c"], [3.0, 4.0])
    assert got["q"].shape == (0,)


def test_parse_single_example_error_names_the_example():
    op = tf.parse_single_example(_ex(), {"c": tf.FixedLenFeature([], tf.int64)},
                                 example_names="only")["c"]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"example 0 \(only\), key 'c'"):
        _run(op)


def test_parse_inside_dataset_map():
    recs = [_ex(x=[float(i)], y=[i % 2]) for i in range(5)]
    spec = {"x": tf.FixedLenFeature([1], tf.float32), "y": tf.FixedLenFeature([], tf.int64)}
    ds = tf.data.Dataset.from_tensor_slices(recs).batch(2).map(
        lambda b: tf.parse_example(b, spec))
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        first = sess.run(nxt)
        np.testing.assert_array_equal(first["x"], [[0.0], [1.0]])
        np.testing.assert_array_equal(first["y"], [0, 1])


def test_decode_raw():
    data = tf.constant([np.int16([1, -2]).tobytes(), np.int16([300, 4]).tobytes()])
    np.testing.assert_array_equal(_run(tf.decode_raw(data, tf.int16)), [[1, -2], [300, 4]])
    big = tf.io.decode_raw(tf.constant(np.float32([1.5]).astype(">f4").tobytes()), tf.float32,
                           little_endian=False)
    np.testing.assert_array_equal(_run(big), np.float32([1.5]))
    u8 = _run(tf.decode_raw(tf.constant([b"\x00\xff"]), tf.uint8))
    assert u8.dtype == np.uint8 and u8.tolist() == [[0, 255]]


def test_decode_raw_rejects_uneven_lengths():
    with pytest.raises(tf.errors.InvalidArgumentError, match="same length"):
        _run(tf.decode_raw(tf.constant([b"\x00\x01", b"\x00\x01\x02\x03"]), tf.int16))
    with pytest.raises(tf.errors.InvalidArgumentError, match="multiples of 4"):
        _run(tf.decode_raw(tf.constant([b"\x00\x01"]), tf.int32))


def test_var_len_features_through_dataset_map():
    # The usual input pipeline: batch serialized records, then parse; SparseTensors pass
    # through map and come out of get_next as SparseTensors.
    recs = [_ex(t=list(range(i)), y=[i]) for i in (1, 2, 0, 3)]
    spec = {"t": tf.VarLenFeature(tf.int64), "y": tf.FixedLenFeature([], tf.int64)}
    ds = tf.data.Dataset.from_tensor_slices(recs).batch(2).map(
        lambda b: tf.parse_example(b, spec))
    ds = ds.map(lambda f: (f["t"], f["y"] * 10))
    t, y = ds.make_one_shot_iterator().get_next()
    assert isinstance(t, tf.SparseTensor)
    with tf.Session() as sess:
        first_t, first_y = sess.run([t, y])
        second_t, second_y = sess.run([t, y])
    assert first_t.indices.tolist() == [[0, 0], [1, 0], [1, 1]]
    assert first_t.values.tolist() == [0, 0, 1] and first_t.dense_shape.tolist() == [2, 2]
    assert first_y.tolist() == [10, 20]
    assert second_t.indices.tolist() == [[1, 0], [1, 1], [1, 2]]
    assert second_t.dense_shape.tolist() == [2, 3] and second_y.tolist() == [0, 30]


def test_a_sparse_element_is_passed_to_the_next_map_as_a_sparse_tensor():
    recs = [_ex(t=[4, 5]), _ex(t=[6])]
    ds = tf.data.Dataset.from_tensor_slices(recs).batch(2).map(
        lambda b: tf.parse_example(b, {"t": tf.VarLenFeature(tf.int64)})["t"])
    ds = ds.map(lambda sp: tf.sparse_tensor_to_dense(sp, default_value=-1))
    np.testing.assert_array_equal(_run(ds.make_one_shot_iterator().get_next()),
                                  [[4, 5], [6, -1]])


def test_serialized_examples_keep_trailing_nul_bytes_through_slices():
    # An Example whose last value is 0 ends in a NUL byte; slicing must not strip it.
    rec = _ex(y=[0])
    assert rec.endswith(b"\x00")
    ds = tf.data.Dataset.from_tensor_slices([rec, rec])
    nxt = ds.make_one_shot_iterator().get_next()
    assert _run(nxt) == rec


def test_parse_single_example_then_batch_batches_sparse_tensors():
    # The other usual pipeline: parse each record, then batch; a VarLenFeature's
    # SparseTensors are batched with a leading batch index, dense shape the largest row.
    recs = [_ex(t=[10], y=[1]), _ex(t=[10, 11, 12], y=[3]), _ex(y=[0]), _ex(t=[7, 8], y=[2]),
            _ex(y=[5])]
    spec = {"t": tf.VarLenFeature(tf.int64), "y": tf.FixedLenFeature([], tf.int64)}
    ds = tf.data.Dataset.from_tensor_slices(recs).map(
        lambda r: tf.parse_single_example(r, spec))
    assert ds.output_classes["t"] is tf.SparseTensor
    assert ds.output_shapes["t"].as_list() == [None] and ds.output_types["t"] == tf.int64
    ds = ds.batch(2)
    assert ds.output_shapes["t"].as_list() == [None, None]
    nxt = ds.make_one_shot_iterator().get_next()
    assert nxt["t"].indices.shape.as_list() == [None, 2]
    with tf.Session() as sess:
        got = [sess.run(nxt) for _ in range(3)]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt)
    assert got[0]["t"].indices.tolist() == [[0, 0], [1, 0], [1, 1], [1, 2]]
    assert got[0]["t"].values.tolist() == [10, 10, 11, 12]
    assert got[0]["t"].dense_shape.tolist() == [2, 3]
    assert got[1]["t"].indices.tolist() == [[1, 0], [1, 1]]
    assert got[1]["t"].dense_shape.tolist() == [2, 2] and got[1]["y"].tolist() == [0, 2]
    assert got[2]["t"].indices.shape == (0, 2) and got[2]["t"].dense_shape.tolist() == [1, 0]


def test_sparse_tensors_made_in_map_are_batched():
    ds = tf.data.Dataset.range(3).map(
        lambda i: tf.SparseTensor([[0, 1], [1, 0]], tf.stack([i, i * 10]), [2, 2]))
    nxt = ds.batch(3).make_one_shot_iterator().get_next()
    got = _run(nxt)
    assert got.indices.tolist() == [[0, 0, 1], [0, 1, 0], [1, 0, 1], [1, 1, 0],
                                    [2, 0, 1], [2, 1, 0]]
    assert got.values.tolist() == [0, 0, 1, 10, 2, 20]
    assert got.dense_shape.tolist() == [3, 2, 2]
