"""examples/wide_deep.py on 2 ps + 2 workers: tensorweave vs real TF, same run.

The example's model (wide: linear_model of hashed/crossed columns + FTRL; deep:
embedding columns + 64-32 dense layers + Adagrad; wide weights and embeddings split
over both ps tasks) reading its TFRecord click log through TFRecordDataset + batch +
parse_example, batch 256, async and sync (one SyncReplicasOptimizer).

examples/s are the workers' own figures, summed (steps x batch over each worker's
time from session creation to the end of its loop; writing the click log comes
before and is not counted), as bench.trainer counts them; TF's non-chief worker
waits there for the chief (TF 1.x polls readiness every 30 s). Also printed: the
same sum from each worker's first step on, each worker's local steps and the
workers' process CPU time a step after the first (all threads, weighted by steps;
steadier than wall time on a shared machine). The sum from each worker's first step
overstates TF's steady state: its chief runs its first 30 s alone, faster than with
the other worker beside it. So the steady state is also measured where both workers
run (bench.wide_deep_cpu's window: from the first moment both have printed a
progress line to the last progress line, global steps x batch over that time), with every
task's process CPU per global step there (ps tasks included). With TENSORFLOW_PYTHON set,
each setting also runs on real TF (compat.v1, TF_USE_LEGACY_KERAS=1 for tf.layers)
right after ours; TF's ps tasks never exit by themselves, so they are killed once
the workers end. Each setting runs `--rounds` times per framework, alternating (the
machine's speed drifts), and keeps the best; the ratio of each back-to-back pair's
both-workers-running figures and their median are printed as well. The eval AUC of
each run is printed too (both frameworks learn the same planted signal).

    .venv/bin/python -m bench.wide_deep [--steps 1000] [--rounds 1] [--only sync]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from typing import Any

from bench.common import tensorflow_python, chosen
from bench.wide_deep_cpu import TASKS, sample, start_job, window

WORKER_TIMEOUT_S = 600
LOG_EVERY = 250  # progress lines: they time the window where both workers run
SETTINGS: list[tuple[str, bool]] = [("2 ps 2w async", False), ("2 ps 2w sync", True)]


def run_job(python: list[str], sync: bool, steps: int) -> dict[str, Any]:
    """One job of 2 ps + 2 workers; the workers' summed examples/s and the eval AUC."""
    job = start_job(python, steps, LOG_EVERY, sync)
    names = ["worker0", "worker1"]
    try:
        both = window(sample(job, WORKER_TIMEOUT_S))  # progress lines + every task's CPU
        codes = {}
        for name in names:
            job.procs[name].wait(WORKER_TIMEOUT_S)
            codes[name] = job.procs[name].returncode
        text = {name: job.output(name) for name in job.procs}
    finally:
        job.stop()
    done = [m for w in names for m in re.findall(
        r"done, (\d+) local steps, ([0-9.]+) examples/s, ([0-9.]+) examples/s after", text[w])]
    cpu = [float(c) for w in names for c in re.findall(r"([0-9.]+) ms CPU a step", text[w])]
    steady_steps = [int(d[0]) - 1 for d in done]
    aucs = re.findall(r"eval auc ([0-9.]+)", text["worker0"])
    ok = all(c == 0 for c in codes.values()) and len(done) == 2 and bool(aucs)
    return {"ok": ok, "examples_per_s": sum(float(d[1]) for d in done) if ok else None,
            "steady_examples_per_s": sum(float(d[2]) for d in done) if ok else None,
            "local_steps": [int(d[0]) for d in done],
            # Weighted by steps: a worker that ran 1 step (TF's, waiting out its 30 s
            # readiness poll) has no steady state to count.
            "cpu_ms_per_step": sum(c * n for c, n in zip(cpu, steady_steps)) / max(
                sum(steady_steps), 1) if ok and len(cpu) == 2 else None,
            "auc": float(aucs[-1]) if aucs else None, "both": both,
            "tail": {k: v[-1500:] for k, v in text.items()} if not ok else {}}


def _steady(r: dict[str, Any] | None) -> float | None:
    """examples/s where both workers run, if the run had such a window."""
    if r is None or not r["ok"] or not r["both"].get("ok"):
        return None
    return float(r["both"]["examples_per_s"])


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
    print(f"wide & deep (examples/wide_deep.py), 2 ps + 2 workers, batch 256, "
          f"{args.steps} global steps, best of {args.rounds}", flush=True)
    for name, sync in SETTINGS:
        if not chosen(name, args.only):
            continue
        # Rounds alternate (ours, then TF's, ...): this machine's speed drifts by tens
        # of percent over minutes, and a pair run back to back shares its phase.
        pairs = [(run_job([sys.executable], sync, args.steps),
                  run_job([tf_python, "-m", "bench.tf_compat"], sync, args.steps)
                  if tf_python else None) for _ in range(args.rounds)]
        ours, theirs = _best([o for o, _ in pairs]), \
            _best([t for _, t in pairs if t]) if tf_python else None
        paired = [_steady(o) / _steady(t) for o, t in pairs if _steady(o) and _steady(t)]
        results[name] = {"tensorweave": ours, "tensorflow": theirs, "paired_steady": paired}
        print(f"  {name:14s} tensorweave {_fmt(ours)}\n  {'':14s} tensorflow  {_fmt(theirs)}"
              f"\n  {'':14s} ratio {_ratio(ours, theirs)}", flush=True)
        if paired:
            print(f"  {'':14s} both workers running, each round's pair: "
                  f"{' '.join(f'{r:.2f}' for r in paired)}; median "
                  f"{statistics.median(paired):.2f}", flush=True)
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
    if not r["ok"]:
        return "     FAILED"
    cpu = r.get("cpu_ms_per_step")
    both = r["both"]
    text = (f"{r['examples_per_s']:6.0f} ex/s (after the first step "
            f"{r['steady_examples_per_s']:.0f}; local steps "
            f"{'+'.join(map(str, r['local_steps']))}; auc {r['auc']:.3f}"
            + (f"; worker CPU {cpu:.2f} ms a step" if cpu is not None else "") + ")")
    if both.get("ok"):
        per = both["cpu_ms_per_global_step"]
        text += (f"\n  {'':14s}             both workers running: {both['examples_per_s']:.0f} "
                 f"ex/s; CPU ms a global step " + " ".join(f"{t} {per[t]:.2f}" for t in TASKS)
                 + f", total {both['total_cpu_ms_per_global_step']:.2f}")
    return text


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    if a and b and a["ok"] and b["ok"]:
        text = (f"{a['examples_per_s'] / b['examples_per_s']:.2f} (after the first step "
                f"{a['steady_examples_per_s'] / b['steady_examples_per_s']:.2f}")
        if a["both"].get("ok") and b["both"].get("ok"):
            text += (f"; both workers running "
                     f"{a['both']['examples_per_s'] / b['both']['examples_per_s']:.2f}")
        return text + ")"
    return "-"


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
