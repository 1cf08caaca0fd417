"""Per-run overhead of a small step through a session: local, and on a grpc:// session
whose step runs wholly on the master's own task (a queue runner's enqueue of one example,
the TF1 input idiom `slice_input_producer` + `batch`: one run per example).

Prints microseconds per run (wall), best of 3 rounds of 2,000 runs; with
TENSORFLOW_PYTHON set (bench/common.py), real TF's in the same run.

    .venv/bin/python -m bench.run_overhead
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from bench.common import free_ports, ours_and_tf

RUNS = 2000


def _enqueue_us(tf: Any, target: str) -> float:
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:0" if target else None):
            data = tf.constant(np.random.RandomState(0).rand(1400, 64).astype(np.float32))
            queue = tf.FIFOQueue(RUNS * 5, [tf.float32], shapes=[[64]])
            row = tf.gather(data, tf.random_uniform([], 0, 1400, tf.int32))
            enqueue = queue.enqueue([row])
        with tf.Session(target, graph=g) as sess:
            for _ in range(200):
                sess.run(enqueue)
            best = float("inf")
            for _ in range(3):  # best of 3 rounds: the machine is shared
                t0 = time.perf_counter()
                for _ in range(RUNS):
                    sess.run(enqueue)
                best = min(best, (time.perf_counter() - t0) / RUNS)
                sess.run(queue.dequeue_many(queue.size()))
    return best * 1e6


def measure(tf: Any) -> dict[str, float]:
    ps, worker = free_ports(2)
    cluster = tf.train.ClusterSpec({"ps": [f"localhost:{ps}"],
                                    "worker": [f"localhost:{worker}"]})
    servers = [tf.train.Server(cluster, job_name=job, task_index=0)
               for job in ("ps", "worker")]
    return {"local_us": _enqueue_us(tf, ""), "grpc_us": _enqueue_us(tf, servers[1].target)}


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    both = ours_and_tf("bench.run_overhead", measure, __doc__, argv)
    if both is None:
        return None
    ours, theirs = both
    print(f"tensorweave: enqueue of one example: local {ours['local_us']:.1f} us/run, "
          f"grpc:// session on its own task {ours['grpc_us']:.1f} us/run")
    if theirs:
        print(f"tensorflow : local {theirs['local_us']:.1f} us/run, grpc:// "
              f"{theirs['grpc_us']:.1f} us/run")
    else:
        print("tensorflow : not available (set TENSORFLOW_PYTHON to compare)")
    return {"tensorweave": ours, "tensorflow": theirs}


if __name__ == "__main__":
    main()
