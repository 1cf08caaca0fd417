"""Issue 32: a task without credentials admits connections only from its cluster's hosts.

A server with neither TLS nor a token closes, right after `accept()`, a TCP
connection from an address that no host of its ClusterSpec has (names resolved,
loopback names meaning 127.0.0.1 and ::1), and logs the address and why;
`allow_from=` / `--allow-from` / TENSORWEAVE_ALLOW_FROM add hosts, addresses or
CIDRs. On one machine, 127.0.0.2 is an address outside a cluster that names
127.0.0.1 only (and the other way round): Linux routes all of 127/8 to loopback.
"""
from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys

import pytest

import tensorweave as tf
from tensorweave.base import knobs
from tensorweave.distributed.topology import free_ports
from tensorweave.distributed.transport import admission, sidechannel
from tensorweave.distributed.transport.admission import PeerFilter
from tensorweave.distributed.transport.credentials import Credentials
from tensorweave.launch.cli import build_parser, main
from tensorweave.launch.file_flags import apply_allow_from
from suite_paths import REPO_ROOT
from suite_markers import ONE_WIRE

ROOT = REPO_ROOT


@pytest.fixture(autouse=True)
def _fresh_refusal_log(monkeypatch):
    # log_refused says a (host, reason) once per 10 s: each test sees its own lines.
    monkeypatch.setattr(sidechannel, "_last_logged", {})
    monkeypatch.delenv(knobs.ALLOW_FROM.name, raising=False)


# ----- the filter ---------------------------------------------------------------------

def test_a_loopback_cluster_admits_loopback_only():
    f = PeerFilter(["localhost:2222", "localhost:2223"], task="ps0")
    for peer in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        assert f.refusal(peer) is None, peer
    for peer in ("127.0.0.2", "10.0.0.7", "192.168.1.20", "fe80::1"):
        why = f.refusal(peer)
        assert why is not None and why.startswith(f"{peer} is not a host of the cluster"), why
        assert "--allow-from" in why and knobs.ALLOW_FROM.name in why


def test_every_host_of_the_cluster_is_admitted_and_only_those():
    f = PeerFilter(["10.0.0.5:2222", "[fd00::7]:2222", "127.0.0.1:2224"])
    assert f.refusal("10.0.0.5") is None and f.refusal("fd00::7") is None
    assert f.refusal("127.0.0.1") is None
    assert f.refusal("10.0.0.6") is not None and f.refusal("::1") is not None
    assert "10.0.0.5" in f.refusal("10.0.0.6")  # the reason shows whom it admits


def test_the_address_a_connection_reached_is_this_machine():
    f = PeerFilter(["10.0.0.5:2222"])
    assert f.refusal("172.17.0.3") is not None
    assert f.refusal("172.17.0.3", local="172.17.0.3") is None


def test_host_names_are_resolved_to_every_address():
    name = socket.gethostname()
    own = {info[4][0] for info in socket.getaddrinfo(name, None)}
    f = admission.for_server([f"{name}:2222"], "ps0", None)
    assert f is not None
    for ip in own:
        assert f.refusal(ip) is None, (name, ip)


def test_allow_from_widens_with_cidrs_addresses_and_names():
    f = PeerFilter(["localhost:2222"], ["10.1.0.0/16", "192.168.7.7", "localhost"])
    assert f.refusal("10.1.200.3") is None and f.refusal("192.168.7.7") is None
    assert f.refusal("10.2.0.1") is not None and f.refusal("192.168.7.8") is not None
    assert PeerFilter(["localhost:1"], ["any"]).admits_any
    assert admission.for_server(["localhost:1"], "ps0", None, ["any"]) is None


def test_tasks_added_later_are_admitted():
    f = PeerFilter(["10.0.0.5:2222"])
    assert f.refusal("10.0.0.9") is not None
    f.add_hosts(["10.0.0.9:2222"])
    assert f.refusal("10.0.0.9") is None


def test_credentials_decide_instead_of_addresses(monkeypatch):
    assert admission.for_server(["localhost:1"], "ps0", Credentials(token=b"s3")) is None
    assert admission.for_server(["localhost:1"], "ps0", None) is not None
    monkeypatch.setenv(knobs.ALLOW_FROM.name, "10.9.0.0/16, any")
    assert admission.for_server(["localhost:1"], "ps0", None) is None


def test_the_module_examples_hold():
    import doctest
    assert doctest.testmod(admission).failed == 0


@pytest.mark.parametrize("entry, message", [
    ("10.0.0.7:22", "has a port"), ("10.0.0.0/40", "not a valid address or CIDR"),
    ("bad host", "not a host name"), ("", "is empty")])
def test_bad_allow_from_entries_are_named(entry, message):
    with pytest.raises(ValueError, match=message) as info:
        PeerFilter(["localhost:1"], [entry])
    assert repr(entry.strip()) in str(info.value) or entry == ""


# ----- a live server --------------------------------------------------------------------

def _server(host: str, **kwargs) -> tf.train.Server:
    port = free_ports(1)[0]
    return tf.train.Server({"ps": [f"{host}:{port}"]}, job_name="ps", task_index=0,
                           **kwargs)


def _port(server: tf.train.Server) -> int:
    return int(server.target.rsplit(":", 1)[1])


@pytest.mark.transports("tcp", why=ONE_WIRE)
def test_a_stranger_is_closed_before_a_byte_and_logged(caplog):
    server = _server("127.0.0.1")
    try:
        with caplog.at_level(logging.WARNING, "tensorweave.security"):
            with socket.socket() as stranger:
                stranger.bind(("127.0.0.2", 0))
                stranger.connect(("127.0.0.1", _port(server)))
                stranger.settimeout(10)
                stranger.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                try:  # closed unread: an end of stream, or a reset for the bytes sent
                    answer = stranger.recv(100)
                except ConnectionResetError:
                    answer = b""
                assert answer == b""  # nothing served
        lines = [r.getMessage() for r in caplog.records]
        assert any("refused connection from 127.0.0.2:" in line
                   and "127.0.0.2 is not a host of the cluster" in line for line in lines), lines
        with tf.Session(server.target) as sess:  # the cluster's own host still gets in
            assert sess.run(tf.constant(3)) == 3
    finally:
        server.stop()


CLIENT = r'''
import sys
import tensorweave as tf
try:
    with tf.Session(sys.argv[1]) as sess:
        print("RAN", sess.run(tf.constant(7)))
except tf.errors.OpError as e:
    print("REFUSED", type(e).__name__, e.message)
'''


def _client(target: str) -> str:
    """Runs a step from another process over TCP (from 127.0.0.1); its verdict line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORWEAVE_")}
    env.update({**knobs.TRANSPORT.setting("tcp"), **knobs.SESSION_DEADLINE_SECS.setting(5.0),
                "PYTHONPATH": str(ROOT)})
    r = subprocess.run([sys.executable, "-c", CLIENT, target], env=env, capture_output=True,
                       text=True, timeout=120, check=False)
    lines = [line for line in r.stdout.splitlines() if line.startswith(("RAN", "REFUSED"))]
    assert lines, r.stdout + r.stderr
    return lines[-1]


def _count_master_calls(server: tf.train.Server, monkeypatch) -> list[str]:
    calls: list[str] = []
    for name in ("create_session", "run_step"):
        real = getattr(server.master, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)
        monkeypatch.setattr(server.master, name, spy)
    return calls


@pytest.mark.slow
@pytest.mark.transports("tcp", why=ONE_WIRE)
def test_a_client_outside_the_cluster_is_refused_before_any_step(monkeypatch, caplog):
    server = _server("127.0.0.2")  # the client's TCP connections come from 127.0.0.1
    calls = _count_master_calls(server, monkeypatch)
    try:
        with caplog.at_level(logging.WARNING, "tensorweave.security"):
            verdict = _client(server.target)
        assert verdict.startswith("REFUSED UnavailableError"), verdict
        assert "admits only its ClusterSpec's hosts, --allow-from" in verdict  # the hint
        assert calls == []  # no session was created, no step ran
        assert any("refused connection from 127.0.0.1:" in r.getMessage()
                   for r in caplog.records)
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["argument", "knob"])
@pytest.mark.transports("tcp", why=ONE_WIRE)
def test_allow_from_admits_the_client(monkeypatch, how):
    if how == "knob":
        monkeypatch.setenv(knobs.ALLOW_FROM.name, "127.0.0.0/24")
        server = _server("127.0.0.2")
    else:
        server = _server("127.0.0.2", allow_from=["127.0.0.1"])
    calls = _count_master_calls(server, monkeypatch)
    try:
        assert _client(server.target) == "RAN 7"
        assert "run_step" in calls
    finally:
        server.stop()


@pytest.mark.transports("tcp", why=ONE_WIRE)
def test_allow_from_flag_sets_the_knob_and_checks_entries(monkeypatch, capsys):
    args = build_parser().parse_args(["server", "--allow-from", "10.0.0.0/8",
                                      "--allow-from", "ps9.example.com"])
    apply_allow_from(args)
    assert knobs.ALLOW_FROM.get() == ("10.0.0.0/8", "ps9.example.com")
    launch = build_parser().parse_args(["launch", "--allow-from", "any"])
    assert launch.allow_from == ["any"]
    assert main(["server", "--job", "ps", "--task", "0", "--cluster",
                 '{"ps": ["localhost:1"]}', "--allow-from", "10.0.0.1:80"]) == 2
    assert "has a port" in capsys.readouterr().err
