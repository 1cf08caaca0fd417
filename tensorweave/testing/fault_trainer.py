"""A small between-graph trainer for fault tests: one task of a job, read from TF_CONFIG.

A TF1-style program (replica_device_setter, MonitoredTrainingSession,
StopAtStepHook, optionally SyncReplicasOptimizer) kept small so a whole job
runs in seconds: linear regression on a planted model. It prints one line per
step (or per `--print_every` steps), `step <global step> <task> ... t <time>`, and
`session at step <n>` each time its session is (re)created, which
`tensorweave.testing.faults` reads to find the step to kill at and the steps lost
(`bench.elastic` reads the step lines for its rate over time); `--step_secs` paces it;
`--stop_file` ends a task's training once that file exists (a test that scales a job
ends it when it has seen enough). `--hang_at job:index:step` makes that task stop
between two steps (holding the sync token it took), once per checkpoint directory, so
a kill at that step lands at a known point. The ps tasks run a bare server that exits
when the chief reports the job done.

Example (one process per task, TF_CONFIG set as cluster managers set it):
    $ TF_CONFIG='{"cluster": {...}, "task": {"type": "chief", "index": 0}}' \\
        python -m tensorweave.testing.fault_trainer --checkpoint_dir /tmp/ck --last_step 40
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

import tensorweave as tf

_DIM = 8


class _SessionLine(tf.train.SessionRunHook):
    """Prints the global step each time the monitored session is (re)created."""

    def __init__(self, global_step: Any) -> None:
        self._global_step = global_step

    def after_create_session(self, session: Any, coord: Any) -> None:
        print(f"session at step {session.run(self._global_step)} t {time.time():.3f}",
              flush=True)


def _model(job: str, index: int, cluster: Any, args: argparse.Namespace,
           num_replicas: int, is_chief: bool) -> tuple[Any, ...]:
    with tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:{job}/task:{index}", cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, _DIM], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w = tf.get_variable("w", [_DIM, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        global_step = tf.train.get_or_create_global_step()
        opt: Any = tf.train.GradientDescentOptimizer(0.05)
        hooks: list[Any] = [tf.train.StopAtStepHook(last_step=args.last_step),
                            _SessionLine(global_step)]
        if args.sync:
            opt = tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=args.replicas_to_aggregate or num_replicas,
                total_num_replicas=num_replicas)
            hooks.append(opt.make_session_run_hook(is_chief))
        train_op = opt.minimize(loss, global_step=global_step)
    return x, y, loss, global_step, train_op, hooks


def _train(server: Any, cluster: Any, job: str, index: int, args: argparse.Namespace) -> None:
    jobs = cluster.as_dict()
    num_replicas = len(jobs.get("worker", [])) + len(jobs.get("chief", []))
    is_chief = job == "chief" or ("chief" not in jobs and index == 0)
    x, y, loss, global_step, train_op, hooks = _model(job, index, cluster, args,
                                                      num_replicas, is_chief)
    rng = np.random.default_rng(args.seed * 100 + index + (50 if job == "chief" else 0))
    true_w = np.linspace(-1, 1, _DIM, dtype=np.float32).reshape(_DIM, 1)
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:{job}/task:{index}"])
    with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=is_chief, config=config,
            checkpoint_dir=args.checkpoint_dir, hooks=hooks,
            save_checkpoint_steps=args.save_steps, save_summaries_steps=0,
            log_step_count_steps=0) as sess:
        local_steps = 0
        while not sess.should_stop() and not (args.stop_file
                                              and os.path.exists(args.stop_file)):
            xs = rng.normal(size=(args.batch_size, _DIM)).astype(np.float32)
            _, step, loss_v = sess.run([train_op, global_step, loss],
                                       {x: xs, y: xs @ true_w})
            local_steps += 1
            if local_steps % args.print_every == 0:
                print(f"step {step} {job}:{index} loss {loss_v:.4f} t {time.time():.3f}",
                      flush=True)
            _maybe_hang(args, job, index, step)
            time.sleep(args.step_secs)  # paces the job so a fault lands mid-run
    print(f"done {job}:{index}", flush=True)


def _maybe_hang(args: argparse.Namespace, job: str, index: int, step: int) -> None:
    """Sleeps for good once this task reaches `--hang_at`'s step (the first time only:
    a restarted task, finding the marker file, trains on)."""
    if not args.hang_at:
        return
    hang_job, hang_index, hang_step = args.hang_at.split(":")
    marker = f"{args.checkpoint_dir.rstrip('/')}.hung-{job}-{index}"
    if (job, index) != (hang_job, int(hang_index)) or step < int(hang_step) \
            or os.path.exists(marker):
        return
    open(marker, "w").close()
    print(f"hanging at step {step} {job}:{index}", flush=True)
    while True:
        time.sleep(60)


def main(argv: list[str] | None = None) -> None:
    """Runs the task TF_CONFIG names: a ps serves, a chief or worker trains."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint_dir", required=True)
    parser.add_argument("--last_step", type=int, default=40)
    parser.add_argument("--save_steps", type=int, default=5)
    parser.add_argument("--sync", action="store_true")
    parser.add_argument("--replicas_to_aggregate", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--print_every", type=int, default=1,
                        help="print every Nth step's line (a bench's fast steps would "
                             "otherwise spend their CPU printing)")
    parser.add_argument("--step_secs", type=float, default=0.0,
                        help="sleep after each step (paces the job for fault tests)")
    parser.add_argument("--hang_at", default="",
                        help="job:index:step: that task stops for good after that step "
                             "(once per checkpoint directory)")
    parser.add_argument("--stop_file", default="",
                        help="leave the training loop once this file exists")
    args = parser.parse_args(argv)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if not resolver.task_type:
        sys.exit("fault_trainer: set TF_CONFIG with a \"cluster\" and a \"task\".")
    cluster, job, index = resolver.cluster_spec(), resolver.task_type, resolver.task_id or 0
    server = tf.train.Server(cluster, job_name=job, task_index=index)
    if job == "ps":
        server.join()
    else:
        _train(server, cluster, job, index, args)


if __name__ == "__main__":
    main()
