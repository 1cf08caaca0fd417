"""The files of a checkpoint, in either format: durable writes, listing, moving aside.

A checkpoint `<prefix>` owns `<prefix>.index`, `<prefix>.meta` and its data files:
ours `<prefix>-00000-of-00002` (`checkpoint_format`), TF's
`<prefix>.data-00000-of-00001` (`tensor_bundle`). Every file is written under a
temporary name, fsync'd and renamed (`base.files.atomic_write`), the index last; the
`checkpoint` state file, updated after that, is a save's commit point.

Example:
    >>> rename_checkpoint_aside("/tmp/train/model.ckpt-5")
    ['/tmp/train/model.ckpt-5.damaged-1.index', ...]
"""
from __future__ import annotations

import logging
import os
import re

from tensorweave.base.files import fsync_dir

_log = logging.getLogger("tensorweave.train.saver")

_SUFFIX = r"(\.index|\.meta|-\d{5}-of-\d{5}|\.data-\d{5}-of-\d{5})"


def checkpoint_files(prefix: str) -> list[str]:
    """The files on disk that belong to checkpoint `prefix` (index first, if present)."""
    d, base = os.path.split(prefix)
    pat = re.compile(re.escape(base) + _SUFFIX + "$")
    try:
        names = sorted(f for f in os.listdir(d or ".") if pat.match(f))
    except FileNotFoundError:
        return []
    names.sort(key=lambda f: not f.endswith(".index"))   # stable: index first
    return [os.path.join(d, f) if d else f for f in names]


def temp_leftovers(prefix: str) -> list[str]:
    """Temporary files a save of `prefix` killed mid-write left behind (`base.files`).

    Also the files of TF-format sharded saves' `<prefix>_temp/` directory.
    """
    d, base = os.path.split(prefix)
    pat = re.compile(re.escape(base) + _SUFFIX + r"\.tmp\d+$")
    out = [os.path.join(d, f) for f in _listdir(d) if pat.match(f)]
    tmp_dir = prefix + "_temp"
    return out + [os.path.join(tmp_dir, f) for f in _listdir(tmp_dir)]


def file_ids(prefix: str) -> dict[str, tuple[int, int]]:
    """(inode, mtime in ns) of each file of checkpoint `prefix` now: taken before a save,
    it tells `discard_failed_save` which files that save wrote."""
    out = {}
    for f in checkpoint_files(prefix):
        try:
            st = os.stat(f)
        except FileNotFoundError:
            continue
        out[f] = (st.st_ino, st.st_mtime_ns)
    return out


def discard_failed_save(prefix: str, before: dict[str, tuple[int, int]]) -> list[str]:
    """Removes what a failed save of `prefix` wrote; returns the removed paths.

    That is: the checkpoint's files that are new or were replaced since `before`
    (`file_ids` taken as the save began; the index first, so a half-replaced
    checkpoint stops existing before its data goes), the temporary files of
    interrupted writes, and the TF-format sharded save's `<prefix>_temp/`. Files of an
    earlier save of the same prefix that this one did not touch stay.

    Example:
        >>> before = file_ids("/tmp/train/model.ckpt-5")
        >>> discard_failed_save("/tmp/train/model.ckpt-5", before)  # after the save failed
        ['/tmp/train/model.ckpt-5-00000-of-00002']
    """
    removed = []
    for f in checkpoint_files(prefix) + temp_leftovers(prefix):
        try:
            st = os.stat(f)
            if before.get(f) == (st.st_ino, st.st_mtime_ns):
                continue
            os.remove(f)
        except FileNotFoundError:
            continue
        removed.append(f)
    try:
        os.rmdir(prefix + "_temp")
    except OSError:
        pass   # none, or not empty (not ours to empty)
    if removed:
        fsync_dir(os.path.dirname(prefix))
        _log.warning("The save of %s failed; removed the files it had written: %s", prefix,
                     removed)
    return removed


def _listdir(d: str) -> list[str]:
    try:
        return sorted(os.listdir(d or "."))
    except (FileNotFoundError, NotADirectoryError):
        return []


def rename_checkpoint_aside(prefix: str) -> list[str]:
    """Renames `<prefix><suffix>` to `<prefix>.damaged-<n><suffix>`; returns the new paths.

    `n` is the first number no file uses yet, so a checkpoint later saved again
    under the same prefix (and damaged again) never overwrites an earlier one. The
    index goes first: the checkpoint stops existing before its data moves.
    """
    d, base = os.path.split(prefix)
    taken = re.compile(re.escape(base) + r"\.damaged-(\d+)")
    used = [int(m.group(1)) for f in os.listdir(d or ".") if (m := taken.match(f))]
    tag = f"{base}.damaged-{max(used, default=0) + 1}"
    out = []
    for f in checkpoint_files(prefix):
        dst = os.path.join(d, tag + os.path.basename(f)[len(base):])
        os.replace(f, dst)
        out.append(dst)
    fsync_dir(d)
    return out
