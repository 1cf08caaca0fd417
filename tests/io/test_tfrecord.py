"""TFRecord files: framing, compression, corruption, and TF-written files (no TF import)."""
import gzip
import os
import struct
import zlib

import pytest

import tensorweave as tf
from tensorweave.framework import tfrecord
from suite_paths import TEST_DATA

TF_DIR = os.path.join(TEST_DATA, "tf_written_records")
COMPRESSIONS = ["", "GZIP", "ZLIB"]


def _write(path, records, options=None):
    with tf.python_io.TFRecordWriter(str(path), options) as w:
        for r in records:
            w.write(r)
    return str(path)


def test_framing_layout_by_hand(tmp_path):
    path = _write(tmp_path / "r", [b"abc"])
    data = open(path, "rb").read()
    assert len(data) == 8 + 4 + 3 + 4
    assert struct.unpack("<Q", data[:8])[0] == 3
    assert struct.unpack("<I", data[8:12])[0] == tfrecord.masked_crc32c(data[:8])
    assert data[12:15] == b"abc"
    assert struct.unpack("<I", data[15:])[0] == tfrecord.masked_crc32c(b"abc")


def test_masked_crc_known_answer():
    # CRC32C("123456789") = 0xE3069283 (RFC 3720); masking: rotate right 15, add 0xa282ead8.
    crc = 0xE3069283
    want = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    assert tfrecord.masked_crc32c(b"123456789") == want


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_round_trip_with_empty_and_large_records(tmp_path, compression):
    records = [b"first", b"", b"\x00\xff" * 300_000, "text is utf-8 \u00e9".encode()]
    path = _write(tmp_path / "r", records, tf.io.TFRecordOptions(compression))
    assert list(tf.python_io.tf_record_iterator(path, compression)) == records
    assert list(tf.io.tf_record_iterator(
        path, tf.python_io.TFRecordOptions(compression))) == records


def test_str_records_are_written_as_utf8(tmp_path):
    path = _write(tmp_path / "r", ["h\u00e9"])
    assert list(tf.io.tf_record_iterator(path)) == ["h\u00e9".encode()]


def test_compression_type_enum_and_names():
    ct = tf.python_io.TFRecordCompressionType
    opts = tf.python_io.TFRecordOptions
    assert opts.get_compression_type_string(opts(ct.GZIP)) == "GZIP"
    assert opts.get_compression_type_string(opts(ct.ZLIB)) == "ZLIB"
    assert opts.get_compression_type_string(opts(ct.NONE)) == ""
    assert opts.get_compression_type_string(None) == ""
    assert opts.get_compression_type_string("gzip") == "GZIP"
    with pytest.raises(ValueError, match="BZIP2"):
        opts("BZIP2")


def test_gzip_file_is_a_plain_gzip_stream(tmp_path):
    path = _write(tmp_path / "r.gz", [b"a", b"bc"], tf.io.TFRecordOptions("GZIP"))
    assert gzip.decompress(open(path, "rb").read()) == \
        tfrecord.encode_record(b"a") + tfrecord.encode_record(b"bc")
    zpath = _write(tmp_path / "r.z", [b"a"], tf.io.TFRecordOptions("ZLIB"))
    assert zlib.decompress(open(zpath, "rb").read()) == tfrecord.encode_record(b"a")


def test_compression_level_changes_the_bytes_not_the_records(tmp_path):
    recs = [b"abcd" * 5000]
    fast = _write(tmp_path / "a", recs, tf.io.TFRecordOptions("ZLIB", compression_level=1))
    best = _write(tmp_path / "b", recs, tf.io.TFRecordOptions("ZLIB", compression_level=9))
    assert list(tf.io.tf_record_iterator(fast, "ZLIB")) == recs
    assert list(tf.io.tf_record_iterator(best, "ZLIB")) == recs


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_flush_makes_records_readable_before_close(tmp_path, compression):
    path = str(tmp_path / "r")
    w = tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression))
    w.write(b"one")
    w.write(b"two")
    w.flush()
    # A reader of the file as it stands sees both records; for a compressed file the
    # stream is unfinished, so read the flushed bytes as a snapshot.
    snapshot = tmp_path / "snap"
    snapshot.write_bytes(open(path, "rb").read())
    reader = tf.io.tf_record_iterator(str(snapshot), compression)
    assert [next(reader), next(reader)] == [b"one", b"two"]
    w.write(b"three")
    w.close()
    w.close()  # a second close does nothing
    assert list(tf.io.tf_record_iterator(path, compression)) == [b"one", b"two", b"three"]


def test_write_after_close_is_an_error(tmp_path):
    w = tf.io.TFRecordWriter(str(tmp_path / "r"))
    w.close()
    with pytest.raises(tf.errors.FailedPreconditionError, match="closed"):
        w.write(b"x")


def test_writer_into_missing_directory_names_the_path(tmp_path):
    bad = str(tmp_path / "no" / "such" / "dir" / "r")
    with pytest.raises(tf.errors.NotFoundError, match="no/such/dir"):
        tf.io.TFRecordWriter(bad)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="nothere"):
        list(tf.io.tf_record_iterator(str(tmp_path / "nothere")))


def test_truncated_file_is_data_loss_with_offset(tmp_path):
    path = _write(tmp_path / "r", [b"aaaa", b"bbbbbbbb"])
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-3])  # cut into the second record's data CRC
    it = tf.io.tf_record_iterator(path)
    assert next(it) == b"aaaa"
    with pytest.raises(tf.errors.DataLossError, match=r"truncated record at offset 20"):
        next(it)
    open(path, "wb").write(data[:25])  # cut into the second record's header
    with pytest.raises(tf.errors.DataLossError, match=r"truncated record header at offset 20"):
        list(tf.io.tf_record_iterator(path))


@pytest.mark.parametrize("where,what", [(3, "length"), (14, "data"), (9, "length")])
def test_corrupt_byte_is_data_loss_naming_file_and_offset(tmp_path, where, what):
    path = _write(tmp_path / "rec", [b"hello", b"world"])
    data = bytearray(open(path, "rb").read())
    data[21 + where] ^= 0x10  # damage the second record (the first is 21 bytes)
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError,
                       match=rf"rec: corrupted record {what} at offset 21"):
        list(tf.io.tf_record_iterator(path))


def test_corrupt_gzip_stream_is_data_loss(tmp_path):
    path = _write(tmp_path / "r.gz", [b"x" * 1000], tf.io.TFRecordOptions("GZIP"))
    data = bytearray(open(path, "rb").read())
    data[12] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match="r.gz"):
        list(tf.io.tf_record_iterator(path, "GZIP"))


def test_reading_gzip_without_compression_is_data_loss(tmp_path):
    path = _write(tmp_path / "r.gz", [b"abc" * 10], tf.io.TFRecordOptions("GZIP"))
    with pytest.raises(tf.errors.DataLossError, match="r.gz"):
        list(tf.io.tf_record_iterator(path))


@pytest.mark.parametrize("name,compression", [
    ("examples.tfrecord", ""), ("examples.tfrecord.gz", "GZIP"),
    ("examples.tfrecord.zlib", "ZLIB")])
def test_reads_tf_written_files(name, compression):
    import json
    expected = json.load(open(os.path.join(TF_DIR, "expected.json")))
    recs = list(tf.io.tf_record_iterator(os.path.join(TF_DIR, name), compression))
    assert [len(r) for r in recs] == expected["record_lengths"]
    ex = tf.train.Example.FromString(recs[0])
    assert list(ex.features.feature["x"].float_list.value) == [1.5, -2.0]
    assert list(ex.features.feature["tags"].bytes_list.value) == [b"red", b"a\x00b\xff"]
    assert "label" not in tf.train.Example.FromString(recs[2]).features.feature


def test_our_file_matches_tf_written_bytes(tmp_path):
    # The same records framed by us are byte-for-byte TF's file.
    tf_path = os.path.join(TF_DIR, "examples.tfrecord")
    recs = list(tf.io.tf_record_iterator(tf_path))
    ours = _write(tmp_path / "r", recs)
    assert open(ours, "rb").read() == open(tf_path, "rb").read()


def test_tf_written_sequence_example():
    (rec,) = tf.io.tf_record_iterator(os.path.join(TF_DIR, "sequence.tfrecord"))
    seq = tf.train.SequenceExample.FromString(rec)
    assert list(seq.context.feature["id"].bytes_list.value) == [b"s1"]
    toks = seq.feature_lists.feature_list["tok"].feature
    assert [f.int64_list.value[0] for f in toks] == [7, 8, 9]


def test_example_proto_field_numbers_match_tf():
    # Hand-encoded wire bytes: Example.features=1 > Features.feature=1 (map entry: key=1,
    # value=2) > Feature.int64_list=3 > Int64List.value=1 (packed).
    feature = b"\x1a\x03" + b"\x0a\x01\x05"           # int64_list { value: [5] }
    entry = b"\x0a\x01k" + b"\x12" + bytes([len(feature)]) + feature
    features = b"\x0a" + bytes([len(entry)]) + entry
    wire = b"\x0a" + bytes([len(features)]) + features
    ex = tf.train.Example.FromString(wire)
    assert list(ex.features.feature["k"].int64_list.value) == [5]
    assert ex.SerializeToString() == wire
