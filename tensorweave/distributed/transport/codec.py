"""Tensor codec: a NumPy array <-> a small header plus raw byte chunks.

The header is a `tensorweave.TensorHeader` protobuf (dtype enum, shape, byte
length); the payload is the array's own memory, cut into `memoryview` slices,
so a C-contiguous array is sent without being copied or wrapped in protobuf
fields, and there is no 2 GB / 4 MB message ceiling because each chunk travels
on its own. Decoding allocates the result once and fills it chunk by chunk
(or lets a socket `recv_into` it directly). Nothing here is pickled, and this
module does not import grpc: it is shared by every transport.

Wire layout of the payload:
  * numeric and bool tensors: the elements in C order, little-endian.
  * string tensors (object arrays of bytes): `n` little-endian uint64 lengths,
    then the `n` byte strings concatenated, where `n` is the element count.

Example:
    >>> header, chunks = encode(np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> decode(header, chunks)
    array([[0., 1., 2.],
           [3., 4., 5.]], dtype=float32)
"""
from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorweave.distributed.protocol.tensor_wire_pb2 import TensorHeader
from tensorweave.distributed.transport import buffers
from tensorweave.framework import dtypes

__all__ = ["DEFAULT_CHUNK_BYTES", "TensorAssembler", "TensorHeader", "decode", "encode",
           "header_for", "view_in", "wire_view"]

# 0.5-1 MiB measured best over gRPC on loopback (bench/transfer.py): chunks
# this size stay in cache through gRPC's copies; 4 and 16 MiB were slower.
DEFAULT_CHUNK_BYTES = 1 << 20

_STRING_ENUM = dtypes.string.as_datatype_enum
# Element types with a fixed-size NumPy representation, keyed both ways. Built
# here from the DType objects rather than via `dtypes.as_dtype(np.dtype)`,
# because NumPy dtypes compare equal to Python's float/int.
_FIXED = (dtypes.bool, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8,
          dtypes.uint16, dtypes.uint32, dtypes.uint64, dtypes.float16, dtypes.float32,
          dtypes.float64, dtypes.complex64, dtypes.complex128)
_ENUM_BY_NP = {np.dtype(d.as_numpy_dtype): d.as_datatype_enum for d in _FIXED}
_NP_BY_ENUM = {e: np.dtype(t).newbyteorder("<") for t, e in _ENUM_BY_NP.items()}
_WIRE_ENUMS = frozenset(_NP_BY_ENUM) | {_STRING_ENUM}
# Native-order dtypes for views of received payloads (the wire is little-endian; on a
# little-endian host these equal _NP_BY_ENUM's): made once, not per tensor.
_NATIVE_BY_ENUM = {e: d.newbyteorder("=") for e, d in _NP_BY_ENUM.items()}
_LENGTH = np.dtype("<u8")
# Native arrays are already in wire order here (the fast paths below need this).
_WIRE_IS_NATIVE = sys.byteorder == "little"


def encode(array: Any, chunk_bytes: int = DEFAULT_CHUNK_BYTES
           ) -> tuple[TensorHeader, list[memoryview]]:
    """Splits an array into a header and zero-copy chunks of its raw buffer.

    A C-contiguous little-endian array is not copied: the chunks are views of
    its memory, so it must not be mutated until they are sent. Non-contiguous
    or big-endian arrays are first copied once into C order.

    Args:
        array: a NumPy array (or anything `np.asarray` accepts) of bool,
            (u)int8..64, float16/32/64, complex64/128, or strings (an object
            array of `bytes`; `str` elements are UTF-8 encoded).
        chunk_bytes: the largest chunk to produce, in bytes.

    Returns:
        `(header, chunks)`; `header.num_chunks == len(chunks)` and the chunk
        lengths add up to `header.nbytes`.

    Raises:
        TypeError: if the dtype or a string element cannot be sent.
        ValueError: if `chunk_bytes` is not positive.

    Example:
        >>> header, chunks = encode(np.zeros((1024, 1024), np.float32), 1 << 20)
        >>> header.nbytes, len(chunks)
        (4194304, 4)
    """
    if chunk_bytes <= 0:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")
    array = np.asarray(array)
    if array.dtype.kind in ("O", "U", "S"):
        header, buffers = _string_payload(array)
    else:
        header, buffers = _numeric_payload(array)
    chunks = [piece for buf in buffers for piece in _split(buf, chunk_bytes)]
    header.num_chunks = len(chunks)
    return header, chunks


def header_for(array: np.ndarray) -> TensorHeader:
    """The header `encode` would produce, without building the chunk list.

    Example:
        >>> header_for(np.zeros(3, np.int64)).nbytes
        24
    """
    return encode(array, chunk_bytes=1 << 62)[0]


def wire_view(array: Any) -> tuple[int, memoryview] | None:
    """(dtype enum, payload) of an array whose memory is already its wire payload.

    The fast path of `encode` for the common case, a non-empty C-contiguous
    ndarray of a fixed-size type in little-endian order: no header object, no
    chunk list. None for anything else (then use `encode`).

    Example:
        >>> enum, payload = wire_view(np.zeros((2, 3), np.float32))
        >>> payload.nbytes
        24
    """
    if type(array) is not np.ndarray or not _WIRE_IS_NATIVE or not array.flags.c_contiguous \
            or not array.size:
        return None
    enum = _ENUM_BY_NP.get(array.dtype)
    if enum is None:
        return None
    return enum, memoryview(array).cast("B")  # type: ignore[arg-type]


def view_in(raw: bytearray, offset: int, header: TensorHeader) -> np.ndarray | None:
    """The numeric tensor `header` describes, as a view of `raw` at `offset`.

    The fast path of `decode` for tensors received together into one buffer:
    no copy, no allocation of its own (the arrays keep `raw` alive). None when
    the tensor is a string tensor, empty, or not aligned for its type at
    `offset` (then decode that slice with `decode`).

    Raises:
        ValueError: if the header is malformed or runs past the end of `raw`.

    Example:
        >>> raw = bytearray(np.arange(3, dtype=np.int32).tobytes())
        >>> view_in(raw, 0, header_for(np.zeros(3, np.int32)))
        array([0, 1, 2], dtype=int32)
    """
    # Each header field is read once: a protobuf attribute costs ~0.15 us, and a frame
    # of gradients brings dozens of tensors.
    np_dtype = _NATIVE_BY_ENUM.get(header.dtype)
    if np_dtype is None or not _WIRE_IS_NATIVE:
        return None
    shape = _dims(header.shape)
    nbytes = header.nbytes
    count = math.prod(shape)
    if nbytes != count * np_dtype.itemsize:
        raise ValueError(f"Tensor header says nbytes={nbytes}, but shape {shape} of "
                         f"{np_dtype} needs {count * np_dtype.itemsize} bytes")
    if offset + nbytes > len(raw):
        raise ValueError(f"Tensor payload overflows: {offset + nbytes} bytes needed, "
                         f"{len(raw)} received")
    if not count or offset % np_dtype.itemsize:
        return None
    return np.frombuffer(raw, np_dtype, count, offset).reshape(shape)


def decode(header: TensorHeader, chunks: Iterable[Any]) -> np.ndarray:
    """Rebuilds an array from its header and payload chunks (one allocation).

    Args:
        header: the `TensorHeader` from `encode`.
        chunks: bytes-like objects whose concatenation is the payload; their
            sizes need not match the sender's.

    Returns:
        A new array; strings come back as an object array of `bytes`.

    Raises:
        ValueError: if the header is malformed or the chunks do not add up to
            exactly `header.nbytes`.

    Example:
        >>> h, c = encode(np.array([b"a", b"bc"], dtype=object))
        >>> decode(h, c).tolist()
        [b'a', b'bc']
    """
    assembler = TensorAssembler(header)
    for chunk in chunks:
        assembler.write(chunk)
    return assembler.finish()


class TensorAssembler:
    """Receives one tensor's payload into a buffer allocated up front.

    Either call `write` with each chunk as it arrives, or fill `buffer`
    directly (e.g. `sock.recv_into(assembler.buffer[n:])`) and set `filled`.

    Example:
        >>> h, chunks = encode(np.arange(4, dtype=np.int16))
        >>> a = TensorAssembler(h)
        >>> for c in chunks:
        ...     a.write(c)
        >>> a.finish()
        array([0, 1, 2, 3], dtype=int16)
    """

    def __init__(self, header: TensorHeader) -> None:
        self.header = header
        self.shape = _checked_shape(header)
        self.nbytes = header.nbytes
        self.filled = 0
        if header.dtype == _STRING_ENUM:
            self._array: np.ndarray | None = None
            self._raw = bytearray(self.nbytes)
            self.buffer = memoryview(self._raw)
        else:
            np_dtype = _NP_BY_ENUM[header.dtype]
            expected = math.prod(self.shape) * np_dtype.itemsize
            if header.nbytes != expected:
                raise ValueError(f"Tensor header says nbytes={header.nbytes}, but shape "
                                 f"{self.shape} of {np_dtype} needs {expected} bytes")
            # Pooled memory: its pages are already mapped (see buffers.py).
            lease = buffers.RECEIVE_POOL.take(header.nbytes)
            self._array = lease.view(np_dtype).reshape(self.shape)
            self.buffer = lease.data

    def write(self, chunk: Any) -> None:
        """Copies the next chunk into place; raises ValueError on overflow."""
        n = len(chunk) if isinstance(chunk, (bytes, bytearray)) else memoryview(chunk).nbytes
        end = self.filled + n
        if end > self.nbytes:
            raise ValueError(f"Tensor payload overflows: {end} bytes received, header "
                             f"announced {self.nbytes}")
        self.buffer[self.filled:end] = chunk
        self.filled = end

    def finish(self) -> np.ndarray:
        """Returns the decoded array once every byte has arrived.

        Raises:
            ValueError: if fewer than `nbytes` bytes were received, or a string
                payload's lengths do not match its size.
        """
        if self.filled != self.nbytes:
            raise ValueError(f"Tensor payload truncated: received {self.filled} of "
                             f"{self.nbytes} bytes")
        if self._array is not None:
            # The wire is little-endian; hand back native order for arithmetic.
            return self._array.astype(self._array.dtype.newbyteorder("="), copy=False)
        return _decode_strings(self._raw, self.shape)


def _numeric_payload(array: np.ndarray) -> tuple[TensorHeader, list[memoryview]]:
    # Byte order is a wire detail, not a type: '>i4' is int32 too.
    enum = _ENUM_BY_NP.get(array.dtype.newbyteorder("="))
    if enum is None:
        raise TypeError(f"Cannot send an array of dtype {array.dtype}: supported are bool, "
                        f"(u)int8..64, float16/32/64, complex64/128 and bytes strings")
    # Copies only when needed: non-C-contiguous layout or big-endian bytes.
    # (np.asarray, not np.ascontiguousarray, which would turn a 0-d array into 1-d.)
    wire = np.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C")
    header = TensorHeader(dtype=enum, shape=wire.shape, nbytes=wire.nbytes)
    return header, [wire.reshape(-1).view(np.uint8).data]


def _string_payload(array: np.ndarray) -> tuple[TensorHeader, list[memoryview]]:
    flat = array.reshape(-1)
    items = [_as_bytes(x, i) for i, x in enumerate(flat.tolist())]
    lengths = np.fromiter((len(b) for b in items), dtype=_LENGTH, count=len(items))
    data = b"".join(items)
    header = TensorHeader(dtype=_STRING_ENUM, shape=array.shape,
                          nbytes=lengths.nbytes + len(data))
    return header, [lengths.view(np.uint8).data, memoryview(data)]


def _as_bytes(item: Any, index: int) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, (bytearray, memoryview, np.bytes_)):
        return bytes(item)
    raise TypeError(f"String tensor element {index} is a {type(item).__name__} ({item!r:.40}); "
                    f"only bytes or str elements can be sent")


def _decode_strings(raw: bytearray, shape: tuple[int, ...]) -> np.ndarray:
    n = math.prod(shape)
    if n * _LENGTH.itemsize > len(raw):
        raise ValueError(f"String payload of {len(raw)} bytes is too short for {n} lengths")
    lengths = np.frombuffer(raw, dtype=_LENGTH, count=n)
    ends = np.cumsum(lengths, dtype=np.uint64) + n * _LENGTH.itemsize
    if n and int(ends[-1]) != len(raw):
        raise ValueError(f"String lengths add up to {int(ends[-1])} bytes, payload has {len(raw)}")
    out = np.empty(n, dtype=object)
    view = memoryview(raw)  # slices of a view cost nothing until tobytes() makes each item
    start = n * _LENGTH.itemsize
    for i, end in enumerate(ends.tolist()):
        out[i] = view[start:end].tobytes()
        start = end
    return out.reshape(shape)


def _split(buf: memoryview, chunk_bytes: int) -> list[memoryview]:
    if buf.nbytes == 0:
        return []
    return [buf[i:i + chunk_bytes] for i in range(0, buf.nbytes, chunk_bytes)]


def _checked_shape(header: TensorHeader) -> tuple[int, ...]:
    if header.dtype not in _WIRE_ENUMS:
        raise ValueError(f"Tensor header has dtype enum {header.dtype}, which is not a "
                         f"transferable type (known: {sorted(_WIRE_ENUMS)})")
    shape = _dims(header.shape)
    if header.nbytes < 0:
        raise ValueError(f"Tensor header has negative nbytes={header.nbytes}")
    return shape


def _dims(shape_field: Any) -> tuple[int, ...]:
    """A header's shape as a tuple; raises ValueError on a negative dimension."""
    shape = tuple(shape_field)
    if shape and min(shape) < 0:
        raise ValueError(f"Tensor header has a negative dimension in shape {shape}")
    return shape
