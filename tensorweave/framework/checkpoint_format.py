"""The checkpoint file format and its reader (the `checkpoint` state file: checkpoint_state.py).

A checkpoint `<prefix>` (e.g. "train/model.ckpt-100") is:

- shard files `<prefix>-00000-of-00002`, ...: one per task that held variables,
  each written where its variables live. Layout: the magic b"TWCKPT1\\n", the
  tensors' raw bytes back to back, a JSON index, then a 20-byte trailer
  (uint64 index length, uint32 zlib.crc32 of the index, b"TWCKEND\\n"). Numbers
  are little-endian C-order buffers; a string tensor is, per element, a uint64
  length then its bytes. Each index entry gives dtype, shape, offset, length,
  crc32 and, for a slice of a partitioned variable, `slice` = {full_name,
  full_shape, offset}, so a checkpoint can be restored onto another partitioning.
- the manifest `<prefix>.index` (JSON), written last, by the chief, once every
  shard is on disk: shard names and sizes plus the merged tensor entries. A
  checkpoint without a manifest does not exist; so a crash during a save leaves
  the previous checkpoint as the latest. Every file is written under a temporary
  name, fsync'd and renamed (`base.files.atomic_write`); the `checkpoint`
  state file, rewritten the same way after the manifest, is the commit point.

An *incremental* checkpoint (`Saver.incremental_save`, `checkpoint_delta.py`) has the
same files; its manifest names its `parent` (the checkpoint before it, full or
incremental, as a path relative to its own directory) and the save's `id`, and an entry
may be a delta: `"delta": "same"` (unchanged since the parent: no bytes) or `"delta":
{"rows": ...}` (the bytes are the changed rows, at the indices the `rows` block holds;
`shape` stays the whole variable's). Reading resolves such an entry through the parent
chain, so an incremental prefix reads (and restores) like a full one.

Damage (a missing shard, a shard of the wrong size, a bad CRC) raises
`tf.errors.DataLossError` naming the file and what is wrong. No pickle anywhere.

TensorFlow's own format (the tensor bundle real TF writes and reads) lives in
`tensor_bundle.py`; both use `<prefix>.index`, and `open_reader(prefix)` reads
a checkpoint in whichever format it is.

Example:
    >>> reader = CheckpointReader("/tmp/train/model.ckpt-100")
    >>> reader.get_tensor("w").shape
    (784, 10)
"""
from __future__ import annotations

import json
import os
import struct
import time
import zlib
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework import tensor_bundle as _tb
from tensorweave.base.files import atomic_write
from tensorweave.framework.checkpoint_files import checkpoint_files, temp_leftovers
from tensorweave.framework.tensor_bundle_reader import BundleReader, debug_string, not_found

MAGIC, END = b"TWCKPT1\n", b"TWCKEND\n"
_TRAILER = struct.Struct("<QI8s")
FORMAT = "tensorweave-checkpoint"


def shard_filename(prefix: str, shard: int, num_shards: int) -> str:
    return f"{prefix}-{shard:05d}-of-{num_shards:05d}"


def manifest_path(prefix: str) -> str:
    return prefix + ".index"


def _data_loss(path: str, what: str) -> errors.DataLossError:
    return errors.DataLossError(None, None, f"Checkpoint file {path} is damaged: {what}. "
                                "Restore an earlier checkpoint (see "
                                "tf.train.latest_valid_checkpoint).")


# ==== encoding =====================================================================
def _encode(value: np.ndarray, dtype: _dt.DType) -> bytes:
    if dtype == _dt.string:
        parts = []
        for v in np.asarray(value, dtype=object).reshape(-1):
            b = v.encode() if isinstance(v, str) else bytes(v)
            parts += [struct.pack("<Q", len(b)), b]
        return b"".join(parts)
    npd = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
    return np.ascontiguousarray(value, dtype=npd).tobytes()


def _decode(buf: bytes, dtype: _dt.DType, shape: list[int], path: str, name: str) -> np.ndarray:
    if dtype == _dt.string:
        n = int(np.prod(shape, dtype=np.int64))
        out = np.empty(n, dtype=object)
        pos = 0
        for i in range(n):
            (ln,) = struct.unpack_from("<Q", buf, pos)
            out[i] = buf[pos + 8:pos + 8 + ln]
            pos += 8 + ln
        if pos != len(buf):
            raise _data_loss(path, f"string tensor {name!r} has {len(buf) - pos} stray bytes")
        return out.reshape(shape)
    npd = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
    arr = np.frombuffer(buf, dtype=npd).reshape(shape)
    return arr.astype(npd.newbyteorder("="), copy=True)  # native order, writable


def write_shard(path: str, tensors: list[tuple], lineage: dict | None = None) -> str:
    """Writes one shard file: (name, value, dtype, slice-info-or-None[, delta]) per tensor.

    `delta` (incremental checkpoints only): "same" (nothing is written) or the int64
    indices of the rows to write; absent or None: the whole value. `lineage` (the save's
    id and parent) goes into the shard's index, for `write_manifest`.
    """
    chunks, entries, offset = [MAGIC], {}, len(MAGIC)
    for name, value, dtype, slice_info, *delta in tensors:
        rows = delta[0] if delta else None
        entry: dict[str, Any] = {"dtype": dtype.name, "shape": list(np.shape(value))}
        if isinstance(rows, str):
            entries[name] = {**entry, "delta": rows, **({"slice": slice_info} if slice_info
                                                        else {})}
            continue
        if rows is not None:
            index = _encode(np.asarray(rows, np.int64), _dt.int64)
            entry["delta"] = {"rows": {"count": len(rows), "offset": offset,
                                       "length": len(index), "crc32": zlib.crc32(index)}}
            chunks.append(index)
            offset += len(index)
            value = value[rows]
        data = _encode(value, dtype)
        entries[name] = {**entry, "offset": offset, "length": len(data),
                         "crc32": zlib.crc32(data)}
        if slice_info:
            entries[name]["slice"] = slice_info
        chunks.append(data)
        offset += len(data)
    index = json.dumps({"format": FORMAT, "version": 1, "tensors": entries,
                        **({"lineage": lineage} if lineage else {})}).encode()
    chunks += [index, _TRAILER.pack(len(index), zlib.crc32(index), END)]
    atomic_write(path, chunks)
    return path


def read_shard_index(path: str) -> dict[str, Any]:
    """The tensor entries of one shard file, checking its framing and index CRC."""
    return _read_index(path)["tensors"]


def _read_index(path: str) -> dict[str, Any]:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            if size < len(MAGIC) + _TRAILER.size or f.read(len(MAGIC)) != MAGIC:
                raise _data_loss(path, f"not a tensorweave checkpoint shard ({size} bytes)")
            f.seek(size - _TRAILER.size)
            n, crc, end = _TRAILER.unpack(f.read(_TRAILER.size))
            if end != END or n > size - _TRAILER.size - len(MAGIC):
                raise _data_loss(path, "truncated (no valid trailer at the end)")
            f.seek(size - _TRAILER.size - n)
            raw = f.read(n)
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"Checkpoint shard {path} does not exist. "
                                   "Was it deleted, or written on another machine's disk?"
                                   ) from None
    if zlib.crc32(raw) != crc:
        raise _data_loss(path, "index checksum mismatch")
    return json.loads(raw)


def write_manifest(prefix: str, shard_paths: list[str]) -> str:
    """Merges the shards' indexes into `<prefix>.index`; called last, by the chief."""
    shards: list[dict[str, Any]] = []
    tensors: dict[str, Any] = {}
    lineage: dict[str, Any] = {}
    for i, p in enumerate(shard_paths):
        index = _read_index(p)
        lineage = index.get("lineage") or lineage
        for name, e in index["tensors"].items():
            if name in tensors:
                raise errors.InvalidArgumentError(
                    None, None, f"Tensor {name!r} is saved by two shards ({p} and "
                    f"{shards[tensors[name]['shard']]['file']}); saved names must be unique.")
            tensors[name] = {**e, "shard": i}
        shards.append({"file": os.path.basename(p), "size": os.path.getsize(p)})
    if lineage.get("parent"):   # relative to this checkpoint, so the directory can move
        lineage = {**lineage, "parent": os.path.relpath(lineage["parent"],
                                                        os.path.dirname(prefix) or ".")}
    body = json.dumps({"format": FORMAT, "version": 1, "time": time.time(), "shards": shards,
                       "tensors": tensors, **({"lineage": lineage} if lineage else {})},
                      indent=1).encode()
    atomic_write(manifest_path(prefix), [body])
    return prefix


# ==== reading ======================================================================
class CheckpointReader:
    """Reads a checkpoint by prefix: names, shapes, dtypes, tensors, slices.

    Args:
        prefix: the checkpoint prefix, as returned by `Saver.save`.

    Raises:
        NotFoundError: if `<prefix>.index` does not exist.
        DataLossError: if the manifest cannot be parsed.

    Example:
        >>> CheckpointReader(tf.train.latest_checkpoint("/tmp/train")).get_tensor("w")
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        path = manifest_path(prefix)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise errors.NotFoundError(
                None, None, f"Unsuccessful TensorSliceReader constructor: Failed to find any "
                f"matching files for {prefix}: no checkpoint there ({path} does not exist; "
                "unfinished or deleted save?).") from None
        try:
            m = json.loads(raw)
            self._shards = [os.path.join(os.path.dirname(prefix), s["file"]) for s in m["shards"]]
            self._sizes = [int(s["size"]) for s in m["shards"]]
            self._entries: dict[str, dict] = m["tensors"]
            self.lineage: dict[str, Any] = m.get("lineage") or {}
        except (ValueError, KeyError, TypeError) as e:
            raise _data_loss(path, f"unreadable manifest ({e})") from None
        self._checked: set[int] = set()
        self._parent: CheckpointReader | None = None

    # ---- per-name API (TF's CheckpointReader) ---------------------------------------
    def debug_string(self) -> bytes:
        """Each variable as "name (DT_FLOAT) [2,3]", one per line, sorted (TF's)."""
        return debug_string(self)

    def has_tensor(self, name: str) -> bool:
        return name in self._entries or any(
            e.get("slice", {}).get("full_name") == name for e in self._entries.values())

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        """Saved variable names -> full shapes (a partitioned variable appears once)."""
        out = {}
        for name, e in self._entries.items():
            s = e.get("slice")
            out[s["full_name"] if s else name] = list(s["full_shape"] if s else e["shape"])
        return out

    def get_variable_to_dtype_map(self) -> dict[str, _dt.DType]:
        return {(e["slice"]["full_name"] if e.get("slice") else n): _dt.as_dtype(e["dtype"])
                for n, e in self._entries.items()}

    def get_tensor(self, name: str) -> np.ndarray:
        """The full value of `name` (slices of a partitioned variable are reassembled)."""
        if name in self._entries:
            return self._read(name)
        shape = self.get_variable_to_shape_map().get(name)
        if shape is None:
            raise errors.NotFoundError(None, None, not_found(name, self.prefix, self._entries))
        return self.read_slice(name, shape, [0] * len(shape), shape)

    def read_slice(self, full_name: str, full_shape: list[int], offset: list[int],
                   shape: list[int]) -> np.ndarray:
        """The region `offset:offset+shape` of variable `full_name`, from any saved slices.

        Works whatever the partitioning at save time: each saved slice (or the
        whole saved variable) that overlaps the region is copied in.

        Raises:
            NotFoundError: if the saved slices do not cover the whole region.
        """
        pieces = [(n, e["slice"]["offset"]) for n, e in self._entries.items()
                  if e.get("slice", {}).get("full_name") == full_name]
        if full_name in self._entries:
            pieces.append((full_name, [0] * len(full_shape)))
        if not pieces:
            raise errors.NotFoundError(None, None, not_found(full_name, self.prefix,
                                                             self._entries))
        out, covered = None, np.zeros(shape, dtype=bool)
        for name, off in pieces:
            e = self._entries[name]
            lo = [max(a, b) for a, b in zip(off, offset)]
            hi = [min(a + n, b + m) for a, n, b, m in zip(off, e["shape"], offset, shape)]
            if any(a >= b for a, b in zip(lo, hi)) and len(shape):
                continue
            src = self._read(name)
            if out is None:
                out = np.zeros(shape, dtype=src.dtype)
            dst_sl = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, offset))
            src_sl = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, off))
            out[dst_sl] = src[src_sl]
            covered[dst_sl] = True
        if out is None or not covered.all():
            raise errors.NotFoundError(None, None, f"Checkpoint {self.prefix} does not cover "
                                       f"{full_name}[offset {offset}, shape {shape}]: its saved "
                                       f"slices are {[p for p, _ in pieces]}")
        return out

    # ---- integrity --------------------------------------------------------------------
    def verify(self, chain: bool = True) -> None:
        """Reads every tensor's bytes, checking sizes and CRCs (of an incremental
        checkpoint, also its parents' unless `chain` is False); raises DataLossError
        if damaged."""
        for name, e in self._entries.items():
            delta = e.get("delta")
            if delta is None:
                self._bytes(name, e, e, e["shape"])
            elif delta != "same":
                rows = delta["rows"]["count"]
                self._bytes(name, e, delta["rows"], [rows], _dt.int64)
                self._bytes(name, e, e, [rows] + list(e["shape"][1:]))
        if chain and self.lineage.get("parent"):
            self.parent().verify()

    def _check_shard(self, i: int) -> str:
        path = self._shards[i]
        if i not in self._checked:
            try:
                size = os.path.getsize(path)
            except FileNotFoundError:
                raise _data_loss(manifest_path(self.prefix), f"its shard {path} is missing"
                                 ) from None
            if size != self._sizes[i]:
                raise _data_loss(path, f"size is {size} bytes, the manifest says "
                                 f"{self._sizes[i]} (truncated or overwritten)")
            self._checked.add(i)
        return path

    def _read(self, name: str) -> np.ndarray:
        e = self._entries[name]
        delta = e.get("delta")
        if delta is None:
            return self._bytes(name, e, e, e["shape"])
        value = self.parent()._read(name)   # an incremental checkpoint: via its parent
        if delta != "same":
            rows = self._bytes(name, e, delta["rows"], [delta["rows"]["count"]], _dt.int64)
            value[rows] = self._bytes(name, e, e, [len(rows)] + list(e["shape"][1:]))
        return value

    def _bytes(self, name: str, e: dict, at: dict, shape: list[int],
               dtype: _dt.DType | None = None) -> np.ndarray:
        path = self._check_shard(int(e["shard"]))
        with open(path, "rb") as f:
            f.seek(int(at["offset"]))
            buf = f.read(int(at["length"]))
        if len(buf) != at["length"] or zlib.crc32(buf) != at["crc32"]:
            raise _data_loss(path, f"checksum mismatch in tensor {name!r}")
        return _decode(buf, dtype or _dt.as_dtype(e["dtype"]), shape, path, name)

    def parent(self) -> CheckpointReader:
        """The reader of the checkpoint this incremental one was saved on top of.

        Raises:
            DataLossError: if this checkpoint is not incremental, or its parent is gone.
        """
        if self._parent is None:
            rel = self.lineage.get("parent")
            if not rel:
                raise _data_loss(manifest_path(self.prefix), "an entry is a delta but the "
                                 "manifest names no parent checkpoint")
            parent = os.path.normpath(os.path.join(os.path.dirname(self.prefix), rel))
            if not os.path.exists(manifest_path(parent)):
                raise _data_loss(manifest_path(self.prefix), f"it is incremental and the "
                                 f"checkpoint it builds on, {parent}, is gone")
            reader = open_reader(parent)
            if not isinstance(reader, CheckpointReader):
                raise _data_loss(manifest_path(self.prefix), f"it is incremental and "
                                 f"{parent}, the checkpoint it builds on, is no longer in "
                                 "tensorweave's format (overwritten?)")
            self._parent = reader
        return self._parent

    def files(self) -> list[str]:
        """Every file of this checkpoint (shards, then the manifest)."""
        return list(self._shards) + [manifest_path(self.prefix)]


def open_reader(prefix: str) -> CheckpointReader | BundleReader:
    """A reader for the checkpoint at `prefix`, in whichever format it was written.

    TF's tensor-bundle format (what real TensorFlow writes; its `.index` is a
    table) is read by `BundleReader`, ours (a JSON manifest) by `CheckpointReader`;
    both have the same methods.

    Raises:
        NotFoundError: if `<prefix>.index` does not exist.
        UnimplementedError: for TF's old V1 format (one table file at `prefix`).

    Example:
        >>> open_reader("/tmp/tf_train/model.ckpt-7").get_tensor("dense/kernel")
    """
    if not os.path.exists(manifest_path(prefix)) and _tb.is_v1_table(prefix):
        raise errors.UnimplementedError(
            None, None, f"{prefix} is a TensorFlow V1 checkpoint (one table file, written by "
            "Saver(write_version=SaverDef.V1)); tensorweave reads V2 checkpoints (<prefix>."
            "index + .data-*). Re-save it with TensorFlow's default V2 format.")
    if _tb.is_bundle(prefix):
        return BundleReader(prefix)
    if os.path.exists(manifest_path(prefix)) and any(".data-" in f for f in
                                                     checkpoint_files(prefix)):
        # TF's data files beside an index that is not a table: a torn or overwritten index.
        raise _data_loss(manifest_path(prefix), "not a readable TensorFlow index table "
                         "(truncated or overwritten) although its .data-* files exist")
    return CheckpointReader(prefix)


def checkpoint_format_of(prefix: str) -> str:
    """The format of the checkpoint at `prefix`.

    "tensorflow" (TF's tensor bundle), "tensorflow-v1" (TF's old single table
    file, not read), else "tensorweave".
    """
    if _tb.is_bundle(prefix):
        return "tensorflow"
    if not os.path.exists(manifest_path(prefix)) and _tb.is_v1_table(prefix):
        return "tensorflow-v1"
    return "tensorweave"


def checkpoint_exists(prefix: str) -> bool:
    """True if a finished checkpoint (its manifest) exists at `prefix`."""
    return os.path.exists(manifest_path(prefix))


def delete_checkpoint(prefix: str) -> None:
    """Removes a checkpoint's manifest first (so it stops existing), then its files."""
    for f in checkpoint_files(prefix) + temp_leftovers(prefix):   # the index first
        try:
            os.remove(f)
        except FileNotFoundError:
            pass
    try:
        os.rmdir(prefix + "_temp")   # a TF-format sharded save's, if one was killed
    except OSError:
        pass
