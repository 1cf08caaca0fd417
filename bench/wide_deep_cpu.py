"""Where the CPU of a 2 ps + 2 workers wide & deep job goes: each process's CPU time
per global step in the steady state, tensorweave and real TF.

Runs examples/wide_deep.py (async, batch 256) as bench.wide_deep does and samples
every task's process CPU time (`/proc/<pid>/stat` utime + stime, all threads) while
the workers print their progress lines (every `--log_every` local steps). The steady
window runs from the first sample after BOTH workers have printed a progress line
(TF's second worker waits out a 30 s readiness poll first) to the first sample that
saw the last progress line; each process's CPU in that window is divided by the
global steps the job made in it. On a CPU-bound machine (2 cores, 4 processes) the job's
throughput is inversely proportional to the sum, so this says which process to cut.

    .venv/bin/python -m bench.wide_deep_cpu [--steps 6000] [--rounds 1] [--only tensorweave]
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from typing import Any

from bench.common import ROOT, process_cpu_s, tensorflow_python

SCRIPT = "examples/wide_deep.py"
TASKS = ["ps0", "ps1", "worker0", "worker1"]
PROGRESS = re.compile(r"worker (\d+): local step \d+, global step (\d+)")


def start_job(python: list[str], steps: int, log_every: int, sync: bool) -> Any:
    """Starts examples/wide_deep.py on 2 ps + 2 workers (batch 256, no checkpoints)."""
    from tensorweave.testing.seed_job import SeedJob
    flags = [f"--train_steps={steps}", "--batch_size=256", f"--data_dir={tempfile.mkdtemp()}",
             f"--checkpoint_dir={tempfile.mkdtemp()}", f"--sync={'true' if sync else 'false'}",
             f"--log_every={log_every}", "--save_checkpoint_steps=1000000"]
    env = {"PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_USE_LEGACY_KERAS": "1"}
    return SeedJob(SCRIPT, ps=2, workers=2, extra=flags, env=env, python=python,
                   cwd=ROOT).start()


def run_job(python: list[str], steps: int, log_every: int, sync: bool = False
            ) -> dict[str, Any]:
    """One job; the steady window's CPU ms a global step for each task."""
    job = start_job(python, steps, log_every, sync)
    try:
        samples = sample(job)
    finally:
        job.stop()
    return window(samples)


def sample(job: Any, timeout: float = 600) -> list[tuple[float, dict[str, float | None], int,
                                                           bool]]:
    """Every task's CPU seconds, the latest global step printed and whether both
    workers are in their steady state, every 0.25 s until both workers exit."""
    samples: list[tuple[float, dict[str, float | None], int, bool]] = []
    deadline = time.monotonic() + timeout
    while any(job.procs[w].poll() is None for w in ("worker0", "worker1")) and \
            time.monotonic() < deadline:
        cpu = {t: process_cpu_s(job.procs[t].pid) for t in TASKS}
        logs = {w: job.output(w) for w in ("worker0", "worker1")}
        seen = [PROGRESS.findall(logs[w]) for w in ("worker0", "worker1")]
        done = any("done," in text for text in logs.values())
        gstep = max((int(g) for s in seen for _, g in s), default=0)
        samples.append((time.monotonic(), cpu, gstep, all(seen) and not done))
        time.sleep(0.25)
    return samples


def window(samples: list[tuple[float, dict[str, float | None], int, bool]]) -> dict[str, Any]:
    """CPU ms a global step of each task between the first and last steady samples
    (the global step is the latest one printed, so the window's ends are one progress
    line's worth of steps coarse: use a long run)."""
    steady = [s for s in samples if s[3]]
    if len(steady) < 2:
        return {"ok": False}
    # It ends at the last progress line: after it come the final steps' end (the
    # chief's eval and save), where CPU is spent and no global step made.
    last = max(s[2] for s in steady)
    (t0, c0, g0, _), (t1, c1, g1, _) = steady[0], next(s for s in steady if s[2] == last)
    if g1 <= g0:
        return {"ok": False}
    per_task = {t: 1000 * ((c1[t] or 0.0) - (c0[t] or 0.0)) / (g1 - g0) for t in TASKS}
    return {"ok": True, "global_steps": g1 - g0, "seconds": t1 - t0,
            "examples_per_s": 256 * (g1 - g0) / (t1 - t0),
            "cpu_ms_per_global_step": per_task,
            "total_cpu_ms_per_global_step": sum(per_task.values())}


def _fmt(name: str, r: dict[str, Any]) -> str:
    if not r.get("ok"):
        return f"  {name:12s} no steady window (run more --steps)"
    cpu = r["cpu_ms_per_global_step"]
    return (f"  {name:12s} " + "  ".join(f"{t} {cpu[t]:5.2f}" for t in TASKS)
            + f"  total {r['total_cpu_ms_per_global_step']:5.2f} ms CPU a global step"
            f"  ({r['global_steps']} steps in {r['seconds']:.1f}s, "
            f"{r['examples_per_s']:.0f} ex/s)")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--log_every", type=int, default=250)
    parser.add_argument("--only", default="", help="tensorweave or tensorflow")
    args = parser.parse_args(argv)
    tf_python = tensorflow_python()
    pythons = {"tensorweave": [sys.executable]}
    if tf_python:
        pythons["tensorflow"] = [tf_python, "-m", "bench.tf_compat"]
    print(f"wide & deep async, 2 ps + 2 workers, batch 256, {args.steps} global steps: "
          f"CPU ms a global step per process, steady state", flush=True)
    results: dict[str, Any] = {}
    for _ in range(args.rounds):  # interleaved: the machine's load drifts
        for name, python in pythons.items():
            if args.only in name:
                r = run_job(python, args.steps, args.log_every)
                results.setdefault(name, []).append(r)
                print(_fmt(name, r), flush=True)
    return results


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
