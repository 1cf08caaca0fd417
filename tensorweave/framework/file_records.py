"""Records of plain files: lines, and fixed-length records (uncompressed or GZIP/ZLIB).

What `tf.data.TextLineDataset` / `FixedLengthRecordDataset` (`data/text_readers.py`)
and TF1's `TextLineReader` / `FixedLengthRecordReader` kernels
(`kernels/reader_sources.py`) read, with TF's semantics: "\r" dropped from lines, an
unterminated last line kept, a file whose body is not whole records an error naming
the file (before any record when uncompressed, after the whole records when
compressed). Compressed files go through the TFRecord reader's decompressing stream.

Example:
    >>> for line in read_lines("train.csv", "", DEFAULT_BUFFER):
    ...     print(line)
    >>> recs = list(plain_records("data_batch_1.bin", (3073, 0, 0), DEFAULT_BUFFER))
"""
from __future__ import annotations

import os
from typing import IO, Any, Callable, Iterator

from tensorweave.framework import errors
from tensorweave.framework.tfrecord import _Stream

# TF's default read buffer for both readers (256 KiB); also our read chunk.
DEFAULT_BUFFER = 256 * 1024


def open_for_read(path: str, kind: str) -> IO[bytes]:
    """`path` opened for reading; TF's error classes for the ways that fails."""
    try:
        return open(path, "rb")
    except (FileNotFoundError, NotADirectoryError) as e:
        raise errors.NotFoundError(None, None, f"{kind}: file {path} not found: "
                                   f"{e.strerror}") from e
    except PermissionError as e:
        raise errors.PermissionDeniedError(None, None, f"{kind}: cannot read {path}: "
                                           f"{e.strerror}") from e
    except OSError as e:
        raise errors.FailedPreconditionError(None, None, f"{kind}: cannot read {path}: "
                                             f"{e.strerror}") from e


def read_lines(path: str, compression: str, chunk: int) -> Iterator[bytes]:
    """The lines of a file as TF's BufferedInputStream.ReadLine reads them."""
    with open_for_read(path, "TextLineDataset") as f:
        stream = _Stream(f, compression, path)
        tail = b""  # a line begun in an earlier chunk
        while data := stream.read(chunk):
            if b"\n" not in data:
                tail += data
                continue
            lines = (tail + data).split(b"\n")
            tail = lines.pop()
            for line in lines:
                yield line.replace(b"\r", b"") if b"\r" in line else line
        tail = tail.replace(b"\r", b"")
        if tail:  # TF keeps an unterminated last line, but not an empty one
            yield tail


# FixedLengthRecordDataset and the FixedLengthRecordReader (kernels/reader_sources.py):
# `kind` names the caller in errors, `hop` > 0 starts records every `hop` bytes (they
# overlap when hop < record, leave gaps when hop > record; 0 = back to back).
_DATASET = "FixedLengthRecordDataset"


def _whole_body(body: int, record: int, hop: int) -> bool:
    """Is `body` exactly covered: back-to-back records, or one record plus whole hops?"""
    if not hop or hop == record:
        return body >= 0 and body % record == 0
    return body == 0 or (body >= record and (body - record) % hop == 0)


def _bad_body(error: Any, path: str, sizes: tuple[int, int, int], size: int,
              what: str, kind: str = _DATASET, hop: int = 0) -> Exception:
    record, header, footer = sizes
    body = size - header - footer
    unit = (f"an exact multiple of the record length ({record} bytes)" if not hop
            else f"one record ({record} bytes) plus a whole number of hops ({hop} bytes)")
    return error(None, None, f"{kind}: excluding the header ({header} "
                 f"bytes) and footer ({footer} bytes), input file \"{path}\" ({what} "
                 f"{size} bytes) has body length {body} bytes, which is not {unit}. Check "
                 "the sizes against the file's format, or whether the file was cut short.")


def plain_records(path: str, sizes: tuple[int, int, int], chunk: int, hop: int = 0,
                   kind: str = _DATASET) -> Iterator[bytes]:
    """An uncompressed file's records; its size is checked before any is read (TF)."""
    record, header, footer = sizes
    with open_for_read(path, kind) as f:
        size = os.fstat(f.fileno()).st_size
        body = size - header - footer
        if not _whole_body(body, record, hop):
            raise _bad_body(errors.InvalidArgumentError, path, sizes, size, "size", kind, hop)
        f.seek(header)
        if hop and hop != record:
            yield from _windows(lambda n: f.read(n), chunk, record, hop, 0, body)
            return
        per_read = max(1, chunk // record) * record  # whole records per read
        left = body
        while left:
            data = f.read(min(per_read, left))
            if len(data) < min(per_read, left):  # the file shrank while being read
                raise errors.DataLossError(None, None, f"{kind}: {path} "
                                           f"ended {left - len(data)} bytes early.")
            left -= len(data)
            for i in range(0, len(data), record):
                yield data[i:i + record]


def compressed_records(path: str, compression: str, sizes: tuple[int, int, int],
                        chunk: int, hop: int = 0, kind: str = _DATASET) -> Iterator[bytes]:
    """A compressed file's records: the last `footer` bytes are held back until the end
    of the stream shows they are the footer (TF's lookahead)."""
    record, header, footer = sizes
    with open_for_read(path, kind) as f:
        stream = _Stream(f, compression, path)
        stream.read(header)
        yield from _windows(stream.read, chunk, record, hop or record, footer, None)
        if not _whole_body(stream.pos - header - footer, record, hop):
            raise _bad_body(errors.DataLossError, path, sizes, stream.pos,
                            "decompressed size", kind, hop)


def _windows(read: Callable[[int], bytes], chunk: int, record: int, step: int, keep: int,
             limit: int | None) -> Iterator[bytes]:
    """The `record`-byte windows at offsets 0, step, 2*step, ... of what `read` returns
    (at most `limit` bytes), each once the `keep` bytes after it are read too (a footer
    is only known to be one at the end of a compressed stream)."""
    buf, start, left = b"", 0, limit
    while data := read(chunk if left is None else min(chunk, left)):
        left = None if left is None else left - len(data)
        buf += data
        while start + record + keep <= len(buf):
            yield buf[start:start + record]
            start += step
        drop = min(start, len(buf))  # a gap may reach past what is read so far
        buf, start = buf[drop:], start - drop
