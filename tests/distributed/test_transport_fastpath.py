"""The per-tensor fast paths of the step's wire: codec.wire_view / view_in, frames
whose small tensors share one receive buffer, and a pushed frame delivered to the
rendezvous under one lock."""
import socket
import threading

import numpy as np
import pytest

from tensorweave.distributed.transport import codec
from tensorweave.distributed.transport.unix import framing
from tensorweave.distributed.transport.unix.framing import PUSH, Conn
from tensorweave.framework import errors
from tensorweave.runtime.rendezvous import LocalRendezvous

_DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32,
           np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", _DTYPES)
def test_wire_view_is_what_encode_sends(dtype):
    a = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    enum, view = codec.wire_view(a)
    header, chunks = codec.encode(a)
    assert enum == header.dtype
    assert bytes(view) == b"".join(bytes(c) for c in chunks)


@pytest.mark.parametrize("array", [np.zeros((4, 3), np.float32).T, np.zeros(3, ">f4"),
                                   np.zeros((0, 2), np.int32), np.array([b"a"], object),
                                   [1.0, 2.0]])
def test_wire_view_declines_what_needs_encode(array):
    assert codec.wire_view(array) is None


def test_view_in_rejects_a_header_that_runs_past_the_buffer():
    header = codec.header_for(np.zeros(8, np.float64))
    with pytest.raises(ValueError, match="overflows"):
        codec.view_in(bytearray(32), 0, header)


def test_view_in_rejects_inconsistent_nbytes():
    header = codec.header_for(np.zeros(4, np.int32))
    header.nbytes = 12
    with pytest.raises(ValueError, match="nbytes=12"):
        codec.view_in(bytearray(16), 0, header)


def _pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return Conn(a), Conn(b)


def _round_trip(ident, message, tensors):
    """Sends one PUSH frame over a socket pair; returns what the other end read."""
    send, recv = _pair()
    got = []
    reader = threading.Thread(target=lambda: got.append(recv.read()))
    reader.start()
    send.send(PUSH, 0, 0, ident, message, tensors)
    reader.join(10)
    send.close()
    recv.close()
    return got[0]


def test_frame_of_mixed_tensors_round_trips():
    # Small tensors of different item sizes (so some land unaligned in the shared
    # buffer), a string tensor, an empty one, a 0-d one and one too big to share.
    tensors = [np.array(7, np.int8), np.arange(5, dtype=np.float64), np.ones((2, 3), bool),
               np.array([b"ab", b"", b"xyz"], object), np.zeros((0, 4), np.float32),
               np.arange(300_000, dtype=np.float32).reshape(1000, 300),
               np.array([1 + 2j], np.complex64), np.arange(6, dtype=np.int16)[::2]]
    kind, _, _, ident, message, out = _round_trip(42, b"keys", tensors)
    assert (kind, ident, message) == (PUSH, 42, b"keys")
    assert len(out) == len(tensors)
    for sent, received in zip(tensors, out):
        assert received.dtype == sent.dtype and received.shape == sent.shape
        assert received.tolist() == sent.tolist()
        if received.dtype != object:
            received[...] = received  # writable, like any array a kernel gets


def test_envelope_is_what_protobuf_would_write():
    # Conn.send writes the Envelope's bytes itself (cached numeric headers); a reader,
    # or any protobuf library, must see exactly what Envelope.SerializeToString gives.
    from tensorweave.distributed.protocol.rpc_pb2 import Envelope
    tensors = [np.zeros((3, 4), np.float32), np.arange(5), np.array([b"ab", b"c"], object),
               np.zeros((0,), np.float32), np.array(2.0), np.zeros((3, 4), np.float32)]
    for message in (b"", b"k" * 300):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        Conn(a).send(PUSH, 0, 0, 5, message, tensors)
        head = b.recv(framing.HEAD.size, socket.MSG_WAITALL)
        body = b.recv(framing.HEAD.unpack(head)[4], socket.MSG_WAITALL)
        a.close()
        b.close()
        want = Envelope(message=message)
        for t in tensors:
            header, _ = codec.encode(t)
            header.num_chunks = 0
            want.tensors.append(header)
        assert body == want.SerializeToString()


def test_small_tensors_of_a_frame_share_one_buffer():
    tensors = [np.full((16, 16), i, np.float32) for i in range(4)]
    out = _round_trip(1, b"", tensors)[5]
    assert [float(t[0, 0]) for t in out] == [0.0, 1.0, 2.0, 3.0]
    assert all(t.nbytes <= framing._SHARED_READ_MAX for t in out)
    assert len({id(_owner(t)) for t in out}) == 1  # views of the frame's one buffer


def _owner(array):
    while isinstance(array, np.ndarray):
        array = array.base
    return array.obj if isinstance(array, memoryview) else array


def test_send_many_wakes_waiters_and_stores_the_rest():
    rv = LocalRendezvous()
    seen = []
    rv.recv_async(5, "a", seen.append)
    rv.send_many(5, [("a", 1), ("b", 2)])
    assert seen == [1]
    rv.recv_async(5, "b", seen.append)
    assert seen == [1, 2]


def test_send_many_duplicate_still_delivers_the_others_then_fails():
    rv = LocalRendezvous()
    rv.send(3, "a", 1)
    seen = []
    rv.recv_async(3, "b", seen.append)
    with pytest.raises(errors.InternalError, match="Duplicate send of a"):
        rv.send_many(3, [("a", 9), ("b", 2)])
    assert seen == [2]
