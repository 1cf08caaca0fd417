"""`--allow-dir` on `tensorweave server` and `tensorweave launch`: the directories a
task's file ops may touch (`tensorweave/framework/file_access.py` has the check).

The flag sets TENSORWEAVE_ALLOW_DIRS in this process's environment, which every
`tf.train.Server` created without `allow_dirs=` reads: the server's own (`server`)
or the tasks' that `launch` starts (they inherit the launcher's environment).

Example:
    $ tensorweave server --job ps --task 0 --cluster @cluster.json \\
          --allow-dir /data/checkpoints --allow-dir /data/records
"""
from __future__ import annotations

import argparse
import os

from tensorweave.base import knobs
from tensorweave.framework.file_access import ENV_ALLOW_DIRS, FilePolicy

__all__ = ["add_allow_dir_flag", "apply_allow_dirs"]


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
