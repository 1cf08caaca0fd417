"""Ports for local clusters: handed out once per machine for a while, and a task whose port
another process took is not mistaken for a running task."""
from __future__ import annotations

import os
import socket

import pytest

from tensorweave.distributed import topology
from tensorweave.distributed.topology import free_ports
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from suite_markers import PORT


def test_ports_handed_out_are_not_handed_out_again_while_claimed():
    first = free_ports(8)
    later = [p for _ in range(20) for p in free_ports(4)]
    assert len(set(first)) == 8
    assert not set(first) & set(later)
    assert len(set(later)) == len(later)


def test_a_port_another_process_claimed_just_now_is_skipped(monkeypatch, tmp_path):
    monkeypatch.setattr(topology, "_claims_dir", lambda: str(tmp_path))
    offered = []
    real_claim = topology._claim

    def claim(port: int) -> bool:
        offered.append(port)
        if len(offered) == 1:  # as if a concurrent caller had claimed the first offer
            assert real_claim(port)
        return real_claim(port)
    monkeypatch.setattr(topology, "_claim", claim)
    (port,) = free_ports(1)
    assert port != offered[0] and port == offered[1]
    assert sorted(os.listdir(tmp_path)) == sorted(str(p) for p in offered)


def test_an_old_claim_is_taken_over(monkeypatch, tmp_path):
    monkeypatch.setattr(topology, "_claims_dir", lambda: str(tmp_path))
    (tmp_path / "4242").touch()
    os.utime(tmp_path / "4242", (0, 0))
    assert topology._claim(4242)
    assert not topology._claim(4242)


@pytest.mark.transports("grpc", "tcp", "unix", why=PORT)
def test_a_task_whose_port_another_process_holds_fails_to_start():
    """The cluster's start must not return because *something* answers on the port: the
    task could not bind it, and its error says so."""
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    port = squatter.getsockname()[1]
    spec = cluster_dict(1, 0)
    spec["ps"] = [f"localhost:{port}"]
    try:
        with pytest.raises(RuntimeError, match=f"localhost:{port} exited with code"):
            LocalCluster(spec=spec).start()
    finally:
        squatter.close()
