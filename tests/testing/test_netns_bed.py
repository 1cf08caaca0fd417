"""The multi-host test bed itself (`tensorweave.testing.netns`): hosts reach each other
over TCP on their own addresses, namespaces are always removed (also when the body
fails), stale ones of dead processes are swept, and unplugging a host is a silent
partition. Skipped unless root with `ip netns`."""
from __future__ import annotations

import os
import socket
import subprocess

import pytest

from tensorweave.testing.netns import PREFIX, NetnsBed, in_netns, sweep_stale, unavailable_reason

_REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _listen(bed: NetnsBed, host: str) -> socket.socket:
    return in_netns(bed.netns(host), lambda: socket.create_server((bed.ips[host], 7000)))


def test_hosts_talk_over_their_own_addresses_and_are_removed() -> None:
    with NetnsBed(["a", "b"]) as bed:
        made = {bed.netns("a"), bed.netns("b")}
        assert made <= _namespaces()
        assert bed.ips["a"] != bed.ips["b"]
        assert all(ip.startswith("10.213.") for ip in bed.ips.values())
        with _listen(bed, "b") as srv:
            with bed.connect("a", (bed.ips["b"], 7000)) as c:
                peer, _ = srv.accept()
                with peer:
                    assert peer.getpeername()[0] == bed.ips["a"]  # no NAT, no loopback
                    c.sendall(b"hi")
                    assert peer.recv(2) == b"hi"
    assert not made & _namespaces()


def test_a_failing_body_still_removes_everything() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with NetnsBed(["a"]) as bed:
            proc = bed.popen("a", ["sleep", "60"])
            made = bed.netns("a")
            raise RuntimeError("boom")
    assert proc.poll() is not None
    assert made not in _namespaces()


def test_sweep_removes_namespaces_of_dead_processes_only() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale, live = f"{PREFIX}{dead.pid}-9-x", f"{PREFIX}{os.getpid()}-99-x"
    for name in (stale, live):
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert stale in sweep_stale()
        assert stale not in _namespaces() and live in _namespaces()
    finally:
        for name in (stale, live):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_unplug_is_a_silent_partition_and_plug_heals_it() -> None:
    with NetnsBed(["a", "b"]) as bed:
        with _listen(bed, "b") as srv:
            bed.unplug("b")
            with pytest.raises((TimeoutError, socket.timeout)):  # no refusal, no reset
                bed.connect("a", (bed.ips["b"], 7000), timeout=0.5)
            bed.plug("b")
            bed.wait_listening("a", (bed.ips["b"], 7000), timeout=10)
            srv.accept()[0].close()
