"""An EmbeddingVariable against hash buckets on a stream whose id space keeps growing.

Each step looks up and trains (Adagrad) a batch of `--batch` int64 ids: half drawn from
a Zipf distribution over the ids seen so far (a few hot ones, a long tail), half never
seen before (new users, new items), so the id space grows with the stream. The same
model runs on `tf.get_embedding_variable` and on a [`--buckets`, dim] variable looked up
at `id % buckets` (what `categorical_column_with_hash_bucket` does). Printed per model:
examples/s, the bytes of its table and slot after the stream (for the EmbeddingVariable the
rows in use and its id index), and for the buckets the
share of ids that share a row with another id (the collisions an EV does not have).

Run: python -m bench.embedding_variable [--steps 300 --batch 1024 --buckets 1048576]
At scale (100M distinct ids: bytes, RSS, insert and lookup rates; see
bench/embedding_variable_scale.py, which these flags run):
     nice python -m bench.embedding_variable --ids 100000000 [--dim 8 --slots 0]
     python -m bench.embedding_variable --ids 20000000 --filter-freq 3
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def _stream(steps: int, batch: int, seed: int = 0) -> list[np.ndarray]:
    # Ids are random 62-bit values (hashed user and item keys, as a log holds them).
    rng = np.random.default_rng(seed)
    seen = rng.integers(1, 2**62, 1)
    out = []
    for _ in range(steps):
        old = seen[np.minimum(rng.zipf(1.3, batch // 2), len(seen)) - 1]
        new = rng.integers(1, 2**62, batch - batch // 2)
        seen = np.concatenate([seen, new])
        out.append(np.concatenate([old, new]).astype(np.int64))
    return out


def _run(model: str, batches: list[np.ndarray], dim: int, buckets: int) -> dict:
    import tensorweave as tf
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int64, [None])
        if model == "ev":
            table = tf.get_embedding_variable("emb", dim,
                                              initializer=tf.random_uniform_initializer())
            rows = tf.nn.embedding_lookup(table, ids)
        else:
            table = tf.get_variable("emb", [buckets, dim],
                                    initializer=tf.random_uniform_initializer())
            rows = tf.nn.embedding_lookup(table, ids % buckets)
        loss = tf.reduce_sum(tf.square(rows - 0.5))
        train = tf.train.AdagradOptimizer(0.05).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {ids: batches[0]})   # warm up
            t = time.perf_counter()
            for b in batches[1:]:
                sess.run(train, {ids: b})
            secs = time.perf_counter() - t
            if model == "ev":   # the rows in use (table + slot) and the id index
                n = len(sess.run(table.saveable_objects()[0].specs[0].tensor))
                res = sess._runtime.device.resource_mgr.lookup("", "emb")
                nbytes = 2 * n * dim * 4 + res.index.nbytes
            else:
                nbytes = 2 * buckets * dim * 4
    return {"examples_s": sum(len(b) for b in batches[1:]) / secs, "bytes": nbytes}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=None, help="16 (the scale mode: 8)")
    ap.add_argument("--buckets", type=int, default=1 << 20)
    ap.add_argument("--ids", type=int, default=0,
                    help="the scale mode: this many distinct ids (embedding_variable_scale)")
    ap.add_argument("--filter-freq", type=int, default=0, help="(scale mode)")
    ap.add_argument("--slots", type=int, default=0, help="(scale mode)")
    args = ap.parse_args(argv)
    if args.ids:
        from bench import embedding_variable_scale
        embedding_variable_scale.main(["--ids", str(args.ids), "--dim", str(args.dim or 8),
                                       "--slots", str(args.slots),
                                       "--filter-freq", str(args.filter_freq)])
        return
    args.dim = args.dim or 16
    batches = _stream(args.steps, args.batch)
    distinct = np.unique(np.concatenate(batches))
    rows = distinct % args.buckets
    shared = 1.0 - len(np.unique(rows)) / len(distinct)
    print(f"{args.steps} steps of {args.batch} ids (half new each step): "
          f"{len(distinct):,} distinct ids; dim {args.dim}, Adagrad (table + 1 slot)")
    for model in ("ev", "buckets"):
        r = _run(model, batches, args.dim, args.buckets)
        extra = f"; {shared:.1%} of the ids share a row" if model == "buckets" else ""
        name = "EmbeddingVariable" if model == "ev" else f"{args.buckets:,} hash buckets"
        print(f"{name:<24} {r['examples_s']:>10,.0f} examples/s  "
              f"{r['bytes'] / 2**20:8.1f} MiB{extra}")


if __name__ == "__main__":
    main()
