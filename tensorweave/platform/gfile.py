"""`tf.gfile` / `tf.io.gfile`: TF's file-system functions over local files.

TF 1.x scripts write `tf.gfile.Exists`, `tf.gfile.MakeDirs`, `tf.gfile.GFile`, ...;
TF 1.14+ and 2.x code writes `tf.io.gfile.exists`, `makedirs`, `GFile`, ... Both
spellings are here, the lowercase names being the same functions. Failures are
`tf.errors` as in TF (NotFoundError for a missing path, AlreadyExistsError for
`Rename`/`Copy` onto an existing file without `overwrite=True`, ...). Only local
paths (and `file://`) are served: gs://, hdfs://, s3:// raise UnimplementedError.

These are the client's own file calls and, as in TF, are not confined by the task
file policy (`framework/file_access.py`), which governs what graph ops may touch.

Example:
    >>> if tf.gfile.Exists(FLAGS.train_dir):
    ...     tf.gfile.DeleteRecursively(FLAGS.train_dir)
    >>> tf.gfile.MakeDirs(FLAGS.train_dir)
    >>> tf.io.gfile.glob(os.path.join(FLAGS.data_dir, "train-*.tfrecord"))
"""
from __future__ import annotations

import glob as _glob
import os
import shutil
import stat as _stat
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from tensorweave.framework import errors
from tensorweave.platform.file_io import GFile, PathType, local_path, os_error

__all__ = [
    "Copy", "DeleteRecursively", "Exists", "FastGFile", "FileStatistics", "GFile", "Glob",
    "IsDirectory", "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat",
    "Walk", "copy", "exists", "glob", "isdir", "listdir", "makedirs", "mkdir", "remove",
    "rename", "rmtree", "stat", "walk",
]


class FastGFile(GFile):
    """TF 1.x's `tf.gfile.FastGFile`: the same file object as `GFile`.

    Example:
        >>> graph_def.ParseFromString(tf.gfile.FastGFile("graph.pb", "rb").read())
    """


Open = GFile


@dataclass(frozen=True)
class FileStatistics:
    """What `Stat` returns: `length` in bytes, `mtime_nsec`, `is_directory`."""

    length: int
    mtime_nsec: int
    is_directory: bool


def Exists(filename: PathType) -> bool:
    """Whether a file or directory exists at `filename`.

    Example:
        >>> tf.gfile.Exists(FLAGS.train_dir)
        False
    """
    return os.path.exists(local_path(filename))


def IsDirectory(dirname: PathType) -> bool:
    """Whether `dirname` is an existing directory (False if missing or a file)."""
    return os.path.isdir(local_path(dirname))


def MakeDirs(dirname: PathType) -> None:
    """Creates `dirname` and any missing parents; an existing directory is fine.

    Raises:
        FailedPreconditionError: `dirname` or a parent exists as a file.

    Example:
        >>> tf.gfile.MakeDirs("/tmp/run/eval")  # /tmp/run made too
    """
    path = local_path(dirname)
    if not path:
        return  # TF: MakeDirs("") is a no-op (the current directory exists)
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError as e:  # exist_ok covers directories only: a file is there
        raise errors.FailedPreconditionError(
            None, None, f"Cannot create directory {path}: a file of that name exists. "
            f"Remove it (gfile.Remove) or choose another directory.") from e
    except OSError as e:
        raise os_error(e, f"Cannot create directory {path}") from e


def MkDir(dirname: PathType) -> None:
    """Creates the directory `dirname`, whose parent must exist.

    Raises:
        AlreadyExistsError: `dirname` exists (use `MakeDirs` to accept that).
        NotFoundError: the parent directory does not exist.

    Example:
        >>> tf.gfile.MkDir(os.path.join(FLAGS.train_dir, "export"))
    """
    path = local_path(dirname)
    try:
        os.mkdir(path)
    except FileExistsError as e:
        raise errors.AlreadyExistsError(
            None, None, f"Cannot create directory {path}: it already exists. Use "
            f"gfile.MakeDirs to accept an existing directory.") from e
    except FileNotFoundError as e:
        parent = os.path.dirname(os.path.abspath(path))
        raise errors.NotFoundError(
            None, None, f"Cannot create directory {path}: its parent {parent} does not "
            f"exist. Use gfile.MakeDirs to create the parents too.") from e
    except OSError as e:
        raise os_error(e, f"Cannot create directory {path}") from e


def _not_found(path: str, action: str) -> errors.NotFoundError:
    return errors.NotFoundError(
        None, None, f"Cannot {action} {path}: no such file or directory. Check the path "
        f"(relative to {os.getcwd()} if relative), or test it first with gfile.Exists.")


def DeleteRecursively(dirname: PathType) -> None:
    """Deletes `dirname` and everything under it (a file or a symlink: just that).

    Raises:
        NotFoundError: nothing exists at `dirname`.

    Example:
        >>> if tf.gfile.Exists(d): tf.gfile.DeleteRecursively(d)
    """
    path = local_path(dirname)
    if not os.path.lexists(path):
        raise _not_found(path, "delete")
    try:
        # A symlink to a directory is removed, never followed (TF deletes the link).
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    except OSError as e:
        raise os_error(e, f"Cannot delete {path} recursively") from e


def Remove(filename: PathType) -> None:
    """Deletes the file `filename`.

    Raises:
        NotFoundError: it does not exist.
        FailedPreconditionError: it is a directory (use `DeleteRecursively`).
    """
    path = local_path(filename)
    if os.path.isdir(path) and not os.path.islink(path):
        raise errors.FailedPreconditionError(
            None, None, f"Cannot remove {path}: it is a directory; gfile.Remove deletes "
            f"files. Use gfile.DeleteRecursively for directories.")
    try:
        os.remove(path)
    except FileNotFoundError as e:
        raise _not_found(path, "remove") from e
    except OSError as e:
        raise os_error(e, f"Cannot remove {path}") from e


def _check_target(src: str, dst: str, overwrite: bool, action: str) -> None:
    """NotFoundError for a missing `src`; AlreadyExistsError for an existing `dst`
    unless `overwrite` (TF checks before touching anything, so both files stay)."""
    if not os.path.lexists(src):
        raise _not_found(src, action)
    if not overwrite and os.path.lexists(dst):
        raise errors.AlreadyExistsError(
            None, None, f"Cannot {action} {src} to {dst}: {dst} already exists. Pass "
            f"overwrite=True to replace it, or remove it first.")


def Rename(oldname: PathType, newname: PathType, overwrite: bool = False) -> None:
    """Renames (moves) a file or directory.

    Raises:
        NotFoundError: `oldname` does not exist, or `newname`'s directory does not.
        AlreadyExistsError: `newname` exists and `overwrite` is False.

    Example:
        >>> tf.gfile.Rename(tmp_path, final_path, overwrite=True)
    """
    src, dst = local_path(oldname), local_path(newname)
    _check_target(src, dst, overwrite, "rename")
    try:
        os.replace(src, dst)  # replaces an existing file atomically, as TF's rename
    except OSError as e:
        raise os_error(e, f"Cannot rename {src} to {dst}") from e


def Copy(oldpath: PathType, newpath: PathType, overwrite: bool = False) -> None:
    """Copies the file `oldpath` to `newpath` (a file path, not a directory).

    Raises:
        NotFoundError: `oldpath` does not exist, or `newpath`'s directory does not.
        AlreadyExistsError: `newpath` exists and `overwrite` is False.
        FailedPreconditionError: either path is a directory.

    Example:
        >>> tf.gfile.Copy("pipeline.config", os.path.join(FLAGS.train_dir, "pipeline.config"))
    """
    src, dst = local_path(oldpath), local_path(newpath)
    _check_target(src, dst, overwrite, "copy")
    for path, role in ((src, "source"), (dst, "destination")):
        if os.path.isdir(path):
            raise errors.FailedPreconditionError(
                None, None, f"Cannot copy {src} to {dst}: the {role} is a directory. "
                f"gfile.Copy copies one file to a full file path (e.g. "
                f"{os.path.join(dst, os.path.basename(src))}).")
    try:
        shutil.copyfile(src, dst)
    except shutil.SameFileError:
        return  # overwrite=True onto itself: the file already has its contents
    except OSError as e:
        raise os_error(e, f"Cannot copy {src} to {dst}") from e


def Glob(filename: PathType | Iterable[PathType]) -> list[str]:
    """The paths matching a glob pattern, or each of a list of patterns in turn.

    `*`, `?` and `[...]` match within one path component; `*` also matches names
    starting with "." (as TF's matcher, unlike the shell's). Each pattern's matches
    are sorted.

    Example:
        >>> tf.gfile.Glob(os.path.join(FLAGS.train_dir, "model.ckpt-*.index"))
        >>> tf.io.gfile.glob(["data/train-*", "data/extra-*"])
    """
    if isinstance(filename, (str, bytes, os.PathLike)):
        patterns: list[PathType] = [filename]
    else:
        patterns = list(filename)
    found: list[str] = []
    for pattern in patterns:
        found.extend(sorted(_glob.glob(local_path(pattern), include_hidden=True)))
    return found


def ListDirectory(dirname: PathType) -> list[str]:
    """The names (not paths) of the entries in `dirname`, sorted; no "." or "..".

    Raises:
        NotFoundError: `dirname` is not an existing directory.

    Example:
        >>> tf.gfile.ListDirectory(FLAGS.train_dir)
        ['checkpoint', 'graph.pbtxt', 'model.ckpt-100.index', ...]
    """
    path = local_path(dirname)
    if not os.path.isdir(path):
        what = "is a file" if os.path.exists(path) else "does not exist"
        raise errors.NotFoundError(
            None, None, f"Could not find directory {path}: it {what}. gfile.ListDirectory "
            f"needs an existing directory; check the path or create it with gfile.MakeDirs.")
    try:
        return sorted(os.listdir(path))
    except OSError as e:
        raise os_error(e, f"Cannot list directory {path}") from e


def Walk(top: PathType, in_order: bool = True,
         onerror: Callable[[errors.OpError], object] | None = None, *,
         topdown: bool | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """Yields `(dirname, subdir_names, file_names)` for `top` and every directory under it.

    With `in_order` (TF 2's `topdown`) a directory comes before its subdirectories, and
    removing names from `subdir_names` skips them; otherwise after. A missing `top`
    yields nothing (or calls `onerror` with the NotFoundError). Symlinked directories
    are walked, as TF, but never twice along one path (no cycles).

    Example:
        >>> for dirname, subdirs, files in tf.gfile.Walk(FLAGS.data_dir):
        ...     shards += [os.path.join(dirname, f) for f in files if f.endswith(".tfrecord")]
    """
    pre_order = in_order if topdown is None else topdown
    return _walk(local_path(top), pre_order, onerror, frozenset())


def _walk(top: str, pre_order: bool, onerror: Callable[[errors.OpError], object] | None,
          seen: frozenset[str]) -> Iterator[tuple[str, list[str], list[str]]]:
    try:
        names = ListDirectory(top)
    except errors.NotFoundError as e:
        if onerror is not None:
            onerror(e)
        return
    seen = seen | {os.path.realpath(top)}
    is_dir = {n: os.path.isdir(os.path.join(top, n)) for n in names}
    subdirs = [n for n in names if is_dir[n]]
    files = [n for n in names if not is_dir[n]]
    if pre_order:
        yield top, subdirs, files
    for name in subdirs:
        sub = os.path.join(top, name)
        if os.path.realpath(sub) not in seen:  # a symlink back up would never end
            yield from _walk(sub, pre_order, onerror, seen)
    if not pre_order:
        yield top, subdirs, files


def Stat(filename: PathType) -> FileStatistics:
    """The length, modification time (ns) and kind of `filename`.

    Raises:
        NotFoundError: it does not exist.

    Example:
        >>> tf.gfile.Stat(path).length
        1048576
    """
    path = local_path(filename)
    try:
        st = os.stat(path)
    except FileNotFoundError as e:
        raise _not_found(path, "stat") from e
    except OSError as e:
        raise os_error(e, f"Cannot stat {path}") from e
    return FileStatistics(length=st.st_size, mtime_nsec=st.st_mtime_ns,
                          is_directory=_stat.S_ISDIR(st.st_mode))


# `tf.io.gfile`'s names take TF's newer parameter names (path, src/dst, pattern,
# topdown), which programs pass by keyword: thin wrappers over the functions above.
def exists(path: PathType) -> bool:
    """`tf.io.gfile.exists`."""
    return Exists(path)


def isdir(path: PathType) -> bool:
    """`tf.io.gfile.isdir`."""
    return IsDirectory(path)


def makedirs(path: PathType) -> None:
    """`tf.io.gfile.makedirs`."""
    MakeDirs(path)


def mkdir(path: PathType) -> None:
    """`tf.io.gfile.mkdir`."""
    MkDir(path)


def rmtree(path: PathType) -> None:
    """`tf.io.gfile.rmtree`."""
    DeleteRecursively(path)


def remove(path: PathType) -> None:
    """`tf.io.gfile.remove`."""
    Remove(path)


def rename(src: PathType, dst: PathType, overwrite: bool = False) -> None:
    """`tf.io.gfile.rename`."""
    Rename(src, dst, overwrite)


def copy(src: PathType, dst: PathType, overwrite: bool = False) -> None:
    """`tf.io.gfile.copy`."""
    Copy(src, dst, overwrite)


def glob(pattern: PathType | Iterable[PathType]) -> list[str]:
    """`tf.io.gfile.glob`."""
    return Glob(pattern)


def listdir(path: PathType) -> list[str]:
    """`tf.io.gfile.listdir`."""
    return ListDirectory(path)


def walk(top: PathType, topdown: bool = True,
         onerror: Callable[[errors.OpError], object] | None = None
         ) -> Iterator[tuple[str, list[str], list[str]]]:
    """`tf.io.gfile.walk`: `Walk` with TF 2's `topdown`."""
    return Walk(top, topdown, onerror)


def stat(path: PathType) -> FileStatistics:
    """`tf.io.gfile.stat`."""
    return Stat(path)
