"""bench.security: what authentication and TLS cost (issue 12).

For each transport (gRPC across machines, unix on one host) and each mode (none,
shared token, mutual TLS), a 1 ps + 1 worker cluster of real processes on
loopback; the client (this process, same credentials) runs:

* small steps: a 1000-float assign_add placed on the worker for a ps variable
  (RunStep to the worker, RunGraph to the ps, 4 KB each way);
* a 16 MiB fetch of a ps variable (ps -> worker -> client: the bulk side channel
  on gRPC, over TLS in TLS mode).

Each figure comes with the CPU seconds the two server processes used, which the
machine's other load disturbs less than wall time.

    $ .venv/bin/python -m bench.security [--steps N]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

import tensorweave as tf
from bench.common import process_cpu_s
from tensorweave.distributed.transport import credentials as C
from tensorweave.launch.credentials import write_cluster_certificates
from tensorweave.testing.cluster import LocalCluster


def _cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of the processes so far (Linux /proc)."""
    return sum(process_cpu_s(pid) or 0.0 for pid in pids)


def _modes(files: dict[str, str]) -> dict[str, dict[str, str]]:
    return {"none": {}, "token": {C.TOKEN_FILE_ENV: files["token"]},
            "tls": {C.CA_ENV: files["ca.crt"], C.CERT_ENV: files["tls.crt"],
                    C.KEY_ENV: files["tls.key"]}}


def _measure(transport: str, env: dict[str, str], steps: int) -> dict[str, float]:
    os.environ["TENSORWEAVE_TRANSPORT"] = transport
    C.set_default(C.Credentials.from_env(env) if env else C.NONE)
    with LocalCluster(1, 1, env={**env, "TENSORWEAVE_TRANSPORT": transport}) as cluster, \
            tf.Graph().as_default():
        pids = [p.pid for p in cluster.procs.values()]
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(tf.zeros([1000]))
            big = tf.Variable(tf.zeros([4 << 20]))  # 16 MiB
        with tf.device("/job:worker/task:0"):
            step = tf.assign_add(v, tf.ones([1000]))
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(20):
                sess.run(step)
            cpu, start = _cpu_s(pids), time.perf_counter()
            for _ in range(steps):
                sess.run(step)
            step_s = (time.perf_counter() - start) / steps
            step_cpu = (_cpu_s(pids) - cpu) / steps
            sess.run(big)
            cpu, start = _cpu_s(pids), time.perf_counter()
            for _ in range(5):
                sess.run(big)
            fetch_s = (time.perf_counter() - start) / 5
            fetch_cpu = (_cpu_s(pids) - cpu) / 5
    return {"step_ms": step_s * 1e3, "step_cpu_ms": step_cpu * 1e3,
            "fetch_mib_s": 16 / fetch_s, "fetch_cpu_ms": fetch_cpu * 1e3}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="what authentication and TLS cost")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    saved = os.environ.get("TENSORWEAVE_TRANSPORT")
    with tempfile.TemporaryDirectory() as d:
        files = write_cluster_certificates(d, ["localhost"])
        print(f"{'transport':9s} {'mode':6s} {'step ms':>8s} {'(server CPU ms)':>16s} "
              f"{'16 MiB fetch MiB/s':>19s} {'(server CPU ms)':>16s}")
        try:
            for transport in ("tcp", "unix"):
                for mode, env in _modes(files).items():
                    r = results[f"{transport}/{mode}"] = _measure(transport, env, args.steps)
                    print(f"{transport:9s} {mode:6s} {r['step_ms']:8.2f} "
                          f"{r['step_cpu_ms']:16.2f} {r['fetch_mib_s']:19.0f} "
                          f"{r['fetch_cpu_ms']:16.1f}", flush=True)
        finally:
            C.set_default(None)
            if saved is None:
                os.environ.pop("TENSORWEAVE_TRANSPORT", None)
            else:
                os.environ["TENSORWEAVE_TRANSPORT"] = saved
    return results


if __name__ == "__main__":
    main()
