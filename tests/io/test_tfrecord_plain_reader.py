"""The uncompressed TFRecord reader cuts records from 1 MiB reads: records across the
buffer's ends, and damage past the first buffer, read as record-by-record reading
reads them (the same payloads, the same DataLossError offsets)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import tfrecord


def _write(path, records):
    with tf.io.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)
    return str(path)


def _records(n, seed=0):
    rng = np.random.RandomState(seed)
    return [rng.bytes(int(k)) for k in rng.randint(0, 40000, n)] + [b"x" * (3 << 20)]


def test_records_across_buffer_ends_read_back_whole(tmp_path):
    records = _records(120)  # ~2.4 MB of small records, then one larger than a buffer
    path = _write(tmp_path / "r", records)
    assert list(tf.io.tf_record_iterator(path)) == records
    # The same as the record-by-record reader of compressed streams.
    zipped = str(tmp_path / "r.z")
    with tf.io.TFRecordWriter(zipped, tf.io.TFRecordOptions("ZLIB")) as w:
        for r in records:
            w.write(r)
    assert list(tfrecord.read_records(zipped, "ZLIB")) == records


def test_damage_past_the_first_buffer_names_the_record_offset(tmp_path):
    records = _records(80, seed=1)
    path = _write(tmp_path / "r", records)
    offsets = np.cumsum([0] + [len(r) + 16 for r in records])
    k = int(np.searchsorted(offsets, 1 << 20))  # the first record starting past 1 MiB
    data = bytearray(open(path, "rb").read())
    data[offsets[k] + 14] ^= 1  # a byte of its payload
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError,
                       match=rf"corrupted record data at offset {offsets[k]}$"):
        list(tf.io.tf_record_iterator(path))
    open(path, "wb").write(bytes(data[:offsets[k] + 30]))
    with pytest.raises(tf.errors.DataLossError,
                       match=rf"truncated record at offset {offsets[k]} \(length "
                             rf"{len(records[k])}, only 14 bytes left\)"):
        list(tf.io.tf_record_iterator(path))
