"""`tf.train.Saver` (the checkpoint helpers are in `checkpoint_management`).

Differences from TF 1.x, on purpose:
- Consistent snapshots: a save pauses updates on every task holding saved
  variables (in sorted device order), copies, then resumes, so no step is
  half-applied on any task (see `tensorweave.runtime.update_gate`).
- Restore finds each variable by name in any shard, so a checkpoint restores
  onto a different number of ps tasks, and partitioned variables (with a
  `SaveSliceInfo`) onto a different partitioning.
- Damage is detected (CRC32 per tensor, sizes in the manifest) and raises
  DataLossError; `restore(..., fallback=True)` and `latest_valid_checkpoint`
  fall back to the newest intact checkpoint, and the chief's session creators
  (SessionManager, MonitoredTrainingSession, Supervisor) do so by themselves,
  moving damaged checkpoints aside (`checkpoint_management.set_aside_checkpoint`).
- Saves are atomic per checkpoint: every file is written under a temporary
  name, fsync'd and renamed, the index last, then the `checkpoint` state file
  (the commit point; expired checkpoints are deleted only after it), so a
  process killed mid-save leaves the previous checkpoint as the latest. A save
  that fails (disk full, permission, a lost task) raises and leaves nothing
  behind: the files it wrote are removed, the state file is untouched.
- Two checkpoint formats: ours by default (the snapshot and damage detection
  above, shards written where the variables live), or TF's tensor bundle with
  `checkpoint_format="tensorflow"` (SaveV2/RestoreV2 nodes laid out as TF's
  Saver does; what SavedModels use; real TF reads it). Restore reads both.
- The `.meta` file is a MetaGraphDef (TF's schema) with this Saver's SaverDef.
- Incremental checkpoints (DeepRec's `incremental_save_restore=True`): between
  full saves, `incremental_save` writes only what changed since the last save; an
  incremental prefix restores like a full one (`framework/checkpoint_delta.py`).

Example:
    >>> saver = tf.train.Saver(max_to_keep=3)
    >>> path = saver.save(sess, "/tmp/train/model.ckpt", global_step=100)
    >>> saver.restore(sess, tf.train.latest_checkpoint("/tmp/train"))
"""
from __future__ import annotations

import json
import logging
import os
import time
import uuid
from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.ops.io import io_ops, tf_checkpoint_ops
from tensorweave.framework.proto import saver_pb2
from tensorweave.framework import meta_graph as _meta_graph
from tensorweave.framework import meta_graph_scoped as _scoped
from tensorweave.ops.array.core_ops import placeholder_with_default
from tensorweave.framework import checkpoint_delta as _delta
from tensorweave.framework import checkpoint_format as _io
from tensorweave.framework.checkpoint_files import discard_failed_save, file_ids
from tensorweave.train import incremental_checkpoints as _incr
from tensorweave.train.save_retry import run_save
from tensorweave.train.saver_kept import KeptCheckpoints
from tensorweave.train.saveable_object import BaseSaverBuilder, build_saveable_restores
from tensorweave.train.saver_entries import save_entries
from tensorweave.train.checkpoint_management import meta_graph_filename, update_checkpoint_state

_log = logging.getLogger("tensorweave.train.saver")


class Saver(KeptCheckpoints, _incr.IncrementalSaving):
    """Saves and restores variables as checkpoints (see module docstring).

    Args:
        var_list: variables to save: a list (saved under their op names) or a
            dict name -> variable. Default: all global variables (slots and the
            global step included) and SAVEABLE_OBJECTS.
        sharded: one shard per device holding variables, written on that device.
        max_to_keep: checkpoints to keep (older ones are deleted); None/0 keeps all.
        keep_checkpoint_every_n_hours: additionally keep one checkpoint per this
            many hours of training.
        name: name scope of the saver's ops (default "save").
        allow_empty: with no variables, save/restore do nothing instead of raising.
        pad_step_number: "model.ckpt-00000100" instead of "model.ckpt-100".
        save_relative_paths: write paths in the state file relative to its directory.
        filename: default checkpoint prefix fed when none is given.
        pause_timeout_s: how long a save waits for in-progress updates to finish.
        saver_def: a SaverDef naming existing filename/save/restore nodes (as
            `import_meta_graph` makes); nothing is built then. With `name`, the
            names are taken under that scope (TF's import scope).
        defer_build: build the save/restore ops only at `build()` (then
            `var_list` must be None: the variables are those existing then).
        checkpoint_format: "tensorweave" (default) or "tensorflow" (TF's tensor
            bundle, TF's own Saver graph: one SaveV2, or with `sharded` one per
            device then MergeV2Checkpoints; updates are not paused during it).
        incremental_save_restore: also allow `incremental_save` (DeepRec's flag):
            each save records digests of what it wrote where it wrote it, so an
            incremental save writes only the rows and variables changed since.

    Raises:
        ValueError: if there is nothing to save and allow_empty is False, or
            `var_list` is given with `defer_build`, or incremental_save_restore
            with checkpoint_format="tensorflow".

    Example:
        >>> saver = tf.train.Saver({"weights": w}, sharded=True)
    """

    def __init__(self, var_list: Any = None, reshape: bool = False, sharded: bool = False,
                 max_to_keep: int | None = 5, keep_checkpoint_every_n_hours: float = 10000.0,
                 name: str | None = None, restore_sequentially: bool = False,
                 saver_def: Any = None, builder: Any = None, defer_build: bool = False,
                 allow_empty: bool = False, write_version: int = 2,
                 pad_step_number: bool = False, save_relative_paths: bool = False,
                 filename: str | None = None, pause_timeout_s: float = 60.0,
                 checkpoint_format: str = "tensorweave",
                 incremental_save_restore: bool = False) -> None:
        if builder is not None:
            raise ValueError("Saver(builder=...) is not supported; build the Saver from "
                             "var_list (checkpoint_format picks the file format).")
        if checkpoint_format not in ("tensorweave", "tensorflow"):
            raise ValueError(f"checkpoint_format must be 'tensorweave' or 'tensorflow', got "
                             f"{checkpoint_format!r}")
        if incremental_save_restore and checkpoint_format != "tensorweave":
            raise ValueError("incremental_save_restore=True needs checkpoint_format="
                             "'tensorweave' (TF's tensor bundle has no row deltas); drop "
                             "checkpoint_format or the incremental checkpoints.")
        if defer_build and var_list is not None:
            raise ValueError("If `var_list` is provided then build cannot be deferred. Either "
                             "set defer_build=False or var_list=None.")
        self._format = checkpoint_format
        self._reshape = reshape
        self._var_list = var_list
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_every_s = keep_checkpoint_every_n_hours * 3600.0
        self._next_keep_time = time.time() + self._keep_every_s
        self._name = name or "save"
        self._allow_empty = allow_empty
        self._pad = pad_step_number
        self._relative = save_relative_paths
        self._filename = filename or "model"
        self._pause_timeout_s = pause_timeout_s
        self._last: list[tuple[str, float]] = []
        self._incremental = incremental_save_restore
        self._lineage_t: Any = None
        self._newest: tuple[str, str] | None = None   # (prefix, save id) of the last save
        self._built = False
        if saver_def is not None:
            self._adopt(saver_def, name)
        elif not defer_build:
            self.build()

    def _adopt(self, saver_def: Any, scope: str | None) -> None:
        # The nodes already exist (an imported meta graph): look them up by name.
        if scope:
            saver_def = saver_pb2.SaverDef.FromString(saver_def.SerializeToString())
            for f in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
                setattr(saver_def, f, _meta_graph.prepend_name_scope(getattr(saver_def, f),
                                                                     scope))
        g = self._graph = get_default_graph()
        self._filename_t = g.as_graph_element(saver_def.filename_tensor_name)
        self._save_t = g.as_graph_element(saver_def.save_tensor_name)
        self._restore_op = g.as_graph_element(saver_def.restore_op_name)
        self._sharded = saver_def.sharded
        self._max_to_keep = saver_def.max_to_keep
        self._keep_every_s = saver_def.keep_checkpoint_every_n_hours * 3600.0
        self._empty = False
        self._built = True

    def build(self) -> None:
        """Adds the save and restore ops to the graph (once)."""
        if self._built:
            return
        entries, saveables = save_entries(self._var_list)
        variables = [e for e in entries if e.ref.dtype.is_ref_dtype]
        self._graph = entries[0].ref.graph if entries else get_default_graph()
        self._empty = not entries
        if self._empty and not self._allow_empty:
            raise ValueError("No variables to save: create variables before the Saver, or "
                             "pass allow_empty=True.")
        with self._graph.as_default(), self._graph.name_scope(self._name):
            self._filename_t = placeholder_with_default(self._filename, [], name="Const")
            if self._empty:
                pass
            elif self._format == "tensorflow":   # (never incremental: checked above)
                self._save_t = tf_checkpoint_ops.build_tf_save(entries, self._filename_t,
                                                               self._sharded)
                self._restore_op = tf_checkpoint_ops.build_tf_restore(
                    variables, self._filename_t, self._sharded, self._reshape,
                    extra=build_saveable_restores(saveables, self._filename_t))
            else:
                if self._incremental:
                    self._lineage_t = placeholder_with_default("", [], name="lineage")
                self._save_t = io_ops.build_save(entries, self._filename_t, self._sharded,
                                                 self._pause_timeout_s, self._lineage_t)
                self._restore_op = io_ops.build_restore(
                    variables, self._filename_t, self._reshape,
                    extra=build_saveable_restores(saveables, self._filename_t))
        self._built = True

    def as_saver_def(self) -> Any:
        """The SaverDef proto naming this Saver's filename, save and restore nodes.

        Example:
            >>> saver.as_saver_def().restore_op_name
            'save/restore_all'
        """
        self.build()
        d = saver_pb2.SaverDef(max_to_keep=self._max_to_keep or 0, sharded=self._sharded,
                               keep_checkpoint_every_n_hours=self._keep_every_s / 3600.0,
                               version=saver_pb2.SaverDef.V2)
        d.filename_tensor_name = self._filename_t.name
        if not self._empty:
            d.save_tensor_name = self._save_t.name
            d.restore_op_name = self._restore_op.name
        return d

    @property
    def saver_def(self) -> Any:
        """This Saver's SaverDef (see `as_saver_def`)."""
        return self.as_saver_def()

    def to_proto(self, export_scope: str | None = None) -> Any:
        """The SaverDef (how meta graphs store the SAVERS collection), names relative to
        `export_scope`; None if this Saver's nodes are outside it (as TF)."""
        sd = self.as_saver_def()
        if export_scope is None:
            return sd
        names = ("filename_tensor_name", "save_tensor_name", "restore_op_name")
        if not all(getattr(sd, f).startswith(export_scope) for f in names):
            return None
        for f in names:
            setattr(sd, f, _meta_graph.strip_name_scope(getattr(sd, f), export_scope))
        return sd

    @staticmethod
    def from_proto(saver_def: Any, import_scope: str | None = None) -> Saver:
        """A Saver over the (already imported) nodes a SaverDef names, under `import_scope`."""
        return Saver(saver_def=saver_def, name=import_scope)

    def export_meta_graph(self, filename: str | None = None, collection_list: Any = None,
                          as_text: bool = False, export_scope: str | None = None,
                          clear_devices: bool = False, clear_extraneous_savers: bool = False,
                          strip_default_attrs: bool = False, save_debug_info: bool = False
                          ) -> Any:
        """Writes (if `filename`) and returns the MetaGraphDef with this Saver's SaverDef.

        Args:
            export_scope: export only the nodes under this name scope (TF's
                `export_scoped_meta_graph`).
            clear_extraneous_savers: leave out the nodes and SaverDefs of other Savers.

        Example:
            >>> mg = saver.export_meta_graph("model.meta", clear_devices=True)
        """
        mg, _ = _scoped.export_scoped_meta_graph(
            filename=filename, graph_def=self._graph.as_graph_def(add_shapes=True),
            graph=self._graph, export_scope=export_scope, as_text=as_text,
            clear_devices=clear_devices, saver_def=self.as_saver_def(),
            clear_extraneous_savers=clear_extraneous_savers,
            strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info,
            collection_list=collection_list)
        return mg

    # ---- save ------------------------------------------------------------------------
    def save(self, sess: Any, save_path: str, global_step: Any = None,
             latest_filename: str | None = None, meta_graph_suffix: str = "meta",
             write_meta_graph: bool = True, write_state: bool = True,
             strip_default_attrs: bool = False) -> str | None:
        """Saves a checkpoint; returns its prefix (None with allow_empty and no variables).

        Args:
            sess: the session whose variables to save.
            save_path: the prefix, e.g. "/tmp/train/model.ckpt".
            global_step: an int, or a tensor/variable to fetch, appended as "-<step>".
            latest_filename: name of the state file (default "checkpoint").

        Raises:
            DeadlineExceededError: if updates could not be paused in time.
            PermissionDeniedError: if a shard cannot be written.

        Example:
            >>> saver.save(sess, "/tmp/train/model.ckpt", global_step=step)
            '/tmp/train/model.ckpt-100'
        """
        if not self._built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        if latest_filename and os.path.split(latest_filename)[0]:
            raise ValueError(f"'latest_filename' must be a base name, got {latest_filename!r}: "
                             "the state file is written in the checkpoint's directory.")
        save_path = _local_path(save_path)
        if global_step is None and not self._sharded and \
                os.path.basename(save_path) == (latest_filename or "checkpoint"):
            raise ValueError(f"'latest_filename' collides with 'save_path': "
                             f"'{latest_filename or 'checkpoint'}' and '{save_path}'")
        save_path = self._step_path(sess, save_path, global_step)
        if self._empty:   # as TF: no checkpoint, but the meta graph is written
            _log.warning("Saver has no variables to save; skipping save to %s", save_path)
            if write_meta_graph:
                self.export_meta_graph(meta_graph_filename(save_path, meta_graph_suffix),
                                       strip_default_attrs=strip_default_attrs)
            return None
        save_dir = os.path.dirname(save_path)
        if save_dir and not os.path.isdir(save_dir):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        before = file_ids(save_path)
        kept = (list(self._last), self._next_keep_time)
        lineage = {"id": uuid.uuid4().hex} if self._incremental else None
        try:
            prefix = self._write(sess, save_path, lineage)
            if write_meta_graph:
                self.export_meta_graph(meta_graph_filename(prefix, meta_graph_suffix),
                                       strip_default_attrs=strip_default_attrs)
            # As TF, only a save that writes the state file is tracked (and expires others).
            expired = self._record(prefix) if write_state else []
            if write_state:
                # The commit point: only now is the new checkpoint named the latest.
                update_checkpoint_state(save_dir or ".", prefix, [p for p, _ in self._last],
                                        latest_filename, [t for _, t in self._last],
                                        save_relative_paths=self._relative)
        except BaseException:
            # A failed save (disk full, permission, a lost task) leaves nothing behind:
            # not its files, nor its place in the kept list; the state file is as it was.
            self._last, self._next_keep_time = kept
            discard_failed_save(save_path, before)
            raise
        for old in expired:   # after the commit, so a crash never leaves no checkpoint
            _io.delete_checkpoint(old)
        if lineage is not None:
            self._newest = (prefix, lineage["id"])
            if write_state:   # the incremental ones built on older full checkpoints
                _incr.drop_all(save_dir or ".")
        return prefix

    def _step_path(self, sess: Any, save_path: str, global_step: Any) -> str:
        if global_step is None:
            return save_path
        if not isinstance(global_step, (int, np.integer)):
            global_step = sess.run(global_step)
        step = int(global_step)
        return f"{save_path}-{step:08d}" if self._pad else f"{save_path}-{step}"

    def _write(self, sess: Any, save_path: str, lineage: dict | None) -> str:
        # By name, as TF: the session's graph may be another one holding the same nodes.
        feeds = {self._filename_t.name: save_path}
        if lineage is not None:
            feeds[self._lineage_t.name] = json.dumps(lineage)
        prefix = run_save(sess, self._save_t.name, feeds, self._pause_timeout_s)
        return prefix.decode() if isinstance(prefix, bytes) else str(prefix)

    # ---- restore ---------------------------------------------------------------------
    def restore(self, sess: Any, save_path: str, fallback: bool = False) -> str | None:
        """Restores the saved variables from the checkpoint `save_path`.

        Args:
            fallback: if the checkpoint is damaged (DataLossError), restore the
                newest intact older one listed in its directory's state file.

        Returns:
            The prefix actually restored (differs from `save_path` after a fallback).

        Raises:
            ValueError: if `save_path` is None or no checkpoint exists there.
            NotFoundError: if the checkpoint lacks a variable.
            DataLossError: if it is damaged (and no fallback was found).

        Example:
            >>> saver.restore(sess, tf.train.latest_checkpoint("/tmp/train"), fallback=True)
        """
        if save_path is None:
            raise ValueError("Can't load save_path when it is None (no checkpoint found?).")
        self.build()
        if self._empty:
            return None
        save_path = _local_path(save_path)
        if not _io.checkpoint_exists(save_path):
            if _io.checkpoint_format_of(save_path) == "tensorflow-v1":
                _io.open_reader(save_path)   # raises, naming the V1 format
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path} "
                             f"(no {save_path}.index; pass a prefix Saver.save returned)")
        try:
            return self._restore_from(sess, save_path)
        except errors.NotFoundError as e:   # TF's wording first, then the cause
            raise _restore_error(e, "a Variable name or other graph key that is missing"
                                 ) from None
        except errors.InvalidArgumentError as e:
            raise _restore_error(e, "a mismatch between the current graph and the graph"
                                 ) from None
        except errors.DataLossError as e:
            if not fallback:
                raise
            older = _incr.older_than(save_path)
            _log.warning("Checkpoint %s is damaged (%s); trying %s", save_path, e.message,
                         older)
            for p in older:
                try:
                    return self._restore_from(sess, p)
                except errors.DataLossError:
                    continue
            raise

    def _restore_from(self, sess: Any, prefix: str) -> str:
        sess.run(self._restore_op.name, {self._filename_t.name: prefix})   # as TF
        if self._incremental:   # the state it holds now: what the next delta builds on
            self._newest = (prefix, _delta.save_id(prefix))
        return prefix


def _restore_error(err: Any, cause: str) -> Any:
    return type(err)(err.node_def, err.op, (
        f"Restoring from checkpoint failed. This is most likely due to {cause} from the "
        "checkpoint. Please ensure that you have not altered the graph expected based on the "
        f"checkpoint. Original error:\n\n{err.message}"))


def _local_path(path: str) -> str:
    # A "file://" URI names a local path (TF's local filesystem accepts both).
    return path[len("file://"):] if path.startswith("file://") else path


# Meta graphs store the SAVERS collection as SaverDefs (as TF 1.x does).
_meta_graph.register_proto_function(
    GraphKeys.SAVERS, saver_pb2.SaverDef,
    lambda s, export_scope=None: s.to_proto(export_scope) if isinstance(s, Saver) else None,
    Saver.from_proto)

__all__ = ["BaseSaverBuilder", "Saver"]
