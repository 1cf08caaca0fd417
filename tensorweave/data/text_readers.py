"""Line and fixed-length-record Dataset sources: `tf.data.TextLineDataset` and
`tf.data.FixedLengthRecordDataset`.

They share TFRecordDataset's file handling (readers.py: file names as Python values, a
tensor or a Dataset; compression; TF's interleave order for `num_parallel_reads`) and
read compressed files through the TFRecord reader's decompressing stream.

Example:
    >>> lines = tf.data.TextLineDataset("train.csv").skip(1)         # no header row
    >>> cols = lines.map(lambda l: tf.decode_csv(l, [[0.0], [0]])).batch(32)
    >>> images = tf.data.FixedLengthRecordDataset(files, 1 + 32 * 32 * 3)  # CIFAR-10
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from tensorweave.framework.file_records import (
    DEFAULT_BUFFER, compressed_records, plain_records, read_lines)
from tensorweave.data.readers import _FileDataset

def _check_buffer(args: dict[str, Any], kind: str, error: Callable[[str], Exception]) -> None:
    size = args.get("buffer_size")
    if size is not None and int(size) < 0:
        raise error(f"{kind}: buffer_size must be >= 0 (0 or None: the default "
                    f"{DEFAULT_BUFFER} bytes), got {size!r}.")


def _chunk(args: dict[str, Any]) -> int:
    size = args.get("buffer_size")
    return int(size) if size else DEFAULT_BUFFER


class TextLineDataset(_FileDataset):
    """The lines of one or more text files, each a scalar string element.

    Lines end at "\\n"; like TF, every "\\r" is dropped (so "\\r\\n" endings read as
    "\\n"), a last line without a newline is kept (unless it is empty), and an empty
    file gives no lines. Files are read one after another (or interleaved, see
    `num_parallel_reads`); a missing file is a NotFoundError at `get_next`.

    Args:
        filenames: a file name (str or path), a list of them, a string tensor (scalar
            or vector, e.g. a placeholder fed at iterator initialization), or a Dataset
            of scalar file names.
        compression_type: None or "" (none), "GZIP" or "ZLIB"; a string tensor too.
        buffer_size: bytes read at a time (0 or None: 256 KiB); an int64 tensor too.
        num_parallel_reads: read this many files at once, interleaving their lines one
            at a time in file order (TF's deterministic interleave); default one file
            after another.

    Raises:
        ValueError: an unknown compression, a negative buffer_size, or
            num_parallel_reads < 1.
        TypeError: file names that are not strings.

    Example:
        >>> ds = tf.data.TextLineDataset(["a.csv", "b.csv"]).skip(1)
        >>> line = ds.make_one_shot_iterator().get_next()      # b"1.5,2,x"
    """

    def __init__(self, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                 num_parallel_reads: Any = None) -> None:
        super().__init__(filenames, compression_type, num_parallel_reads,
                         buffer_size=buffer_size)

    def _check(self, args: dict[str, Any], error: Any) -> None:
        _check_buffer(args, "TextLineDataset", error)

    def _read(self, path: str, args: dict[str, Any]) -> Iterator[bytes]:
        return read_lines(path, args["compression_type"], _chunk(args))


class FixedLengthRecordDataset(_FileDataset):
    """The fixed-length records of one or more binary files, each a scalar string.

    Each file is `header_bytes` bytes, then records of exactly `record_bytes` bytes,
    then `footer_bytes` bytes; the header and footer are skipped. As in TF, a file
    whose body is not a whole number of records is an error naming the file: an
    InvalidArgumentError before any of its records (uncompressed), a DataLossError
    after its whole records (compressed: the size is known only once read). A
    missing file is a NotFoundError at `get_next`.

    Args:
        filenames: a file name (str or path), a list of them, a string tensor (scalar
            or vector, e.g. a placeholder fed at iterator initialization), or a Dataset
            of scalar file names.
        record_bytes: the size of a record (> 0); an int64 tensor too.
        header_bytes: bytes to skip at the start of each file (default 0).
        footer_bytes: bytes to skip at the end of each file (default 0).
        buffer_size: bytes read at a time (0 or None: 256 KiB).
        compression_type: None or "" (none), "GZIP" or "ZLIB"; a string tensor too.
        num_parallel_reads: read this many files at once, interleaving their records
            one at a time in file order (TF's deterministic interleave).

    Raises:
        ValueError: record_bytes <= 0, a negative header, footer or buffer size, an
            unknown compression, or num_parallel_reads < 1 (when given as Python
            values; fed tensors are checked at iterator initialization, as
            InvalidArgumentError).

    Example:
        >>> ds = tf.data.FixedLengthRecordDataset(["data_batch_1.bin"], 1 + 3072)
        >>> rec = tf.decode_raw(ds.make_one_shot_iterator().get_next(), tf.uint8)
    """

    def __init__(self, filenames: Any, record_bytes: Any, header_bytes: Any = None,
                 footer_bytes: Any = None, buffer_size: Any = None,
                 compression_type: Any = None, num_parallel_reads: Any = None) -> None:
        super().__init__(filenames, compression_type, num_parallel_reads,
                         record_bytes=record_bytes,
                         header_bytes=0 if header_bytes is None else header_bytes,
                         footer_bytes=0 if footer_bytes is None else footer_bytes,
                         buffer_size=buffer_size)

    def _check(self, args: dict[str, Any], error: Any) -> None:
        kind = "FixedLengthRecordDataset"
        if "record_bytes" in args and int(args["record_bytes"]) <= 0:
            raise error(f"{kind}: record_bytes must be > 0, got {args['record_bytes']!r}.")
        for key in ("header_bytes", "footer_bytes"):
            if key in args and int(args[key]) < 0:
                raise error(f"{kind}: {key} must be >= 0, got {args[key]!r}.")
        _check_buffer(args, kind, error)

    def _read(self, path: str, args: dict[str, Any]) -> Iterator[bytes]:
        sizes = (int(args["record_bytes"]), int(args["header_bytes"]),
                 int(args["footer_bytes"]))
        if args["compression_type"]:
            return compressed_records(path, args["compression_type"], sizes, _chunk(args))
        return plain_records(path, sizes, _chunk(args))
