"""Faults a real cluster has, one job each: the time to recovery (or to the error) and the
steps lost.

Every case runs `tensorweave.testing.fault_trainer` (a TF1-style between-graph job:
replica_device_setter, MonitoredTrainingSession, a checkpoint every `--save-steps`
global steps) on a LocalCluster of 1 ps + 1 chief + 1 worker, one process per task,
and puts one fault in it once the job reaches `--at-step`:

  ps killed            SIGKILL, restarted 0.2 s later on the same port (as an orchestrator)
  chief killed         the same, for the chief
  worker killed        the same, for the non-chief worker
  ps frozen 10 s       SIGSTOP, SIGCONT 10 s later (a GC pause, a stalled VM)
  sync worker lost     sync training without a backup worker, the worker killed for
                       good: the chief gives up after TENSORWEAVE_SYNC_REPLICA_TIMEOUT_SECS
                       (set to 10 s here) naming it

Figures per case:

  recovery (s)   from the fault to the first step printed after it (for a killed chief or
                 worker: by its restarted process; the others train on meanwhile), minus
                 the fault's own length (the 10 s freeze); for "sync worker lost", the time
                 to the chief's error instead
  steps lost     the job's step at the fault minus the lowest step printed after it (a
                 restarted ps, or chief, restores the last checkpoint, as in TF)
  exit codes     every task's, after the job (0 everywhere but the chief of the last case)

    .venv/bin/python -m bench.faults [--at-step 20] [--cases "ps killed,ps frozen 10s"]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import tempfile
import time
from typing import Any

from tensorweave.testing.cluster import LocalCluster, cluster_dict
from tensorweave.testing.faults import (RESUME_PATTERN, Fault, FaultInjector, StepWatch,
                                        run_job)

CASES = ["ps killed", "chief killed", "worker killed", "ps frozen 10s", "sync worker lost"]
_FREEZE_S = 10.0
_STEP_LINE = re.compile(r"^step (\d+) (\S+) loss \S+ t ([\d.]+)$", re.MULTILINE)


def _cluster(args: argparse.Namespace, tmp: str, sync: bool = False, hang_at: str = "",
             env: dict[str, str] | None = None) -> LocalCluster:
    """1 ps + 1 chief + 1 worker running fault_trainer (not started)."""
    program = [sys.executable, "-m", "tensorweave.testing.fault_trainer", "--checkpoint_dir",
               os.path.join(tmp, "ckpt"), "--last_step", str(args.last_step), "--save_steps",
               str(args.save_steps), "--step_secs", str(args.step_secs), "--hang_at", hang_at,
               *(["--sync"] if sync else [])]
    return LocalCluster(spec=cluster_dict(1, 1, {"chief": 1}),
                        programs={"chief": program, "worker": program}, env=env)


def _steps_after(lc: LocalCluster, wall: float, task: str = "") -> list[tuple[int, float]]:
    """(step, wall time) of every step line printed after `wall` (by `task`, "job:index",
    alone when given)."""
    found = []
    for job, i in lc.logs:
        found += [(int(s), float(t)) for s, who, t in _STEP_LINE.findall(lc.output(job, i))
                  if float(t) > wall and task in ("", who)]
    return sorted(found, key=lambda st: st[1])


def _kill_case(victim: str, args: argparse.Namespace, tmp: str) -> dict[str, Any]:
    lc = _cluster(args, tmp)
    job = {"ps killed": "ps", "chief killed": "chief", "worker killed": "worker"}[victim]
    codes, records = run_job(lc, [Fault(job, 0, at_step=args.at_step)], timeout=180)
    rec = records[0]
    assert rec.killed_at is not None, rec
    kill_wall = time.time() - (time.monotonic() - rec.killed_at)
    # A lost ps stalls every step; a lost trainer, only its own (the others go on).
    after = _steps_after(lc, kill_wall, "" if job == "ps" else f"{job}:0")
    return {"recovery_s": after[0][1] - kill_wall if after else None,
            "steps_lost": rec.steps_lost(lc, RESUME_PATTERN), "codes": _codes(codes),
            "at_step": rec.killed_at_step}


def _freeze_case(args: argparse.Namespace, tmp: str) -> dict[str, Any]:
    lc = _cluster(args, tmp)
    watch = StepWatch(lc)
    try:
        lc.start()
        while watch.poll() < args.at_step:
            time.sleep(0.05)
        pid = lc.procs[("ps", 0)].pid
        at, frozen_at = watch.step, time.time()
        os.kill(pid, signal.SIGSTOP)
        time.sleep(_FREEZE_S)
        os.kill(pid, signal.SIGCONT)
        codes = lc.wait(180)
    finally:
        lc.stop()
    after = _steps_after(lc, frozen_at + _FREEZE_S)
    low = min((s for s, _ in after), default=None)
    return {"recovery_s": after[0][1] - frozen_at - _FREEZE_S if after else None,
            "steps_lost": max(0, at - low) if low is not None else None,
            "codes": _codes(codes), "at_step": at}


def _sync_lost_case(args: argparse.Namespace, tmp: str) -> dict[str, Any]:
    # Killed between two steps, holding its sync token (`--hang_at`): killed mid-step, its
    # token could stay queued and, by TF's rules, the chief would train on with it.
    lc = _cluster(args, tmp, sync=True, hang_at=f"worker:0:{args.at_step}",
                  env={"TENSORWEAVE_SYNC_REPLICA_TIMEOUT_SECS": "10"})
    fault = Fault("worker", 0, at_step=args.at_step, restart_after_secs=None)
    injector = FaultInjector(lc, [fault], step_pattern=r"^hanging at step (\d+)").start()
    try:
        lc.start()
        injector.wait_injected(120)
        chief = lc.procs[("chief", 0)]
        chief.wait(120)
        ended = time.monotonic()
        codes = {key: p.poll() for key, p in lc.procs.items()}
    finally:
        injector.join(10)
        lc.stop()
    rec = injector.records[0]
    assert rec.killed_at is not None, rec
    named = "/job:worker/replica:0/task:0" in lc.output("chief", 0)
    return {"recovery_s": ended - rec.killed_at, "steps_lost": None, "codes": _codes(codes),
            "at_step": rec.killed_at_step, "error_names_worker": named}


def _codes(codes: dict[tuple[str, int], int | None]) -> str:
    return " ".join(f"{job}{i}={code}" for (job, i), code in sorted(codes.items()))


def run(args: argparse.Namespace) -> dict[str, Any]:
    results = {}
    for case in args.cases:
        with tempfile.TemporaryDirectory(prefix="tw-bench-faults-") as tmp:
            if case.endswith("killed"):
                results[case] = _kill_case(case, args, tmp)
            elif case.startswith("ps frozen"):
                results[case] = _freeze_case(args, tmp)
            else:
                results[case] = _sync_lost_case(args, tmp)
        r = results[case]
        took = "-" if r["recovery_s"] is None else f"{r['recovery_s']:.2f}"
        what = "to the chief's error" if case == "sync worker lost" else "to recovery"
        named = "" if "error_names_worker" not in r else (
            "; the error names it" if r["error_names_worker"] else "; the error does NOT name it")
        print(f"{case:18s} at step {r['at_step']}: {took} s {what}, steps lost "
              f"{r['steps_lost'] if r['steps_lost'] is not None else '-'}; exit codes "
              f"{r['codes']}{named}", flush=True)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at-step", type=int, default=20)
    parser.add_argument("--last-step", type=int, default=60)
    parser.add_argument("--save-steps", type=int, default=10)
    parser.add_argument("--step-secs", type=float, default=0.1,
                        help="each trainer's pause after a step (paces the job)")
    parser.add_argument("--cases", type=lambda s: [c.strip() for c in s.split(",")],
                        default=CASES, help=f"comma-separated, of: {', '.join(CASES)}")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args(argv)
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {CASES}")
    results = run(args)
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
