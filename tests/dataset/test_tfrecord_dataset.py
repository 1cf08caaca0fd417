"""tf.data.TFRecordDataset: files, compression, epochs, batches, interleaved reads."""
import os

import numpy as np
import pytest

import tensorweave as tf
from data_helpers import drain
from suite_paths import TEST_DATA

pytestmark = pytest.mark.usefixtures("fresh_graph")
TF_DIR = os.path.join(TEST_DATA, "tf_written_records")


def _files(tmp_path, n_files=2, n_recs=3, compression="", prefix="f"):
    names = []
    for i in range(n_files):
        path = str(tmp_path / f"{prefix}{i}.tfrecord")
        with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression)) as w:
            for j in range(n_recs):
                w.write(f"file {i} rec {j}".encode())
        names.append(path)
    return names


def _expected(n_files, n_recs):
    return [f"file {i} rec {j}".encode() for i in range(n_files) for j in range(n_recs)]


def test_one_file_then_another(tmp_path):
    ds = tf.data.TFRecordDataset(_files(tmp_path))
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    with tf.Session() as sess:
        assert drain(sess, ds.make_one_shot_iterator().get_next()) == _expected(2, 3)


def test_single_filename_string(tmp_path):
    (path,) = _files(tmp_path, 1, 2)
    with tf.Session() as sess:
        got = drain(sess, tf.data.TFRecordDataset(path).make_one_shot_iterator().get_next())
    assert got == _expected(1, 2)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_files(tmp_path, compression):
    ds = tf.data.TFRecordDataset(_files(tmp_path, 2, 4, compression),
                                 compression_type=compression, buffer_size=100)
    with tf.Session() as sess:
        assert drain(sess, ds.make_one_shot_iterator().get_next()) == _expected(2, 4)


def test_filenames_and_compression_fed_at_initialization(tmp_path):
    plain = _files(tmp_path, 2, 2, prefix="plain")
    gz = _files(tmp_path, 1, 3, "GZIP", prefix="gz")
    names = tf.placeholder(tf.string, [None])
    comp = tf.placeholder_with_default("", [])
    it = tf.data.TFRecordDataset(names, compression_type=comp).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {names: plain})
        assert drain(sess, nxt) == _expected(2, 2)
        sess.run(it.initializer, {names: gz, comp: "GZIP"})
        assert drain(sess, nxt) == _expected(1, 3)
        sess.run(it.initializer, {names: plain[1:]})
        assert drain(sess, nxt) == [b"file 1 rec 0", b"file 1 rec 1"]


def test_repeat_and_batch(tmp_path):
    ds = tf.data.TFRecordDataset(_files(tmp_path, 1, 3)).repeat(2).batch(4)
    with tf.Session() as sess:
        got = drain(sess, ds.make_one_shot_iterator().get_next())
    assert [list(b) for b in got] == [_expected(1, 3) + [b"file 0 rec 0"],
                                     [b"file 0 rec 1", b"file 0 rec 2"]]


def _sized_files(tmp_path, sizes):
    names = []
    for k, n in sizes:
        path = str(tmp_path / k)
        with tf.io.TFRecordWriter(path) as w:
            for j in range(n):
                w.write(f"{k}r{j}".encode())
        names.append(path)
    return names


# Orders observed from real TF's TFRecordDataset(num_parallel_reads=...) on these files:
# one record per file per round; an exhausted file's slot takes the next file when the
# round comes back to it.
@pytest.mark.parametrize("sizes,cycle,order", [
    ([("f0", 2), ("f1", 0), ("f2", 2), ("f3", 1)], 2, "f0r0 f0r1 f2r0 f2r1 f3r0"),
    ([("f0", 2), ("f1", 0), ("f2", 2), ("f3", 1)], 3, "f0r0 f2r0 f0r1 f3r0 f2r1"),
    ([("f0", 2), ("f2", 2), ("f4", 3), ("f3", 1)], 2, "f0r0 f2r0 f0r1 f2r1 f4r0 f3r0 f4r1 f4r2"),
    ([("f0", 2), ("f2", 2), ("f4", 3), ("f3", 1)], 3, "f0r0 f2r0 f4r0 f0r1 f2r1 f4r1 f4r2 f3r0"),
])
def test_parallel_reads_interleave_like_tf(tmp_path, sizes, cycle, order):
    ds = tf.data.TFRecordDataset(_sized_files(tmp_path, sizes), num_parallel_reads=cycle)
    with tf.Session() as sess:
        got = drain(sess, ds.make_one_shot_iterator().get_next())
    assert b" ".join(got).decode() == order


def test_corrupt_record_stops_the_iterator_with_data_loss(tmp_path):
    (path,) = _files(tmp_path, 1, 2)
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 1
    open(path, "wb").write(bytes(data))
    nxt = tf.data.TFRecordDataset(path).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(nxt) == b"file 0 rec 0"
        with pytest.raises(tf.errors.DataLossError, match="f0.tfrecord"):
            sess.run(nxt)


def test_missing_file_is_not_found(tmp_path):
    nxt = tf.data.TFRecordDataset(str(tmp_path / "absent")).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match="absent"):
            sess.run(nxt)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="LZ4"):
        tf.data.TFRecordDataset("x", compression_type="LZ4")
    with pytest.raises(ValueError, match="num_parallel_reads"):
        tf.data.TFRecordDataset("x", num_parallel_reads=0)
    with pytest.raises(TypeError, match="filenames"):
        tf.data.TFRecordDataset(tf.constant([[1]]))


@pytest.mark.parametrize("name,compression", [("examples.tfrecord", None),
                                              ("examples.tfrecord.gz", "GZIP")])
def test_tf_written_files_through_parse_example(name, compression):
    import json
    expected = json.load(open(os.path.join(TF_DIR, "expected.json")))
    spec = {"x": tf.FixedLenFeature([2], tf.float32),
            "label": tf.FixedLenFeature([], tf.int64, default_value=-1),
            "tags": tf.VarLenFeature(tf.string),
            "seq": tf.FixedLenSequenceFeature([2], tf.int64, allow_missing=True)}
    ds = tf.data.TFRecordDataset(os.path.join(TF_DIR, name), compression).batch(3)
    feats = tf.parse_example(ds.make_one_shot_iterator().get_next(), spec)
    with tf.Session() as sess:
        got = sess.run(feats)
    np.testing.assert_array_equal(got["x"], expected["x"])
    np.testing.assert_array_equal(got["label"], expected["label"])
    np.testing.assert_array_equal(got["seq"], expected["seq"])
    assert got["tags"].indices.tolist() == expected["tags_indices"]
    assert [v.hex() for v in got["tags"].values] == expected["tags_values"]
    assert got["tags"].dense_shape.tolist() == expected["tags_dense_shape"]


def test_read_ten_epochs_of_batches(tmp_path):
    ds = tf.data.TFRecordDataset(_files(tmp_path, 2, 3)).repeat(10).batch(3)
    with tf.Session() as sess:
        got = drain(sess, ds.make_one_shot_iterator().get_next())
    assert [list(b) for b in got] == [_expected(1, 3), _expected(2, 3)[3:]] * 10


def test_filenames_from_a_dataset_of_names(tmp_path):
    names = tf.data.Dataset.from_tensor_slices(_files(tmp_path, 3, 2)).repeat(2)
    ds = tf.data.TFRecordDataset(names)
    with tf.Session() as sess:
        got = drain(sess, ds.make_one_shot_iterator().get_next())
    assert got == _expected(3, 2) * 2
    par = tf.data.TFRecordDataset(names, num_parallel_reads=4)
    with tf.Session() as sess:
        got = drain(sess, par.make_one_shot_iterator().get_next())
    assert sorted(got) == sorted(_expected(3, 2) * 2)


def test_pathlib_paths(tmp_path):
    import pathlib
    (path,) = _files(tmp_path, 1, 2)
    ds = tf.data.TFRecordDataset([pathlib.Path(path)])
    with tf.Session() as sess:
        assert drain(sess, ds.make_one_shot_iterator().get_next()) == _expected(1, 2)


def test_files_compressed_by_pythons_gzip_and_zlib(tmp_path):
    import gzip
    import zlib
    (path,) = _files(tmp_path, 1, 3)
    raw = open(path, "rb").read()
    with gzip.GzipFile(str(tmp_path / "r.gz"), "wb") as f:
        f.write(raw)
    (tmp_path / "r.z").write_bytes(zlib.compress(raw))
    for name, comp in (("r.gz", "GZIP"), ("r.z", "ZLIB")):
        ds = tf.data.TFRecordDataset(str(tmp_path / name), comp)
        with tf.Session() as sess:
            assert drain(sess, ds.make_one_shot_iterator().get_next()) == _expected(1, 3)


def test_non_string_filenames_are_a_type_error():
    with pytest.raises(TypeError, match="filenames"):
        tf.data.TFRecordDataset([1, 2, 3])
    with pytest.raises(TypeError, match="filenames"):
        tf.data.TFRecordDataset(tf.constant([1, 2, 3]))
    with pytest.raises(TypeError, match="scalar tf.string"):
        tf.data.TFRecordDataset(tf.data.Dataset.range(3))
