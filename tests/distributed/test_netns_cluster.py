"""Clusters across hosts: each task in its own network namespace (`netns_bed`), so the
multi-machine path runs: TCP (gRPC and the bulk channel on the task port), with and
without TLS, never the same-host Unix links. Skipped unless root with `ip netns`."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from typing import Iterator

import pytest

from tensorweave.base import knobs
from tensorweave.distributed.transport.unix.link import socket_name
from tensorweave.launch.credentials import write_cluster_certificates
from tensorweave.testing.netns import NetnsBed
from tensorweave.testing.netns_cluster import NetnsCluster
from suite_markers import ACROSS_HOSTS

# Every test starts task processes on several hosts, for seconds each.
pytestmark = [pytest.mark.cluster, pytest.mark.slow]

HOSTS = {"ps": ["ps0"], "worker": ["worker0", "worker1"]}
TASKS = ("ps0", "worker0", "worker1")

# Run in a host's namespace by `_probe`: how this process reaches the ps, then one step
# on it. Prints one line "PROBE {json}".
_PROBE = r"""
import json, socket, sys
import tensorweave as tf
from tensorweave.base.address import same_host
from tensorweave.distributed import peers
from tensorweave.distributed.protocol.methods import WORKER_SERVICE
from tensorweave.distributed.transport.unix.link import socket_name
ps, worker = sys.argv[1], sys.argv[2]
out = {"same_host": same_host(ps)}
peer = peers.connect(ps, "/job:ps/task:0", WORKER_SERVICE)
out["peer"] = type(peer).__module__ + "." + type(peer).__name__
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(socket_name(ps))
    out["abstract"] = "connected"
except OSError as e:
    out["abstract"] = type(e).__name__
with tf.Graph().as_default():
    with tf.device("/job:ps/task:0"):
        v = tf.constant(3.0) * 2
    try:
        with tf.Session("grpc://" + worker) as sess:
            out["step"] = float(sess.run(v))
    except tf.errors.OpError as e:
        out["step"] = type(e).__name__ + ": " + e.message[:300]
print("PROBE " + json.dumps(out), flush=True)
"""


def _probe(bed: NetnsBed, host: str, ps: str, worker: str, env: dict[str, str] | None = None
           ) -> dict:
    """Runs `_PROBE` inside `host`; its findings."""
    import os
    proc = bed.popen(host, [sys.executable, "-c", _PROBE, ps, worker],
                     env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=60)
    lines = [line for line in out.splitlines() if line.startswith("PROBE ")]
    assert lines, f"the probe in {host} printed no result:\n{out[-3000:]}"
    return json.loads(lines[-1][len("PROBE "):])


@pytest.fixture(scope="module")
def tls_env(netns_bed: NetnsBed) -> Iterator[dict[str, str]]:
    """One CA and one certificate naming every host of the bed (as `tensorweave certs
    --host ...` makes for several machines)."""
    with tempfile.TemporaryDirectory(prefix="tw-netns-tls-") as d:
        files = write_cluster_certificates(d, netns_bed.ips.values(), token=False)
        yield {**knobs.TLS_CA.setting(files["ca.crt"]),
               **knobs.TLS_CERT.setting(files["tls.crt"]),
               **knobs.TLS_KEY.setting(files["tls.key"])}


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
@pytest.mark.transports("grpc", why=ACROSS_HOSTS)
def test_tasks_on_distinct_hosts_talk_over_tcp(netns_bed: NetnsBed, tls_env: dict[str, str],
                                               tls: bool) -> None:
    env = tls_env if tls else {}
    with NetnsCluster(netns_bed, HOSTS, env=env) as c:
        ps, worker = c.spec["ps"][0], c.spec["worker"][0]
        found = _probe(netns_bed, "worker1", ps, worker, env)
        print(f"from worker1's host (tls={tls}): {found}")
        # An address of another host is not this host: the TCP link is chosen, and the
        # ps's same-host socket (abstract, so per network namespace) is out of reach.
        assert found["same_host"] is False
        assert found["peer"] == "tensorweave.distributed.transport.tcp.peer.GrpcPeer"
        assert found["abstract"] == "ConnectionRefusedError"
        assert found["step"] == 6.0
        # ... while inside the ps's own host that socket answers.
        code = ("import socket, sys; s = socket.socket(socket.AF_UNIX); "
                "s.connect('\\0' + sys.argv[1]); print('connected')")
        here = netns_bed.popen("ps0", [sys.executable, "-c", code, socket_name(ps)[1:]],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert here.communicate(timeout=30)[0].strip() == "connected"
        assert c.alive()


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
@pytest.mark.transports("grpc", why=ACROSS_HOSTS)
def test_seed_trainer_finishes_across_hosts(netns_bed: NetnsBed, tls_env: dict[str, str],
                                            tmp_path: object, sync: bool, tls: bool) -> None:
    """examples/trainer.py (seed 002), one task per host: every task exits 0."""
    prog = [sys.executable, "examples/trainer.py", "--train_steps=100", "--hidden=32",
            "--log_every=25", f"--checkpoint_dir={tmp_path}",
            f"--sync_replicas={'true' if sync else 'false'}"]
    _finishes_across_hosts(netns_bed, prog, tls_env if tls else None, 90, "test accuracy")


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
@pytest.mark.transports("grpc", why=ACROSS_HOSTS)
def test_wide_and_deep_sync_finishes_across_hosts(netns_bed: NetnsBed,
                                                   tls_env: dict[str, str], tmp_path: object,
                                                   tls: bool) -> None:
    """examples/wide_deep.py (embeddings gathered and updated on the ps, sync replicas),
    one task per host, the cluster from TF_CONFIG: every task exits 0, the chief
    evaluates."""
    prog = [sys.executable, "examples/wide_deep.py", "--sync=true", "--train_steps=150",
            "--log_every=50", "--examples_per_worker=3000", "--eval_examples=1000",
            f"--data_dir={tmp_path}/data", f"--checkpoint_dir={tmp_path}/ckpt"]
    _finishes_across_hosts(netns_bed, prog, tls_env if tls else None, 120, "eval auc")


def _finishes_across_hosts(bed: NetnsBed, prog: list[str], tls_env: dict[str, str] | None,
                           timeout: float, chief_says: str) -> None:
    """`prog` as every task, one per host: each exits 0 and the chief prints `chief_says`.
    With TLS the ClusterSpec names the fault proxy (no faults set), whose byte counts
    show that each worker's traffic with the ps crossed hosts over TCP."""
    with NetnsCluster(bed, HOSTS, via_proxy=tls_env is not None, env=tls_env or {},
                      programs={"ps": prog, "worker": prog}) as c:
        codes = c.wait(timeout)
        outputs = {f"{job}{i}": c.output(job, i)[-2000:] for job, i in c.logs}
        assert codes == {("ps", 0): 0, ("worker", 0): 0, ("worker", 1): 0}, outputs
        assert chief_says in outputs["worker0"], outputs["worker0"]
        if c.proxy is not None:
            for worker in ("worker0", "worker1"):
                assert c.proxy.forwarded(worker, "ps0") > 0
                assert c.proxy.forwarded("ps0", worker) > 0


@pytest.mark.transports("grpc", why=ACROSS_HOSTS)
def test_client_outside_the_cluster_is_refused(netns_bed: NetnsBed) -> None:
    """A client on a host the ClusterSpec does not name (no credentials anywhere) is
    refused before any step runs, and the task logs who and why; the cluster goes on."""
    with NetnsCluster(netns_bed, HOSTS) as c:
        found = _probe(netns_bed, "outsider", c.spec["ps"][0], c.spec["worker"][0])
        print(f"outsider: {found}")
        assert str(found["step"]).startswith("UnavailableError"), found
        log = c.output("worker", 0)
        assert f"refused connection from {netns_bed.ips['outsider']}" in log, log
        assert "not a host of the cluster" in log, log
        assert c.alive()
