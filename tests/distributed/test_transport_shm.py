"""Same-host links put big tensors in shared-memory rings (transport/shm.py): the ring
itself, frames that mix ring and in-frame payloads, and tasks of a real cluster."""
import os
import socket
import threading

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.protocol.rpc_pb2 import Envelope
from tensorweave.distributed.transport.unix import framing, shm
from tensorweave.distributed.transport.unix.framing import HEAD, PUSH, Conn
from tensorweave.testing.cluster import cluster_over
from suite_markers import ONE_WIRE

CAP = 1 << 20


def _rings(capacity=CAP):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    out = shm.offer(a, capacity)
    assert shm.offered(b)
    inbox = shm.accept(b)
    return out, inbox, (a, b)


def _bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def _take(inbox, at, n):
    return np.array(inbox.lend(at, n))  # a copy: the lent bytes are free again at once


def test_ring_round_trips_across_many_laps():
    out, inbox, _ = _rings()
    sizes = [200_000, 300_001, 64, 450_000, 1]
    for i in range(40):  # ~40 MB through a 1 MiB ring: it wraps many times
        sent = [_bytes(sizes[(i + k) % len(sizes)], i * 10 + k) for k in range(2)]
        places = [out.put(memoryview(s)) for s in sent]
        assert None not in places
        for s, at in zip(sent, places):
            np.testing.assert_array_equal(_take(inbox, at, s.size), s)


def test_a_full_ring_refuses_until_the_reader_frees():
    out, inbox, _ = _rings()
    first, second = _bytes(400_000, 1), _bytes(400_000, 2)
    at1, at2 = out.put(memoryview(first)), out.put(memoryview(second))
    assert at1 is not None and at2 is not None
    assert out.put(memoryview(_bytes(400_000, 3))) is None  # would overwrite unread bytes
    np.testing.assert_array_equal(_take(inbox, at1, first.size), first)
    third = _bytes(400_000, 3)
    at3 = out.put(memoryview(third))
    assert at3 is not None
    np.testing.assert_array_equal(_take(inbox, at2, second.size), second)
    np.testing.assert_array_equal(_take(inbox, at3, third.size), third)


def test_over_half_the_ring_is_never_placed():
    out, _, _ = _rings()
    assert out.put(memoryview(_bytes(CAP // 2 + 1, 0))) is None


def test_an_emptied_ring_starts_over_at_the_front():
    out, inbox, _ = _rings()
    data = _bytes(300_000, 0)
    for _ in range(3):
        at = out.put(memoryview(data))
        assert at % CAP == 0  # the same, cache-warm bytes every time
        _take(inbox, at, data.size)


def test_lent_bytes_are_freed_in_ring_order_when_their_arrays_die():
    out, inbox, _ = _rings()
    at_a = out.put(memoryview(_bytes(300_000, 1)))
    at_b = out.put(memoryview(_bytes(300_000, 2)))
    a = inbox.lend(at_a, 300_000)
    b = inbox.lend(at_b, 300_000).view(np.float32)[10:]  # a view keeps it lent too
    np.testing.assert_array_equal(a, _bytes(300_000, 1))
    assert out.put(memoryview(_bytes(500_000, 3))) is None   # 600 KB of 1 MiB taken
    del b
    assert out.put(memoryview(_bytes(500_000, 3))) is None   # b's bytes wait behind a's
    a[:] = 0                                                 # writable, like a kernel's input
    del a
    assert out.put(memoryview(_bytes(500_000, 3))) is not None


def test_take_outside_the_ring_names_the_position():
    _, inbox, _ = _rings()
    with pytest.raises(ValueError, match="ring position 1048000"):
        _take(inbox, 1_048_000, 4096)
    with pytest.raises(ValueError, match="ring position -64"):
        _take(inbox, -64, 16)
    with pytest.raises(ValueError, match="ring position 1048000"):
        inbox.lend(1_048_000, 4096)


def test_no_ring_when_the_capacity_is_zero():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    assert shm.offer(a, 0) is None
    assert shm.offered(b) and shm.accept(b) is None


def test_no_ring_where_the_system_gives_no_memfd(monkeypatch):
    def refuse(*args):
        raise OSError(38, "Function not implemented")
    monkeypatch.setattr(os, "memfd_create", refuse)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    assert shm.offer(a, CAP) is None
    assert shm.offered(b) and shm.accept(b) is None


def test_a_frame_is_not_a_hello():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a.sendall(HEAD.pack(PUSH, 0, 0, 1, 0))
    assert not shm.offered(b)
    assert len(b.recv(HEAD.size)) == HEAD.size  # peeked, not consumed


def test_a_memfd_smaller_than_announced_is_refused():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    fd = os.memfd_create("small")
    os.ftruncate(fd, 4096)
    socket.send_fds(a, [shm._HELLO.pack(shm.HELLO, CAP)], [fd])
    os.close(fd)
    with pytest.raises(ValueError, match="memfd of 4096 bytes"):
        shm.accept(b)


def _conns(capacity=CAP):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    framing.tune(a)
    framing.tune(b)  # room in the socket for the frames that carry their payload
    out = shm.offer(a, capacity)
    inbox = shm.accept(b) if shm.offered(b) else None
    return Conn(a, out_ring=out), Conn(b, in_ring=inbox)


def _read_all(conn, frames):
    got = []
    reader = threading.Thread(target=lambda: got.extend(conn.read() for _ in range(frames)))
    reader.start()
    return got, reader


def test_frame_mixing_ring_and_in_frame_payloads_round_trips():
    send, recv = _conns()
    tensors = [np.arange(10, dtype=np.int32),                      # small: in the frame
               np.arange(100_000, dtype=np.float32).reshape(250, 400),  # 400 KB: ring
               np.array([b"x" * 200_000], object),                 # strings: in the frame
               np.arange(80_000, dtype=np.float64)[::2],           # not contiguous: frame
               np.full(600_000, 3, np.uint8),                      # over half: in the frame
               np.ones((512, 256), np.float32)]                    # 512 KB: ring
    before = dict(framing.STATS)
    got, reader = _read_all(recv, 1)
    send.send(PUSH, 0, 0, 9, b"k", tensors)
    reader.join(10)
    out = got[0][5]
    for sent, received in zip(tensors, out):
        assert received.dtype == sent.dtype and received.shape == sent.shape
        np.testing.assert_array_equal(received, sent)
    ring = 400_000 + 512 * 256 * 4
    assert framing.STATS["ring_bytes_out"] - before["ring_bytes_out"] == ring
    assert framing.STATS["ring_bytes_in"] - before["ring_bytes_in"] == ring
    # The ring's tensors are writable views of the ring itself (no copy), whose bytes
    # stay taken while anything refers to them, and are free once nothing does.
    out[1][0, 0] = -1.0
    half = memoryview(np.zeros(CAP // 2, np.uint8))
    assert send.out_ring.put(half) is None
    del out, got, received
    assert send.out_ring.put(half) is not None


def test_a_writer_never_waits_for_a_slow_reader():
    # Four 300 KB frames nobody reads yet: the fourth does not fit in the ring and goes
    # in its frame (which fits in the socket's buffer even at Linux's default cap);
    # all four arrive intact, in order.
    send, recv = _conns()
    sent = [np.full(75_000, i, np.float32) for i in range(4)]
    before = framing.STATS["ring_bytes_out"]
    writer = threading.Thread(target=lambda: [send.send(PUSH, 0, 0, i, b"", [t])
                                              for i, t in enumerate(sent)])
    writer.start()
    writer.join(10)
    assert not writer.is_alive()
    assert framing.STATS["ring_bytes_out"] - before == 3 * 300_000
    for i, t in enumerate(sent):
        kind, _, _, ident, _, out = recv.read()
        assert ident == i
        np.testing.assert_array_equal(out[0], t)


def test_a_frame_pointing_into_a_missing_ring_is_refused():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    h = Envelope().tensors.add(dtype=1, nbytes=1 << 18, shared=True, shared_at=0)
    h.shape.append(1 << 16)
    env = Envelope(tensors=[h]).SerializeToString()
    a.sendall(HEAD.pack(PUSH, 0, 0, 1, len(env)) + env)
    with pytest.raises(ValueError, match="ring this connection does not have"):
        Conn(b).read()


@pytest.mark.slow
@pytest.mark.parametrize("ring_bytes", ["16MiB", "0"])
@pytest.mark.transports("unix", why=ONE_WIRE)
def test_tasks_of_one_host_move_big_tensors_through_rings(ring_bytes, monkeypatch, fresh_graph):
    """A 1 MiB variable read by a worker and fetched by this process (over unix
    links), with rings and with TENSORWEAVE_SHM_RING_BYTES=0 (all in frames)."""
    monkeypatch.setenv("TENSORWEAVE_TRANSPORT", "unix")
    monkeypatch.setenv("TENSORWEAVE_SHM_RING_BYTES", ring_bytes)
    value = np.arange(1 << 18, dtype=np.float32).reshape(512, 512)
    with cluster_over("unix", ps=1, workers=1) as c:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(value, name="ring_v")
        with tf.device("/job:worker/task:0"):
            doubled = v * 2.0
        with tf.Session(c.target("worker", 0)) as sess:
            sess.run(v.initializer)
            before = framing.STATS["ring_bytes_in"]
            for _ in range(3):
                got = sess.run(doubled)
                np.testing.assert_array_equal(got, value * 2)
            through_ring = framing.STATS["ring_bytes_in"] - before
    assert through_ring == (3 * value.nbytes if ring_bytes != "0" else 0)
