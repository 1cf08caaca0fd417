"""EmbeddingVariables against hash buckets on a Criteo-format stream, 2 ps + 2 workers.

The data is `tensorweave.datasets.criteo.write_synthetic`: `label,I1..I13,C1..C26` lines
whose 26 categorical columns are drawn from a Zipf law over a vocabulary that grows with
the line number (later lines bring ids never seen before, a long tail). Each worker reads
its shard of the train file in order (TextLineDataset -> shard -> batch -> decode_csv with
DeepRec's modelzoo record_defaults), once by default: the job replays the log as a stream.

The model is the same in every variant but for the 26 categorical columns:

  * `buckets`: `categorical_column_with_hash_bucket(hash_bucket_size=--buckets)` (10,000,
    as DeepRec's modelzoo), tables split by `fixed_size_partitioner(2)`;
  * `buckets-large`: the same with `--large_buckets` (2**18) rows a column;
  * `ev`: `categorical_column_with_embedding(partition_num=2)` (DeepRec's EmbeddingVariable);
  * `ev+filter`: the same with `CounterFilter(filter_freq=--filter_freq)`: an id gets a row
    once it has been seen that often.

each through `embedding_column(dimension=8)`, beside the 13 counts (log1p), into an
`input_layer`, a [64, 32] ReLU DNN and a logit; sigmoid cross entropy, Adagrad; async
between-graph replication (`replica_device_setter`, `MonitoredTrainingSession`,
`StopAtStepHook`), one process per task on loopback.

There is no linear part: over the categorical columns it would be 26 more tables (twice
the sparse work on this 2-core machine) and the comparison is between the embeddings.

Measured per variant: examples/s over the job after `--warmup` global steps (global steps x
batch over the time between the workers' progress lines); the 4 processes' CPU time a
global step over the same stretch (steadier than wall time here: the job is CPU-bound and
the machine shared); both ps tasks' summed VmRSS after warm-up and at the end of training
(read before the ps tasks are stopped; TENSORWEAVE_NOTIFY_JOB_DONE=0 keeps them alive); the
embedding tables' bytes and ids in the final checkpoint (weights and Adagrad slots; an EV's
`-keys`, the buckets' rows); the eval AUC, computed by the chief from that checkpoint in a
local session. `auc_ceiling` is the AUC of the data's true click probabilities. With
`--rounds N` the variants run N times in turn and each keeps its fastest run.

    .venv/bin/python -m bench.ev_criteo [--train_lines 200000] [--steps N] [--batch 256]
        [--buckets 10000] [--large_buckets 262144] [--variants buckets,ev,...] [--rounds 1]
        [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from typing import Any

import numpy as np

from bench.common import ROOT, process_cpu_s

VARIANTS = ["buckets", "buckets-large", "ev", "ev+filter"]
NUM_INTS, NUM_CATS, DIM = 13, 26, 8
INTS = [f"I{i}" for i in range(1, NUM_INTS + 1)]
CATS = [f"C{i}" for i in range(1, NUM_CATS + 1)]
# "progress <time> <global step>" every --log_every local steps; "trained <time of the
# last step> <its global step>" once the worker's loop has ended.
PROGRESS = re.compile(r"(?:progress|trained) ([0-9.]+) (\d+)")
WORKER_TIMEOUT_S = 900


# ---- the task processes ---------------------------------------------------------------

def _batches(tf: Any, path: str, batch: int, shards: int = 1, index: int = 0,
             repeat: bool = False) -> tuple[dict[str, Any], Any]:
    """(features, labels) of `path`'s lines, decoded as DeepRec's modelzoo does."""
    defaults = [[0]] + [[0.0]] * NUM_INTS + [[" "]] * NUM_CATS
    dataset = tf.data.TextLineDataset(path).shard(shards, index)
    if repeat:  # a worker that ran ahead wraps around instead of ending the job early
        dataset = dataset.repeat()
    dataset = dataset.batch(batch).map(
        lambda lines: tf.io.decode_csv(lines, record_defaults=defaults)).prefetch(2)
    values = dataset.make_one_shot_iterator().get_next()
    features = dict(zip(INTS + CATS, values[1:]))
    return features, tf.cast(tf.reshape(values[0], [-1, 1]), tf.float32)


def _columns(tf: Any, variant: str, buckets: int, num_ps: int, filter_freq: int) -> list[Any]:
    fc = tf.feature_column
    numeric = [fc.numeric_column(k, normalizer_fn=tf.log1p) for k in INTS]
    if variant.startswith("buckets"):
        cats = [fc.categorical_column_with_hash_bucket(k, buckets, dtype=tf.string)
                for k in CATS]
    else:
        option = tf.EmbeddingVariableOption(
            filter_option=tf.CounterFilter(filter_freq=filter_freq)) \
            if variant == "ev+filter" else None
        cats = [fc.categorical_column_with_embedding(k, dtype=tf.string,
                                                     partition_num=num_ps, ev_option=option)
                for k in CATS]
    return numeric + [fc.embedding_column(c, dimension=DIM) for c in cats]


def _logits(tf: Any, features: dict[str, Any], columns: list[Any], num_ps: int) -> Any:
    # The partitioner splits the hash-bucket tables over the ps tasks; the EV columns
    # carry their own partition_num.
    with tf.variable_scope("inputs", partitioner=tf.fixed_size_partitioner(num_ps)):
        net = tf.feature_column.input_layer(features, columns)
    for i, units in enumerate([64, 32]):
        net = tf.layers.dense(net, units, activation=tf.nn.relu, name=f"hidden{i}")
    return tf.layers.dense(net, 1, name="logit")


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """P(score of a click > score of a non-click), ties by order."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels > 0.5
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / max(n_pos * n_neg, 1))


def _evaluate(tf: Any, args: argparse.Namespace, num_ps: int) -> float:
    """The final checkpoint's AUC on the eval file, in a local session."""
    with tf.Graph().as_default():
        features, labels = _batches(tf, args.eval_path, 1 << 20)
        columns = _columns(tf, args.variant, args.bucket_size, num_ps, args.filter_freq)
        probs = tf.sigmoid(_logits(tf, features, columns, num_ps))
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, tf.train.latest_checkpoint(args.checkpoint_dir))
            p, y = sess.run([probs, labels])
    return _auc(y.ravel(), p.ravel())


def _train(tf: Any, args: argparse.Namespace, server: Any, cluster: Any) -> None:
    num_ps, workers = len(cluster.as_dict()["ps"]), len(cluster.as_dict()["worker"])
    is_chief = args.task_index == 0
    me = f"/job:worker/task:{args.task_index}"
    with tf.device(tf.train.replica_device_setter(worker_device=me, cluster=cluster)):
        features, labels = _batches(tf, args.train_path, args.batch, workers, args.task_index,
                                    repeat=True)
        columns = _columns(tf, args.variant, args.bucket_size, num_ps, args.filter_freq)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=_logits(tf, features, columns, num_ps)))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdagradOptimizer(args.learning_rate).minimize(
            loss, global_step=global_step)
    config = tf.ConfigProto(device_filters=["/job:ps", me])
    hooks = [tf.train.StopAtStepHook(last_step=args.steps)]
    steps, step, last_at = 0, 0, time.time()
    with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=is_chief, config=config, hooks=hooks,
            checkpoint_dir=args.checkpoint_dir, save_checkpoint_steps=10**9,
            save_summaries_steps=None, log_step_count_steps=None) as sess:
        while not sess.should_stop():
            _, step = sess.run([train_op, global_step])
            steps, last_at = steps + 1, time.time()
            if steps % args.log_every == 0:  # the driver times the job by these lines
                print(f"progress {last_at:.3f} {step}", flush=True)
    # The last step's time, not the session's close (the final checkpoint is no step).
    print(f"trained {last_at:.3f} {step}", flush=True)
    if is_chief:  # the final checkpoint was saved when the session closed
        print(f"eval auc {_evaluate(tf, args, num_ps):.5f}", flush=True)


def _task_main(args: argparse.Namespace) -> None:
    import tensorweave as tf
    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","),
                                    "worker": args.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    if args.job_name == "ps":
        server.join()  # never returns: TENSORWEAVE_NOTIFY_JOB_DONE=0, the driver stops it
        return
    _train(tf, args, server, cluster)


# ---- the driver -----------------------------------------------------------------------

def _rss_sum(pids: list[int]) -> float | None:
    """The processes' summed VmRSS in MiB; None when one is gone."""
    kb = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                kb += int(next(line.split()[1] for line in f if line.startswith("VmRSS:")))
        except (OSError, StopIteration):
            return None
    return kb / 1024


def _tables(checkpoint_dir: str) -> dict[str, Any]:
    """The embedding tables' bytes (weights + Adagrad slots) and ids in the checkpoint."""
    import tensorweave as tf
    nbytes, ids = 0, 0
    for name, shape in tf.train.list_variables(checkpoint_dir):  # its latest checkpoint
        if "embedding_weights" not in name:
            continue
        if name.endswith("-keys") and "Adagrad" not in name:
            ids += int(shape[0])
        elif name.endswith("-values") or "-" not in name.rsplit("/", 1)[-1]:
            nbytes += 4 * int(np.prod(shape))  # float32 rows (an EV's, or a bucket part's)
            if "Adagrad" not in name and not name.endswith("-values"):
                ids += int(shape[0])  # a bucket part holds all its rows
    return {"table_mib": nbytes / 2**20, "ids": ids}


def _steady(logs: list[str], batch: int, warmup: int) -> dict[str, Any]:
    """Global steps x batch over the time between the first progress line at or after
    `warmup` global steps and the last one (both workers' lines merged)."""
    points = sorted((float(t), int(g)) for text in logs for t, g in PROGRESS.findall(text))
    steady = [p for p in points if p[1] >= warmup]
    if len(steady) < 2 or steady[-1][1] <= steady[0][1]:
        return {"examples_per_s": None, "global_steps": 0, "seconds": 0.0}
    (t0, g0), (t1, g1) = steady[0], steady[-1]
    return {"examples_per_s": (g1 - g0) * batch / (t1 - t0), "global_steps": g1 - g0,
            "seconds": t1 - t0}


def _start(variant: str, data: dict[str, Any], args: argparse.Namespace
           ) -> tuple[Any, str, int]:
    """Starts one job of 2 ps + 2 workers: (the job, its checkpoint dir, its bucket count)."""
    from tensorweave.testing.seed_job import SeedJob
    ckpt = tempfile.mkdtemp(prefix=f"ev-criteo-{variant.replace('+', '-')}-")
    size = args.large_buckets if variant == "buckets-large" else args.buckets
    flags = [f"--variant={variant}", f"--bucket_size={size}", f"--steps={args.steps}",
             f"--batch={args.batch}", f"--train_path={data['train']}",
             f"--eval_path={data['eval']}", f"--checkpoint_dir={ckpt}",
             f"--filter_freq={args.filter_freq}", f"--log_every={args.log_every}",
             f"--learning_rate={args.learning_rate}"]
    # TF's ps that never exits: the driver reads its memory after training, then stops it.
    env = {"PYTHONPATH": ROOT, "TENSORWEAVE_NOTIFY_JOB_DONE": "0"}
    job = SeedJob("bench.ev_criteo", ps=2, workers=2, extra=flags, env=env,
                  python=[sys.executable, "-m"], cwd=ROOT).start()
    return job, ckpt, size


def _watch(job: Any, warmup: int) -> dict[str, Any]:
    """Waits for both workers to exit. Returns their exit codes, the ps tasks' summed RSS
    (MiB) once a worker has passed `warmup` global steps and after the workers are done,
    and every task's CPU ms a global step from then until a worker's loop ends (steadier
    than wall time on a shared machine: the job is CPU-bound on 2 cores)."""
    workers, tasks = ("worker0", "worker1"), ("ps0", "ps1", "worker0", "worker1")
    pids = {t: job.procs[t].pid for t in tasks}
    rss_warm, first, last = None, None, None  # first/last: (global step, CPU s of tasks)
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    while any(job.procs[w].poll() is None for w in workers) and time.monotonic() < deadline:
        logs = [job.output(w) for w in workers]
        step = max((int(g) for text in logs for _, g in PROGRESS.findall(text)), default=0)
        if step >= warmup and not any("trained " in text for text in logs):
            cpu = sum(process_cpu_s(pids[t]) or 0.0 for t in tasks)
            if first is None:
                rss_warm, first = _rss_sum([pids["ps0"], pids["ps1"]]), (step, cpu)
            last = (step, cpu)
        time.sleep(0.5)
    cpu_ms = None
    if first and last and last[0] > first[0]:
        cpu_ms = 1000 * (last[1] - first[1]) / (last[0] - first[0])
    return {"codes": [job.procs[w].poll() for w in workers], "ps_rss_warmup_mib": rss_warm,
            "ps_rss_mib": _rss_sum([pids["ps0"], pids["ps1"]]), "cpu_ms_per_step": cpu_ms}


def _run_variant(variant: str, data: dict[str, Any], args: argparse.Namespace
                 ) -> dict[str, Any]:
    """One job; its figures."""
    job, ckpt, size = _start(variant, data, args)
    try:
        watched = _watch(job, args.warmup)
        logs = {name: job.output(name) for name in job.procs}
    finally:
        job.stop()
    aucs = re.findall(r"eval auc ([0-9.]+)", logs["worker0"])
    codes = watched.pop("codes")
    ok = codes == [0, 0] and bool(aucs) and watched["ps_rss_mib"] is not None
    out: dict[str, Any] = {"variant": variant, "ok": ok, **watched,
                           "buckets": size if "buckets" in variant else None,
                           "auc": float(aucs[-1]) if aucs else None,
                           **_steady([logs["worker0"], logs["worker1"]], args.batch,
                                     args.warmup)}
    if ok:
        out.update(_tables(ckpt))
    else:
        out["tail"] = {k: v[-2000:] for k, v in logs.items()}
    shutil.rmtree(ckpt, ignore_errors=True)  # 2**18 buckets: 0.4 GB a checkpoint
    return out


def _print(results: list[dict[str, Any]], data: dict[str, Any], args: argparse.Namespace
           ) -> None:
    print(f"{'variant':<14} {'buckets':>7} {'examples/s':>10} {'CPU ms/step':>11} "
          f"{'ps RSS MiB':>12} {'table MiB':>9} {'ids held':>9} {'eval AUC':>8}  "
          f"each round: examples/s, CPU ms/step, AUC")
    for r in results:
        if not r["ok"]:
            print(f"{r['variant']:<14} FAILED")
            for task, tail in r["tail"].items():
                print(f"  [{task}] ...{tail[-800:]}")
            continue
        rss = f"{r['ps_rss_warmup_mib'] or 0:.0f} -> {r['ps_rss_mib']:.0f}"
        rounds = "; ".join(f"{x:,.0f} {c or 0:.1f} {a:.4f}" for x, c, a in r["rounds"])
        print(f"{r['variant']:<14} {r['buckets'] or '-':>7} {r['examples_per_s']:>10,.0f} "
              f"{r['cpu_ms_per_step'] or 0:>11.1f} {rss:>12} {r['table_mib']:>9.1f} "
              f"{r['ids']:>9,} {r['auc']:>8.4f}  {rounds}")
    print(f"data: {args.train_lines:,} train lines ({data['distinct_ids']:,} distinct "
          f"categorical values, {data['seen_3x']:,} seen >= {args.filter_freq} times), "
          f"{args.eval_lines:,} eval lines; click rate {data['click_rate']:.3f}; AUC of the "
          f"true click probabilities (the ceiling) {data['auc_ceiling']:.4f}")


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest good run of a variant, with every round's examples/s."""
    good = [r for r in runs if r["ok"] and r["examples_per_s"]]
    best = max(good, key=lambda r: r["examples_per_s"]) if good else runs[-1]
    return {**best, "rounds": [(r["examples_per_s"], r["cpu_ms_per_step"], r["auc"])
                               for r in good]}


def _write_data(args: argparse.Namespace) -> dict[str, Any]:
    from tensorweave.datasets.criteo import write_synthetic
    data = write_synthetic(tempfile.mkdtemp(prefix="ev-criteo-data-"), args.train_lines,
                           args.eval_lines, args.seed)
    # Distinct (column, value) pairs of the train file: what an EV without filter holds
    # at most, and the ids a CounterFilter admits.
    cats = np.loadtxt(data["train"], delimiter=",", dtype=str, usecols=range(14, 40),
                      comments=None)
    counts = [np.unique(cats[:, k], return_counts=True)[1] for k in range(NUM_CATS)]
    data["distinct_ids"] = int(sum(len(c) for c in counts))
    data["seen_3x"] = int(sum((c >= args.filter_freq).sum() for c in counts))
    return data


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train_lines", type=int, default=200000)
    p.add_argument("--eval_lines", type=int, default=10000)
    p.add_argument("--steps", type=int, default=0, help="global steps (0: one pass)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--buckets", type=int, default=10000)
    p.add_argument("--large_buckets", type=int, default=2**18)
    p.add_argument("--filter_freq", type=int, default=3)
    p.add_argument("--learning_rate", type=float, default=0.1)
    p.add_argument("--warmup", type=int, default=20, help="global steps not timed")
    p.add_argument("--log_every", type=int, default=10, help="local steps a progress line")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--rounds", type=int, default=1, help="runs of each variant (best kept)")
    p.add_argument("--json", action="store_true")
    # A task process's own flags (the driver passes them).
    for flag in ("ps_hosts", "worker_hosts", "job_name", "variant", "train_path",
                 "eval_path", "checkpoint_dir"):
        p.add_argument(f"--{flag}", default="")
    p.add_argument("--task_index", type=int, default=0)
    p.add_argument("--bucket_size", type=int, default=0)
    return p


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    args = _parser().parse_args(argv)
    if args.job_name:
        _task_main(args)
        return []
    args.steps = args.steps or args.train_lines // args.batch
    unknown = set(args.variants.split(",")) - set(VARIANTS)
    if unknown:
        sys.exit(f"ev_criteo: unknown variants {sorted(unknown)}; choose from {VARIANTS}")
    data = _write_data(args)
    runs: dict[str, list[dict[str, Any]]] = {}
    # Rounds alternate the variants: this shared machine's speed drifts over minutes.
    for _ in range(args.rounds):
        for variant in args.variants.split(","):
            runs.setdefault(variant, []).append(_run_variant(variant, data, args))
            print(f"  {variant}: done", file=sys.stderr, flush=True)
    shutil.rmtree(os.path.dirname(data["train"]), ignore_errors=True)
    results = [_best(v) for v in runs.values()]
    if args.json:
        print(json.dumps({"data": {k: v for k, v in data.items() if k not in ("train", "eval")},
                          "args": vars(args), "results": results}))
    else:
        print(f"2 ps + 2 workers async, batch {args.batch}, {args.steps} global steps "
              f"(timed after {args.warmup}), Adagrad {args.learning_rate}, best of "
              f"{args.rounds}; CPU ms/step: the 4 processes' CPU a global step; ps RSS: both ps "
              f"at warm-up -> after training")
        _print(results, data, args)
    return results


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
