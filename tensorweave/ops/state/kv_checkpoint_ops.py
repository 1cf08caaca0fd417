"""EmbeddingVariable checkpoint ops (DeepRec's layout): KvExport, KvImport, KvRestore.

A table saves as `<name>-keys`, `-values`, `-freqs` and `-versions` (KvExport, after
the eviction its options ask for, as DeepRec evicts at save). The Saver restores a part
with KvRestore, which reads every saved part of the same table (any number of them, or
none: an unpartitioned table) and keeps the ids this part serves (`id % parts`, a string
by its Fingerprint64), so a checkpoint restores onto another number of ps tasks.
KvImport puts given ids and rows back (a table's own restore through its specs).

Example:
    >>> keys, values, freqs, versions = kv_export(ev_ref, global_step, tf.int64)
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework import file_access as _files
from tensorweave.framework.checkpoint_format import open_reader
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.kernels.fingerprint import hash_buckets
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.ops.state.kv_variable_ops import EmbeddingResource, as_embedding
from tensorweave.runtime.update_gate import gated_update

__all__ = ["kv_export", "kv_import", "kv_restore"]


# ---- KvExport / KvImport -------------------------------------------------------------
kv_export_op = define_op("KvExport", inputs=("&ref", "global_step"),
                         attrs={"key_dtype": REQUIRED}, stateful=True)


@kv_export_op.shape
def _(ref: Tensor, global_step: Tensor, *, key_dtype: Any) -> Any:
    return [(_dt.as_dtype(key_dtype), TensorShape([None])),
            (ref.dtype.base_dtype, TensorShape([None]).concatenate(ref.shape[1:])),
            (_dt.int64, TensorShape([None])), (_dt.int64, TensorShape([None]))]


@kv_export_op.kernel("CPU")
def _(ref: Any, global_step: Any, *, key_dtype: Any) -> tuple:
    res = as_embedding(ref, "KvExport")
    index = res.index
    # No update-gate hold: a save runs this with the task's gate paused by its own step
    # (a hold would wait for that pause); the index's lock orders it with updates.
    with index.lock:
        index.evict(int(np.asarray(global_step)))   # as DeepRec: eviction happens at save
        keys, rows = index.live()
        values = res.read()[rows].copy()
        freqs, versions = index.freqs[rows].copy(), index.versions[rows].copy()
    kd = _dt.as_dtype(key_dtype)
    karr = np.array(keys, dtype=object if kd == _dt.string else kd.as_numpy_dtype)
    return karr, values, freqs, versions


kv_export_op.no_gradient()


def kv_export(ref: Tensor, global_step: Tensor, key_dtype: Any) -> list[Tensor]:
    """[keys, values, freqs, versions] of the admitted ids (evicting first, as DeepRec)."""
    return create_op("KvExport", [ref, global_step],
                     {"key_dtype": _dt.as_dtype(key_dtype).base_dtype},
                     name="KvExport").outputs


kv_import_op = define_op("KvImport", inputs=("&ref", "keys", "values", "freqs", "versions"),
                         stateful=True)


@kv_import_op.shape
def _(ref: Tensor, keys: Tensor, values: Tensor, freqs: Tensor, versions: Tensor) -> list:
    return []


@kv_import_op.kernel("CPU")
def _(ref: Any, keys: Any, values: Any, freqs: Any, versions: Any) -> None:
    _import(as_embedding(ref, "KvImport"), keys, values, freqs, versions)


def _import(res: EmbeddingResource, keys: Any, values: Any, freqs: Any,
            versions: Any) -> None:
    index = res.index
    ks = index.keys_of(keys)
    vals = np.asarray(values, res.dtype.as_numpy_dtype).reshape(len(ks), res.dim)
    with gated_update(res), index.lock:
        res.read()
        if res is index.members[0]:   # the variable's ids are the checkpoint's
            held, _ = index.live()
            index.remove(held[~_isin(held, ks)])
            index.pending.clear()
        rows = index.rows_of(ks)
        if res is index.members[0]:
            index.freqs[rows] = np.asarray(freqs).reshape(-1)
            index.versions[rows] = np.asarray(versions).reshape(-1)
        res.read()[rows] = vals


def _isin(keys: np.ndarray, among: np.ndarray) -> np.ndarray:
    if keys.dtype == object:   # (bytes: a set, not NumPy's sort of objects)
        keep = set(among.tolist())
        return np.fromiter((k in keep for k in keys.tolist()), bool, len(keys))
    return np.isin(keys, among)


kv_import_op.no_gradient()


# ---- KvRestore: a part's ids from a checkpoint of any partitioning --------------------
kv_restore_op = define_op("KvRestore", inputs=("&ref", "prefix"),
                          attrs={"pattern": REQUIRED, "part": 0, "num_parts": 1},
                          stateful=True)


@kv_restore_op.shape
def _(ref: Tensor, prefix: Tensor, *, pattern: str, part: int, num_parts: int) -> list:
    return []


@kv_restore_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, ref: Any, prefix: Any, *, pattern: str, part: int,
      num_parts: int) -> None:
    res = as_embedding(ref, "KvRestore")
    path = _files.check_prefix(ctx.library.device.file_policy, _text(prefix), "read",
                               f"{ctx.type} {ctx.name} on {ctx.device}")
    reader = open_reader(path)
    rx = re.compile(pattern + "-keys")
    found = sorted(n[:-len("-keys")] for n in reader.get_variable_to_shape_map()
                   if rx.fullmatch(n))
    if not found:
        raise errors.NotFoundError(
            None, None, f"Checkpoint {path} holds no EmbeddingVariable matching "
            f"{pattern!r} (its -keys tensor) for {res.name}: was it saved under another "
            "name?")
    parts = [[reader.get_tensor(f"{n}-{what}") for n in found]
             for what in ("keys", "values", "freqs", "versions")]
    keys, values, freqs, versions = (np.concatenate(p) for p in parts)
    if num_parts > 1 and len(keys):   # this part's ids, as the lookups spread them
        owner = hash_buckets(keys, num_parts) if keys.dtype == object \
            else keys.astype(np.int64) % num_parts
        mine = owner == part
        keys, values, freqs, versions = keys[mine], values[mine], freqs[mine], versions[mine]
    _import(res, keys, values, freqs, versions)


kv_restore_op.no_gradient()


def kv_restore(ref: Tensor, prefix: Tensor, pattern: str, part: int,
               num_parts: int) -> Operation:
    """Restores part `part` of `num_parts` from every saved table whose name matches
    `pattern` (saved with any number of parts): the ids `id % num_parts == part`."""
    return create_op("KvRestore", [ref, prefix], {"pattern": pattern, "part": int(part),
                                                  "num_parts": int(num_parts)},
                     name="KvRestore")


def _text(v: Any) -> str:
    v = v.item() if isinstance(v, np.ndarray) else v
    return v.decode() if isinstance(v, bytes) else str(v)


def kv_import(ref: Tensor, keys: Tensor, values: Tensor, freqs: Tensor,
              versions: Tensor) -> Operation:
    """Puts checkpointed ids and rows back (a variable's own ids replace the table's)."""
    return create_op("KvImport", [ref, keys, values, freqs, versions], None,
                     name="KvImport")
