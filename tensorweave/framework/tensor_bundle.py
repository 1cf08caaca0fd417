"""TensorFlow's checkpoint format ("V2", the tensor bundle): read and write.

A checkpoint `<prefix>` in this format is:

- data files `<prefix>.data-00000-of-00001` (one per shard): tensors' bytes back
  to back, little-endian C order; a string tensor is the varint64 lengths of its
  elements, a masked CRC32C of those lengths (as uint32s), then the bytes;
- `<prefix>.index`: a table (`framework/sstable.py`) mapping "" to a
  BundleHeaderProto (num_shards, endianness, version) and each tensor name to a
  BundleEntryProto (dtype, shape, shard, offset, size, masked CRC32C of the
  bytes). A slice of a partitioned variable is stored under a key encoding the
  name and the slice (`slice_key`); the full name's entry then lists the slices.

`write_bundle` writes one; `merge_bundles` joins the single-shard bundles of a
sharded save; `tensor_bundle_reader.BundleReader` reads one.

Example:
    >>> write_bundle("/tmp/m/model.ckpt", [("w", np.ones((2, 3), np.float32), None)])
"""
from __future__ import annotations

import json
import os
import struct
from typing import Any, Sequence, cast

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework import sstable
from tensorweave.base.files import atomic_write, fsync_dir
from tensorweave.framework.proto import graph_pb2, tensor_bundle_pb2

Slice = tuple[list[int], list[int]]   # (starts, lengths) within the full tensor


def data_filename(prefix: str, shard: int, num_shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def index_filename(prefix: str) -> str:
    return prefix + ".index"


def is_bundle(prefix: str) -> bool:
    """True if `<prefix>.index` exists and is a table (TF's format), not our JSON manifest."""
    try:
        with open(index_filename(prefix), "rb") as f:
            f.seek(-8, os.SEEK_END)
            return struct.unpack("<Q", f.read(8))[0] == sstable.MAGIC
    except (OSError, struct.error):
        return False


def is_v1_table(path: str) -> bool:
    """True if `path` itself is a table file (TF's V1 checkpoint format)."""
    try:
        with open(path, "rb") as f:
            f.seek(-8, os.SEEK_END)
            return struct.unpack("<Q", f.read(8))[0] == sstable.MAGIC
    except (OSError, struct.error):
        return False


# ==== slice keys (TF's OrderedCode encoding of name + slice) =====================
def _ordered_string(s: bytes) -> bytes:
    # 0x00 -> 00 ff, 0xff -> ff 00, then the terminator 00 01.
    return b"".join(b"\x00\xff" if c == 0 else b"\xff\x00" if c == 0xFF else bytes([c])
                    for c in s) + b"\x00\x01"


def _ordered_uint(n: int) -> bytes:
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return bytes([len(body)]) + body


def _ordered_int(v: int) -> bytes:
    # n bytes hold [-2**(7n-1), 2**(7n-1)); the top n bits of the two's complement
    # (all copies of the sign) are flipped to mark the length.
    x = ~v if v < 0 else v
    n = min(10, max(1, (x.bit_length() + 1 + 6) // 7))
    raw = (v & ((1 << (8 * n)) - 1)).to_bytes(n, "big")
    header = ((1 << n) - 1) << (8 * n - n)
    return (int.from_bytes(raw, "big") ^ header).to_bytes(n, "big")


def slice_key(name: str, starts: list[int], lengths: list[int]) -> bytes:
    """The index key TF stores a slice of `name` under (length -1: the whole dimension)."""
    out = _ordered_uint(0) + _ordered_string(name.encode()) + _ordered_uint(len(starts))
    for s, n in zip(starts, lengths):
        out += _ordered_int(s) + _ordered_int(n)
    return out


def format_shape_and_slice(full_shape: Sequence[int], offset: Sequence[int],
                           shape: Sequence[int]) -> str:
    """SaveV2's shape_and_slice string of a slice: the full shape, then "offset,length"
    per dimension (the inverse of `parse_shape_and_slice`).

    Example:
        >>> format_shape_and_slice([10, 4], [5, 0], [5, 4])
        '10 4 5,5:0,4'
    """
    extent = ":".join(f"{o},{n}" for o, n in zip(offset, shape))
    return " ".join(str(d) for d in full_shape) + " " + extent


def slice_json_to_shape_and_slice(slice_spec: str) -> str:
    """SaveV2's shape_and_slice of our SaveEntry slice JSON (`SaveSliceInfo.saver_spec()`);
    "" for "" (a whole variable).

    Example:
        >>> slice_json_to_shape_and_slice('{"full_name": "w", "full_shape": [10, 4], '
        ...                               '"offset": [5, 0], "shape": [5, 4]}')
        '10 4 5,5:0,4'
    """
    if not slice_spec:
        return ""
    s = json.loads(slice_spec)
    return format_shape_and_slice(s["full_shape"], s["offset"], s["shape"])


def parse_shape_and_slice(spec: str, what: str) -> tuple[list[int], Slice] | None:
    """SaveV2's "d0 d1 s0,l0:s1,l1" ("-": a whole dimension, length -1); None for "".

    Raises:
        InvalidArgumentError: naming `what`, if the spec does not parse.
    """
    if not spec:
        return None
    parts = spec.split(" ")
    try:
        full = [int(p) for p in parts[:-1]]
        ext = parts[-1].split(":") if full else []
        starts, lengths = [], []
        for e in ext:
            s, n = (0, -1) if e == "-" else (int(v) for v in e.split(","))
            starts.append(s)
            lengths.append(n)
        if len(starts) != len(full):
            raise ValueError("rank mismatch")
    except ValueError:
        raise errors.InvalidArgumentError(None, None, f"Bad shape_and_slice {spec!r} for "
                                          f"{what}: expected e.g. \"4 3 0,2:-\".") from None
    return full, (starts, lengths)


def slice_extent(full: list[int], sl: Slice) -> tuple[list[int], list[int]]:
    """(offsets, sizes) of a slice, its whole dimensions (-1) resolved against `full`."""
    starts, lengths = sl
    return list(starts), [d if n == -1 else n for n, d in zip(lengths, full)]


# ==== writing ======================================================================
def _tensor_bytes(value: np.ndarray, dtype: _dt.DType) -> tuple[bytes, int]:
    """(bytes, crc32c) of a tensor as the data file stores it."""
    if dtype == _dt.string:
        elems = [v.encode() if isinstance(v, str) else bytes(v)
                 for v in np.asarray(value, dtype=object).reshape(-1)]
        lengths = b"".join(sstable.put_varint(len(e)) for e in elems)
        crc = 0
        for e in elems:   # lengths enter the checksum as uint32 (uint64 past 4 GiB), as TF
            crc = sstable.crc32c(struct.pack("<I" if len(e) <= 0xFFFFFFFF else "<Q", len(e)),
                                 crc)
        check = struct.pack("<I", sstable.mask_crc(crc))
        crc = sstable.crc32c(check, crc)
        body = b"".join(elems)
        crc = sstable.crc32c(body, crc) if body else crc
        return lengths + check + body, crc
    npd = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
    data = np.ascontiguousarray(value, dtype=npd).tobytes()
    return data, sstable.crc32c(data)


def _is_full(full: list[int], sl: Slice) -> bool:
    # A slice covering the whole tensor is saved as the tensor itself (as TF does).
    return all(s == 0 and n in (-1, d) for s, n, d in zip(sl[0], sl[1], full))


def _shape(dims: Any, proto: Any) -> None:
    proto.SetInParent()   # a scalar's shape is present, with no dims
    for d in dims:
        proto.dim.add(size=int(d))


def write_bundle(prefix: str, tensors: list[tuple[str, np.ndarray, Any]],
                 dtypes: list[_dt.DType] | None = None) -> str:
    """Writes a one-shard bundle: per tensor (name, value, slice-or-None).

    A slice is (full_shape, (starts, lengths)), length -1 for a whole dimension;
    the value is that slice's data.
    Files are written under temporary names and renamed, the index last.

    Raises:
        InvalidArgumentError: on a duplicate name or a slice that does not fit.
    """
    entries: dict[bytes, Any] = {}
    chunks, offset = [], 0
    for i, (name, value, sl) in enumerate(tensors):
        value = np.asarray(value)
        dt = dtypes[i] if dtypes else _dt.from_numpy(value)
        key = name.encode()
        if sl is not None and not _is_full(sl[0], sl[1]):
            full, (starts, lengths) = sl
            full_e = entries.setdefault(key, tensor_bundle_pb2.BundleEntryProto(
                dtype=cast(Any, dt.as_datatype_enum)))
            if not full_e.HasField("shape"):
                _shape(full, full_e.shape)
            ext = full_e.slices.add().extent
            for s, n in zip(starts, lengths):
                e = ext.add(start=s)
                if n != -1:
                    e.length = n
            key = slice_key(name, starts, lengths)
        if key in entries:
            raise errors.InvalidArgumentError(None, None, f"Tensor {name!r} is saved twice "
                                              f"in checkpoint {prefix}; names must be unique.")
        data, crc = _tensor_bytes(value, dt)
        entry = tensor_bundle_pb2.BundleEntryProto(dtype=cast(Any, dt.as_datatype_enum), shard_id=0,
                                                   offset=offset, size=len(data),
                                                   crc32c=sstable.mask_crc(crc))
        _shape(value.shape, entry.shape)
        entries[key] = entry
        chunks.append(data)
        offset += len(data)
    header = tensor_bundle_pb2.BundleHeaderProto(num_shards=1)
    header.version.producer = 1
    atomic_write(data_filename(prefix, 0, 1), chunks, make_dirs=True)
    _write_index(prefix, header, entries)
    return prefix


def _write_index(prefix: str, header: Any, entries: dict[bytes, Any]) -> None:
    items = [(b"", header.SerializeToString())]
    items += [(k, entries[k].SerializeToString()) for k in sorted(entries)]
    atomic_write(index_filename(prefix), sstable.build_table(items), make_dirs=True)


def merge_bundles(prefixes: list[str], merged_prefix: str, delete_old_dirs: bool = False
                  ) -> str:
    """Joins single-bundle prefixes into one bundle at `merged_prefix` (MergeV2Checkpoints).

    Data files are renamed to `<merged_prefix>.data-<i>-of-<n>`; the old indexes
    are removed (and their directories, if `delete_old_dirs` and empty).
    """
    if not prefixes:
        raise errors.InvalidArgumentError(None, None, f"MergeV2Checkpoints into {merged_prefix} "
                                          "got no checkpoint prefixes to merge")
    entries: dict[bytes, Any] = {}
    header = None
    renames: list[tuple[str, str]] = []
    total = sum(_read_index(p)[0].num_shards for p in prefixes)
    for p in prefixes:
        hdr, items = _read_index(p)
        header = header or hdr
        base = len(renames)
        for s in range(hdr.num_shards):
            renames.append((data_filename(p, s, hdr.num_shards),
                            data_filename(merged_prefix, base + s, total)))
        for key, e in items.items():
            if key in entries and e.slices and entries[key].slices:
                entries[key].slices.extend(e.slices)
                continue
            if key in entries:
                raise errors.InvalidArgumentError(None, None, f"Tensor {key!r} is in two "
                                                  f"shards being merged into {merged_prefix}")
            if not e.slices:
                e.shard_id += base
            entries[key] = e
    assert header is not None   # prefixes is not empty
    header.num_shards = total
    for src, dst in renames:
        os.replace(src, dst)
    fsync_dir(os.path.dirname(merged_prefix))   # the data's new names are durable first
    _write_index(merged_prefix, header, entries)
    for p in prefixes:
        if os.path.abspath(p) != os.path.abspath(merged_prefix):
            _remove(index_filename(p))
            if delete_old_dirs:
                try:
                    os.rmdir(os.path.dirname(p))
                except OSError:
                    pass
    return merged_prefix


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _read_index(prefix: str) -> tuple[Any, dict[bytes, Any]]:
    path = index_filename(prefix)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"No checkpoint at {prefix}: {path} does not "
                                   "exist.") from None
    rows = sstable.read_table(raw, path)
    if not rows or rows[0][0] != b"":
        raise errors.DataLossError(None, None, f"Checkpoint index {path} has no header entry")
    try:
        header = tensor_bundle_pb2.BundleHeaderProto.FromString(rows[0][1])
        entries = {k: tensor_bundle_pb2.BundleEntryProto.FromString(v) for k, v in rows[1:]}
    except Exception as e:  # protobuf's DecodeError
        raise errors.DataLossError(None, None, f"Checkpoint index {path}: unparseable entry "
                                   f"({e})") from None
    if header.endianness != tensor_bundle_pb2.BundleHeaderProto.LITTLE:
        raise errors.UnimplementedError(None, None, f"Checkpoint {prefix} was written on a "
                                        "big-endian machine; only little-endian is read.")
    return header, entries


def shape_of(proto: graph_pb2.TensorShapeProto) -> list[int]:
    return [int(d.size) for d in proto.dim]
