"""`--allow-dir` and `--allow-from` on `tensorweave server` and `tensorweave launch`:
the directories a task's file ops may touch (`tensorweave/framework/file_access.py`
has the check) and the hosts beyond the ClusterSpec's that may connect to a task
without credentials (`distributed/transport/admission.py`).

The flags set TENSORWEAVE_ALLOW_DIRS / TENSORWEAVE_ALLOW_FROM in this process's
environment, which every `tf.train.Server` created without `allow_dirs=` /
`allow_from=` reads: the server's own (`server`) or the tasks' that `launch` starts
(they inherit the launcher's environment).

Example:
    $ tensorweave server --job ps --task 0 --cluster @cluster.json \\
          --allow-dir /data/checkpoints --allow-dir /data/records --allow-from 10.8.0.0/16
"""
from __future__ import annotations

import argparse
import os

from tensorweave.base import knobs
from tensorweave.base.address import parse_network
from tensorweave.framework.file_access import ENV_ALLOW_DIRS, FilePolicy

__all__ = ["add_allow_dir_flag", "add_allow_from_flag", "apply_allow_dirs",
           "apply_allow_from"]


def add_allow_dir_flag(p: argparse.ArgumentParser) -> None:
    """Adds the repeatable `--allow-dir DIR` to a subcommand's parser."""
    p.add_argument("--allow-dir", action="append", default=[], metavar="DIR",
                   dest="allow_dir",
                   help="a directory the tasks' file ops (Saver, summaries' and TFRecord "
                        "readers on a task) may read and write; repeatable; default: the "
                        f"current and the system temp directory ({ENV_ALLOW_DIRS})")


def apply_allow_dirs(args: argparse.Namespace) -> None:
    """Puts the `--allow-dir` values into TENSORWEAVE_ALLOW_DIRS (resolved, so a task
    started elsewhere sees the same directories); nothing when the flag is absent.

    Raises:
        ValueError: an `--allow-dir` that is not an existing directory.
    """
    dirs = list(getattr(args, "allow_dir", None) or [])
    if not dirs:
        return
    for d in dirs:
        if not os.path.isdir(d):
            raise ValueError(f"--allow-dir {d!r} is not a directory; create it first or "
                             "give an existing one.")
    knobs.ALLOW_DIRS.export(FilePolicy(dirs).roots)


def add_allow_from_flag(p: argparse.ArgumentParser) -> None:
    """Adds the repeatable `--allow-from HOST|CIDR` to a subcommand's parser."""
    p.add_argument("--allow-from", action="append", default=[], metavar="HOST|CIDR",
                   dest="allow_from",
                   help="without credentials a task accepts connections only from the hosts "
                        "of its ClusterSpec; this host, address or CIDR (or 'any') may "
                        f"connect too; repeatable ({knobs.ALLOW_FROM.name})")


def apply_allow_from(args: argparse.Namespace) -> None:
    """Puts the `--allow-from` values into TENSORWEAVE_ALLOW_FROM; nothing when absent.

    Raises:
        ValueError: a malformed entry (a port, a bad CIDR), named.
    """
    entries = list(getattr(args, "allow_from", None) or [])
    if not entries:
        return
    for entry in entries:
        if entry.strip().lower() != "any":
            parse_network(entry)
    knobs.ALLOW_FROM.export(tuple(entries))
