"""Whole-file ops: ReadFile, WriteFile, MatchingFiles (`tf.read_file`, `tf.write_file`,
`tf.matching_files`, also under `tf.io`). They run where they are placed, so on a
server every path goes through the task's file policy (`framework/file_access.py`).

Example:
    >>> w = tf.write_file("/tmp/x/hello.txt", "hi")
    >>> sess.run(w); sess.run(tf.read_file("/tmp/x/hello.txt"))
    b'hi'
    >>> sess.run(tf.matching_files("/tmp/x/*.txt"))
    array([b'/tmp/x/hello.txt'], dtype=object)
"""
from __future__ import annotations

import glob
import os
from typing import Any

import numpy as np

from tensorweave.framework.text import text_of
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework import file_access as _files
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_op, create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape

__all__ = ["matching_files", "read_file", "write_file"]


def _policy(ctx: Any) -> Any:
    return ctx.library.device.file_policy


def _what(ctx: Any) -> str:
    return f"{ctx.type} {ctx.name} on {ctx.device}"


def _scalar_string(t: Tensor, op: str, what: str) -> None:
    if t.dtype.base_dtype != _dt.string or t.shape.ndims not in (None, 0):
        raise ValueError(f"{op}: {what} must be a scalar string, got {t.name} "
                         f"({t.dtype.name}, shape {t.shape}).")


# ---- ReadFile ----------------------------------------------------------------------
read_file_op = define_op("ReadFile", inputs=("filename",), stateful=True)


@read_file_op.shape
def _(filename: Tensor) -> Any:
    _scalar_string(filename, "ReadFile", "filename")
    return _dt.string, TensorShape([])


@read_file_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, filename: Any) -> np.ndarray:
    path = _files.check_path(_policy(ctx), text_of(filename), "read", _what(ctx))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"ReadFile: {path} does not exist; check the "
                                   "path (relative paths are the task's working directory)."
                                   ) from None
    except OSError as e:
        raise errors.PermissionDeniedError(None, None, f"ReadFile: cannot read {path}: "
                                           f"{e.strerror or e}.") from None
    return np.asarray(data, dtype=object)


read_file_op.no_gradient()


def read_file(filename: Any, name: str | None = None) -> Tensor:
    """`tf.read_file`: the whole contents of a file, as a scalar string.

    Example:
        >>> sess.run(tf.read_file("/tmp/x/hello.txt"))
        b'hi'
    """
    t = convert_to_tensor(filename, dtype=_dt.string, name="filename")
    return create_tensor("ReadFile", [t], name=name or "ReadFile")


# ---- WriteFile ---------------------------------------------------------------------
write_file_op = define_op("WriteFile", inputs=("filename", "contents"), stateful=True)


@write_file_op.shape
def _(filename: Tensor, contents: Tensor) -> list:
    _scalar_string(filename, "WriteFile", "filename")
    _scalar_string(contents, "WriteFile", "contents")
    return []


@write_file_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, filename: Any, contents: Any) -> None:
    path = _files.check_path(_policy(ctx), text_of(filename), "write", _what(ctx))
    data = contents.item() if isinstance(contents, np.ndarray) else contents
    data = data if isinstance(data, bytes) else str(data).encode()
    try:
        if os.path.dirname(path):  # as TF: the directories are created
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise errors.PermissionDeniedError(None, None, f"WriteFile: cannot write {path}: "
                                           f"{e.strerror or e}.") from None


write_file_op.no_gradient()


def write_file(filename: Any, contents: Any, name: str | None = None) -> Operation:
    """`tf.write_file`: writes `contents` to `filename`, creating its directories.

    Example:
        >>> sess.run(tf.write_file("/tmp/x/hello.txt", "hi"))
    """
    f = convert_to_tensor(filename, dtype=_dt.string, name="filename")
    c = convert_to_tensor(contents, dtype=_dt.string, name="contents")
    return create_op("WriteFile", [f, c], name=name or "WriteFile")


# ---- MatchingFiles -----------------------------------------------------------------
matching_files_op = define_op("MatchingFiles", inputs=("pattern",), stateful=True)


@matching_files_op.shape
def _(pattern: Tensor) -> Any:
    if pattern.dtype.base_dtype != _dt.string or pattern.shape.ndims not in (None, 0, 1):
        raise ValueError(f"MatchingFiles: pattern must be a string scalar or vector, got "
                         f"{pattern.name} ({pattern.dtype.name}, shape {pattern.shape}).")
    return _dt.string, TensorShape([None])


def _fixed_part(pattern: str) -> str:
    """The directory a glob pattern starts from (its components before any wildcard)."""
    parts = pattern.split(os.sep)
    fixed = []
    for p in parts:
        if glob.has_magic(p):
            break
        fixed.append(p)
    return os.sep.join(fixed) or "."


@matching_files_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, pattern: Any) -> np.ndarray:
    found: list[str] = []
    for p in (text_of(x) for x in np.asarray(pattern, dtype=object).reshape(-1)):
        _files.check_path(_policy(ctx), _fixed_part(p), "read", _what(ctx))
        found.extend(_files.check_path(_policy(ctx), m, "read", _what(ctx))
                     for m in glob.glob(p))
    return np.asarray([m.encode() for m in sorted(found)], dtype=object).reshape(-1)


matching_files_op.no_gradient()


def matching_files(pattern: Any, name: str | None = None) -> Tensor:
    """`tf.matching_files`: the sorted file names matching a glob pattern (or patterns).

    Example:
        >>> sess.run(tf.matching_files("/tmp/x/*.txt"))
        array([b'/tmp/x/hello.txt'], dtype=object)
    """
    t = convert_to_tensor(pattern, dtype=_dt.string, name="pattern")
    return create_tensor("MatchingFiles", [t],
                         name=name or "MatchingFiles")
