"""Convolution kernels' speed: conv2d (MNIST-sized) and depthwise 3x3 forward + backward
(MobileNet-sized), milliseconds per `sess.run`, best of several runs.

Prints our figures and, when TENSORFLOW_PYTHON is set (see bench/common.py), real
TensorFlow's in the same run with the ratio. These were timed assertions in the test suite;
timings belong here, where a noisy shared machine shows as a figure, not a failure.

    .venv/bin/python -m bench.conv_speed
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from bench.common import ours_and_tf

RNG = np.random.default_rng(0)


def _best_ms(sess: Any, fetch: Any, feed: dict, rounds: int = 5, runs: int = 5) -> float:
    sess.run(fetch, feed)  # warm-up: plan, allocate
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(runs):
            sess.run(fetch, feed)
        best = min(best, (time.perf_counter() - t0) / runs)
    return best * 1e3


def measure(tf: Any) -> dict[str, float]:
    out = {}
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [32, 28, 28, 1])
        w = tf.constant(RNG.normal(size=(5, 5, 1, 32)).astype(np.float32))
        y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
        with tf.Session() as sess:
            out["conv2d_ms"] = _best_ms(sess, y, {x: RNG.normal(size=(32, 28, 28, 1))})
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [32, 56, 56, 64])
        w = tf.constant(RNG.normal(size=(3, 3, 64, 1)).astype(np.float32))
        y = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
        fetch = [y] + tf.gradients(tf.reduce_sum(y), [x, w])
        with tf.Session() as sess:
            out["depthwise_fwd_bwd_ms"] = _best_ms(
                sess, fetch, {x: RNG.normal(size=(32, 56, 56, 64))}, rounds=3, runs=1)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    both = ours_and_tf("bench.conv_speed", measure, __doc__, argv)
    if both is None:
        return None
    ours, theirs = both
    labels = {"conv2d_ms": "conv2d 5x5, [32,28,28,1] -> 32 channels (ms/run)",
              "depthwise_fwd_bwd_ms": "depthwise 3x3 fwd+bwd, [32,56,56,64] (ms/run)"}
    for key, label in labels.items():
        line = f"{label}: tensorweave {ours[key]:.1f}"
        if theirs:
            line += f", tensorflow {theirs[key]:.1f}, ratio {ours[key] / theirs[key]:.2f}"
        print(line)
    if not theirs:
        print("tensorflow: not available (set TENSORFLOW_PYTHON to compare)")
    return {"tensorweave": ours, "tensorflow": theirs}


if __name__ == "__main__":
    main()
