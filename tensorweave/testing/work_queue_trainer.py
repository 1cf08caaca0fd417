"""A between-graph trainer over a WorkQueue, for exactly-once tests: one task, from TF_CONFIG.

Each line of the data files is an example's id; "training" adds 1 to the example's
count in a variable on the ps (`counts`) and 1 to `global_step`, in one step, so after
the job that variable says how many times the model trained each example. Workers read
their slices with DeepRec's pattern, `TextLineDataset(queue.input_dataset())`, two lines
a step, and print one line a step, `step <n> worker:<i> ids <ids> gs <global step> t
<time>`. Worker 0 initializes the model; every worker waits until all have joined before
training (a restarted one finds them joined). A ps task serves.

With `--checkpoint_dir`, worker 0 is a chief that saves the model and the queue (one
`tf.train.Saver`) every `--save_every` of its steps (`saving t <time>`, then `saved
<path> t <time>`), and a restarted one restores the latest checkpoint over the live ps
and workers before it trains (`restored <path> t <time>`), as a restarted chief's
session manager does.

Example (one process per task):
    $ TF_CONFIG='{"cluster": {...}, "task": {"type": "worker", "index": 1}}' \\
        python -m tensorweave.testing.work_queue_trainer --data_dir /tmp/d --examples 48
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from typing import Any

import tensorweave as tf

QUEUE_SEED = 11


def build(cluster: Any, index: int, files: list[str], examples: int) -> dict[str, Any]:
    """The model of worker `index` (also what a reader of the ps's state builds)."""
    with tf.device(tf.train.replica_device_setter(
            cluster=cluster, worker_device=f"/job:worker/task:{index}")):
        counts = tf.get_variable("counts", [examples], tf.int64, tf.zeros_initializer(),
                                 trainable=False)
        joined = tf.get_variable("joined", [], tf.int64, tf.zeros_initializer(),
                                 trainable=False)
        global_step = tf.train.get_or_create_global_step()
        queue = tf.WorkQueue(files, num_epochs=1, shuffle=True, seed=QUEUE_SEED)
        lines = tf.data.TextLineDataset(queue.input_dataset()).batch(2)
        ids = tf.string_to_number(lines.make_one_shot_iterator().get_next(), tf.int64)
        # One step, one task (the ps): a save or a restore sees both updates or neither.
        with tf.control_dependencies([tf.scatter_add(counts, ids, tf.ones_like(ids))]):
            train = tf.assign_add(global_step, 1)
    return {"counts": counts, "joined": joined, "queue": queue, "ids": ids, "train": train,
            "join": tf.assign_add(joined, 1), "global_step": global_step,
            "init": tf.variables_initializer([counts, joined, global_step]),
            "ready": tf.is_variable_initialized(joined)}


def _wait(sess: Any, check: Any, want: Any) -> None:
    while not want(sess.run(check)):
        time.sleep(0.05)


def _restore_latest(sess: Any, saver: Any, checkpoint_dir: str) -> None:
    """A restarted chief: the model and the queue go back to the latest checkpoint."""
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    if latest:
        saver.restore(sess, latest)
        print(f"restored {latest} t {time.time():.3f}", flush=True)


def train(server: Any, cluster: Any, index: int, args: argparse.Namespace) -> None:
    files = sorted(glob.glob(os.path.join(args.data_dir, "part-*.txt")))
    m = build(cluster, index, files, args.examples)
    chief_saves = index == 0 and bool(args.checkpoint_dir)
    saver = tf.train.Saver() if chief_saves else None
    if chief_saves:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
    pace = args.step_secs if index == 0 or args.worker_step_secs is None \
        else args.worker_step_secs
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{index}"])
    with tf.Session(server.target, config=config) as sess:
        if index == 0 and not sess.run(m["ready"]):
            sess.run(m["init"])
        elif saver is not None:
            _restore_latest(sess, saver, args.checkpoint_dir)
        _wait(sess, m["ready"], bool)
        sess.run(m["join"])
        _wait(sess, m["joined"], lambda n: n >= len(cluster.as_dict()["worker"]))
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        step = 0
        try:
            while True:
                ids, gs = sess.run([m["ids"], m["train"]])
                step += 1
                print(f"step {step} worker:{index} ids {' '.join(map(str, ids))} gs {gs} "
                      f"t {time.time():.3f}", flush=True)
                if saver is not None and step % args.save_every == 0:
                    print(f"saving t {time.time():.3f}", flush=True)
                    path = saver.save(sess, os.path.join(args.checkpoint_dir, "model.ckpt"),
                                      global_step=m["global_step"])
                    print(f"saved {path} t {time.time():.3f}", flush=True)
                time.sleep(pace)
        except tf.errors.OutOfRangeError:
            print(f"done worker:{index}", flush=True)
        coord.request_stop()
        coord.join(threads)


def main(argv: list[str] | None = None) -> None:
    """Runs the task TF_CONFIG names: a ps serves, a worker trains."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", required=True, help="holds part-*.txt, an id a line")
    parser.add_argument("--examples", type=int, required=True, help="ids are 0..examples-1")
    parser.add_argument("--step_secs", type=float, default=0.1)
    parser.add_argument("--worker_step_secs", type=float, default=None,
                        help="the pace of workers other than worker 0 (default --step_secs)")
    parser.add_argument("--checkpoint_dir", default="",
                        help="worker 0 saves here and, restarted, restores from here")
    parser.add_argument("--save_every", type=int, default=4, help="worker 0's steps a save")
    args = parser.parse_args(argv)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if not resolver.task_type:
        sys.exit("work_queue_trainer: set TF_CONFIG with a \"cluster\" and a \"task\".")
    cluster, job, index = resolver.cluster_spec(), resolver.task_type, resolver.task_id or 0
    server = tf.train.Server(cluster, job_name=job, task_index=index)
    if job == "ps":
        server.join()
    else:
        train(server, cluster, index, args)


if __name__ == "__main__":
    main()
