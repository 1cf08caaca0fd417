"""TextLineDataset and FixedLengthRecordDataset: lines and records across files,
compression, fed file names, interleaved reads, errors; a TF1-style CSV pipeline.

Behaviour after TF's text_line_dataset_test.py and fixed_length_record_dataset_test.py.
"""
import gzip
import zlib

import numpy as np
import pytest

import tensorweave as tf
from data_helpers import drain
from tensorweave.data import readers, text_readers
from tensorweave.ops.parsing.csv_ops import decode_csv

pytestmark = pytest.mark.usefixtures("fresh_graph")

TextLineDataset = text_readers.TextLineDataset
FixedLengthRecordDataset = text_readers.FixedLengthRecordDataset


def _write(path, data, compression=None):
    if compression == "GZIP":
        with gzip.GzipFile(path, "wb") as f:
            f.write(data)
    elif compression == "ZLIB":
        with open(path, "wb") as f:
            f.write(zlib.compress(data))
    else:
        with open(path, "wb") as f:
            f.write(data)
    return str(path)


def _read_all(ds):
    with tf.Session() as sess:
        return drain(sess, ds.make_one_shot_iterator().get_next())


def _line_files(tmp_path, n_files, n_lines, crlf=False, compression=None):
    """Like TF's test files: every line ends with a newline except the last line of
    every file but the first."""
    names = []
    for i in range(n_files):
        parts = []
        for j in range(n_lines):
            parts.append(f"{i}: {j}".encode())
            if j + 1 != n_lines or i == 0:
                parts.append(b"\r\n" if crlf else b"\n")
        names.append(_write(tmp_path / f"text.{i}.txt", b"".join(parts), compression))
    return names


def _lines(n_files, n_lines):
    return [f"{i}: {j}".encode() for i in range(n_files) for j in range(n_lines)]


# ---- TextLineDataset -------------------------------------------------------------------
@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_lines_of_several_files_in_order(tmp_path, crlf, compression):
    files = _line_files(tmp_path, 2, 5, crlf, compression)
    ds = TextLineDataset(files, compression_type=compression)
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    assert _read_all(ds) == _lines(2, 5)
    assert _read_all(TextLineDataset(files[1], compression)) == _lines(2, 5)[5:]


def test_repeat_and_batch_like_tf(tmp_path):
    files = _line_files(tmp_path, 2, 5, crlf=True)
    got = _read_all(TextLineDataset(files).repeat(3).batch(5))
    assert [list(b) for b in got] == [_lines(2, 5)[:5], _lines(2, 5)[5:]] * 3


def test_line_endings_empty_lines_and_empty_files(tmp_path):
    a = _write(tmp_path / "a.txt", b"x,1\r\n\ny\r\n\r\nlast")  # no final newline
    empty = _write(tmp_path / "empty.txt", b"")
    b = _write(tmp_path / "b.txt", b"only\n")
    c = _write(tmp_path / "c.txt", b"mid\rcr\n\r")  # TF drops every "\r"; "\r" alone: no line
    got = _read_all(TextLineDataset([a, empty, b, empty, c]))
    assert got == [b"x,1", b"", b"y", b"", b"last", b"only", b"midcr"]
    assert _read_all(TextLineDataset(empty)) == []


def test_small_buffer_splits_lines_across_reads(tmp_path):
    files = _line_files(tmp_path, 2, 5, crlf=True)
    assert _read_all(TextLineDataset(files, buffer_size=3)) == _lines(2, 5)
    long = _write(tmp_path / "long.txt", b"a" * 1000 + b"\r\n" + b"b" * 10)
    assert _read_all(TextLineDataset(long, buffer_size=7)) == [b"a" * 1000, b"b" * 10]


def test_filenames_and_compression_fed_at_initialization(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "g").mkdir()
    plain = _line_files(tmp_path / "p", 2, 3)
    gz = _line_files(tmp_path / "g", 1, 4, compression="GZIP")
    names = tf.placeholder(tf.string, [None])
    comp = tf.placeholder_with_default("", [])
    it = TextLineDataset(names, compression_type=comp).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {names: plain})
        assert drain(sess, nxt) == _lines(2, 3)
        sess.run(it.initializer, {names: gz, comp: "GZIP"})
        assert drain(sess, nxt) == _lines(1, 4)
        sess.run(it.initializer, {names: plain[1:]})
        assert drain(sess, nxt) == _lines(2, 3)[3:]


def test_scalar_filename_placeholder(tmp_path):
    (path,) = _line_files(tmp_path, 1, 2)
    name = tf.placeholder(tf.string, [])
    it = TextLineDataset(name).make_initializable_iterator()
    with tf.Session() as sess:
        sess.run(it.initializer, {name: path})
        assert drain(sess, it.get_next()) == _lines(1, 2)


def test_filenames_from_a_dataset_and_pathlib(tmp_path):
    import pathlib
    files = _line_files(tmp_path, 3, 2)
    names = tf.data.Dataset.from_tensor_slices(files)
    assert _read_all(TextLineDataset(names)) == _lines(3, 2)
    assert _read_all(TextLineDataset([pathlib.Path(f) for f in files])) == _lines(3, 2)


def _sized_text(tmp_path, sizes):
    return [_write(tmp_path / k, "".join(f"{k}r{j}\n" for j in range(n)).encode())
            for k, n in sizes]


# The same interleave as TFRecordDataset's (orders observed from real TF there).
@pytest.mark.parametrize("sizes,cycle,order", [
    ([("f0", 2), ("f1", 0), ("f2", 2), ("f3", 1)], 2, "f0r0 f0r1 f2r0 f2r1 f3r0"),
    ([("f0", 2), ("f2", 2), ("f4", 3), ("f3", 1)], 3, "f0r0 f2r0 f4r0 f0r1 f2r1 f4r1 f4r2 f3r0"),
])
def test_parallel_reads_interleave_like_tf(tmp_path, sizes, cycle, order):
    ds = TextLineDataset(_sized_text(tmp_path, sizes), num_parallel_reads=cycle)
    assert b" ".join(_read_all(ds)).decode() == order


def test_missing_file_is_not_found_at_get_next(tmp_path):
    (good,) = _line_files(tmp_path, 1, 2)
    missing = str(tmp_path / "absent.txt")
    nxt = TextLineDataset([good, missing]).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(nxt) == b"0: 0"
        assert sess.run(nxt) == b"0: 1"
        with pytest.raises(tf.errors.NotFoundError, match="absent.txt"):
            sess.run(nxt)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="LZ4"):
        TextLineDataset("x", compression_type="LZ4")
    with pytest.raises(ValueError, match="num_parallel_reads"):
        TextLineDataset("x", num_parallel_reads=0)
    with pytest.raises(ValueError, match="buffer_size"):
        TextLineDataset("x", buffer_size=-1)
    with pytest.raises(TypeError, match="TextLineDataset: filenames"):
        TextLineDataset(tf.constant([[1]]))


def test_tfrecord_dataset_still_shares_the_file_handling(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        w.write(b"rec")
    assert isinstance(readers.TFRecordDataset(path), readers._FileDataset)
    assert _read_all(readers.TFRecordDataset([path, path])) == [b"rec", b"rec"]


# ---- a TF1-style CSV pipeline ----------------------------------------------------------
def test_csv_pipeline_skip_header_map_decode_csv_batch(tmp_path):
    path = _write(tmp_path / "iris.csv",
                  b"sepal,petal,species,weight\r\n"
                  b"5.1,1.4,setosa,3\r\n"
                  b"4.9,,versicolor,\r\n"
                  b"6.3,4.9,\"virginica, big\",7\r\n")
    defaults = [[0.0], [-1.0], [""], [0]]
    ds = TextLineDataset(path).skip(1).map(lambda line: decode_csv(line, defaults)).batch(2)
    sepal, petal, species, weight = ds.make_one_shot_iterator().get_next()
    assert sepal.dtype == tf.float32 and species.dtype == tf.string and weight.dtype == tf.int32
    with tf.Session() as sess:
        first = sess.run([sepal, petal, species, weight])
        second = sess.run([sepal, petal, species, weight])
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(sepal)
    np.testing.assert_allclose(first[0], [5.1, 4.9])
    np.testing.assert_allclose(first[1], [1.4, -1.0])
    assert list(first[2]) == [b"setosa", b"versicolor"]
    assert list(first[3]) == [3, 0]
    np.testing.assert_allclose(second[0], [6.3])
    assert list(second[2]) == [b"virginica, big"] and list(second[3]) == [7]


def test_csv_pipeline_bad_line_names_the_field(tmp_path):
    path = _write(tmp_path / "bad.csv", b"a,b\n1,2\n3,x\n")
    ds = TextLineDataset(path).skip(1).map(lambda line: decode_csv(line, [[0], [0]]))
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [int(v) for v in sess.run(nxt)] == [1, 2]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Field 1 .*int32: 'x'"):
            sess.run(nxt)


# ---- FixedLengthRecordDataset ----------------------------------------------------------
def _record(f, r, size=7):
    return bytes([(f * 31 + r * 7 + k) % 256 for k in range(size)])


def _fixed_files(tmp_path, n_files=2, n_records=3, header=5, footer=2, size=7,
                 compression=None, prefix="fixed"):
    names = []
    for i in range(n_files):
        body = b"".join(_record(i, r, size) for r in range(n_records))
        names.append(_write(tmp_path / f"{prefix}{i}.bin",
                            b"H" * header + body + b"F" * footer, compression))
    return names


def _records(n_files=2, n_records=3, size=7):
    return [_record(i, r, size) for i in range(n_files) for r in range(n_records)]


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_fixed_length_records_skip_header_and_footer(tmp_path, compression):
    files = _fixed_files(tmp_path, compression=compression)
    ds = FixedLengthRecordDataset(files, 7, header_bytes=5, footer_bytes=2,
                                  compression_type=compression)
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    assert _read_all(ds) == _records()
    small = FixedLengthRecordDataset(files, 7, 5, 2, buffer_size=3,
                                     compression_type=compression)
    assert _read_all(small.repeat(2)) == _records() * 2


def test_fixed_length_no_header_footer_and_cifar_style_decode(tmp_path):
    files = _fixed_files(tmp_path, 1, 4, header=0, footer=0, size=5)
    rec = FixedLengthRecordDataset(files, 5).make_one_shot_iterator().get_next()
    row = tf.decode_raw(rec, tf.uint8)
    with tf.Session() as sess:
        got = drain(sess, row)
    assert [bytes(r.astype(np.uint8)) for r in got] == _records(1, 4, 5)


def test_fixed_length_bad_body_size_is_invalid_argument_naming_the_file(tmp_path):
    good = _fixed_files(tmp_path, 1, 2, prefix="good")
    bad = _write(tmp_path / "bad.bin", b"H" * 5 + b"x" * 10 + b"F" * 2)  # 10 % 7 != 0
    nxt = FixedLengthRecordDataset(good + [bad], 7, 5, 2).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [sess.run(nxt), sess.run(nxt)] == _records(1, 2)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"bad\.bin.*17 bytes.*body length 10 .*record length \(7"):
            sess.run(nxt)


def test_fixed_length_compressed_bad_body_is_data_loss_after_whole_records(tmp_path):
    bad = _write(tmp_path / "bad.gz", b"H" * 5 + _record(0, 0) + b"xyz" + b"F" * 2, "GZIP")
    ds = FixedLengthRecordDataset(bad, 7, 5, 2, compression_type="GZIP")
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert sess.run(nxt) == _record(0, 0)
        with pytest.raises(tf.errors.DataLossError, match=r"bad\.gz.*body length 10"):
            sess.run(nxt)


def test_fixed_length_file_shorter_than_header_and_footer(tmp_path):
    short = _write(tmp_path / "short.bin", b"abc")
    nxt = FixedLengthRecordDataset(short, 4, 2, 2).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="short.bin"):
            sess.run(nxt)


def test_fixed_length_fed_filenames_and_sizes(tmp_path):
    files = _fixed_files(tmp_path)
    names = tf.placeholder(tf.string, [None])
    record = tf.placeholder(tf.int64, [])
    it = FixedLengthRecordDataset(names, record, header_bytes=5,
                                  footer_bytes=2).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {names: files, record: 7})
        assert drain(sess, nxt) == _records()
        sess.run(it.initializer, {names: files[:1], record: 21})  # 3 records as one
        assert drain(sess, nxt) == [b"".join(_records(1, 3))]
        sess.run(it.initializer, {names: files, record: 0})
        with pytest.raises(tf.errors.InvalidArgumentError, match="record_bytes must be > 0"):
            sess.run(nxt)


def test_fixed_length_parallel_reads_interleave(tmp_path):
    files = _fixed_files(tmp_path, 3, 2, header=0, footer=0)
    ds = FixedLengthRecordDataset(files, 7, num_parallel_reads=2)
    r = _records(3, 2)
    assert _read_all(ds) == [r[0], r[2], r[1], r[3], r[4], r[5]]


def test_fixed_length_missing_file_and_bad_arguments(tmp_path):
    nxt = FixedLengthRecordDataset(str(tmp_path / "nope.bin"), 4).make_one_shot_iterator(
    ).get_next()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match="nope.bin"):
            sess.run(nxt)
    with pytest.raises(ValueError, match="record_bytes must be > 0"):
        FixedLengthRecordDataset("x", 0)
    with pytest.raises(ValueError, match="header_bytes must be >= 0"):
        FixedLengthRecordDataset("x", 4, header_bytes=-1)
    with pytest.raises(ValueError, match="footer_bytes must be >= 0"):
        FixedLengthRecordDataset("x", 4, footer_bytes=-2)
    with pytest.raises(ValueError, match="GZ"):
        FixedLengthRecordDataset("x", 4, compression_type="GZ")


def test_tf1_csv_input_fn_through_the_public_names(tmp_path):
    assert tf.decode_csv is tf.io.decode_csv
    assert tf.data.FixedLengthRecordDataset is text_readers.FixedLengthRecordDataset
    path = tmp_path / "train.csv"
    path.write_text("age,city,label\n31,paris,1\n,berlin,0\n")

    def parse(line):
        age, city, label = tf.decode_csv(line, [[0.0], ["?"], [0]])
        return {"age": age, "city": city}, label
    ds = tf.data.TextLineDataset(str(path)).skip(1).map(parse).batch(2)
    features, labels = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        f, y = sess.run([features, labels])
    assert list(f["age"]) == [31.0, 0.0] and list(f["city"]) == [b"paris", b"berlin"]
    assert list(y) == [1, 0]
