"""Input-side throughput: TFRecordDataset reading and tf.parse_example on click-log Examples.

Each Example has 5 float features, 5 string features and a variable-length int64 list
(1-7 hashed ids), as a wide & deep trainer's input; batches of 512. Prints examples/s for
reading + parsing through tf.data and for parse_example alone, and the same on real
TensorFlow (compat.v1) in the same run when TENSORFLOW_PYTHON is set (bench/common.py).

    .venv/bin/python -m bench.parse_example
"""
from __future__ import annotations

import os
import tempfile
import time
from typing import Any

import numpy as np

from bench.common import ours_and_tf

BATCH = 512
N_RECORDS = 8192


def _records(tf: Any) -> list[bytes]:
    rng = np.random.RandomState(0)
    t = tf.train
    out = []
    for _ in range(N_RECORDS):
        f = {f"d{i}": t.Feature(float_list=t.FloatList(value=[rng.rand()])) for i in range(5)}
        f.update({f"c{i}": t.Feature(bytes_list=t.BytesList(value=[b"v%d" % rng.randint(999)]))
                  for i in range(5)})
        ids = rng.randint(0, 10**6, rng.randint(1, 8)).tolist()
        f["ids"] = t.Feature(int64_list=t.Int64List(value=ids))
        out.append(t.Example(features=t.Features(feature=f)).SerializeToString())
    return out


def _spec(tf: Any) -> dict[str, Any]:
    spec = {f"d{i}": tf.FixedLenFeature([], tf.float32) for i in range(5)}
    spec.update({f"c{i}": tf.FixedLenFeature([], tf.string) for i in range(5)})
    spec["ids"] = tf.VarLenFeature(tf.int64)
    return spec


def _best_rate(run: Any, n_examples: int, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):  # best of a few rounds damps noise from the shared machine
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return n_examples / best


def measure(tf: Any) -> dict[str, float]:
    recs = _records(tf)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "clicks.tfrecord")
        with tf.python_io.TFRecordWriter(path) as w:
            for r in recs:
                w.write(r)
        with tf.Graph().as_default():
            ser = tf.placeholder(tf.string, [None])
            parsed = tf.parse_example(ser, _spec(tf))
            ds = tf.data.TFRecordDataset(path).batch(BATCH).map(
                lambda b: tf.parse_example(b, _spec(tf)))
            it = ds.make_initializable_iterator()
            nxt = it.get_next()
            with tf.Session() as sess:
                batches = [recs[i:i + BATCH] for i in range(0, N_RECORDS, BATCH)]

                def parse_only() -> None:
                    for b in batches:
                        sess.run(parsed, {ser: b})

                def pipeline() -> None:
                    sess.run(it.initializer)
                    while True:
                        try:
                            sess.run(nxt)
                        except tf.errors.OutOfRangeError:
                            return
                parse_only()
                return {"parse_example_per_s": _best_rate(parse_only, N_RECORDS),
                        "pipeline_per_s": _best_rate(pipeline, N_RECORDS)}


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    both = ours_and_tf("bench.parse_example", measure, __doc__, argv)
    if both is None:
        return None
    ours, theirs = both
    for key, what in (("parse_example_per_s", "parse_example alone"),
                      ("pipeline_per_s", "TFRecordDataset + batch + parse_example")):
        line = f"{what:40s} tensorweave {ours[key]:>10,.0f} examples/s"
        if theirs:
            line += f"   tensorflow {theirs[key]:>10,.0f}   ratio {ours[key] / theirs[key]:.2f}"
        print(line)
    return {"tensorweave": ours, "tensorflow": theirs}


if __name__ == "__main__":
    main()
