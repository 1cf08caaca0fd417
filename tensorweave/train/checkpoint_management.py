"""Checkpoint management: the `checkpoint` state file of a directory, finding the
latest (intact) checkpoint, and reading saved variables.

Example:
    >>> tf.train.latest_checkpoint("/tmp/train")
    '/tmp/train/model.ckpt-100'
    >>> tf.train.list_variables("/tmp/train")
"""
from __future__ import annotations

import glob
import logging
import os
import re
import time
from typing import Any

import numpy as np

from tensorweave.base.files import atomic_write
from tensorweave.framework import checkpoint_files as _files
from tensorweave.framework import checkpoint_format as _io
from tensorweave.framework import errors
from tensorweave.framework.checkpoint_format import open_reader
from tensorweave.framework.checkpoint_state import CheckpointState

_log = logging.getLogger("tensorweave.train.checkpoint_management")


def _state_path(checkpoint_dir: str, latest_filename: str | None) -> str:
    return os.path.join(checkpoint_dir, latest_filename or "checkpoint")


def get_checkpoint_state(checkpoint_dir: str, latest_filename: str | None = None
                         ) -> CheckpointState | None:
    """The parsed `checkpoint` file of a directory, or None if there is none.

    Relative paths in it are returned joined with `checkpoint_dir`.

    Raises:
        ValueError: if the file names no checkpoint (as TF: "Invalid checkpoint state").

    Example:
        >>> tf.train.get_checkpoint_state("/tmp/train").all_model_checkpoint_paths
    """
    path = _state_path(checkpoint_dir, latest_filename)
    try:
        with open(path) as f:
            st = CheckpointState.from_text(f.read(), path)
    except FileNotFoundError:
        return None
    if not st.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state loaded from {checkpoint_dir}: {path} "
                         "names no model_checkpoint_path (delete it, or save again).")

    def fix(p: str) -> str:
        return p if not p or os.path.isabs(p) else os.path.join(checkpoint_dir, p)

    st.model_checkpoint_path = fix(st.model_checkpoint_path)
    st.all_model_checkpoint_paths = [fix(p) for p in st.all_model_checkpoint_paths]
    return st


def generate_checkpoint_state_proto(save_dir: str, model_checkpoint_path: str,
                                    all_model_checkpoint_paths: list[str] | None = None,
                                    all_model_checkpoint_timestamps: list[float] | None = None,
                                    last_preserved_timestamp: float | None = None
                                    ) -> CheckpointState:
    """The CheckpointState naming `model_checkpoint_path` as the newest (TF's rules).

    `model_checkpoint_path` is appended to `all_model_checkpoint_paths` (the given
    list itself, as TF) unless it is already last; with a relative `save_dir`,
    relative paths are rewritten relative to it (get_checkpoint_state joins them
    back).

    Raises:
        ValueError: if timestamps are given but not one per path.

    Example:
        >>> tf.train.generate_checkpoint_state_proto("train", "train/model-0")
        ... .model_checkpoint_path
        'model-0'
    """
    # As TF, a given list is extended in place (callers see the appended path).
    paths = all_model_checkpoint_paths if isinstance(all_model_checkpoint_paths, list) else \
        list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if all_model_checkpoint_timestamps and len(all_model_checkpoint_timestamps) != len(paths):
        raise ValueError(f"Checkpoint timestamps, if provided, must match checkpoint paths "
                         f"(got paths {paths} and timestamps {all_model_checkpoint_timestamps})")
    if not os.path.isabs(save_dir):
        def rel(p: str) -> str:
            return p if os.path.isabs(p) else os.path.relpath(p, save_dir)
        model_checkpoint_path = rel(model_checkpoint_path)
        paths = [rel(p) for p in paths]
    return CheckpointState(model_checkpoint_path, paths, all_model_checkpoint_timestamps,
                           last_preserved_timestamp or 0.0)


def update_checkpoint_state(save_dir: str, model_checkpoint_path: str,
                            all_model_checkpoint_paths: list[str] | None = None,
                            latest_filename: str | None = None,
                            all_model_checkpoint_timestamps: list[float] | None = None,
                            last_preserved_timestamp: float | None = None,
                            save_relative_paths: bool = False) -> None:
    """Writes the `checkpoint` state file (atomically) naming the newest checkpoint.

    Args:
        save_relative_paths: write absolute paths relative to `save_dir`.

    Raises:
        RuntimeError: if the state file would overwrite the checkpoint itself.

    Example:
        >>> tf.train.update_checkpoint_state("/tmp/train", "/tmp/train/model.ckpt-5")
    """
    if save_relative_paths:
        def rel(p: str) -> str:
            return os.path.relpath(p, save_dir) if os.path.isabs(p) else p
        model_checkpoint_path = rel(model_checkpoint_path)
        all_model_checkpoint_paths = [rel(p) for p in all_model_checkpoint_paths or []]
    st = generate_checkpoint_state_proto(
        save_dir, model_checkpoint_path, all_model_checkpoint_paths,
        all_model_checkpoint_timestamps,
        time.time() if last_preserved_timestamp is None else last_preserved_timestamp)
    path = _state_path(save_dir, latest_filename)
    if path == st.model_checkpoint_path:   # TF's check, as TF makes it (the same spelling)
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for "
                         "checkpoint state.  Please use a different save path.")
    _write_state(path, st)


def _write_state(path: str, st: CheckpointState) -> None:
    # The state file is the commit point of a save: written atomically, so after a
    # crash it names either the old or the new checkpoint.
    atomic_write(path, st.to_text())


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The newest checkpoint prefix in `checkpoint_dir`, or None.

    TF's meaning: what the `checkpoint` state file names (if its index exists); it
    is not verified. The chief's session creators restore
    `latest_valid_checkpoint` instead, moving damaged checkpoints aside.

    Example:
        >>> saver.restore(sess, tf.train.latest_checkpoint("/tmp/train"))
    """
    st = get_checkpoint_state(checkpoint_dir, latest_filename)
    if st is None or not st.model_checkpoint_path:
        return None
    return st.model_checkpoint_path if _io.checkpoint_exists(st.model_checkpoint_path) \
        else None


def latest_valid_checkpoint(checkpoint_dir: str, latest_filename: str | None = None,
                            set_aside_damaged: bool = False) -> str | None:
    """The newest checkpoint in `checkpoint_dir` whose every file reads back intact.

    Candidates are the state file's checkpoints, newest first. Each is verified
    (`checkpoint_damage`: every tensor's size and checksum, one tensor in memory at
    a time); a damaged or incomplete one is skipped with a WARNING saying what is
    wrong. Unlike `latest_checkpoint` (TF's meaning: what the state file names),
    this is tensorweave's own; the chief's session creators (SessionManager,
    MonitoredTrainingSession, Supervisor, Estimator) restore through it.

    Args:
        set_aside_damaged: also move each damaged checkpoint aside
            (`set_aside_checkpoint`: renamed, never deleted, and dropped from the
            state file), so later saves and restarts no longer see it; an
            unreadable state file is moved aside too and rebuilt from the
            `<name>-<step>.index` files in the directory.

    Example:
        >>> path = tf.train.latest_valid_checkpoint("/tmp/train")
    """
    try:
        st = get_checkpoint_state(checkpoint_dir, latest_filename)
    except (errors.DataLossError, ValueError) as e:   # unparsable, or naming nothing
        if not set_aside_damaged:
            raise
        st = _rebuild_state(checkpoint_dir, latest_filename, str(e))
    if st is None:
        return None
    cands = list(reversed(st.all_model_checkpoint_paths))
    if st.model_checkpoint_path and st.model_checkpoint_path not in cands:
        cands.insert(0, st.model_checkpoint_path)
    for p in cands:
        what = checkpoint_damage(p)
        if what is None:
            return p
        if set_aside_damaged:
            set_aside_checkpoint(p, what, latest_filename, checkpoint_dir)
        else:
            _log.warning("Skipping checkpoint %s: %s", p, what)
    return None


def _rebuild_state(checkpoint_dir: str, latest_filename: str | None, what: str
                   ) -> CheckpointState:
    # An unreadable state file is moved aside and rebuilt from the directory: every
    # "<name>-<step>.index" is a candidate, highest step last (as the list is ordered).
    path = _state_path(checkpoint_dir, latest_filename)
    n = 1
    while os.path.exists(f"{path}.damaged-{n}"):
        n += 1
    os.replace(path, f"{path}.damaged-{n}")
    found = []
    for f in os.listdir(checkpoint_dir):
        m = re.fullmatch(r"(.+-(\d+))\.index", f)
        if m and ".damaged-" not in f:   # not one set aside earlier
            found.append((int(m.group(2)), os.path.join(checkpoint_dir, m.group(1))))
    st = CheckpointState(all_model_checkpoint_paths=[p for _, p in sorted(found)])
    st.model_checkpoint_path = st.all_model_checkpoint_paths[-1] if found else ""
    if found:   # a state file naming nothing would be invalid: none then
        _write_state(path, st)
    _log.warning("The checkpoint state file %s is unreadable (%s); moved it to %s.damaged-%d "
                 "and rebuilt it from the checkpoints in the directory: %s", path, what,
                 path, n, [os.path.basename(p) for p in st.all_model_checkpoint_paths])
    return st


def checkpoint_damage(prefix: str) -> str | None:
    """What is wrong with the checkpoint at `prefix` (either format), or None if intact.

    Reads every tensor and checks its size and checksum, one tensor at a time (a
    checkpoint is never held in memory whole). A missing `.meta` is not damage.

    Example:
        >>> checkpoint_management.checkpoint_damage("/tmp/train/model.ckpt-2")
        "Checkpoint file ... is damaged: checksum mismatch in tensor 'v'. ..."
    """
    if not _io.checkpoint_exists(prefix):
        left = _files.checkpoint_files(prefix)
        return (f"its index {_io.manifest_path(prefix)} is missing (an unfinished save?); "
                f"files left: {[os.path.basename(f) for f in left]}" if left
                else "none of its files exist (deleted?)")
    try:
        open_reader(prefix).verify()
    except (errors.DataLossError, errors.NotFoundError) as e:
        return e.message
    except (ValueError, KeyError, TypeError, IndexError, EOFError) as e:
        # A garbage index can fail in the table or protobuf parsers themselves.
        return f"its index {_io.manifest_path(prefix)} is unreadable ({type(e).__name__}: {e})"
    return None


def set_aside_checkpoint(prefix: str, reason: str, latest_filename: str | None = None,
                         checkpoint_dir: str | None = None) -> list[str]:
    """Moves a damaged checkpoint's files aside and drops it from the state file.

    Files `<prefix><suffix>` become `<prefix>.damaged-<n><suffix>` (n: the first
    unused number), the index first so the checkpoint stops existing at once; they
    are never deleted, so a person can still inspect or repair them. Logs a WARNING
    with `reason` and the new names.

    Args:
        prefix: the checkpoint.
        reason: what is wrong with it (logged).
        latest_filename: the state file's name (default "checkpoint").
        checkpoint_dir: the directory whose state file lists it (default: the
            checkpoint's own directory).

    Returns:
        The new paths.

    Example:
        >>> checkpoint_management.set_aside_checkpoint("/tmp/train/model.ckpt-2", "bad CRC")
    """
    moved = _files.rename_checkpoint_aside(prefix)
    _drop_from_state(prefix, checkpoint_dir or os.path.dirname(prefix) or ".",
                     latest_filename)
    names = ", ".join(os.path.basename(m) for m in moved) or "no files were left"
    _log.warning("Checkpoint %s is damaged or incomplete: %s. Moved it aside (%s) and "
                 "removed it from the checkpoint state file; trying the next older one.",
                 prefix, reason.rstrip("."), names)
    return moved


def _drop_from_state(prefix: str, d: str, latest_filename: str | None) -> None:
    path = _state_path(d, latest_filename)
    try:
        with open(path) as f:
            st = CheckpointState.from_text(f.read(), path)
    except FileNotFoundError:
        return
    gone = os.path.abspath(prefix)
    def same(p: str) -> bool:   # state paths may be relative to the directory
        return os.path.abspath(os.path.join(d, p)) == gone

    keep = [i for i, p in enumerate(st.all_model_checkpoint_paths) if not same(p)]
    if len(st.all_model_checkpoint_timestamps) == len(st.all_model_checkpoint_paths):
        st.all_model_checkpoint_timestamps = [st.all_model_checkpoint_timestamps[i]
                                              for i in keep]
    st.all_model_checkpoint_paths = [st.all_model_checkpoint_paths[i] for i in keep]
    if same(st.model_checkpoint_path):
        st.model_checkpoint_path = (st.all_model_checkpoint_paths[-1]
                                    if st.all_model_checkpoint_paths else "")
    if not st.model_checkpoint_path:   # none left: no state file, as before any save
        os.remove(path)
        return
    _write_state(path, st)


def older_checkpoints(prefix: str) -> list[str]:
    """The checkpoints older than `prefix` that its directory's state file lists, newest
    first (those whose index still exists)."""
    st = get_checkpoint_state(os.path.dirname(prefix) or ".")
    paths = st.all_model_checkpoint_paths if st else []
    norm = [os.path.abspath(p) for p in paths]
    here = os.path.abspath(prefix)
    older = paths[:norm.index(here)] if here in norm else paths
    return [p for p in reversed(older) if _io.checkpoint_exists(p)]


def _resolve(ckpt_dir_or_file: str) -> str:
    if os.path.isdir(ckpt_dir_or_file):
        p = latest_checkpoint(ckpt_dir_or_file)
        if p is None:
            raise ValueError(f"Couldn't find a checkpoint in directory {ckpt_dir_or_file}")
        return p
    return ckpt_dir_or_file


def NewCheckpointReader(filepattern: str) -> Any:
    """A reader for the checkpoint at a prefix, in our format or TF's (tensor bundle).

    Methods: `get_tensor`, `has_tensor`, `get_variable_to_shape_map`,
    `get_variable_to_dtype_map`.

    Raises:
        NotFoundError: if there is no checkpoint at `filepattern`.

    Example:
        >>> tf.train.NewCheckpointReader("/tmp/tf_train/model.ckpt-7").get_tensor("w")
    """
    return open_reader(filepattern)


def load_checkpoint(ckpt_dir_or_file: str) -> Any:
    """A reader for the checkpoint at a prefix, or the latest one in a directory."""
    return open_reader(_resolve(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """Sorted (name, shape) of every variable in a checkpoint (prefix or directory).

    Example:
        >>> tf.train.list_variables("/tmp/train")
        [('global_step', []), ('w', [2, 3])]
    """
    return sorted(load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The saved value of `name` (a trailing ":0" is ignored).

    Example:
        >>> tf.train.load_variable("/tmp/train", "w")
    """
    name = name.removesuffix(":0")
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint exists at `checkpoint_prefix` (a glob pattern), as TF 1.x.

    True if `<prefix>.index` matches a file, or, as TF's V1 rule, `prefix` itself
    matches any file (so the `.meta` path of a checkpoint "exists" too).

    Example:
        >>> tf.train.checkpoint_exists("https://gh.072103.xyz/tmp/train/model.ckpt-*")
        True
    """
    return bool(glob.glob(checkpoint_prefix + ".index") or glob.glob(checkpoint_prefix))


def meta_graph_filename(checkpoint_filename: str, meta_graph_suffix: str = "meta") -> str:
    """The `.meta` file that goes with a checkpoint (a shard's "-?????-of-N" dropped), as TF.

    Example:
        >>> meta_graph_filename("/tmp/train/model.ckpt-100")
        '/tmp/train/model.ckpt-100.meta'
    """
    basename = re.sub(r"-[\d\?]+-of-\d+$", "", checkpoint_filename)
    return f"{basename}.{meta_graph_suffix}"


def get_checkpoint_mtimes(checkpoint_prefixes: list[str]) -> list[float]:
    """The modification times of the checkpoints that exist among `checkpoint_prefixes`.

    A checkpoint's time is its index's (written last); missing ones are skipped.

    Example:
        >>> tf.train.get_checkpoint_mtimes(saver.last_checkpoints)
    """
    return [os.path.getmtime(_io.manifest_path(p)) for p in checkpoint_prefixes
            if _io.checkpoint_exists(p)]


def remove_checkpoint(checkpoint_prefix: str, checkpoint_format_version: int = 2,
                      meta_graph_suffix: str = "meta") -> None:
    """Deletes a checkpoint's files (the index first) and its meta graph, as TF.

    Example:
        >>> tf.train.remove_checkpoint("/tmp/train/model.ckpt-100")
    """
    del checkpoint_format_version   # either format is found by its files
    _io.delete_checkpoint(checkpoint_prefix)
    try:
        os.remove(meta_graph_filename(checkpoint_prefix, meta_graph_suffix))
    except FileNotFoundError:
        pass

__all__ = [
    "CheckpointState",
    "NewCheckpointReader",
    "checkpoint_damage",
    "checkpoint_exists",
    "get_checkpoint_mtimes",
    "generate_checkpoint_state_proto",
    "get_checkpoint_state",
    "latest_checkpoint",
    "latest_valid_checkpoint",
    "list_variables",
    "load_checkpoint",
    "load_variable",
    "meta_graph_filename",
    "remove_checkpoint",
    "set_aside_checkpoint",
    "update_checkpoint_state",
]
