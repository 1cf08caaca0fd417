"""Reading TensorFlow-format checkpoints (tensor bundles; see `tensor_bundle`).

Example:
    >>> BundleReader("/tmp/tf_ckpt/model.ckpt-7").get_tensor("dense/kernel").shape
    (4, 3)
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework import sstable
from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tensor_bundle import (_read_index, data_filename, index_filename,
                                                 shape_of, slice_key)


def not_found(name: str, prefix: str, names: Any) -> str:
    """The message of a missing tensor: TF's phrase, then what the checkpoint has."""
    return (f"Key {name} not found in checkpoint {prefix}. It has: {sorted(names)}. Check the "
            "variable names (or the Saver's var_list names) match the saved ones.")


def debug_string(reader: Any) -> bytes:
    """TF's CheckpointReader.debug_string: "name (DT_FLOAT) [2,3]" per tensor, sorted.

    Example:
        >>> debug_string(tf.train.NewCheckpointReader(prefix))
        b'v0 (DT_FLOAT) [2,3]\\n'
    """
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    lines = [f"{n} ({graph_pb2.DataType.Name(dtypes[n].as_datatype_enum)}) "
             f"[{','.join(str(d) for d in shapes[n])}]\n" for n in sorted(shapes)]
    return "".join(lines).encode()


class BundleReader:
    """Reads a TF-format checkpoint by prefix (the interface of CheckpointReader).

    Args:
        prefix: the checkpoint prefix (`<prefix>.index` must exist).

    Raises:
        NotFoundError: if the index does not exist.
        DataLossError: if the index is damaged.

    Example:
        >>> BundleReader("/tmp/tf_ckpt/model.ckpt-7").get_variable_to_shape_map()
        {'dense/kernel': [4, 3], ...}
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._header, raw = _read_index(prefix)
        self._entries = {k.decode("utf-8", "surrogateescape"): e for k, e in raw.items()
                         if not k.startswith(b"\x00")}   # slice keys start with 00
        self._by_key = raw

    def has_tensor(self, name: str) -> bool:
        return name in self._entries

    def debug_string(self) -> bytes:
        """Each tensor as "name (DT_FLOAT) [2,3]", one per line, sorted (TF's)."""
        return debug_string(self)

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {n: shape_of(e.shape) for n, e in self._entries.items()}

    def get_variable_to_dtype_map(self) -> dict[str, _dt.DType]:
        return {n: _dt.as_dtype(e.dtype) for n, e in self._entries.items()}

    def get_tensor(self, name: str) -> np.ndarray:
        """The full value of `name` (a partitioned one is reassembled from its slices)."""
        e = self._entries.get(name)
        if e is None:
            raise errors.NotFoundError(None, None, not_found(name, self.prefix, self._entries))
        full = shape_of(e.shape)
        if not e.slices:
            return self._read(name, e)
        return self.read_slice(name, full, [0] * len(full), full)

    def read_slice(self, full_name: str, full_shape: list[int], offset: list[int],
                   shape: list[int]) -> np.ndarray:
        """The region `offset:offset+shape` of `full_name`, from whatever slices were saved.

        Raises:
            NotFoundError: if the saved slices do not cover the region.
        """
        e = self._entries.get(full_name)
        if e is None:
            raise errors.NotFoundError(None, None, not_found(full_name, self.prefix,
                                                             self._entries))
        saved = shape_of(e.shape)
        if list(full_shape) != saved:
            raise errors.InvalidArgumentError(None, None, f"Checkpoint {self.prefix} holds "
                                              f"{full_name!r} with shape {saved}, not "
                                              f"{list(full_shape)}")
        pieces = [self._slice_piece(full_name, p, saved) for p in e.slices] if e.slices \
            else [([0] * len(saved), saved, lambda: self._read(full_name, e))]
        out, covered = None, np.zeros(shape, dtype=bool)
        for off, ext, load in pieces:
            lo = [max(a, b) for a, b in zip(off, offset)]
            hi = [min(a + n, b + m) for a, n, b, m in zip(off, ext, offset, shape)]
            if len(shape) and any(a >= b for a, b in zip(lo, hi)):
                continue
            src = load()
            if out is None:
                out = np.zeros(shape, dtype=src.dtype)
            dst = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, offset))
            out[dst] = src[tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, off))]
            covered[dst] = True
        if out is None or not covered.all():
            raise errors.NotFoundError(None, None, f"Checkpoint {self.prefix} does not cover "
                                       f"{full_name}[offset {offset}, shape {shape}]")
        return out

    def _slice_piece(self, name: str, proto: Any, full: list[int]) -> tuple[Any, Any, Any]:
        starts = [int(x.start) for x in proto.extent]
        lens = [int(x.length) if x.HasField("length") else -1 for x in proto.extent]
        key = slice_key(name, starts, lens)
        e = self._by_key.get(key)
        if e is None:
            raise errors.DataLossError(None, None, f"Checkpoint {self.prefix} lists a slice "
                                       f"of {name!r} it does not hold")
        ext = [d if n == -1 else n for n, d in zip(lens, full)]
        return starts, ext, lambda: self._read(name, e)

    def verify(self) -> None:
        """Reads every tensor, checking sizes and CRCs; raises DataLossError if damaged."""
        for key, e in self._by_key.items():
            if not e.slices:
                self._read(key.decode("utf-8", "surrogateescape"), e)

    def files(self) -> list[str]:
        n = self._header.num_shards
        return [data_filename(self.prefix, i, n) for i in range(n)] + \
            [index_filename(self.prefix)]

    def _read(self, name: str, e: Any) -> np.ndarray:
        path = data_filename(self.prefix, e.shard_id, self._header.num_shards)
        try:
            with open(path, "rb") as f:
                f.seek(e.offset)
                buf = f.read(e.size)
        except FileNotFoundError:
            raise errors.DataLossError(None, None, f"Checkpoint {self.prefix}: its data file "
                                       f"{path} is missing") from None
        dt = _dt.as_dtype(e.dtype)
        shape = shape_of(e.shape)
        if len(buf) != e.size:
            raise errors.DataLossError(None, None, f"Checkpoint data file {path} is truncated "
                                       f"(tensor {name!r} needs bytes {e.offset}..+{e.size})")
        if dt == _dt.string:
            value, crc = _decode_strings(buf, int(np.prod(shape, dtype=np.int64)), path, name)
        else:
            npd = np.dtype(dt.as_numpy_dtype).newbyteorder("<")
            if len(buf) != npd.itemsize * int(np.prod(shape, dtype=np.int64)):
                raise errors.DataLossError(None, None, f"Checkpoint {path}: tensor {name!r} "
                                           f"has {len(buf)} bytes for shape {shape}")
            crc = sstable.crc32c(buf)
            value = np.frombuffer(buf, dtype=npd).astype(npd.newbyteorder("="))
        if crc != sstable.unmask_crc(e.crc32c):
            raise errors.DataLossError(None, None, f"Checkpoint data file {path} is damaged: "
                                       f"checksum mismatch in tensor {name!r}")
        return value.reshape(shape)


def _decode_strings(buf: bytes, n: int, path: str, name: str) -> tuple[np.ndarray, int]:
    lengths, pos, crc = [], 0, 0
    for _ in range(n):
        ln, pos = sstable.get_varint(buf, pos, f"{path} ({name})")
        lengths.append(ln)
        crc = sstable.crc32c(struct.pack("<I", ln) if ln <= 0xFFFFFFFF
                             else struct.pack("<Q", ln), crc)
    check = buf[pos:pos + 4]
    if len(check) != 4 or sstable.unmask_crc(struct.unpack("<I", check)[0]) != crc:
        raise errors.DataLossError(None, None, f"Checkpoint data file {path} is damaged: "
                                   f"length checksum mismatch in string tensor {name!r}")
    crc = sstable.crc32c(check, crc)
    pos += 4
    out = np.empty(n, dtype=object)
    for i, ln in enumerate(lengths):
        out[i] = buf[pos:pos + ln]
        pos += ln
    body = buf[pos - sum(lengths):pos]
    return out, sstable.crc32c(body, crc) if body else crc
