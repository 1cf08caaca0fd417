"""Seed-style between-graph training on loopback: tensorweave vs real TF, same run.

Settings (each a separate job of one ps and 1 or 2 workers, synthetic data,
batch 128, Adagrad):

  mlp512 1w async   examples/trainer.py, MLP 784-512-10 (seed 002), 1 worker
  mlp512 2w async   the same, 2 workers
  mlp512 2w sync    the same with SyncReplicasOptimizer
  mlp128 1w async   hidden 128
  mlp2048 1w async  hidden 2048
  deep20 1w async   bench/deep_trainer.py: 20 dense layers 64x64 (40 variables)

examples/s are the workers' own figures, summed (steps x batch over each
worker's time from session creation to the end of its loop). With
TENSORFLOW_PYTHON set, each setting also runs on real TF (compat.v1) right
after ours; TF's ps never exits by itself, so it is killed once the workers end.
Each setting runs `--rounds` times per framework, alternating, and keeps the best.

    .venv/bin/python -m bench.trainer [--steps 1000] [--rounds 1] [--only mlp512]
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from typing import Any

from bench.common import ROOT, tensorflow_python, chosen

WORKER_TIMEOUT_S = 600
MLP, DEEP = "examples/trainer.py", "bench/deep_trainer.py"
SETTINGS: list[tuple[str, str, int, bool, list[str]]] = [
    ("mlp512 1w async", MLP, 1, False, ["--hidden=512"]),
    ("mlp512 2w async", MLP, 2, False, ["--hidden=512"]),
    ("mlp512 2w sync", MLP, 2, True, ["--hidden=512"]),
    ("mlp128 1w async", MLP, 1, False, ["--hidden=128"]),
    ("mlp2048 1w async", MLP, 1, False, ["--hidden=2048"]),
    ("deep20 1w async", DEEP, 1, False, ["--layers=20", "--width=64"]),
]


def run_job(python: list[str], script: str, workers: int, sync: bool, steps: int,
            extra: list[str]) -> dict[str, Any]:
    from tensorweave.testing.seed_job import SeedJob
    flags = [f"--train_steps={steps}", "--batch_size=128",
             f"--checkpoint_dir={tempfile.mkdtemp()}",
             f"--sync_replicas={'true' if sync else 'false'}", *extra]
    if script == MLP:
        flags += ["--data=synthetic", "--log_every=1000000"]
    env = {"PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "3"}
    job = SeedJob(script, ps=1, workers=workers, extra=flags, env=env, python=python,
                  cwd=ROOT).start()
    try:
        names = [f"worker{i}" for i in range(workers)]
        codes = {}
        for name in names:
            job.procs[name].wait(WORKER_TIMEOUT_S)
            codes[name] = job.procs[name].returncode
        text = {name: job.output(name) for name in job.procs}
    finally:
        job.stop()
    rates = [float(m) for w in names for m in re.findall(r"([0-9.]+) examples/s", text[w])[-1:]]
    ok = all(c == 0 for c in codes.values()) and len(rates) == workers
    return {"ok": ok, "examples_per_s": sum(rates) if ok else None,
            "tail": {k: v[-1500:] for k, v in text.items()} if not ok else {}}


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    good = [r for r in runs if r["ok"]]
    return max(good, key=lambda r: r["examples_per_s"]) if good else runs[-1]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", default="", help="run the settings whose name has these words")
    args = parser.parse_args(argv)
    tf_python = tensorflow_python()
    results: dict[str, Any] = {}
    print(f"seed-style trainers, 1 ps, batch 128, Adagrad, {args.steps} global steps, "
          f"best of {args.rounds}", flush=True)
    for name, script, workers, sync, extra in SETTINGS:
        if not chosen(name, args.only):
            continue
        steps = args.steps
        # Rounds alternate between the frameworks, so a change in the machine's load
        # (other jobs come and go) falls on both alike.
        mine, tfs = [], []
        for _ in range(args.rounds):
            mine.append(run_job([sys.executable], script, workers, sync, steps, extra))
            if tf_python:
                tfs.append(run_job([tf_python, "-m", "bench.tf_compat"], script, workers,
                                   sync, steps, extra))
        ours = _best(mine)
        theirs = _best(tfs) if tf_python else None
        results[name] = {"tensorweave": ours, "tensorflow": theirs}
        print(f"  {name:18s} {_fmt(ours)}  tensorflow {_fmt(theirs)}  ratio "
              f"{_ratio(ours, theirs)}", flush=True)
        for r in (ours, theirs):
            if r and not r["ok"]:
                for task, tail in r["tail"].items():
                    print(f"    [{task}] ...{tail[-600:]}")
    if not tf_python:
        print("  tensorflow: not available (set TENSORFLOW_PYTHON to compare)")
    return results


def _fmt(r: dict[str, Any] | None) -> str:
    if r is None:
        return "    not run"
    return f"{r['examples_per_s']:8.0f} ex/s" if r["ok"] else "     FAILED"


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    if a and b and a["ok"] and b["ok"]:
        return f"{a['examples_per_s'] / b['examples_per_s']:.2f}"
    return "-"


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
