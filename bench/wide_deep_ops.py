"""Where a wide & deep step's kernel time goes: examples/wide_deep.py's model in one
local session, CPU time per op type.

Builds the example's input pipeline (TFRecordDataset + shuffle + batch +
parse_example + prefetch) and model (feature columns, wide FTRL + deep Adagrad, both
split in 2 partitions as over 2 ps tasks) in one process, runs `--steps` steps and
prints the process CPU time a step, then each op type's kernel calls a step and the
thread CPU time they took (every kernel wrapped with `time.thread_time_ns`, which
costs ~0.5 us a call: small kernels read high). Kernel times taken this way, in
place, run 3-5x the same kernels timed alone on the same inputs (caches shared with
the rest of the step): the in-place figure is the one that adds up to the step.

    .venv/bin/python -m bench.wide_deep_ops [--steps 300] [--top 30]
"""
from __future__ import annotations

import argparse
import collections
import functools
import importlib.util
import os
import tempfile
import time
from typing import Any

from bench.common import ROOT


def _example() -> Any:
    spec = importlib.util.spec_from_file_location(
        "wide_deep_example", os.path.join(ROOT, "examples", "wide_deep.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _wrap_kernels(cost: collections.Counter, calls: collections.Counter) -> None:
    """Every registered CPU kernel (but async ones) charges its thread CPU to its op type."""
    from tensorweave.framework import op_def
    clock = time.thread_time_ns

    def wrap(name: str, fn: Any) -> Any:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                cost[name] += clock() - t0
                calls[name] += 1
        return timed

    for name, definition in op_def._REGISTRY.items():
        reg = definition.kernels.get("CPU")
        if reg is not None and reg.kind != "async":
            reg.fn = wrap(name, reg.fn)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--process-only", action="store_true",
                        help="no kernel timers (they stop the plans inlining Const, "
                        "Identity, NoOp): the process CPU a step only, as a worker runs")
    args = parser.parse_args(argv)
    import tensorweave as tf
    cost: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    if not args.process_only:
        _wrap_kernels(cost, calls)  # before any plan is built: plans bind the kernels
    wd = _example()
    path = os.path.join(tempfile.mkdtemp(), "clicks.tfrecord")
    wd.write_records(path, wd.click_log(20000, seed=1))
    wide, deep = wd.columns()
    features, labels = wd.input_fn(path, wide, deep, 256, seed=1)
    logits = wd.wide_and_deep(features, wide, deep, 2, [64, 32])
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels,
                                                                  logits=logits))
    step = tf.train.get_or_create_global_step()
    opt = wd.WideDeepOptimizer(
        tf.train.FtrlOptimizer(1.0, l1_regularization_strength=1e-3),
        tf.train.AdagradOptimizer(0.2),
        tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="wide"))
    train_op = opt.minimize(loss, global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(20):
            sess.run(train_op)
        cost.clear()
        calls.clear()
        cpu0 = time.process_time()
        for _ in range(args.steps):
            sess.run(train_op)
        cpu = (time.process_time() - cpu0) / args.steps
    n = args.steps
    if args.process_only:
        print(f"wide & deep, one local session, batch 256, {n} steps: {cpu * 1e3:.2f} ms CPU "
              f"a step (process, no kernel timers)")
        return {"cpu_ms_per_step": cpu * 1e3}
    total = sum(cost.values()) / n / 1e3
    print(f"wide & deep, one local session, batch 256, {n} steps: {cpu * 1e3:.2f} ms CPU a "
          f"step (process), {total / 1e3:.2f} ms of it in {sum(calls.values()) / n:.0f} "
          f"kernel calls")
    print(f"  {'us a step':>10} {'calls':>6} {'us a call':>9}  op type")
    for name, ns in cost.most_common(args.top):
        print(f"  {ns / n / 1e3:10.1f} {calls[name] / n:6.1f} {ns / calls[name] / 1e3:9.1f}  "
              f"{name}")
    return {"cpu_ms_per_step": cpu * 1e3, "kernel_us_per_step": total,
            "by_type_us_per_step": {k: v / n / 1e3 for k, v in cost.items()},
            "calls_per_step": {k: v / n for k, v in calls.items()}}


if __name__ == "__main__":
    main()
