"""`GFile`: TF's file object over local files, and the path and error helpers that
`tensorweave.platform.gfile` shares with it.

TF's GFile differs from Python's `open` in ways scripts rely on, kept here: text mode
returns `str` and binary mode `bytes`, but both accept `str` or `bytes` in `write`;
newlines are never translated; `read(n)` counts bytes; nothing is opened until the
first operation, so a missing file fails at the first `read`, not in the constructor;
failures are `tf.errors` (NotFoundError, PermissionDeniedError, ...), not OSError.

Example:
    >>> with GFile("/tmp/run/notes.txt", "w") as f:
    ...     f.write("step 1\\n")
    >>> GFile("/tmp/run/notes.txt").readlines()
    ['step 1\\n']
"""
from __future__ import annotations

import errno
import os
import re
from types import TracebackType
from typing import IO, Any, Union

from tensorweave.framework import errors

PathType = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
# What reads return: `str` in text mode, `bytes` in binary mode. The mode is a run-time
# value, so (as `open()` with a non-literal mode) reads are typed Any: callers can pass
# a "rb" GFile to np.load / pickle.load, which want bytes, without casts.
Content = Any

__all__ = ["GFile", "PathType", "local_path", "os_error"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_MODES = ("r", "w", "a", "r+", "w+", "a+")

# errno -> TF's error class, as TF's own mapping of POSIX errors (core/platform/errors).
_CODES: dict[int, type[errors.OpError]] = {
    errno.ENOENT: errors.NotFoundError,
    errno.EEXIST: errors.AlreadyExistsError,
    errno.EACCES: errors.PermissionDeniedError,
    errno.EPERM: errors.PermissionDeniedError,
    errno.EROFS: errors.PermissionDeniedError,
    errno.EISDIR: errors.FailedPreconditionError,
    errno.ENOTDIR: errors.FailedPreconditionError,
    errno.ENOTEMPTY: errors.FailedPreconditionError,
    errno.EBUSY: errors.FailedPreconditionError,
    errno.ENOSPC: errors.ResourceExhaustedError,
    errno.EINVAL: errors.InvalidArgumentError,
    errno.ENAMETOOLONG: errors.InvalidArgumentError,
}
_ADVICE: dict[type[errors.OpError], str] = {
    errors.NotFoundError: "Check the path; create missing directories with gfile.MakeDirs.",
    errors.AlreadyExistsError: "Remove it first or choose another name.",
    errors.PermissionDeniedError: "Check the permissions, or use a path you may write to.",
    errors.FailedPreconditionError: "Check whether each path is a file or a directory "
                                    "(gfile.IsDirectory).",
    errors.ResourceExhaustedError: "Free some disk space or write elsewhere.",
}


def local_path(path: PathType) -> str:
    """`path` as a local `str` path; `file://` is stripped, other URL schemes refused.

    Args:
        path: a `str`, `bytes` or `os.PathLike` path.

    Raises:
        UnimplementedError: for a remote scheme such as `gs://` or `hdfs://`.

    Example:
        >>> local_path("file:///tmp/x")
        '/tmp/x'
    """
    text = os.fsdecode(os.fspath(path))
    match = _SCHEME.match(text)
    if match is None:
        return text
    scheme = match.group(1)
    if scheme.lower() == "file":  # TF's local file system also answers to file://
        return text[len(match.group(0)):]
    raise errors.UnimplementedError(
        None, None, f"Cannot open {text}: the {scheme}:// file system is not supported; "
        f"tensorweave's gfile reads local files only. Copy the data to a local path first "
        f"(e.g. `gsutil cp` / `hdfs dfs -get`) or mount it locally.")


def os_error(err: OSError, action: str) -> errors.OpError:
    """The `tf.errors` exception for an OSError, as TF maps errno, with advice.

    Args:
        err: the OSError raised by the OS call.
        action: what was being done, naming the path(s), e.g. "Cannot delete /tmp/x".
    """
    cls = _CODES.get(err.errno or 0, errors.UnknownError)
    reason = err.strerror or str(err)
    where = f" ({err.filename})" if err.filename is not None else ""
    advice = _ADVICE.get(cls, "")
    return cls(None, None, f"{action}: {reason}{where}. {advice}".rstrip())


class GFile:
    """A local file with TF's GFile interface (`tf.gfile.GFile`, `tf.io.gfile.GFile`).

    Args:
        name: the file's path (`str`, `bytes` or `os.PathLike`).
        mode: "r", "w", "a" or one of those with "+", each optionally with "b". With
            "b", reads return `bytes`, without it UTF-8 `str`. "w" truncates, "a"
            appends, "+" adds the other direction.

    Raises:
        InvalidArgumentError: for any other mode.
        UnimplementedError: for a non-local path (gs://, hdfs://, ...).

    Example:
        >>> with tf.gfile.GFile(os.path.join(FLAGS.train_dir, "vocab.txt")) as f:
        ...     vocab = [line.rstrip("\\n") for line in f]
    """

    def __init__(self, name: PathType, mode: str = "r") -> None:
        self._name = local_path(name)
        base = mode.replace("b", "", 1)
        if base not in _MODES:
            raise errors.InvalidArgumentError(
                None, None, f"GFile({self._name!r}, mode={mode!r}): mode must be 'r', 'w', "
                f"'a', 'r+', 'w+' or 'a+', optionally with 'b' for bytes.")
        self._mode = mode
        self._binary = "b" in mode
        self._readable = base != "w" and base != "a"
        self._writable = base != "r"
        # The OS file is always binary: text mode decodes here, so newlines stay as
        # written and tell()/seek() count bytes, as in TF.
        self._os_mode = base[0] + "b" + ("+" if "+" in base else "")
        self._file: IO[bytes] | None = None
        self._closed = False

    @property
    def name(self) -> str:
        """The file's path."""
        return self._name

    @property
    def mode(self) -> str:
        """The mode the file was opened with."""
        return self._mode

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._closed

    def _handle(self, access: str | None = None) -> IO[bytes]:
        """The open OS file, opened on first use (as TF); checks `access` is allowed."""
        if self._closed:
            raise ValueError(f"I/O operation on closed GFile {self._name}; open it again.")
        if access == "read" and not self._readable:
            raise errors.PermissionDeniedError(
                None, None, f"{self._name} is open with mode {self._mode!r}, which does not "
                f"allow reading; open it with 'r' (or a '+' mode) to read.")
        if access == "write" and not self._writable:
            raise errors.PermissionDeniedError(
                None, None, f"{self._name} is open with mode {self._mode!r}, which does not "
                f"allow writing; open it with 'w' or 'a' to write.")
        f = self._file
        if f is None:
            try:
                f = self._file = open(self._name, self._os_mode)  # closed by close()
            except OSError as e:
                raise os_error(e, f"Cannot open {self._name} with mode {self._mode!r}") from e
        return f

    def _out(self, data: bytes, f: IO[bytes]) -> Content:
        if self._binary:
            return data
        # read(n) counts bytes (as TF), so it may stop inside a multi-byte character:
        # finish that character rather than fail.
        for _ in range(3):
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as e:
                more = f.read(1) if e.reason == "unexpected end of data" else b""
                if not more:
                    raise UnicodeDecodeError(
                        e.encoding, e.object, e.start, e.end, f"{e.reason} in {self._name}, "
                        f"opened as UTF-8 text; open it with mode 'rb' to read bytes") from e
                data += more
        return data.decode("utf-8")

    def read(self, n: int = -1) -> Content:
        """Reads `n` bytes (all that is left if -1); `str` in text mode, `bytes` in "b".

        Example:
            >>> header = tf.gfile.GFile(path, "rb").read(4)
        """
        if n < -1:
            raise errors.InvalidArgumentError(
                None, None, f"GFile.read(n={n}) on {self._name}: n must be -1 (read all) "
                f"or a count of bytes >= 0.")
        f = self._handle("read")
        return self._out(f.read() if n == -1 else f.read(n), f)

    def readline(self) -> Content:
        """The next line including its "\\n"; empty at the end of the file."""
        f = self._handle("read")
        return self._out(f.readline(), f)

    def readlines(self) -> list[Content]:
        """All remaining lines, each with its "\\n"."""
        return list(self)

    def __iter__(self) -> GFile:
        return self

    def __next__(self) -> Content:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def write(self, file_content: str | bytes | bytearray | memoryview) -> None:
        """Writes `file_content` (`str` is written as UTF-8, in either mode, as TF).

        Example:
            >>> with tf.gfile.GFile(path, "w") as f:
            ...     f.write("loss=%.3f\\n" % loss)
        """
        data = file_content
        if not isinstance(data, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"GFile.write() takes str or bytes, not {type(data).__name__} "
                            f"(writing {self._name}).")
        f = self._handle("write")
        try:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        except OSError as e:
            raise os_error(e, f"Cannot write to {self._name}") from e

    def writelines(self, lines: list[str] | list[bytes]) -> None:
        """Writes each of `lines` (no newlines are added)."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Pushes buffered writes to the file."""
        if self._file is not None and not self._closed:
            try:
                self._file.flush()
            except OSError as e:
                raise os_error(e, f"Cannot write to {self._name}") from e

    def size(self) -> int:
        """The file's length in bytes (buffered writes included)."""
        self.flush()
        try:
            return os.stat(self._name).st_size
        except OSError as e:
            raise os_error(e, f"Cannot get the size of {self._name}") from e

    def tell(self) -> int:
        """The current position, in bytes."""
        return self._handle().tell()

    def seek(self, offset: int | None = None, whence: int = 0,
             position: int | None = None) -> int:
        """Moves to `offset` relative to the start (whence 0), here (1) or the end (2).

        `position=` is TF's deprecated spelling of `offset`. Returns the new position.

        Example:
            >>> f.seek(0, 2)  # to the end
            >>> f.seek(position=0)
        """
        if offset is None and position is None:
            raise TypeError("seek(): offset argument required")
        if offset is not None and position is not None:
            raise TypeError("seek(): offset and position may not be set simultaneously.")
        target = offset if offset is not None else position
        assert target is not None
        if whence == 1:
            target += self.tell()
        elif whence == 2:
            target += self.size()
        elif whence != 0:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid whence argument: {whence}. Valid values are 0 (start), "
                f"1 (current position) or 2 (end).")
        if target < 0:
            raise errors.InvalidArgumentError(
                None, None, f"Cannot seek {self._name} to {target}: the position would be "
                f"before the start of the file.")
        return self._handle().seek(target)

    def truncate(self, size: int | None = None) -> int:
        """Cuts the file to `size` bytes (default: the current position)."""
        return self._handle("write").truncate(size)

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return self._readable

    def writable(self) -> bool:
        return self._writable

    def close(self) -> None:
        """Flushes and closes the file; later reads and writes raise ValueError."""
        if self._closed:
            return
        # Like open(): a "w"/"a" file exists after close even if nothing was written.
        if self._file is None and self._os_mode[0] in "wa":
            self._handle()
        self._closed = True
        if self._file is not None:
            f, self._file = self._file, None
            try:
                f.close()
            except OSError as e:
                raise os_error(e, f"Cannot write to {self._name}") from e

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<{type(self).__name__} {self._name!r} mode={self._mode!r} {state}>"
