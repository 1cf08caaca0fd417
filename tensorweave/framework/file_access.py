"""Which files the ops of a task may read and write: the one check every
file-touching kernel goes through (Saver's SaveShard/MergeCheckpoint/RestoreShard,
TF's SaveV2/RestoreV2/MergeV2Checkpoints, TFRecordDataset, ...).

A server confines its ops to the directories it was told to allow: `allow_dirs=`
on `tf.train.Server`, `--allow-dir` on `tensorweave server` / `tensorweave launch`,
or the environment variable TENSORWEAVE_ALLOW_DIRS (directories separated by
`os.pathsep`); by default the current directory and the system temp directory, so
existing programs run. Paths are resolved (`..`, symlinks) before the check. An
in-process `tf.Session()` with no server is not confined unless
TENSORWEAVE_ALLOW_DIRS is set (as TF 1.x, which confines nothing).

Example:
    >>> policy = FilePolicy(["/data/ckpt"])
    >>> policy.check("/data/ckpt/model.ckpt-1", "write", "SaveV2 save/SaveV2")
    '/data/ckpt/model.ckpt-1'
    >>> policy.check("/etc/passwd", "read", "RestoreV2 save/RestoreV2")  # PermissionDenied
"""
from __future__ import annotations

import os
import tempfile
from typing import Iterable

from tensorweave.base import knobs
from tensorweave.framework import errors

ENV_ALLOW_DIRS = knobs.ALLOW_DIRS.name  # the variable's name, for messages and the launcher

__all__ = ["ENV_ALLOW_DIRS", "FilePolicy", "check_path", "check_prefix", "default_roots",
           "local_policy", "server_policy"]


def _resolve(path: str) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(path)))


def default_roots() -> list[str]:
    """The current directory and the system temp directory (resolved)."""
    return [os.getcwd(), tempfile.gettempdir()]


def _env_roots() -> list[str]:
    return list(knobs.ALLOW_DIRS.get())


class FilePolicy:
    """The directories a task's ops may touch, each resolved once at creation.

    Args:
        roots: directories; a file is allowed if its resolved path is one of them or
            lies under one.

    Example:
        >>> FilePolicy(["/srv/ckpt"]).allows("/srv/ckpt/../ckpt/m.index")
        True
    """

    def __init__(self, roots: Iterable[str]) -> None:
        resolved = []
        for r in roots:
            if not str(r).strip():
                raise ValueError("An allowed directory must not be empty; give a path such as "
                                 "/data/checkpoints.")
            resolved.append(_resolve(str(r)))
        self.roots: tuple[str, ...] = tuple(dict.fromkeys(resolved))

    def allows(self, path: str) -> bool:
        """Whether `path`, resolved, is an allowed root or lies under one."""
        real = _resolve(path)
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in self.roots)

    def check(self, path: str, access: str, what: str) -> str:
        """`path` if allowed, else PermissionDeniedError naming it, the roots and the fix.

        Args:
            path: the file (or directory, or checkpoint prefix) the op will touch.
            access: "read" or "write", for the message.
            what: the op and node, e.g. "SaveV2 save/SaveV2", for the message.
        """
        if self.allows(path):
            return path
        real = _resolve(path)
        shown = path if real == path else f"{path} (resolved: {real})"
        raise errors.PermissionDeniedError(
            None, None, f"{what} may not {access} {shown}: this task only allows files under "
            f"{list(self.roots)}. Allow the directory with `--allow-dir DIR` on `tensorweave "
            f"server` / `tensorweave launch`, Server(..., allow_dirs=[...]) or "
            f"{ENV_ALLOW_DIRS}, or use a path under an allowed one.")

    def __repr__(self) -> str:
        return f"FilePolicy({list(self.roots)})"


def server_policy(allow_dirs: Iterable[str] | None = None) -> FilePolicy:
    """A server's policy: `allow_dirs`, else TENSORWEAVE_ALLOW_DIRS, else the defaults.

    Example:
        >>> server_policy(["/data"]).roots
        ('/data',)
    """
    if allow_dirs is not None:
        roots = [allow_dirs] if isinstance(allow_dirs, str) else list(allow_dirs)
    else:
        roots = _env_roots() or default_roots()
    if not roots:
        raise ValueError("allow_dirs is empty: a server needs at least one directory its ops "
                         "may use (e.g. the checkpoint directory).")
    return FilePolicy(roots)


def local_policy() -> FilePolicy | None:
    """An in-process session's policy: None (unconfined, as TF) unless
    TENSORWEAVE_ALLOW_DIRS is set."""
    roots = _env_roots()
    return FilePolicy(roots) if roots else None


def check_path(policy: FilePolicy | None, path: str, access: str, what: str) -> str:
    """`policy.check(...)`, or the process's local policy where `policy` is None."""
    if policy is None:
        policy = local_policy()
        if policy is None:
            return path
    return policy.check(path, access, what)


def check_prefix(policy: FilePolicy | None, prefix: str, access: str, what: str) -> str:
    """Checks a checkpoint prefix and every file or directory already there that the
    prefix names (`prefix.index`, `prefix-00000-of-00001`, `prefix_temp`, ...), so a
    symlink planted next to an allowed prefix cannot lead outside."""
    check_path(policy, prefix, access, what)
    if policy is None and local_policy() is None:
        return prefix
    directory, base = os.path.split(os.path.abspath(os.path.expanduser(prefix)))
    try:
        names = os.listdir(directory)
    except OSError:
        return prefix  # no directory yet: nothing there to follow
    for name in names:
        if name.startswith(base) and name != base:
            check_path(policy, os.path.join(directory, name), access, what)
    return prefix
