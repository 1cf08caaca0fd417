"""TF1 queue-based readers (tensorweave/readers/readers.py): TFRecordReader, TextLineReader,
FixedLengthRecordReader, WholeFileReader, IdentityReader, match_filenames_once.

Spec: TF 1.x's reader_ops_test.py (keys, values, epochs, read_up_to, counters, reset,
serialize/restore, OutOfRangeError when the filename queue is closed and empty). The
expected keys and values marked "real TF" were recorded with TF 2.21's compat.v1
readers on the same bytes (a scratch script; TF is not a test dependency).
"""
import gzip
import zlib

import pytest

import tensorweave as tf
from tensorweave.framework.tfrecord import TFRecordWriter
from tensorweave.readers.readers import (
    FixedLengthRecordReader, IdentityReader, ReaderBase, TextLineReader, TFRecordReader,
    WholeFileReader, match_filenames_once)

pytestmark = pytest.mark.usefixtures("fresh_graph")

CLOSED = r"is closed and has insufficient elements \(requested 1, current size 0\)"


def _queue():
    return tf.FIFOQueue(99, [tf.string], shapes=[[]])


def _read_all(reader, files, strip=None):
    """Every (key, value) a reader gives for `files`, until OutOfRangeError."""
    q = _queue()
    key, value = reader.read(q)
    out = []
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[str(f) for f in files]]))
        sess.run(q.close())
        while True:
            try:
                k, v = sess.run([key, value])
            except tf.errors.OutOfRangeError as e:
                assert "is closed and has insufficient elements" in str(e)
                break
            out.append((k.decode().replace(strip, "") if strip else k.decode(), v))
    return out


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


# ---- against real TF's bytes, keys and values ------------------------------------------
RECORDS = [b"", b"a", b"hello world", bytes(range(40))]
# real TF: TFRecordWriter(path) with RECORDS, and with GZIP options
TF_PLAIN = bytes.fromhex(
    "000000000000000029039807d8ea82a201000000000000000175de4161786ee4280b00000000000000"
    "8615f50468656c6c6f20776f726c64007ed86d2800000000000000ff70164a000102030405060708"
    "090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262775118983")
TF_GZIP = bytes.fromhex(
    "1f8b0800000000000003636080004de619ec375e352d6284f2194bef392656e43dd1e0860ab4897e65c9"
    "48cdc9c95728cf2fca4961a8bb91ab0195fa5f20e6c5c0c8c4ccc2cac6cec1c9c5cdc3cbc72f2028242c"
    "222a262e2129252d232b27afa0a8a4aca2aaa65e2ad8d90c008f5e549874000000")
TF_OFFSETS = [0, 16, 33, 60]  # real TF: TFRecordReader keys "<file>:<offset>"


def test_tfrecord_file_and_reader_match_tensorflow(tmp_path):
    ours = tmp_path / "ours.tfrecord"
    with TFRecordWriter(str(ours)) as w:
        for r in RECORDS:
            w.write(r)
    assert ours.read_bytes() == TF_PLAIN
    got = _read_all(TFRecordReader(), [ours], strip=f"{tmp_path}/")
    assert got == [(f"ours.tfrecord:{o}", r) for o, r in zip(TF_OFFSETS, RECORDS)]
    tf.reset_default_graph()
    theirs = _write(tmp_path / "tf.tfrecord.gz", TF_GZIP)
    opts = tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP)
    got = _read_all(TFRecordReader(options=opts), [theirs], strip=f"{tmp_path}/")
    assert got == [(f"tf.tfrecord.gz:{o}", r) for o, r in zip(TF_OFFSETS, RECORDS)]


def test_text_and_fixed_length_keys_match_tensorflow(tmp_path):
    lines = _write(tmp_path / "lines.txt", b"header\r\nx,1\n\ny,2\r\nlast")
    fixed = _write(tmp_path / "fixed.bin", b"HHH" + bytes(range(12)) + b"FF")
    strip = f"{tmp_path}/"
    # real TF: TextLineReader(skip_header_lines=1)
    assert _read_all(TextLineReader(skip_header_lines=1), [lines], strip) == [
        ("lines.txt:2", b"x,1"), ("lines.txt:3", b""), ("lines.txt:4", b"y,2"),
        ("lines.txt:5", b"last")]
    # real TF: FixedLengthRecordReader(4, header_bytes=3, footer_bytes=2[, hop_bytes])
    b = bytes(range(12))
    assert _read_all(FixedLengthRecordReader(4, 3, 2), [fixed], strip) == [
        (f"fixed.bin:{i}", b[4 * i:4 * i + 4]) for i in range(3)]
    assert _read_all(FixedLengthRecordReader(4, 3, 2, hop_bytes=2), [fixed], strip) == [
        (f"fixed.bin:{i}", b[2 * i:2 * i + 4]) for i in range(5)]          # overlapping
    assert _read_all(FixedLengthRecordReader(2, 3, 2, hop_bytes=5), [fixed], strip) == [
        ("fixed.bin:0", b"\x00\x01"), ("fixed.bin:1", b"\x05\x06"),
        ("fixed.bin:2", b"\n\x0b")]                                          # with gaps


# ---- each reader (TF's reader_ops_test cases) ------------------------------------------
def test_identity_reader_one_epoch_counters_and_end():
    reader = IdentityReader("test_reader")
    assert isinstance(reader, ReaderBase) and reader.supports_serialize
    work_completed = reader.num_work_units_completed()
    produced = reader.num_records_produced()
    q = _queue()
    key, value = reader.read(q)
    assert key.shape.as_list() == [] and value.dtype == tf.string
    with tf.Session() as sess:
        assert sess.run([work_completed, produced, q.size()]) == [0, 0, 0]
        sess.run(q.enqueue_many([["A", "B", "C"]]))
        sess.run(q.close())
        for i, w in enumerate([b"A", b"B", b"C"]):
            assert sess.run([key, value]) == [w, w]
            assert sess.run(produced) == i + 1
        with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
            sess.run([key, value])
        assert sess.run([work_completed, produced, q.size()]) == [3, 3, 0]


def test_identity_reader_multiple_epochs():
    reader = IdentityReader()
    q = _queue()
    enqueue = q.enqueue_many([["DD", "EE"]])
    key, value = reader.read(q)
    with tf.Session() as sess:
        for _ in range(3):
            sess.run(enqueue)
            assert [sess.run(key) for _ in range(2)] == [b"DD", b"EE"]
        sess.run(q.close())
        with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
            sess.run(value)


def test_whole_file_reader_epochs(tmp_path):
    contents = [b"One\na\nb\n", b"Two\nC\nD", b"Three x, y, z"]
    files = [_write(tmp_path / f"whole_file.{i}.txt", c) for i, c in enumerate(contents)]
    assert _read_all(WholeFileReader("test_reader"), files) == \
        [(f, c) for f, c in zip(files, contents)]
    tf.reset_default_graph()
    reader = WholeFileReader()
    q = _queue()
    enqueue = q.enqueue_many([files])
    key, value = reader.read(q)
    with tf.Session() as sess:  # TF's testInfiniteEpochs: reads continue across epochs
        sess.run(enqueue)
        got = [sess.run([key, value]) for _ in range(2)]
        sess.run(enqueue)
        got += [sess.run([key, value]) for _ in range(4)]
    assert [k.decode() for k, _ in got] == files + files[:3]
    assert [v for _, v in got] == contents + contents[:3]


@pytest.mark.parametrize("crlf", [False, True])
def test_text_line_reader_one_epoch_and_skip_header(tmp_path, crlf):
    files = []
    for i in range(2):
        text = b"".join(b"%d: %d" % (i, j) + (b"\r\n" if crlf else b"\n")
                        if j + 1 != 5 or i == 0 else b"%d: %d" % (i, j) for j in range(5))
        files.append(_write(tmp_path / f"text_line.{i}.txt", text))
    want = [(f"{files[i]}:{j + 1}", b"%d: %d" % (i, j)) for i in range(2) for j in range(5)]
    assert _read_all(TextLineReader(name="test_reader"), files) == want
    tf.reset_default_graph()
    skipped = [(k, v) for k, v in want if not k.endswith(":1")]
    assert _read_all(TextLineReader(skip_header_lines=1), files) == skipped


def test_text_line_reader_empty_file_counts_as_a_work_unit(tmp_path):
    empty = _write(tmp_path / "empty.txt", b"")
    one = _write(tmp_path / "one.txt", b"x\n")
    reader = TextLineReader()
    q = _queue()
    key, value = reader.read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[empty, one]]))
        sess.run(q.close())
        assert sess.run([key, value]) == [f"{one}:1".encode(), b"x"]
        assert sess.run(reader.num_work_units_completed()) == 1
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(key)
        assert sess.run([reader.num_work_units_completed(),
                         reader.num_records_produced()]) == [2, 1]


def _fixed_file(path, num_records, gap, opener=open):
    """TF's test layout: 5 header bytes, 3-byte records "000", "111"... with `gap`
    bytes between records, 2 footer bytes."""
    body = (b"G" * gap).join(str(r % 10).encode() * 3 for r in range(num_records))
    data = b"H" * 5 + body + b"F" * 2
    with opener(path, "wb") as f:
        f.write(data)
    return str(path)


@pytest.mark.parametrize("encoding", [None, "GZIP", "ZLIB"])
@pytest.mark.parametrize("num_records", [0, 7])
@pytest.mark.parametrize("gap", [0, 1])
def test_fixed_length_reader_headers_footers_hops(tmp_path, encoding, num_records, gap):
    files = []
    for i in range(2):
        p = tmp_path / f"fixed_length_record.{i}.bin"
        _fixed_file(p, num_records, gap)
        if encoding == "GZIP":
            p.write_bytes(gzip.compress(p.read_bytes()))
        elif encoding == "ZLIB":
            p.write_bytes(zlib.compress(p.read_bytes()))
        files.append(str(p))
    reader = FixedLengthRecordReader(record_bytes=3, header_bytes=5, footer_bytes=2,
                                     hop_bytes=0 if gap == 0 else 3 + gap, encoding=encoding)
    want = [(f"{f}:{j}", str(j % 10).encode() * 3) for f in files for j in range(num_records)]
    assert _read_all(reader, files) == want


def test_read_up_to_stops_at_file_ends_and_reads_everything(tmp_path):
    files = []
    for i in range(2):
        p = str(tmp_path / f"tfrecord.{i}")
        with TFRecordWriter(p) as w:
            for j in range(7):
                w.write(b"Record %d of file %d" % (j, i))
        files.append(p)
    reader = TFRecordReader(name="test_reader")
    q = _queue()
    keys, values = reader.read_up_to(q, 3)
    assert keys.shape.as_list() == [None]
    sizes, got = [], []
    with tf.Session() as sess:
        sess.run(q.enqueue_many([files]))
        sess.run(q.close())
        while True:
            try:
                k, v = sess.run([keys, values])
            except tf.errors.OutOfRangeError:
                break
            sizes.append(len(k))
            got += list(v)
        assert sess.run(reader.num_records_produced()) == 14
        assert sess.run(reader.num_work_units_completed()) == 2
        assert sess.run(reader.read_up_to(q, 0)).keys.shape == (0,)
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_records must be >= 0"):
            sess.run(reader.read_up_to(q, -1))
    assert sizes == [3, 3, 1, 3, 3, 1]  # as real TF: a call ends where a file ends
    assert got == [b"Record %d of file %d" % (j, i) for i in range(2) for j in range(7)]


def test_identity_read_up_to_gives_one_work_unit_per_call():
    reader = IdentityReader()
    q = _queue()
    keys, _ = reader.read_up_to(q, 2)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([["a", "b", "c"]]))
        sess.run(q.close())
        assert [list(sess.run(keys)) for _ in range(3)] == [[b"a"], [b"b"], [b"c"]]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(keys)


def test_reset():
    reader = IdentityReader("test_reader")
    work_completed = reader.num_work_units_completed()
    produced = reader.num_records_produced()
    q = _queue()
    key, _ = reader.read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([["X", "Y", "Z"]]))
        assert sess.run(key) == b"X" and sess.run(produced) == 1
        assert sess.run(key) == b"Y" and sess.run(work_completed) == 2
        sess.run(reader.reset())
        assert sess.run([work_completed, produced, q.size()]) == [0, 0, 1]
        assert sess.run(key) == b"Z"
        sess.run(q.enqueue_many([["K", "L"]]))
        assert sess.run(key) == b"K"


def test_reset_drops_the_current_file(tmp_path):
    f = _write(tmp_path / "a.txt", b"1\n2\n3\n")
    reader = TextLineReader()
    q = _queue()
    key, value = reader.read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[f, f]]))
        assert sess.run(value) == b"1"
        sess.run(reader.reset())
        assert sess.run([key, value]) == [f"{f}:1".encode(), b"1"]  # the next copy of f
        assert sess.run(value) == b"2"


def test_serialize_and_restore_state():
    reader = IdentityReader("test_reader")
    produced = reader.num_records_produced()
    q = _queue()
    key, _ = reader.read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([["X", "Y", "Z"]]))
        assert sess.run(key) == b"X"
        state = sess.run(reader.serialize_state())
        assert state == b'\x08\x01\x10\x01\x18\x01"\x01X'  # real TF's bytes for this state
        assert [sess.run(key) for _ in range(2)] == [b"Y", b"Z"]
        assert sess.run(produced) == 3
        sess.run(q.enqueue_many([["Y", "Z"]]))
        sess.run(q.close())
        sess.run(reader.restore_state(state))
        assert sess.run(produced) == 1
        assert [sess.run(key) for _ in range(2)] == [b"Y", b"Z"]
        with pytest.raises(tf.errors.OutOfRangeError, match=CLOSED):
            sess.run(key)
        assert sess.run(produced) == 3
        with pytest.raises(ValueError):
            reader.restore_state([])
        with pytest.raises(ValueError):
            reader.restore_state([state, state])
        for bad in (state[1:], state[:-1], state + b"ExtraJunk", b"PREFIX" + state,
                    b"BOGUS" + state[5:]):
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Could not parse state for IdentityReader 'test_reader'"):
                sess.run(reader.restore_state(bad))
        assert sess.run(produced) == 0  # a bad state resets the reader, as in TF


def test_serialize_unimplemented_where_tf_has_none():
    reader = TFRecordReader()
    assert not reader.supports_serialize
    with tf.Session() as sess:
        with pytest.raises(tf.errors.UnimplementedError, match="Reader SerializeState"):
            sess.run(reader.serialize_state())


# ---- errors ----------------------------------------------------------------------------
@pytest.mark.parametrize("make", [TFRecordReader, TextLineReader, WholeFileReader,
                                  lambda: FixedLengthRecordReader(3)])
def test_missing_file_names_it_and_the_next_read_goes_on(tmp_path, make):
    there = _write(tmp_path / "there.bin", b"abc")
    reader = make()
    q = _queue()
    key, _ = reader.read(q)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[str(tmp_path / "absent.bin"), there]]))
        with pytest.raises(tf.errors.NotFoundError,
                           match=r"absent\.bin.*does not exist. Check the names given to "
                                 r"string_input_producer") as e:
            sess.run(key)
        assert type(reader).__name__ in str(e.value)  # names the reader too
        assert sess.run(reader.num_work_units_completed()) == 0
        if not isinstance(reader, TFRecordReader):  # "abc" is not a TFRecord file
            assert sess.run(key).startswith(there.encode())


def test_truncated_fixed_length_record_is_an_error(tmp_path):
    good = _write(tmp_path / "good.bin", b"HHaaabbbF")
    cut = _write(tmp_path / "cut.bin", b"HHcccddF")
    reader = FixedLengthRecordReader(3, header_bytes=2, footer_bytes=1)
    q = _queue()
    value = reader.read(q).value
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[good, cut]]))
        sess.run(q.close())
        assert [sess.run(value) for _ in range(2)] == [b"aaa", b"bbb"]
        # TF 1.x returned b"ccc" and silently dropped "dd"; here no record of the cut
        # file is trusted (its size is known before reading it)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"cut\.bin.*size 8 bytes.*body length 5 .*record length "
                                 r"\(3 bytes\). Check the sizes"):
            sess.run(value)
        with pytest.raises(tf.errors.InvalidArgumentError, match="cut.bin"):
            sess.run(value)  # the failed file stays failed (TF retries the same spot)


def test_truncated_compressed_fixed_length_and_tfrecord_are_data_loss(tmp_path):
    gz = _write(tmp_path / "cut.gz", gzip.compress(b"aaabbbcc"))
    reader = FixedLengthRecordReader(3, encoding="GZIP")
    q = _queue()
    value = reader.read(q).value
    rec = tmp_path / "cut.tfrecord"
    with TFRecordWriter(str(rec)) as w:
        w.write(b"first")
        w.write(b"second")
    rec.write_bytes(rec.read_bytes()[:-3])
    tfr = TFRecordReader()
    tfr_value = tfr.read(q).value
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[gz, str(rec)]]))
        assert [sess.run(value) for _ in range(2)] == [b"aaa", b"bbb"]
        with pytest.raises(tf.errors.DataLossError, match=r"cut\.gz.*decompressed size 8"):
            sess.run(value)
        assert sess.run(tfr_value) == b"first"
        with pytest.raises(tf.errors.DataLossError, match=r"cut\.tfrecord: truncated record"):
            sess.run(tfr_value)


def test_bad_arguments_fail_at_build_time():
    with pytest.raises(ValueError, match="record_bytes must be > 0"):
        FixedLengthRecordReader(0)
    with pytest.raises(ValueError, match="hop_bytes must be >= 0"):
        FixedLengthRecordReader(3, hop_bytes=-1)
    with pytest.raises(ValueError, match="unknown encoding 'LZ4'"):
        FixedLengthRecordReader(3, encoding="LZ4")
    with pytest.raises(ValueError, match="skip_header_lines must be >= 0"):
        TextLineReader(skip_header_lines=-1)
    with pytest.raises(ValueError, match="compression"):
        TFRecordReader(options="LZ4")
    with pytest.raises(ValueError, match="single strings"):
        IdentityReader().read(tf.FIFOQueue(3, [tf.int32]))
    with pytest.raises(TypeError, match="reads from a queue"):
        IdentityReader().read("not a queue")


def test_match_filenames_once(tmp_path):
    for n in ("b.tfrecord", "a.tfrecord", "c.txt"):
        _write(tmp_path / n, b"")
    files = match_filenames_once(str(tmp_path / "*.tfrecord"))
    assert files in tf.local_variables() and files not in tf.trainable_variables()
    assert files.op.name == "matching_filenames"
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert list(sess.run(files)) == [str(tmp_path / n).encode()
                                         for n in ("a.tfrecord", "b.tfrecord")]


def test_public_names_are_the_reader_module():
    from tensorweave.readers import readers as reader_ops
    import tensorweave as tf
    for name in ("TFRecordReader", "TextLineReader", "FixedLengthRecordReader",
                 "WholeFileReader", "IdentityReader", "ReaderBase"):
        assert getattr(tf, name) is getattr(reader_ops, name)
    assert tf.train.match_filenames_once is reader_ops.match_filenames_once
    assert tf.io.match_filenames_once is reader_ops.match_filenames_once


def test_queue_shapes_read_as_tf_reads_them():
    import tensorweave as tf
    with tf.Graph().as_default():
        q = tf.FIFOQueue(9, [tf.string], shapes=())  # as TF's reader tests write it
        assert q.dequeue().shape.as_list() == []
        assert tf.FIFOQueue(9, [tf.int32], shapes=[2, 3]).dequeue().shape.as_list() == [2, 3]
        two = tf.FIFOQueue(9, [tf.int32, tf.float32], shapes=[[2], []]).dequeue()
        assert [t.shape.as_list() for t in two] == [[2], []]
        with pytest.raises(ValueError, match="one shape per dtype"):
            tf.FIFOQueue(9, [tf.int32, tf.float32], shapes=[[2]])
