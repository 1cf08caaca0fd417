"""Durable file writes: the one atomic write (temporary name, fsync, rename) and fsync_dir.

Checkpoint data, indexes, manifests and the `checkpoint` state file are all written
here, so a reader (or a restart after a crash) sees either the old file or the whole
new one, never half of one, and a write that fails leaves no temporary file behind.
A process killed mid-write can leave one: it is named `<path>.tmp<digits>`, which
`framework.checkpoint_files.temp_leftovers` recognizes.

Example:
    >>> atomic_write("train/checkpoint", 'model_checkpoint_path: "model.ckpt-5"\\n',
    ...              make_dirs=True)
    38
"""
from __future__ import annotations

import itertools
import os
from collections.abc import Iterable

__all__ = ["atomic_write", "fsync_dir"]

_seq = itertools.count()  # two threads writing one path never share a temporary file


def atomic_write(path: str, data: bytes | str | Iterable[bytes], *,
                 make_dirs: bool = False) -> int:
    """Writes `data` to `path` via a temporary name, fsync and rename; returns the size.

    Args:
        path: the file to (re)place.
        data: bytes, text (written as UTF-8), or an iterable of byte chunks (written
            as they come, so a large file need not be joined in memory).
        make_dirs: create `path`'s directory first if it is missing.

    Returns:
        The number of bytes written.

    Raises:
        OSError: the write, fsync or rename failed; the temporary file is removed
            and `path` is as it was.
    """
    if make_dirs and os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    chunks = [data.encode()] if isinstance(data, str) else \
        [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
    tmp = f"{path}.tmp{os.getpid()}{next(_seq)}"
    size = 0
    try:
        with open(tmp, "wb") as f:
            for c in chunks:
                f.write(c)
                size += len(c)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass  # never created (e.g. a missing directory), or already renamed
        raise
    fsync_dir(os.path.dirname(path))
    return size


def fsync_dir(path: str) -> None:
    """Makes renames inside directory `path` durable (no-op where unsupported)."""
    try:
        fd = os.open(path or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass   # some filesystems (and platforms) cannot fsync a directory
    finally:
        os.close(fd)
