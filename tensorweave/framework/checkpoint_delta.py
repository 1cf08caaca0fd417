"""Incremental checkpoints: what changed since the last save, and the chain to restore.

DeepRec's `Saver(incremental_save_restore=True)` and
`MonitoredTrainingSession(save_incremental_checkpoint_secs=...)`: between full
checkpoints, an incremental one holds only what changed since the checkpoint before it
(its *parent*, full or incremental): a variable that changed as a whole, or of a large
one (at least `ROWS_MIN` rows) only its changed rows when fewer than half changed (an
embedding touched by a few ids costs those rows). Restoring one restores its full
checkpoint and then each link of the chain after it, in order (the reader in
`checkpoint_format` does this by itself, so an incremental prefix restores like a full
one). They live in `<checkpoint_dir>/.incremental_checkpoint/` with their own
`checkpoint` state file, so TF's state file of the directory keeps naming full
checkpoints only.

How "changed" is known without keeping a second copy of the model: every save of an
incremental Saver records, on the task that writes each shard, a digest of each saved
tensor (8 bytes per row of a large one; one digest of a small one) under the save's
id. An incremental save names its parent's id, and each shard compares the tensors it
is saving with the digests recorded for that id: only rows whose bytes differ are
written. A task that has no digests for the parent (it was restarted, or the parent was
saved by another process) writes its tensors whole, so an incremental checkpoint is
always correct, only larger. Digests are a 64-bit mix of each row's bytes (a change
that keeps the bytes equal, such as a value set back, is no change).

Example:
    >>> d = row_digests(np.ones([100, 4], np.float32))
    >>> changed(d, row_digests(np.ones([100, 4], np.float32)))   # nothing
    'same'
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import weakref
from typing import Any

import numpy as np

from tensorweave.framework import checkpoint_format as _io

# A tensor with at least this many rows is compared row by row (and saved as its changed
# rows when fewer than half changed); a smaller one as a whole.
ROWS_MIN = 64
# Where incremental checkpoints go, under the checkpoint directory (DeepRec's name).
SUBDIR = ".incremental_checkpoint"
_CHUNK = 1 << 16   # rows digested at a time: bounds the temporary memory
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MULTS: dict[int, np.ndarray] = {}


def _mults(n: int) -> np.ndarray:
    # One random salt per 8-byte word of a row: a word's position changes its digest.
    m = _MULTS.get(n)
    if m is None:
        m = np.random.default_rng(0x7E45).integers(1, 2**63, n, dtype=np.uint64) * 2 + 1
        _MULTS[n] = m.astype(np.uint64)
    return _MULTS[n]


def row_digests(value: np.ndarray) -> np.ndarray | bytes:
    """A uint64 digest per row of a large numeric tensor; for others one digest (bytes).

    Example:
        >>> row_digests(np.zeros([64, 2], np.float32)).shape
        (64,)
    """
    value = np.asarray(value)
    if value.dtype == object or value.ndim == 0 or value.shape[0] < ROWS_MIN:
        return _whole_digest(value)
    rows = np.ascontiguousarray(value).view(np.uint8).reshape(value.shape[0], -1)
    width = rows.shape[1]
    if width % 8:   # pad each row to whole 8-byte words
        rows = np.concatenate([rows, np.zeros((len(rows), 8 - width % 8), np.uint8)], 1)
    words = rows.view("<u8")
    salt = _mults(words.shape[1])
    out = np.empty(len(words), np.uint64)
    with np.errstate(over="ignore"):
        for lo in range(0, len(words), _CHUNK):
            # splitmix64's finalizer on each word (salted by its position), then the sum:
            # every word's bits reach every bit of its term, so differences in several
            # words do not cancel (with a linear mix, two sign flips could).
            x = words[lo:lo + _CHUNK] + salt      # wraps modulo 2**64, as meant
            x ^= x >> np.uint64(30)
            x *= _M1
            x ^= x >> np.uint64(27)
            x *= _M2
            x ^= x >> np.uint64(31)
            out[lo:lo + _CHUNK] = x.sum(axis=1, dtype=np.uint64)
    return out


def _whole_digest(value: np.ndarray) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{value.dtype.str}{value.shape}".encode())
    if value.dtype == object:
        for v in value.reshape(-1):
            b = v.encode() if isinstance(v, str) else bytes(v)
            h.update(len(b).to_bytes(8, "little") + b)
    else:
        h.update(np.ascontiguousarray(value).data)
    return h.digest()


def changed(before: np.ndarray | bytes | None, now: np.ndarray | bytes) -> Any:
    """What an incremental save writes of a tensor, given its digests at the parent.

    Returns:
        "same" (unchanged), the int64 indices of its changed rows (fewer than half
        changed), or None: write it whole (no digests for it, its shape changed, or most
        of it changed).
    """
    if before is None or type(before) is not type(now):
        return None
    if isinstance(now, bytes):
        return "same" if before == now else None
    assert isinstance(before, np.ndarray)
    if before.shape != now.shape:
        return None
    rows = np.flatnonzero(before != now)
    if not len(rows):
        return "same"
    return rows.astype(np.int64) if len(rows) <= len(now) // 2 else None


class DigestStore:
    """One task's digests of saved tensors, by (saving op, tensor name) and save id.

    Per tensor it keeps the digests of the parent the last save compared with and of
    that save itself: if the save fails, the next one still finds its parent's.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, str], dict[str, Any]] = {}

    def get(self, key: tuple[str, str], save_id: str) -> Any:
        with self._lock:
            return self._by_key.get(key, {}).get(save_id)

    def put(self, key: tuple[str, str], save_id: str, digests: Any, parent_id: str = ""
            ) -> None:
        with self._lock:
            old = self._by_key.get(key, {})
            kept = {parent_id: old[parent_id]} if parent_id in old else {}
            self._by_key[key] = {**kept, save_id: digests}


_STORES: weakref.WeakKeyDictionary[Any, DigestStore] = weakref.WeakKeyDictionary()
_STORES_LOCK = threading.Lock()


def digest_store(resource_mgr: Any) -> DigestStore:
    """The digests kept on the task that owns `resource_mgr` (gone with it)."""
    with _STORES_LOCK:
        store = _STORES.get(resource_mgr)
        if store is None:
            store = _STORES[resource_mgr] = DigestStore()
        return store


def parse_lineage(text: str) -> dict[str, Any]:
    """The `lineage` a save feeds its shards: {"id", "parent", "parent_id"} (JSON)."""
    return json.loads(text) if text else {}


def chain(prefix: str) -> list[str]:
    """The checkpoints `prefix` is restored from, its full checkpoint first.

    A full checkpoint's chain is itself.

    Raises:
        NotFoundError / DataLossError: if a link's manifest is missing or unreadable.

    Example:
        >>> chain("/tmp/train/.incremental_checkpoint/incremental_model.ckpt-30")
        ['/tmp/train/model.ckpt-10', '.../incremental_model.ckpt-20', '...-30']
    """
    links = [prefix]
    seen = {os.path.abspath(prefix)}
    while True:
        parent = _io.CheckpointReader(links[0]).lineage.get("parent") \
            if _io.checkpoint_format_of(links[0]) == "tensorweave" else None
        if not parent:
            return links
        path = os.path.normpath(os.path.join(os.path.dirname(links[0]), parent))
        if os.path.abspath(path) in seen:
            raise _io._data_loss(_io.manifest_path(links[0]), "its parent chain loops")
        seen.add(os.path.abspath(path))
        links.insert(0, path)


def save_id(prefix: str) -> str:
    """The id a save recorded in checkpoint `prefix` ("" if none: not an incremental
    Saver's, or another format)."""
    if _io.checkpoint_format_of(prefix) != "tensorweave" or not _io.checkpoint_exists(prefix):
        return ""
    return str(_io.CheckpointReader(prefix).lineage.get("id", ""))


__all__ = ["ROWS_MIN", "SUBDIR", "DigestStore", "chain", "changed", "digest_store",
           "parse_lineage", "row_digests", "save_id"]
