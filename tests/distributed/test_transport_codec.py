"""Round-trips of the tensor codec (header + raw chunks); no pickle involved."""
from __future__ import annotations

import pathlib
import pickle
import re

import numpy as np
import pytest

from tensorweave.distributed.transport import buffers, codec
from tensorweave.distributed.transport.codec import TensorHeader, decode, encode

NUMERIC = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128"]
ENUMS = {"bool": 10, "int8": 6, "int16": 5, "int32": 3, "int64": 9, "uint8": 4, "uint16": 17,
         "uint32": 22, "uint64": 23, "float16": 19, "float32": 1, "float64": 2, "complex64": 8,
         "complex128": 18}


@pytest.fixture(autouse=True)
def no_pickle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any use of pickle during a test fails it."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("pickle used by the tensor codec")
    for name in ("dumps", "loads", "dump", "load"):
        monkeypatch.setattr(pickle, name, refuse)


def _sample(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    values = rng.normal(size=shape) * 50
    if dtype.startswith("complex"):
        return (values + 1j * rng.normal(size=shape)).astype(dtype)
    if dtype == "bool":
        return values > 0
    return values.astype(dtype)


def _roundtrip(array: np.ndarray, chunk_bytes: int = codec.DEFAULT_CHUNK_BYTES) -> np.ndarray:
    header, chunks = encode(array, chunk_bytes)
    # The header crosses as protobuf bytes; the chunks as raw bytes.
    wire_header = TensorHeader.FromString(header.SerializeToString())
    assert header.num_chunks == len(chunks)
    assert sum(c.nbytes for c in chunks) == header.nbytes
    return decode(wire_header, [c.tobytes() for c in chunks])


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (7,), (3, 4, 5)])
def test_numeric_roundtrip(dtype: str, shape: tuple[int, ...]) -> None:
    array = _sample(dtype, shape)
    out = _roundtrip(array, chunk_bytes=7)  # odd size: chunks split elements
    assert out.dtype == array.dtype and out.shape == array.shape
    np.testing.assert_array_equal(out, array)
    assert encode(array)[0].dtype == ENUMS[dtype]


@pytest.mark.parametrize("make", [
    lambda a: a[::2, 1:],          # strided slice
    lambda a: a.T,                 # transposed view
    lambda a: np.asfortranarray(a),
    lambda a: a.astype(">f4"),     # big-endian
], ids=["slice", "transpose", "fortran", "big-endian"])
def test_non_contiguous_inputs(make) -> None:
    array = make(np.arange(60, dtype=np.float32).reshape(6, 10))
    out = _roundtrip(array, chunk_bytes=16)
    assert out.flags.c_contiguous and out.dtype == np.float32
    np.testing.assert_array_equal(out, array)


def test_contiguous_array_is_not_copied() -> None:
    array = np.arange(1000, dtype=np.int64)
    _, chunks = encode(array, chunk_bytes=800)
    assert len(chunks) == 10
    assert all(np.shares_memory(np.frombuffer(c, np.uint8), array) for c in chunks)


def test_larger_than_4mib() -> None:
    array = np.arange(5 * (1 << 20) // 4 + 3, dtype=np.float32)
    header, chunks = encode(array)
    assert header.nbytes > 4 << 20
    assert len(chunks) == -(-header.nbytes // codec.DEFAULT_CHUNK_BYTES)
    np.testing.assert_array_equal(decode(header, chunks), array)


def test_chunks_may_be_regrouped_on_receive() -> None:
    array = np.arange(100, dtype=np.int32)
    header, chunks = encode(array)
    raw = b"".join(c.tobytes() for c in chunks)
    pieces = [raw[i:i + 33] for i in range(0, len(raw), 33)]
    np.testing.assert_array_equal(decode(header, pieces), array)


@pytest.mark.parametrize("array", [
    np.array([b"a", b"", b"longer \x00 bytes"], dtype=object),
    np.array([[b"x", b"yy"], [b"zzz", b""]], dtype=object),
    np.array(b"scalar", dtype=object),
    np.empty((0, 3), dtype=object),
], ids=["1d", "2d", "0d", "empty"])
def test_string_roundtrip(array: np.ndarray) -> None:
    out = _roundtrip(array, chunk_bytes=3)
    assert out.dtype == object and out.shape == array.shape
    assert out.tolist() == array.tolist()
    assert encode(array)[0].dtype == 7


def test_str_and_fixed_width_strings_become_bytes() -> None:
    assert _roundtrip(np.array(["héllo", "w"])).tolist() == ["héllo".encode(), b"w"]
    assert _roundtrip(np.array([b"ab", b"c"])).tolist() == [b"ab", b"c"]
    assert _roundtrip(np.array(["x", b"y"], dtype=object)).tolist() == [b"x", b"y"]


def test_unsupported_inputs_name_the_value() -> None:
    with pytest.raises(TypeError, match="datetime64"):
        encode(np.array(["2020-01-01"], dtype="datetime64[D]"))
    with pytest.raises(TypeError, match="element 1 is a int"):
        encode(np.array([b"a", 3], dtype=object))
    with pytest.raises(ValueError, match="chunk_bytes"):
        encode(np.zeros(2), chunk_bytes=0)


def test_decode_rejects_bad_payloads() -> None:
    header, chunks = encode(np.arange(10, dtype=np.int32))
    data = chunks[0].tobytes()
    with pytest.raises(ValueError, match="truncated: received 39 of 40"):
        decode(header, [data[:-1]])
    with pytest.raises(ValueError, match="overflows"):
        decode(header, [data, b"x"])
    with pytest.raises(ValueError, match="dtype enum 20"):
        decode(TensorHeader(dtype=20, shape=[1], nbytes=8), [])
    with pytest.raises(ValueError, match="nbytes=12"):
        decode(TensorHeader(dtype=1, shape=[2], nbytes=12), [])
    with pytest.raises(ValueError, match="negative dimension"):
        decode(TensorHeader(dtype=1, shape=[-1], nbytes=0), [])
    sheader, schunks = encode(np.array([b"ab"], dtype=object))
    sheader.nbytes += 1
    with pytest.raises(ValueError, match="add up to"):
        decode(sheader, [c.tobytes() for c in schunks] + [b"!"])


def test_assembler_accepts_recv_into_style_filling() -> None:
    array = np.linspace(0, 1, 257, dtype=np.float64)
    header, chunks = encode(array)
    assembler = codec.TensorAssembler(header)
    assembler.buffer[:] = chunks[0]  # as socket.recv_into would
    assembler.filled = header.nbytes
    np.testing.assert_array_equal(assembler.finish(), array)


def test_no_pickle_in_transport_sources() -> None:
    root = pathlib.Path(codec.__file__).parents[1]
    for path in [*root.glob("transport/*.py"), *root.glob("protocol/tensor_wire*")]:
        text = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+\S*pickle|pickle\.", text, re.MULTILINE), (
            f"{path} uses pickle")


def test_receive_buffers_are_reused_only_after_release() -> None:
    pool = buffers.BufferPool(max_bytes=8 << 20, min_bytes=1 << 20)
    first = pool.take(2 << 20).view(np.float64).reshape(512, -1)
    view = first[3:, ::2]
    address = first.ctypes.data
    del first
    assert pool.pooled_bytes() == 0  # a view is still alive
    del view
    assert pool.pooled_bytes() == 2 << 20
    again = pool.take(2 << 20)
    other = pool.take(2 << 20)
    assert again.ctypes.data == address and other.ctypes.data != address
    assert pool.take(100).nbytes == 100  # small ones are not pooled
    del again, other
    assert pool.pooled_bytes() == 4 << 20
    big = pool.take(6 << 20)
    del big  # would exceed max_bytes: freed, not pooled
    assert pool.pooled_bytes() == 4 << 20


def test_decoded_arrays_are_independent_and_writable() -> None:
    array = np.arange(1 << 19, dtype=np.float32)  # 2 MiB: pooled
    header, chunks = encode(array)
    a, b = decode(header, chunks), decode(header, chunks)
    a[:] = 0
    assert a.flags.writeable and not np.shares_memory(a, b)
    np.testing.assert_array_equal(b, array)
