"""Where incremental checkpoints go, which ones are kept, and which one to restore.

An incremental checkpoint (`Saver.incremental_save`, format in
`framework/checkpoint_delta.py`) builds on the checkpoint before it, so it is kept only
while it is part of the newest chain: `<checkpoint_dir>/.incremental_checkpoint/` has
its own `checkpoint` state file listing the links after the newest full checkpoint,
oldest first; a new incremental save drops the links that are no longer in its chain,
and a new full save drops them all. TF's `checkpoint` file of the directory only ever
names full checkpoints, so TF tools and `tf.train.latest_checkpoint` see full ones.

The chief's session creators restore `newest_incremental` over the newest valid full
checkpoint when one builds on it and every link verifies; else the full checkpoint, and
the log says which.

Example:
    >>> saver = tf.train.Saver(incremental_save_restore=True)
    >>> saver.save(sess, "/tmp/train/model.ckpt", global_step=100)
    >>> saver.incremental_save(sess, incremental_path("/tmp/train"), global_step=120)
    '/tmp/train/.incremental_checkpoint/incremental_model.ckpt-120'
"""
from __future__ import annotations

import logging
import os
import uuid
from typing import Any, Callable

from tensorweave.framework import checkpoint_delta as _delta
from tensorweave.framework import checkpoint_format as _io
from tensorweave.framework import errors
from tensorweave.framework.checkpoint_files import discard_failed_save, file_ids
from tensorweave.train.checkpoint_management import (older_checkpoints, get_checkpoint_state,
                                                     latest_checkpoint, update_checkpoint_state)

_log = logging.getLogger("tensorweave.train.incremental_checkpoints")


def incremental_path(checkpoint_dir: str, basename: str = "incremental_model.ckpt") -> str:
    """The prefix incremental checkpoints of `checkpoint_dir` are saved under (DeepRec's).

    Example:
        >>> incremental_path("/tmp/train")
        '/tmp/train/.incremental_checkpoint/incremental_model.ckpt'
    """
    return os.path.join(checkpoint_dir, _delta.SUBDIR, basename)


def parent_for(newest: tuple[str, str] | None, save_path: str) -> tuple[str, str]:
    """(prefix, save id) of the checkpoint an incremental save at `save_path` builds on.

    The Saver's own last save if its files still exist; else (a restarted chief) the
    newest checkpoint of `save_path`'s directory or of the checkpoint directory above it.

    Raises:
        ValueError: if there is none: a chain starts with a full `save()`.
    """
    if newest is not None and _io.checkpoint_exists(newest[0]):
        return newest
    here = os.path.dirname(save_path) or "."
    dirs = [here] + ([os.path.dirname(here)] if os.path.basename(here) == _delta.SUBDIR
                     else [])
    found = [p for p in (latest_checkpoint(d) for d in dirs) if p]
    if not found:
        raise ValueError(f"No checkpoint for the incremental checkpoint {save_path} to build "
                         f"on (none in {' or '.join(dirs)}): save() a full checkpoint first.")
    prefix = max(found, key=lambda p: os.path.getmtime(_io.manifest_path(p)))
    return prefix, _delta.save_id(prefix)


def older_than(prefix: str) -> list[str]:
    """What to restore, newest first, when checkpoint `prefix` is damaged: the older ones
    its directory's state file lists and, for an incremental one, then the full ones of
    the checkpoint directory above."""
    older = older_checkpoints(prefix)
    here = os.path.dirname(prefix) or "."
    if os.path.basename(here) == _delta.SUBDIR:
        st = get_checkpoint_state(os.path.dirname(here) or ".")
        older += [p for p in reversed(st.all_model_checkpoint_paths if st else [])
                  if _io.checkpoint_exists(p)]
    return older


def commit(prefix: str) -> None:
    """Names the incremental checkpoint `prefix` the newest of its directory (the save's
    commit point) and deletes the links no longer in its chain."""
    directory = os.path.dirname(prefix) or "."
    links = _delta.chain(prefix)[1:]
    old = _listed(directory)
    update_checkpoint_state(directory, prefix, links)
    keep = {os.path.abspath(p) for p in links}
    for p in old:
        if os.path.abspath(p) not in keep:
            _io.delete_checkpoint(p)


def drop_all(checkpoint_dir: str) -> None:
    """After a full save in `checkpoint_dir`: its incremental checkpoints are older, so
    they and their state file go."""
    directory = os.path.join(checkpoint_dir, _delta.SUBDIR)
    old = _listed(directory)
    if not old and not os.path.exists(os.path.join(directory, "checkpoint")):
        return
    try:
        os.remove(os.path.join(directory, "checkpoint"))   # first: names nothing gone
    except FileNotFoundError:
        pass
    for p in old:
        _io.delete_checkpoint(p)


def newest_incremental(checkpoint_dir: str, full: str) -> str | None:
    """The newest incremental checkpoint of `checkpoint_dir` that builds on the full
    checkpoint `full` and whose every link reads back intact, or None.

    Example:
        >>> newest_incremental("/tmp/train", tf.train.latest_checkpoint("/tmp/train"))
    """
    directory = os.path.join(checkpoint_dir, _delta.SUBDIR)
    for p in reversed(_listed(directory)):
        try:
            links = _delta.chain(p)
            if os.path.abspath(links[0]) != os.path.abspath(full):
                continue   # built on another full checkpoint
            for link in links[1:]:
                _io.CheckpointReader(link).verify(chain=False)
            return p
        except (errors.NotFoundError, errors.DataLossError) as e:
            _log.warning("Skipping incremental checkpoint %s: %s", p, e.message)
    return None


class IncrementalSaving:
    """`tf.train.Saver`'s incremental checkpoints (DeepRec's API); Saver inherits it."""

    _incremental: bool
    _built: bool
    _empty: bool
    _newest: tuple[str, str] | None
    # the Saver's: a prefix with its step, and a save run fed this lineage
    _step_path: Callable[[Any, str, Any], str]
    _write: Callable[[Any, str, dict | None], str]

    def incremental_save(self, sess: Any, save_path: str, global_step: Any = None,
                         write_state: bool = True) -> str | None:
        """Saves what changed since this Saver's last save (DeepRec's incremental save).

        Only the variables, and of large ones the rows, whose bytes changed since the
        checkpoint before (full or incremental) are written; the rest is named as
        unchanged. The files, state file and commit point are a full save's.

        Args:
            save_path: the prefix, by convention
                `incremental_checkpoints.incremental_path(checkpoint_dir)`
                ("<dir>/.incremental_checkpoint/incremental_model.ckpt").
            global_step: as `save`.
            write_state: name it in its directory's `checkpoint` state file (and drop
                the incremental checkpoints no longer in its chain).

        Returns:
            Its prefix (None with allow_empty and no variables).

        Raises:
            ValueError: if the Saver was built without incremental_save_restore=True,
                or there is no checkpoint yet to build on.

        Example:
            >>> saver.incremental_save(sess, "/tmp/train/.incremental_checkpoint/"
            ...                        "incremental_model.ckpt", global_step=step)
        """
        if not self._incremental:
            raise ValueError("incremental_save needs a Saver built with "
                             "incremental_save_restore=True (it records what each save "
                             "wrote, so the next one can leave out what did not change).")
        if not self._built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        save_path = self._step_path(sess, _local(save_path), global_step)
        if self._empty:
            return None
        os.makedirs(os.path.dirname(save_path) or ".", exist_ok=True)
        parent, parent_id = parent_for(self._newest, save_path)
        if os.path.abspath(parent) == os.path.abspath(save_path):
            raise ValueError(f"The incremental save to {save_path} would overwrite the "
                             "checkpoint it builds on: give it another global_step or path.")
        lineage = {"id": uuid.uuid4().hex, "parent": parent, "parent_id": parent_id}
        before = file_ids(save_path)
        try:
            prefix = self._write(sess, save_path, lineage)
            if write_state:
                commit(prefix)
        except BaseException:
            discard_failed_save(save_path, before)
            raise
        self._newest = (prefix, lineage["id"])
        return prefix

    def incremental_restore(self, sess: Any, save_path: str, incr_save_path: str
                            ) -> str | None:
        """Restores the full checkpoint `save_path` and the incremental chain after it
        up to `incr_save_path` (DeepRec's signature; `restore(sess, incr_save_path)`
        does the same).

        Raises:
            ValueError: if `incr_save_path` does not build on `save_path`.
        """
        links = _delta.chain(_local(incr_save_path))
        if os.path.abspath(links[0]) != os.path.abspath(_local(save_path)):
            raise ValueError(f"Incremental checkpoint {incr_save_path} builds on {links[0]}, "
                             f"not on {save_path}: restore it alone, or pass its own full "
                             "checkpoint.")
        return self.restore(sess, incr_save_path)   # type: ignore[attr-defined]


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def _listed(directory: str) -> list[str]:
    try:
        st = get_checkpoint_state(directory)
    except (errors.DataLossError, ValueError) as e:
        _log.warning("Ignoring the incremental checkpoints' state file in %s: %s", directory, e)
        return []
    if st is None:
        return []
    paths = list(st.all_model_checkpoint_paths)
    if st.model_checkpoint_path and st.model_checkpoint_path not in paths:
        paths.append(st.model_checkpoint_path)
    return paths


__all__ = ["IncrementalSaving", "commit", "drop_all", "incremental_path", "newest_incremental",
           "older_than", "parent_for"]
