"""What ps state replication (issue 33) costs a training job's step rate.

Each setting runs with TENSORWEAVE_PS_REPLICATION off and on, alternating round by
round (the machine's speed drifts), and keeps each one's best:

  seed mlp512 2w async   bench.trainer's job: examples/trainer.py, 1 ps + 2 workers
  wide & deep async      bench.wide_deep's job: 2 ps + 2 workers (each ps replicates
                         to the other), the example's embeddings and FTRL/Adagrad slots
  seed mlp512 2w sync    bench.trainer's sync job (SyncReplicasOptimizer), replicated
                         before each step ends (TENSORWEAVE_PS_REPLICA_SECS=0)

Printed: examples/s off and on (the workers' own figures, summed), and on / off.
Replication sends every TENSORWEAVE_PS_REPLICA_SECS (default 0.1 s) what changed.

    .venv/bin/python -m bench.replication [--steps 1000] [--rounds 2] [--only wide]
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable

from bench.common import chosen
from bench import trainer, wide_deep

# (name, the job, TENSORWEAVE_PS_REPLICA_SECS when on)
SETTINGS: list[tuple[str, Callable[[int], dict[str, Any]], str]] = [
    ("seed mlp512 2w async", lambda steps: trainer.run_job(
        [sys.executable], trainer.MLP, 2, False, steps, ["--hidden=512"]), "0.1"),
    ("wide & deep async", lambda steps: wide_deep.run_job([sys.executable], False, steps),
     "0.1"),
    ("seed mlp512 2w sync", lambda steps: trainer.run_job(
        [sys.executable], trainer.MLP, 2, True, steps, ["--hidden=512"]), "0"),
]


def _run(job: Callable[[int], dict[str, Any]], steps: int, on: bool, secs: str
         ) -> dict[str, Any]:
    knobs = {"TENSORWEAVE_PS_REPLICATION": "1" if on else "0",
             "TENSORWEAVE_PS_REPLICA_SECS": secs}
    saved = {k: os.environ.get(k) for k in knobs}
    os.environ.update(knobs)  # the job's processes inherit them
    try:
        return job(steps)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _best(runs: list[dict[str, Any]]) -> float | None:
    rates = [r["examples_per_s"] for r in runs if r["ok"]]
    return max(rates) if rates else None


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default="", help="run the settings whose name has these words")
    args = parser.parse_args(argv)
    print(f"ps state replication, {args.steps} global steps, best of {args.rounds} each",
          flush=True)
    results: dict[str, Any] = {}
    for name, job, secs in SETTINGS:
        if not chosen(name, args.only):
            continue
        runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
        for _ in range(args.rounds):
            for on in (False, True):
                runs[on].append(_run(job, args.steps, on, secs))
        off, on = _best(runs[False]), _best(runs[True])
        results[name] = {"off": off, "on": on, "ratio": on / off if off and on else None}
        ratio = f"{on / off:.3f}" if off and on else "-"
        print(f"  {name:22s} off {off or 0:8.0f} ex/s   on {on or 0:8.0f} ex/s   "
              f"on/off {ratio}", flush=True)
        for r in runs[False] + runs[True]:
            for task, tail in (r.get("tail") or {}).items():
                print(f"    [{task}] ...{tail[-600:]}")
    return results


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
