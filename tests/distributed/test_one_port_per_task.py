"""Issue 15, "one port per task": a server listens on exactly one TCP port, its task
port, even after big tensors (the raw bulk path) have crossed it over gRPC. (Before,
a second, undocumented port opened for them; a firewall or a Kubernetes
NetworkPolicy that opened only the task port broke or slowed them.)

The listening sockets are read from /proc: the process's socket inodes
(/proc/PID/fd) matched against the LISTEN entries of /proc/PID/net/tcp and tcp6.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.transport.tcp import rpc
from tensorweave.testing.cluster import LocalCluster
from suite_markers import ONE_WIRE

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads Linux's /proc to list listening sockets")
_LISTEN = "0A"


def listening_tcp_ports(pid: int) -> set[int]:
    """The TCP ports process `pid` listens on (IPv4 and IPv6)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            next(f)
            for line in f:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == _LISTEN and inode in inodes:
                    ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def test_listening_tcp_ports_sees_a_second_port():
    # The helper itself can tell one port from two (so the test below can fail).
    import socket
    with socket.create_server(("127.0.0.1", 0)) as a, socket.create_server(("127.0.0.1", 0)) as b:
        ports = listening_tcp_ports(os.getpid())
        assert {a.getsockname()[1], b.getsockname()[1]} <= ports


@pytest.mark.slow
@pytest.mark.transports("tcp", why=ONE_WIRE)
def test_one_tcp_port_per_task_after_big_tensors_over_grpc(monkeypatch, graph):
    monkeypatch.setenv("TENSORWEAVE_TRANSPORT", "tcp")  # this process's connections too
    monkeypatch.delenv("TENSORWEAVE_BULK", raising=False)
    with LocalCluster(ps=1, workers=1, env={"TENSORWEAVE_TRANSPORT": "tcp"}) as lc:
        big = np.arange(2 << 20, dtype=np.float32)  # 8 MiB: far above the inline limit
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(big, name="big")
        with tf.Session(lc.target("worker", 0)) as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run(v), big)  # ps -> worker -> this process
            np.testing.assert_array_equal(sess.run(v * 2.0), big * 2)
        for (job, index), proc in lc.procs.items():
            task_port = int(lc.spec[job][index].rsplit(":", 1)[1])
            assert listening_tcp_ports(proc.pid) == {task_port}, (job, index)
        # The big answer came over a raw bulk connection to the worker's task port.
        worker_port = int(lc.spec["worker"][0].rsplit(":", 1)[1])
        assert any(port == worker_port and socks
                   for (_, port), socks in rpc.Client._bulk_client._idle.items())


@pytest.mark.transports("tcp", why=ONE_WIRE)
def test_bulk_off_still_moves_big_tensors_over_the_task_port(monkeypatch, graph):
    # TENSORWEAVE_BULK=0 keeps big tensors inside gRPC (slower, same single port).
    monkeypatch.setenv("TENSORWEAVE_TRANSPORT", "tcp")
    env = {"TENSORWEAVE_TRANSPORT": "tcp", "TENSORWEAVE_BULK": "0"}
    with LocalCluster(ps=1, workers=1, env=env) as lc:
        big = np.ones(1 << 20, np.float32) * 3
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(big, name="big")
        with tf.Session(lc.target("worker", 0)) as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run(v), big)
        for (job, index), proc in lc.procs.items():
            assert listening_tcp_ports(proc.pid) == {int(lc.spec[job][index].rsplit(":")[1])}
