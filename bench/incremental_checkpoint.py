"""What an incremental checkpoint costs next to a full one, on an embedding model.

An embedding of `--rows` x `--dim` float32 (with its Adagrad slot) trained on batches of
`--batch` ids drawn from a Zipf distribution (a few hot ids, a long tail: what
recommendation models see). After a full save, `--links` incremental saves follow, each
`--steps` training steps after the one before. Printed: bytes on disk and seconds per
save, full (also a plain Saver's, without digests) and incremental, and the seconds to
restore the full checkpoint alone and the full one plus the chain (the chain must
restore exactly the trained values).

Run: python -m bench.incremental_checkpoint [--rows 500000 --dim 32 --steps 50]
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np


def _size(prefix: str) -> int:
    d, base = os.path.split(prefix)
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
               if f.startswith(base + "-") or f == base + ".index")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=50, help="training steps between saves")
    ap.add_argument("--links", type=int, default=5, help="incremental saves after the full")
    args = ap.parse_args(argv)
    full_s, full_b, plain_s, links, restore_full, restore_chain = _measure(args)
    mb = 1 << 20
    print(f"embedding {args.rows} x {args.dim} float32 + Adagrad slot; Zipf(1.2) batches "
          f"of {args.batch}; {args.steps} steps between saves")
    print(f"full save:        {full_b / mb:8.2f} MB  {full_s:6.3f} s   (a plain Saver's: "
          f"{plain_s:.3f} s; the difference is recording the digests)")
    for i, (s, b) in enumerate(links, 1):
        print(f"incremental #{i}:   {b / mb:8.2f} MB  {s:6.3f} s   "
              f"({b / full_b:6.2%} of the full one's bytes)")
    print(f"restore full:     {restore_full:6.3f} s")
    print(f"restore full + {args.links} links: {restore_chain:6.3f} s (values exact)")


def _measure(args: argparse.Namespace) -> tuple:
    import tensorweave as tf
    from tensorweave.train.incremental_checkpoints import incremental_path

    rng = np.random.default_rng(0)
    emb = tf.get_variable("emb", [args.rows, args.dim],
                          initializer=tf.random_uniform_initializer(-0.1, 0.1))
    ids = tf.placeholder(tf.int64, [None])
    loss = tf.reduce_sum(tf.square(tf.nn.embedding_lookup(emb, ids)))
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdagradOptimizer(0.05).minimize(loss, global_step=step)
    saver = tf.train.Saver(sharded=True, incremental_save_restore=True, max_to_keep=None)
    plain = tf.train.Saver(sharded=True, max_to_keep=None)
    d = tempfile.mkdtemp(prefix="bench-incr-")
    try:
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            t = time.perf_counter()
            plain.save(sess, os.path.join(d, "plain.ckpt"), write_meta_graph=False)
            plain_s = time.perf_counter() - t
            t = time.perf_counter()
            full = saver.save(sess, os.path.join(d, "model.ckpt"), global_step=step,
                              write_meta_graph=False)
            full_s, full_b = time.perf_counter() - t, _size(full)
            links = []
            for _ in range(args.links):
                for _ in range(args.steps):
                    batch = np.minimum(rng.zipf(1.2, args.batch), args.rows) - 1
                    sess.run(train, {ids: batch})
                t = time.perf_counter()
                p = saver.incremental_save(sess, incremental_path(d), global_step=step)
                links.append((time.perf_counter() - t, _size(p)))
            want = sess.run(emb)
            sess.run(tf.global_variables_initializer())
            t = time.perf_counter()
            saver.restore(sess, full)
            restore_full = time.perf_counter() - t
            t = time.perf_counter()
            saver.restore(sess, p)
            restore_chain = time.perf_counter() - t
            assert np.array_equal(sess.run(emb), want), "the chain restored other values"
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return full_s, full_b, plain_s, links, restore_full, restore_chain


if __name__ == "__main__":
    main()
