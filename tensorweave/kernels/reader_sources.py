"""How each TF1 reader turns a work unit (a file name) into (key, value) records.

The files are read by the same code as the tf.data sources: TFRecord framing from
`framework/tfrecord.py`, lines and fixed-length records from
`framework/file_records.py`. Keys are TF's: "<file>:<line number from 1>" for
TextLineReader (header lines count), "<file>:<record index from 0>" for
FixedLengthRecordReader, "<file>:<byte offset of the record>" for TFRecordReader (in
the decompressed stream), the file name for WholeFileReader, the work itself for
IdentityReader.

Example:
    >>> r = TextLineReaderResource("reader", skip_header_lines=1)
    >>> list(r._records_of(b"/tmp/a.csv"))
    [(b'/tmp/a.csv:2', b'1,2'), (b'/tmp/a.csv:3', b'3,4')]
"""
from __future__ import annotations

import os
from typing import Any, Iterator

from tensorweave.framework import errors
from tensorweave.framework import file_access as _files
from tensorweave.framework.tfrecord import compression_name, read_records
from tensorweave.framework.file_records import (
    DEFAULT_BUFFER, compressed_records, plain_records, read_lines)
from tensorweave.kernels.reader_resource import ReaderResource

Records = Iterator[tuple[bytes, bytes]]
# A TFRecord's framing around its payload: length (8), its CRC (4), payload CRC (4).
_FRAMING = 16


class _FileReader(ReaderResource):
    """A reader whose work units are file names: they are checked when work starts."""

    def _path(self, work: bytes) -> str:
        """The file of `work`, allowed by the task's file policy and present: else the
        work unit never starts (TF's OnWorkStarted) and the next read takes the next."""
        path = _files.check_path(self.file_policy, os.fsdecode(work), "read", self.name)
        if not os.path.exists(path):
            raise errors.NotFoundError(
                None, None, f"{self.name}: file {path} (dequeued from its filename queue) "
                "does not exist. Check the names given to string_input_producer (a "
                "relative path is relative to the task's working directory), or list "
                "existing files with tf.train.match_filenames_once / tf.gfile.Glob.")
        if os.path.isdir(path):
            raise errors.FailedPreconditionError(
                None, None, f"{self.name}: {path} (dequeued from its filename queue) is a "
                "directory; queue the files in it (tf.train.match_filenames_once(dir + "
                "'/*')).")
        return path


class IdentityReaderResource(ReaderResource):
    """Each work unit is one record: key and value are the work itself."""

    kind = "IdentityReader"
    one_record_per_work = True
    serializable = True

    def _records_of(self, work: bytes) -> Records:
        return iter([(work, work)])


class WholeFileReaderResource(_FileReader):
    """Each file is one record: key the file name, value its contents."""

    kind = "WholeFileReader"
    one_record_per_work = True
    serializable = True

    def _records_of(self, work: bytes) -> Records:
        path = self._path(work)

        def read() -> Records:
            try:
                with open(path, "rb") as f:
                    yield work, f.read()
            except OSError as e:
                raise errors.PermissionDeniedError(
                    None, None, f"{self.name}: cannot read {path}: {e.strerror or e}.") from None
        return read()


class TextLineReaderResource(_FileReader):
    """The lines of each file, without their line endings; the first
    `skip_header_lines` of each file are skipped (their numbers still count in keys)."""

    kind = "TextLineReader"

    def __init__(self, node_name: str, file_policy: Any = None,
                 skip_header_lines: int = 0) -> None:
        super().__init__(node_name, file_policy)
        self.skip = skip_header_lines

    def _records_of(self, work: bytes) -> Records:
        path = self._path(work)

        def lines() -> Records:
            for number, line in enumerate(read_lines(path, "", DEFAULT_BUFFER), 1):
                if number > self.skip:
                    yield b"%s:%d" % (work, number), line
        return lines()


class TFRecordReaderResource(_FileReader):
    """The records of each TFRecord file ("", "ZLIB" or "GZIP" compressed)."""

    kind = "TFRecordReader"

    def __init__(self, node_name: str, file_policy: Any = None,
                 compression_type: str = "") -> None:
        super().__init__(node_name, file_policy)
        self.compression = compression_name(compression_type)  # bytes from a GraphDef too

    def _records_of(self, work: bytes) -> Records:
        path = self._path(work)

        def records() -> Records:
            offset = 0
            for payload in read_records(path, self.compression):
                yield b"%s:%d" % (work, offset), payload
                offset += len(payload) + _FRAMING
        return records()


class FixedLengthRecordReaderResource(_FileReader):
    """The fixed-length records of each file, between a header and a footer.

    Records start every `hop_bytes` bytes (0: back to back). Unlike TF 1.x, which
    silently dropped a file's last bytes when they were not a whole record (a wrong
    record_bytes then passed unnoticed), a body that records do not exactly cover is
    an error naming the file and the sizes: uncompressed files are checked before
    their first record, compressed ones once read to the end.
    """

    kind = "FixedLengthRecordReader"

    def __init__(self, node_name: str, file_policy: Any = None, *, record_bytes: int,
                 header_bytes: int = 0, footer_bytes: int = 0, hop_bytes: int = 0,
                 encoding: str = "") -> None:
        super().__init__(node_name, file_policy)
        self.sizes = (record_bytes, header_bytes, footer_bytes)
        self.hop = hop_bytes
        self.encoding = compression_name(encoding)

    def _records_of(self, work: bytes) -> Records:
        path = self._path(work)
        if self.encoding:
            values = compressed_records(path, self.encoding, self.sizes, DEFAULT_BUFFER,
                                         self.hop, self.name)
        else:
            values = plain_records(path, self.sizes, DEFAULT_BUFFER, self.hop, self.name)
        return ((b"%s:%d" % (work, i), v) for i, v in enumerate(values))


__all__ = ["FixedLengthRecordReaderResource", "IdentityReaderResource",
           "TFRecordReaderResource", "TextLineReaderResource", "WholeFileReaderResource"]
