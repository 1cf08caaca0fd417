"""Per-op overhead of `sess.run` on a chain of 200 small adds.

Prints microseconds per op and per run, and the same on real TensorFlow
(compat.v1) in the same run when TENSORFLOW_PYTHON is set (see bench/common.py).

    .venv/bin/python -m bench.op_overhead
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from bench.common import ours_and_tf

CHAIN = 200


def measure(tf: Any, runs: int = 200) -> dict[str, float]:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        y = x
        one = tf.constant(np.ones(4, np.float32))
        for _ in range(CHAIN):
            y = tf.add(y, one)
        with tf.Session(graph=g) as sess:
            feed = {x: np.zeros(4, np.float32)}
            for _ in range(20):
                sess.run(y, feed)
            best = float("inf")
            for _ in range(5):  # best of 5 rounds damps noise from the shared machine
                t0 = time.perf_counter()
                for _ in range(runs):
                    sess.run(y, feed)
                best = min(best, (time.perf_counter() - t0) / runs)
    return {"us_per_op": best * 1e6 / CHAIN, "us_per_run": best * 1e6}


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    both = ours_and_tf("bench.op_overhead", measure, __doc__, argv)
    if both is None:
        return None
    ours, theirs = both
    result = {"tensorweave": ours, "tensorflow": theirs}
    print(f"tensorweave: {ours['us_per_op']:.2f} us/op, {ours['us_per_run']:.1f} us/run "
          f"({CHAIN}-add chain)")
    tf_r = result["tensorflow"]
    if tf_r:
        print(f"tensorflow : {tf_r['us_per_op']:.2f} us/op, {tf_r['us_per_run']:.1f} us/run; "
              f"tensorweave/tensorflow = {ours['us_per_op'] / tf_r['us_per_op']:.2f}")
    else:
        print("tensorflow : not available (set TENSORFLOW_PYTHON to compare)")
    return result


if __name__ == "__main__":
    main()
