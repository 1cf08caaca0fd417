"""Checkpoint ops: pause/resume a task's updates, save a shard, merge, restore.

A save is a graph run across every task holding variables (built by
`build_save`, used by `tf.train.Saver`):

    GatePause(task 0) -> GatePause(task 1) -> ...      (sorted device names)
      -> Identity copies of every variable, each on its own task
      -> GateResume on each task once its copies exist
      -> SaveShard on each task (writes that task's shard where it runs)
      -> MergeCheckpoint on the saver's device (the manifest, written last)

A pause after the first gives up early when a step it waits for may itself wait
on an earlier-paused task; `tf.train.Saver` then retries the whole save.

Between the last pause and the first resume no variable changes anywhere, so
the copies are the state of every task at one instant (see
`tensorweave.runtime.update_gate` for what that means for steps).

Restore is one RestoreShard per task, taking its variables by reference; it
finds each variable by name (or its slices) in any shard of the checkpoint, so
the number of ps tasks and the partitioning may differ from the save's.

Example:
    >>> prefix = io_ops.build_save(entries, filename, sharded=True)
    >>> sess.run(prefix, {filename: "/tmp/train/model.ckpt-1"})
"""
from __future__ import annotations

import json
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import checkpoint_delta as _delta
from tensorweave.framework import checkpoint_format as _io
from tensorweave.framework import errors
from tensorweave.framework import file_access as _files
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.runtime import update_gate as _gate

# ---- GatePause / GateResume ------------------------------------------------------
# contended: not the save's first pause (update_gate.py: it gives up early, and the
# Saver retries, instead of deadlocking with a step that waits on an earlier task).
pause_op = define_op("GatePause", attrs={"timeout_s": 60.0, "contended": False},
                     stateful=True)
resume_op = define_op("GateResume", stateful=True)


@pause_op.shape
def _(*, timeout_s: float, contended: bool) -> list:
    return []


@pause_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, timeout_s: float, contended: bool) -> None:
    gate = _gate.update_gate(ctx.resources, ctx.device)
    owner = _gate.step_token(step)
    gate.pause(owner, timeout_s=timeout_s, contended=contended)
    # If the save step fails before GateResume (a refused path, a full disk), resume
    # when its part here ends or is cancelled: waiting for the step to be freed could
    # take the pause's whole lease (60 s), as a raised error keeps the step alive.
    # Freeing the step is the last resort.
    step.add_end_callback(lambda: gate.resume(owner))
    step.register_cancel(lambda _e: gate.resume(owner))
    weakref.finalize(step, gate.resume, owner)


@resume_op.shape
def _() -> list:
    return []


@resume_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any) -> None:
    _gate.update_gate(ctx.resources, ctx.device).resume(_gate.step_token(step))


pause_op.no_gradient()
resume_op.no_gradient()

# ---- SaveShard: one task's tensors into its own shard file -----------------------
save_op = define_op("SaveShard", inputs=("prefix", "tensors*"),
                    attrs={"names": REQUIRED, "slices": REQUIRED, "shard": 0,
                           "num_shards": 1}, stateful=True)


@save_op.shape
def _save_shape(prefix: Tensor, tensors: list[Tensor], *, names: list[str],
                slices: list[str], shard: int, num_shards: int) -> Any:
    if len(names) != len(tensors) or len(slices) != len(tensors):
        raise ValueError(f"SaveShard got {len(tensors)} tensors for {len(names)} names and "
                         f"{len(slices)} slice specs")
    return _dt.string, TensorShape([])


@save_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, prefix: Any, tensors: list[np.ndarray], *, names: list[str],
      slices: list[str], shard: int, num_shards: int) -> np.ndarray:
    return _write_shard(ctx, prefix, names, tensors, slices, shard, num_shards)


def _write_shard(ctx: Any, prefix: Any, names: list[str], tensors: list[np.ndarray],
                 slices: list[str], shard: int, num_shards: int,
                 deltas: list[Any] | None = None, lineage: dict | None = None) -> np.ndarray:
    path = _io.shard_filename(_str(prefix), shard, num_shards)
    _files.check_prefix(_policy(ctx), path, "write", _what(ctx))
    items = []
    for i, (name, value, spec) in enumerate(zip(names, tensors, slices)):
        value = np.asarray(value)
        items.append((_str(name), value, _dt.from_numpy(value),
                      json.loads(spec) if spec else None, deltas[i] if deltas else None))
    try:
        _io.write_shard(path, items, lineage)
    except OSError as e:
        raise errors.PermissionDeniedError(None, None, f"Cannot write checkpoint shard {path}: "
                                           f"{e}. Check the directory exists and is writable."
                                           ) from None
    return np.asarray(path.encode(), dtype=object)


save_op.no_gradient()

# ---- SaveShardDelta: a shard of an incremental Saver (full or incremental save) ----
# `lineage` (JSON, framework/checkpoint_delta.py): this save's id and, for an incremental
# save, its parent's prefix and id. Each tensor's digests are recorded under the id; an
# incremental save writes of each tensor only what differs from its parent's digests.
save_delta_op = define_op("SaveShardDelta", inputs=("prefix", "lineage", "tensors*"),
                          attrs={"names": REQUIRED, "slices": REQUIRED, "shard": 0,
                                 "num_shards": 1}, stateful=True)


@save_delta_op.shape
def _(prefix: Tensor, lineage: Tensor, tensors: list[Tensor], *, names: list[str],
      slices: list[str], shard: int, num_shards: int) -> Any:
    return _save_shape(prefix, tensors, names=names, slices=slices, shard=shard,
                       num_shards=num_shards)


@save_delta_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, prefix: Any, lineage: Any, tensors: list[np.ndarray], *,
      names: list[str], slices: list[str], shard: int, num_shards: int) -> np.ndarray:
    lin = _delta.parse_lineage(_str(lineage))
    store = _delta.digest_store(ctx.resources)
    save_id, parent_id = str(lin.get("id", "")), str(lin.get("parent_id", ""))
    digests, how = {}, {}
    for name, value in zip(names, tensors):
        key = (ctx.name, _str(name))
        digests[key] = _delta.row_digests(np.asarray(value))
        if parent_id:
            how[key] = _delta.changed(store.get(key, parent_id), digests[key])
    path = _write_shard(ctx, prefix, names, tensors, slices, shard, num_shards,
                        [how.get((ctx.name, _str(n))) for n in names], lin or None)
    if save_id:   # only once the shard is on disk: a failed save records nothing
        for key, d in digests.items():
            store.put(key, save_id, d, parent_id)
    return path


save_delta_op.no_gradient()

# ---- MergeCheckpoint: the manifest, written after every shard --------------------
merge_op = define_op("MergeCheckpoint", inputs=("prefix", "shards*"), stateful=True)


@merge_op.shape
def _(prefix: Tensor, shards: list[Tensor]) -> Any:
    return _dt.string, TensorShape([])


@merge_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, prefix: Any, shards: list[Any]) -> np.ndarray:
    p = _files.check_prefix(_policy(ctx), _str(prefix), "write", _what(ctx))
    paths = [_files.check_path(_policy(ctx), _str(s), "read", _what(ctx)) for s in shards]
    _io.write_manifest(p, paths)
    return np.asarray(p.encode(), dtype=object)


merge_op.no_gradient()

# ---- RestoreShard: one task's variables, found by name in any shard --------------
restore_op = define_op("RestoreShard", inputs=("prefix", "&refs*"),
                       attrs={"names": REQUIRED, "slices": REQUIRED, "reshape": False},
                       stateful=True)


@restore_op.shape
def _(prefix: Tensor, refs: list[Tensor], *, names: list[str], slices: list[str],
      reshape: bool) -> list:
    for r in refs:
        if not r.dtype.is_ref_dtype:
            raise TypeError(f"RestoreShard needs variable references; {r.name} is "
                            f"{r.dtype.name}")
    return []


@restore_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, prefix: Any, refs: list[Any], *, names: list[str],
      slices: list[str], reshape: bool = False) -> None:
    p = _files.check_prefix(_policy(ctx), _str(prefix), "read", _what(ctx))
    reader = _io.open_reader(p)   # our format or TF's
    saved = reader.get_variable_to_dtype_map()
    values = [_restored_value(reader, _str(n), s, r, reshape, saved)
              for n, s, r in zip(names, slices, refs)]
    for ref, value in zip(refs, values):   # assign only once every value was read intact
        with _gate.gated_update(ref):
            ref.value = value


def _restored_value(reader: Any, name: str, spec: str, ref: Any, reshape: bool,
                    saved_dtypes: dict[str, Any]) -> np.ndarray:
    if spec:
        s = json.loads(spec)
        value = reader.read_slice(s["full_name"], s["full_shape"], s["offset"], s["shape"])
    else:
        value = reader.get_tensor(name)
    want = as_shape(ref.shape) if ref.shape is not None else TensorShape(None)
    if reshape and want.is_fully_defined() and value.size == want.num_elements():
        value = value.reshape(want.as_list())   # Saver(reshape=True), as TF
    if not want.is_compatible_with(value.shape):
        raise errors.InvalidArgumentError(
            None, None, f"Assign requires shapes of both tensors to match. lhs shape= {want} "
            f"rhs shape= {list(value.shape)}: cannot restore {ref.name} from {name!r} of "
            f"checkpoint {reader.prefix}. Build the variable with the saved shape, use "
            "Saver(reshape=True) for the same number of elements, or a fresh checkpoint "
            "directory.")
    saved = _dt.as_dtype(saved_dtypes.get(json.loads(spec)["full_name"] if spec else name,
                                          ref.dtype))
    if saved.base_dtype != ref.dtype.base_dtype:
        raise errors.InvalidArgumentError(
            None, None, f"tensor_name = {name}; expected dtype {ref.dtype.base_dtype.name} "
            f"does not equal original dtype {saved.base_dtype.name} (checkpoint "
            f"{reader.prefix}; variable {ref.name})")
    if ref.dtype == _dt.string:
        return np.asarray(value, dtype=object)
    return np.asarray(value, dtype=ref.dtype.as_numpy_dtype)


restore_op.no_gradient()


def _policy(ctx: Any) -> Any:
    """The file policy of the kernel's device (framework/file_access.py)."""
    return ctx.library.device.file_policy


def _what(ctx: Any) -> str:
    return f"{ctx.type} {ctx.name} on {ctx.device}"


def _str(v: Any) -> str:
    v = v.item() if isinstance(v, np.ndarray) else v
    return v.decode() if isinstance(v, bytes) else str(v)


# ---- graph builders (used by tf.train.Saver) -------------------------------------
@dataclass
class SaveEntry:
    """One saved tensor: its checkpoint name, its variable's ref, optional slice info."""
    name: str
    ref: Tensor
    slice_spec: str = ""   # JSON {"full_name", "full_shape", "offset", "shape"} or ""


def _by_device(entries: list[SaveEntry]) -> list[tuple[str, list[SaveEntry]]]:
    groups: dict[str, list[SaveEntry]] = {}
    for e in entries:
        groups.setdefault(e.ref.op.device, []).append(e)
    return sorted(groups.items())   # the fixed pause order: sorted device names


def build_save(entries: list[SaveEntry], filename: Tensor, sharded: bool,
               pause_timeout_s: float = 60.0, lineage: Tensor | None = None) -> Tensor:
    """Builds the consistent-snapshot save graph; returns the prefix tensor to fetch.

    With `lineage` (a string tensor, an incremental Saver's), the shards are
    SaveShardDelta: they record digests and, fed a parent, write only what changed.
    """
    g = filename.graph
    groups = _by_device(entries)
    last: Operation | None = None
    pauses = []
    for _dev, group in groups:   # chained: each pause waits for the previous one
        with g.colocate_with(group[0].ref.op), g.control_dependencies([last] if last else []):
            last = g.create_op("GatePause", [], {"timeout_s": float(pause_timeout_s),
                                                 "contended": last is not None},
                               name="pause")
        pauses.append(last)
    copies: list[list[Tensor]] = []
    for _dev, group in groups:
        with g.control_dependencies([last]):
            snaps = []
            for e in group:
                with g.colocate_with(e.ref.op):
                    snaps.append(g.create_op("Identity", [e.ref], name="snapshot").outputs[0])
        with g.colocate_with(group[0].ref.op), g.control_dependencies(snaps):
            g.create_op("GateResume", [], name="resume")
        copies.append(snaps)
    if sharded:
        parts: list[tuple[list[SaveEntry], list[Tensor], Operation | None]] = [
            (grp, snaps, grp[0].ref.op) for (_d, grp), snaps in zip(groups, copies)]
    else:
        parts = [([e for _d, grp in groups for e in grp], [t for s in copies for t in s], None)]
    shard_files = []
    for i, (group, snaps, where) in enumerate(parts):
        with g.colocate_with(where, ignore_existing=where is None):
            shard_files.append(g.create_op(
                "SaveShard" if lineage is None else "SaveShardDelta",
                [filename, snaps] if lineage is None else [filename, lineage, snaps],
                {"names": [e.name for e in group], "slices": [e.slice_spec for e in group],
                 "shard": i, "num_shards": len(parts)},
                name="save_shard").outputs[0])
    return g.create_op("MergeCheckpoint", [filename, shard_files], name="merge").outputs[0]


def build_restore(entries: list[SaveEntry], filename: Tensor, reshape: bool = False,
                  extra: list[Operation] | None = None) -> Operation:
    """One RestoreShard per device; returns a NoOp that runs them all (and `extra`).

    With `reshape`, a saved tensor with as many elements as its variable is reshaped.
    """
    g = filename.graph
    ops = []
    for _dev, group in _by_device(entries):
        with g.colocate_with(group[0].ref.op):
            ops.append(g.create_op(
                "RestoreShard", [filename, [e.ref for e in group]],
                {"names": [e.name for e in group], "slices": [e.slice_spec for e in group],
                 "reshape": reshape}, name="restore_shard"))
    with g.control_dependencies(ops + list(extra or [])):
        return g.create_op("NoOp", [], name="restore_all")


__all__ = ["SaveEntry", "build_restore", "build_save"]
