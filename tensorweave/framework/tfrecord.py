"""TFRecord files: the framing shared by event files and `tf.io.TFRecordWriter`.

Each record is: uint64 length, masked CRC32C of those 8 bytes, the payload, masked
CRC32C of the payload (all little-endian), exactly as TensorFlow writes them. A file
may be compressed as a whole ("GZIP": a gzip stream, "ZLIB": a zlib stream); the
framing is inside the compressed stream.

Example:
    >>> with TFRecordWriter("/tmp/a.tfrecord", "GZIP") as w:
    ...     w.write(b"hello")
    >>> list(tf_record_iterator("/tmp/a.tfrecord", "GZIP"))
    [b'hello']
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import IO, Any

# CRC32C (Castagnoli) is what TFRecord framing uses; google-crc32c computes it in C.
import google_crc32c

from tensorweave.framework import errors

_MASK_DELTA = 0xA282EAD8
# zlib's wbits: 15 = zlib header, 16 + 15 = gzip header (what TF's GZIP writes).
_WBITS = {"ZLIB": 15, "GZIP": 16 + 15}
_READ_CHUNK = 256 * 1024


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC32C: rotated and offset so CRCs of CRCs stay well spread."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def encode_record(data: bytes) -> bytes:
    """One framed record: length, its masked CRC, `data`, its masked CRC."""
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


class TFRecordCompressionType:
    """The compression kinds of a TFRecord file (TF1's `tf.python_io.TFRecordCompressionType`)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_BY_CODE = {0: "", 1: "ZLIB", 2: "GZIP"}


class TFRecordOptions:
    """Options of a TFRecord file: its compression ("", "ZLIB" or "GZIP").

    Example:
        >>> opts = tf.io.TFRecordOptions(tf.io.TFRecordCompressionType.GZIP)
        >>> writer = tf.io.TFRecordWriter(path, options=opts)
    """

    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB",
                            TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type: Any = None, flush_mode: int | None = None,
                 input_buffer_size: int | None = None, output_buffer_size: int | None = None,
                 window_bits: int | None = None, compression_level: int | None = None,
                 compression_method: int | None = None, mem_level: int | None = None,
                 compression_strategy: int | None = None) -> None:
        # TF 1.x's parameters, in its order. The zlib ones reach zlib.compressobj and
        # flush_mode each record's flush; the buffer sizes tune TF's C++ streams only
        # (Python's zlib sizes its own buffers), so they are kept for inspection.
        self.compression_type = compression_name(compression_type)
        self.flush_mode = flush_mode
        self.input_buffer_size, self.output_buffer_size = input_buffer_size, output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options: Any) -> str:
        """The compression name ("", "ZLIB" or "GZIP") of TFRecordOptions, a name or a code."""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return compression_name(options)


def compression_name(compression: Any) -> str:
    """Normalizes None / "" / "GZIP" / "ZLIB" / a TFRecordCompressionType code / options."""
    if isinstance(compression, TFRecordOptions):
        return compression.compression_type
    if compression is None:
        return ""
    if isinstance(compression, int) and compression in _BY_CODE:
        return _BY_CODE[compression]
    if isinstance(compression, bytes):
        compression = compression.decode()
    if isinstance(compression, str) and compression.upper() in ("", "GZIP", "ZLIB"):
        return compression.upper()
    raise ValueError(f"Unknown TFRecord compression {compression!r}: use None, \"\", "
                     "\"GZIP\" or \"ZLIB\" (or a TFRecordCompressionType).")


class TFRecordWriter:
    """Writes records to a TFRecord file (`tf.io.TFRecordWriter`).

    Example:
        >>> with tf.python_io.TFRecordWriter("/tmp/data.tfrecord") as writer:
        ...     writer.write(example.SerializeToString())
    """

    def __init__(self, path: str, options: Any = None) -> None:
        self._path = str(path)
        self._compression = compression_name(options)

        def opt(attr: str, default: int) -> int:
            value = getattr(options, attr, None)
            return default if value is None else int(value)
        level = opt("compression_level", -1)
        # TF's window_bits is zlib's (8..15); GZIP adds 16, as zlib's own API does.
        wbits = opt("window_bits", 15) + (16 if self._compression == "GZIP" else 0)
        self._flush_mode = getattr(options, "flush_mode", None)
        try:
            self._file: IO[bytes] | None = open(self._path, "wb")
        except OSError as e:
            raise errors.NotFoundError(None, None, f"TFRecordWriter: cannot create "
                                       f"{self._path}: {e.strerror}") from e
        self._zip = (zlib.compressobj(level, opt("compression_method", zlib.DEFLATED), wbits,
                                      opt("mem_level", zlib.DEF_MEM_LEVEL),
                                      opt("compression_strategy", zlib.Z_DEFAULT_STRATEGY))
                     if self._compression else None)

    def write(self, record: bytes | str) -> None:
        """Appends one record (bytes; a str is written as UTF-8)."""
        if self._file is None:
            raise errors.FailedPreconditionError(
                None, None, f"TFRecordWriter for {self._path} is closed.")
        if isinstance(record, str):
            record = record.encode()
        framed = encode_record(bytes(record))
        if not self._zip:
            self._file.write(framed)
            return
        self._file.write(self._zip.compress(framed))
        if self._flush_mode not in (None, zlib.Z_NO_FLUSH):
            self._file.write(self._zip.flush(int(self._flush_mode)))

    def flush(self) -> None:
        """Makes every record written so far readable by a reader of the file."""
        if self._file is None:
            raise errors.FailedPreconditionError(
                None, None, f"TFRecordWriter for {self._path} is closed.")
        if self._zip:
            self._file.write(self._zip.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self) -> None:
        """Finishes the file (the compressed stream's trailer); a second close is a no-op."""
        if self._file is None:
            return
        if self._zip:
            self._file.write(self._zip.flush(zlib.Z_FINISH))
        self._file.close()
        self._file = None

    def __enter__(self) -> "TFRecordWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Stream:
    """Bytes of a file, decompressed when asked; `pos` counts the bytes handed out."""

    def __init__(self, f: IO[bytes], compression: str, path: str) -> None:
        self._f, self._path, self.pos = f, path, 0
        self._zip = zlib.decompressobj(_WBITS[compression]) if compression else None
        self._buf = b""

    def read(self, n: int) -> bytes:
        if self._zip is None:
            out = self._f.read(n)
        else:
            while len(self._buf) < n:
                chunk = self._f.read(_READ_CHUNK)
                try:
                    if not chunk:
                        self._buf += self._zip.flush()
                        break
                    self._buf += self._zip.decompress(chunk)
                except zlib.error as e:
                    raise errors.DataLossError(None, None, f"{self._path}: corrupted compressed "
                                               f"data near offset {self.pos}: {e}") from e
            out, self._buf = self._buf[:n], self._buf[n:]
        self.pos += len(out)
        return out


def read_records(path: str, compression: Any = None) -> Iterator[bytes]:
    """Yields each record's payload of a TFRecord file.

    A damaged or truncated record raises DataLossError naming the file and the record's
    offset (in the decompressed stream for a compressed file).
    """
    path = str(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise errors.NotFoundError(None, None, f"TFRecord file {path}: {e.strerror}") from e
    with f:
        if not compression_name(compression):
            yield from _plain_records(f, path)
            return
        stream = _Stream(f, compression_name(compression), path)
        while (record := _next_record(stream, path)) is not None:
            yield record


def _plain_records(f: IO[bytes], path: str) -> Iterator[bytes]:
    """read_records of an uncompressed file: records cut from a buffer read 1 MiB at a
    time (two reads and two header slices a record cost ~1 us of a 256-record batch's
    every record); the same checks and errors as _next_record. The CRCs are masked
    inline (masked_crc32c's call was a third of the time a record took)."""
    crc, unpack, unpack_crc = google_crc32c.value, _HEADER.unpack_from, _CRC.unpack_from
    buf, pos, base = b"", 0, 0  # base: the file offset of buf[0]
    while True:
        if len(buf) - pos < 12:
            buf, base, pos = buf[pos:] + f.read(_PLAIN_CHUNK), base + pos, 0
            if len(buf) < 12:
                if buf:
                    raise errors.DataLossError(None, None, f"{path}: truncated record "
                                               f"header at offset {base}")
                return
        n, hcrc = unpack(buf, pos)
        h = crc(buf[pos:pos + 8])
        if ((h >> 15 | h << 17) + _MASK_DELTA) & 0xFFFFFFFF != hcrc:
            raise errors.DataLossError(None, None, f"{path}: corrupted record length at "
                                       f"offset {base + pos}")
        end = pos + 12 + n
        if len(buf) < end + 4:
            buf, base, pos = buf[pos:] + f.read(max(_PLAIN_CHUNK, end + 4 - len(buf))), \
                base + pos, 0
            end = 12 + n
            if len(buf) < end + 4:
                raise errors.DataLossError(
                    None, None, f"{path}: truncated record at offset {base} (length {n}, "
                    f"only {max(len(buf) - 16, 0)} bytes left)")
        data = buf[pos + 12:end]
        h = crc(data)
        if ((h >> 15 | h << 17) + _MASK_DELTA) & 0xFFFFFFFF != unpack_crc(buf, end)[0]:
            raise errors.DataLossError(None, None, f"{path}: corrupted record data at "
                                       f"offset {base + pos}")
        pos = end + 4
        yield data


_PLAIN_CHUNK = 1 << 20
_HEADER, _CRC = struct.Struct("<QI"), struct.Struct("<I")


def _next_record(stream: _Stream, path: str) -> bytes | None:
    """The next payload, or None at a clean end of file."""
    at = stream.pos
    header = stream.read(12)
    if not header:
        return None
    if len(header) < 12:
        raise errors.DataLossError(None, None, f"{path}: truncated record header at offset {at}")
    (n,), (hcrc,) = struct.unpack("<Q", header[:8]), struct.unpack("<I", header[8:])
    if masked_crc32c(header[:8]) != hcrc:
        raise errors.DataLossError(None, None, f"{path}: corrupted record length at offset {at}")
    body = stream.read(n + 4)
    if len(body) < n + 4:
        raise errors.DataLossError(None, None, f"{path}: truncated record at offset {at} "
                                   f"(length {n}, only {max(len(body) - 4, 0)} bytes left)")
    if masked_crc32c(body[:n]) != struct.unpack("<I", body[n:])[0]:
        raise errors.DataLossError(None, None, f"{path}: corrupted record data at offset {at}")
    return body[:n]


def tf_record_iterator(path: str, options: Any = None) -> Iterator[bytes]:
    """Yields the records of a TFRecord file (`tf.python_io.tf_record_iterator`).

    Example:
        >>> for rec in tf.python_io.tf_record_iterator(path):
        ...     ex = tf.train.Example.FromString(rec)
    """
    return read_records(path, options)


__all__ = [
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "compression_name",
    "encode_record",
    "masked_crc32c",
    "read_records",
    "tf_record_iterator",
]
