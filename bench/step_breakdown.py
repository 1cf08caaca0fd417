"""Where a distributed step's time goes: compute, transfer, waiting.

For each model, the same training step (batch 128, Adagrad) runs
  * locally: one process, no server (the compute, plus local session overhead);
  * as 1 ps (a server process) + 1 worker (this process, its own server),
    so the worker's Sends and Recvs cross the transport.
The worker's transport counters give the transfer time (encoding and sending
its frames, and reading frames once their head arrived; the reading runs on
the connection's thread while the step waits). Waiting is the rest: the ps's
share of the step (its Adagrad update), thread wake-ups and hand-offs.
The cpu columns are CPU ms per step of each process (the local run, the worker
with its in-process client and master, the ps): unlike wall time, a busy shared
machine barely moves them. With TENSORFLOW_PYTHON set (bench/common.py), "tf local"
is the same local step in real TF (compat.v1), measured in the same run: where it
is well below ours, the step's compute, not its distribution, sets the ratio.

    .venv/bin/python -m bench.step_breakdown [--steps 300]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

import numpy as np

from bench.common import import_framework, process_cpu_s, run_tf

MODELS = {"mlp128": ("mlp", 128), "mlp512": ("mlp", 512), "mlp2048": ("mlp", 2048),
          "deep20x64": ("deep", 20)}


def _build(tf: Any, kind: str, size: int, device_fn: Any) -> tuple[Any, Any, Any, dict]:
    rng = np.random.default_rng(0)
    width = 784 if kind == "mlp" else 64
    with tf.device(device_fn):
        x = tf.placeholder(tf.float32, [None, width])
        y = tf.placeholder(tf.int64, [None])
        if kind == "mlp":
            h = tf.nn.relu(tf.matmul(x, tf.get_variable("w1", [width, size])) +
                           tf.get_variable("b1", [size]))
            logits = tf.matmul(h, tf.get_variable("w2", [size, 10])) + tf.get_variable("b2", [10])
        else:
            h = x
            for i in range(size):
                h = tf.nn.relu(tf.matmul(h, tf.get_variable(f"w{i}", [64, 64])) +
                               tf.get_variable(f"b{i}", [64]))
            logits = h[:, :10]
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        gs = tf.train.get_or_create_global_step()
        train = tf.train.AdagradOptimizer(0.01).minimize(loss, global_step=gs)
    feed = {x: rng.normal(size=(128, width)).astype(np.float32),
            y: rng.integers(0, 10, size=128)}
    return train, gs, loss, feed


def _time_steps(sess: Any, fetches: list, feed: dict, steps: int,
                ps_pid: int | None = None) -> dict[str, float]:
    """Wall ms per step, and CPU ms per step of this process and of the ps process
    (CPU time is what a shared, noisy machine does not blur)."""
    for _ in range(20):
        sess.run(fetches, feed)
    ps0 = (process_cpu_s(ps_pid) or 0.0) if ps_pid else 0.0
    cpu0 = time.process_time()
    start = time.perf_counter()
    for _ in range(steps):
        sess.run(fetches, feed)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    ps = ((process_cpu_s(ps_pid) or 0.0) - ps0) if ps_pid else 0.0
    return {"ms": wall / steps * 1000, "cpu_ms": cpu / steps * 1000,
            "ps_cpu_ms": ps / steps * 1000}


def local_ms(kind: str, size: int, steps: int,
             framework: str = "tensorweave") -> dict[str, float]:
    tf = import_framework(framework)
    tf.reset_default_graph()
    train, gs, loss, feed = _build(tf, kind, size, None)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return _time_steps(sess, [train, gs, loss], feed, steps)


def distributed_ms(kind: str, size: int, steps: int) -> dict[str, float]:
    import tensorweave as tf
    from tensorweave.distributed.topology import free_ports
    from tensorweave.distributed.transport import unix
    tf.reset_default_graph()
    ports = free_ports(2)
    spec = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"]}
    ps = subprocess.Popen([sys.executable, "-m", "tensorweave.testing.cluster", "--job", "ps",
                           "--task", "0", "--cluster", json.dumps(spec)])
    try:
        server = tf.train.Server(spec, job_name="worker", task_index=0, exit_when_done=False)
        setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                                cluster=tf.train.ClusterSpec(spec))
        train, gs, loss, feed = _build(tf, kind, size, setter)
        with tf.Session(server.target) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(20):
                sess.run([train, gs, loss], feed)
            before = dict(unix.STATS)
            timed = _time_steps(sess, [train, gs, loss], feed, steps, ps.pid)
            after = dict(unix.STATS)
        server.stop()
    finally:
        ps.kill()
        ps.wait()
    n = steps + 20  # _time_steps warms up 20 more steps inside the counted window
    per = {k: (after[k] - before[k]) / n for k in after}
    return {**timed, "transfer_ms": (per["send_s"] + per["recv_s"]) * 1000,
            "frames": per["frames_out"] + per["frames_in"],
            "kbytes": (per["bytes_out"] + per["bytes_in"]) / 1024}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--framework", default="tensorweave")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.json:   # the local steps only (how run_tf gets real TF's column)
        local = {n: local_ms(*MODELS[n], args.steps, args.framework)["ms"]
                 for n in args.models.split(",")}
        print(json.dumps(local))
        return local
    tf_local = run_tf("bench.step_breakdown", "--steps", str(args.steps),
                      "--models", args.models) or {}
    # The worker is the only computing task (the ps is not counted), so its server picks,
    # per matmul shape, OpenBLAS's own threads or tensorweave's, whichever is faster now
    # (distributed/blas_threads.py); the local run stays on OpenBLAS's threads.
    print(f"{'model':10s} {'local':>8s} {'1ps+1w':>8s} {'compute':>8s} {'transfer':>9s} "
          f"{'waiting':>8s} {'frames':>7s} {'KiB/step':>9s} {'cpu:local':>10s} "
          f"{'worker':>7s} {'ps':>6s} {'tf local':>9s}   (ms per step)")
    results = {}
    for name in args.models.split(","):
        kind, size = MODELS[name]
        loc = local_ms(kind, size, args.steps)
        dist = distributed_ms(kind, size, args.steps)
        wait = max(dist["ms"] - loc["ms"] - dist["transfer_ms"], 0.0)
        results[name] = dict(dist, local_ms=loc["ms"], local_cpu_ms=loc["cpu_ms"],
                             waiting_ms=wait, tf_local_ms=tf_local.get(name))
        tf_col = f"{tf_local[name]:9.2f}" if name in tf_local else f"{'-':>9s}"
        print(f"{name:10s} {loc['ms']:8.2f} {dist['ms']:8.2f} {loc['ms']:8.2f} "
              f"{dist['transfer_ms']:9.2f} {wait:8.2f} {dist['frames']:7.1f} "
              f"{dist['kbytes']:9.0f} {loc['cpu_ms']:10.2f} {dist['cpu_ms']:7.2f} "
              f"{dist['ps_cpu_ms']:6.2f} {tf_col}", flush=True)
    return results


if __name__ == "__main__":
    main()
