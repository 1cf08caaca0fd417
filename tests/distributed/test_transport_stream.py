"""Tensors over a real gRPC server on 127.0.0.1 (stream and bulk side channel)."""
from __future__ import annotations

from collections.abc import Iterator

import grpc
import numpy as np
import pytest

from tensorweave.distributed.transport import codec
from tensorweave.distributed.transport.tcp import stream
from tensorweave.distributed.transport.tcp.stream import TensorClient, TensorServer

BIG = 256 << 20  # bytes; far above gRPC's 4 MB default and many chunks


@pytest.fixture(scope="module")
def tensors() -> dict[str, np.ndarray]:
    return {
        "big": np.arange(BIG // 4, dtype=np.float32),
        "scalar": np.array(3.5),
        "words": np.array([[b"a", b""], [b"ccc", b"\x00d"]], dtype=object),
        "empty": np.zeros((0, 4), np.int16),
    }


@pytest.fixture
def server(tensors: dict[str, np.ndarray]) -> Iterator[TensorServer]:
    srv = TensorServer(tensors.__getitem__, "127.0.0.1:0", bulk=True)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def client(server: TensorServer, request: pytest.FixtureRequest) -> Iterator[TensorClient]:
    cli = TensorClient(f"127.0.0.1:{server.port}", bulk=request.param)
    try:
        yield cli
    finally:
        cli.close()


def _check_big(out: np.ndarray, expected: np.ndarray) -> None:
    assert out.dtype == np.float32 and out.shape == expected.shape
    n = expected.size
    for start in (0, n // 3, n // 2 + 7, n - 1000):  # a few slices across the chunks
        np.testing.assert_array_equal(out[start:start + 1000], expected[start:start + 1000])
    assert out.sum(dtype=np.float64) == expected.sum(dtype=np.float64)


@pytest.mark.parametrize("client", [False, True], ids=["grpc-stream", "bulk"], indirect=True)
def test_256mib_tensor(client: TensorClient, tensors: dict[str, np.ndarray]) -> None:
    _check_big(client.fetch("big", timeout=120), tensors["big"])


@pytest.mark.parametrize("client", [False, True], ids=["grpc-stream", "bulk"], indirect=True)
@pytest.mark.parametrize("key", ["scalar", "words", "empty"])
def test_small_tensors(client: TensorClient, tensors: dict[str, np.ndarray], key: str) -> None:
    out = client.fetch(key, timeout=30)
    assert out.shape == tensors[key].shape and out.dtype == tensors[key].dtype
    assert out.tolist() == tensors[key].tolist()


@pytest.mark.parametrize("client", [False, True], ids=["grpc-stream", "bulk"], indirect=True)
def test_unknown_key_is_not_found(client: TensorClient) -> None:
    with pytest.raises(grpc.RpcError) as info:
        client.fetch("nope", timeout=30)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert "nope" in info.value.details()


@pytest.mark.parametrize("client", [True], ids=["bulk"], indirect=True)
def test_falls_back_to_stream_when_bulk_port_unreachable(
        server: TensorServer, client: TensorClient, tensors: dict[str, np.ndarray]) -> None:
    assert server.bulk is not None
    server.bulk.close()  # as if a firewall let only the gRPC port through
    np.testing.assert_array_equal(client.fetch("empty", timeout=30), tensors["empty"])
    _check_big(client.fetch("big", timeout=120), tensors["big"])
    assert not client._bulk.usable("127.0.0.1")  # later fetches skip the side channel


def test_stream_messages_are_raw_bytes() -> None:
    array = np.arange(10, dtype=np.uint8)
    messages = list(stream.stream_tensor(array, chunk_bytes=4))
    header = codec.TensorHeader.FromString(messages[0])
    assert (header.nbytes, header.num_chunks) == (10, 3)
    assert messages[1:] == [bytes(range(4)), bytes(range(4, 8)), bytes([8, 9])]
    np.testing.assert_array_equal(stream.receive_tensor(iter(messages)), array)


def test_server_reports_bound_port_and_stops() -> None:
    srv = TensorServer({}.__getitem__)
    try:
        assert srv.port > 0 and srv.bulk is None
    finally:
        srv.stop()
    with (grpc.insecure_channel(f"127.0.0.1:{srv.port}") as channel,
          pytest.raises(grpc.RpcError) as info):
        stream.fetch_tensor(channel, "x", timeout=5)
    assert info.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
