"""The `tensorweave` command line: --help everywhere, argument errors, `server`."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tensorweave.launch.cli import main
from tensorweave.launch.topology import free_ports
from suite_markers import WHOLE_JOB

SUBCOMMANDS = ("launch", "server", "manifest")


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tensorweave", *args], capture_output=True,
                          text=True, timeout=60, check=False, **kw)


def test_top_level_help_lists_subcommands():
    r = _cli("--help")
    assert r.returncode == 0
    for name in SUBCOMMANDS:
        assert name in r.stdout


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_subcommand_help(name, capsys):
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert f"tensorweave {name}" in out
    assert "--" in out


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_missing_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["launch", "--workers", "1"])
    assert e.value.code == 2
    assert "put the program after '--'" in capsys.readouterr().err


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_chief_with_pass_flags_is_refused(capsys):
    assert main(["launch", "--chief", "--pass-flags", "--", "true"]) == 2
    assert "--chief and --pass-flags" in capsys.readouterr().err


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_server_without_cluster_names_what_to_do(capsys, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert main(["server"]) == 2
    assert "--cluster" in capsys.readouterr().err


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"server on port {port} did not listen")


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_server_from_tf_config_stops_on_signal(sig, code):
    ps_port, worker_port = free_ports(2)
    tf_config = {"cluster": {"ps": [f"localhost:{ps_port}"],
                             "worker": [f"localhost:{worker_port}"]},
                 "task": {"type": "ps", "index": 0}}
    env = dict(os.environ, TF_CONFIG=json.dumps(tf_config))
    proc = subprocess.Popen([sys.executable, "-m", "tensorweave", "server"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_port(ps_port, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert f"listening on localhost:{ps_port}" in err
    assert "/job:ps/replica:0/task:0" in err
    assert "stopped on" in err


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_server_flags_override_and_port_in_use_is_reported():
    (port,) = free_ports(1)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        r = _cli("server", "--job", "ps", "--task", "0",
                 "--cluster", json.dumps({"ps": [f"localhost:{port}"]}),
                 env=dict(os.environ, TF_CONFIG=""))
    assert r.returncode == 1
    assert str(port) in r.stderr and "in use" in r.stderr
