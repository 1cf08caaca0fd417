"""Recovery from a lost ps: `tensorweave launch --restart on-failure`, a ps killed with
SIGKILL mid-run, the time until training goes on and the steps it lost.

Settings (examples/trainer.py on the shipped digits, MLP 64-`--hidden`-10, batch
128, checkpoints every `--checkpoint-every` global steps, a step line every
`--log-every` local steps per worker):

  async         1 ps + 2 workers
  sync backup   1 ps + 3 workers, SyncReplicasOptimizer(replicas_to_aggregate=2,
                total_num_replicas=3): one backup worker
  wide & deep   examples/wide_deep.py, 2 ps + 2 workers async (embeddings and linear
                weights split over both ps; ps 0 is killed), its own click log

Once the global step passes `--kill-at`, the ps process gets SIGKILL. Figures:

  kill -> next step   seconds from the kill to the first step line printed after the
                      ps was restarted (so computed against the new ps)
  of which back-off   the launcher's wait before the restart (--restart-backoff)
  restart -> step     from the launcher starting the new ps to that step line: the
                      new ps's start, the sessions' recovery, the chief's restore
  resumed at          the global step training went on from: the checkpoint the chief
                      restored, or (replication on) the first step printed after the
                      restart, less one
  steps lost          the highest global step printed before the kill minus that; the
                      true loss can be up to `--log-every` x workers higher (steps not
                      yet printed)

Each setting runs with TENSORWEAVE_PS_REPLICATION off (the ps restarted empty: the
chief restores the last checkpoint) and on (issue 33: the ps loads its replica from the
chief's task and training goes on from there; sync with TENSORWEAVE_PS_REPLICA_SECS=0,
replicated before each step ends), `--replication` picks one; `--replication incremental`
runs it off with incremental checkpoints every `--incremental-secs` (what a job without
a surviving replica loses: the chief restores the full checkpoint plus the chain).

    .venv/bin/python -m bench.recovery [--steps 600] [--kill-at 250] [--rounds 1]
                                       [--replication off|on|both]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any

from bench.common import ROOT, chosen

# (name, ps, workers, program and its flags besides steps, checkpoints and logging)
SETTINGS: list[tuple[str, int, int, list[str]]] = [
    ("async", 1, 2, ["examples/trainer.py"]),
    ("sync backup", 1, 3, ["examples/trainer.py", "--sync_replicas=true",
                           "--replicas_to_aggregate=2"]),
    ("wide & deep", 2, 2, ["examples/wide_deep.py", "--examples_per_worker=20000"]),
]
_STEP = re.compile(r"global step (\d+)")
_RESTORED = re.compile(r"restored checkpoint \S*model\.ckpt-(\d+)")


def _collect(stream: IO[str], lines: list[tuple[float, str]]) -> None:
    for line in stream:
        lines.append((time.monotonic(), line.rstrip("\n")))


def _ps_pid(launcher_pid: int) -> int:
    """The launcher's child whose TF_CONFIG says it is ps 0."""
    for t in os.listdir(f"/proc/{launcher_pid}/task"):
        with open(f"/proc/{launcher_pid}/task/{t}/children") as f:
            for pid in map(int, f.read().split()):
                with open(f"/proc/{pid}/environ", "rb") as env_file:
                    env = dict(e.split(b"=", 1) for e in env_file.read().split(b"\0")
                               if b"=" in e)
                task = json.loads(env.get(b"TF_CONFIG", b"{}")).get("task", {})
                if task.get("type") == "ps" and task.get("index", 0) == 0:
                    return pid
    raise RuntimeError("no ps task among the launcher's children")


def _max_step(lines: list[tuple[float, str]]) -> int:
    return max((int(m.group(1)) for _, line in lines for m in [_STEP.search(line)] if m),
               default=0)


def run_setting(ps: int, workers: int, program: list[str], args: argparse.Namespace,
                replication: bool = False, incremental: float | None = None
                ) -> dict[str, Any]:
    """One launch, one ps kill; the figures of the module docstring."""
    ckpt = tempfile.mkdtemp(prefix="tw-recovery-")
    script, extra = program[0], program[1:]
    flags = [f"--train_steps={args.steps}", f"--checkpoint_dir={ckpt}",
             f"--save_checkpoint_steps={args.checkpoint_every}", f"--log_every={args.log_every}"]
    if incremental is not None:
        flags.append(f"--save_incremental_checkpoint_secs={incremental}")
    if script == "examples/trainer.py":
        flags.append(f"--hidden={args.hidden}")
        launch = []
    else:  # wide_deep.py takes the seed programs' cluster flags, and writes its data
        flags.append(f"--data_dir={tempfile.mkdtemp(prefix='tw-recovery-data-')}")
        launch = ["--pass-flags"]
    cmd = [sys.executable, "-m", "tensorweave", "launch", "--ps", str(ps), "--workers",
           str(workers), "--restart", "on-failure", "--restart-backoff", str(args.backoff),
           "--no-progress", *launch, "--", sys.executable, script, *flags, *extra]
    env = dict(os.environ, TENSORWEAVE_PS_REPLICATION="1" if replication else "0")
    if "--sync_replicas=true" in extra:  # sync: replicated before each step ends
        env["TENSORWEAVE_PS_REPLICA_SECS"] = "0"
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    out: list[tuple[float, str]] = []
    err: list[tuple[float, str]] = []
    readers = [threading.Thread(target=_collect, args=(s, lines), daemon=True)
               for s, lines in ((proc.stdout, out), (proc.stderr, err))]
    for r in readers:
        r.start()
    try:
        deadline = time.monotonic() + 300
        while _max_step(out) < args.kill_at:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("training ended or stalled before the kill:\n"
                                   + "\n".join(line for _, line in (out + err)[-30:]))
            time.sleep(0.02)
        step_at_kill, killed_at = _max_step(out), time.monotonic()
        os.kill(_ps_pid(proc.pid), signal.SIGKILL)
        code = proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for r in readers:
        r.join(5)
    restart_at = next(t for t, line in err if "restarted ps 0" in line)
    next_at, next_step = next((t, int(m.group(1))) for t, line in out if t > restart_at
                              for m in [_STEP.search(line)] if m)
    restored = next((int(m.group(1)) for _, line in out for m in [_RESTORED.search(line)]
                     if m), None)
    resumed = restored if restored is not None else next_step - 1
    return {"exit_code": code, "replication": replication, "step_at_kill": step_at_kill,
            "restored_step": restored, "resumed_step": resumed,
            "steps_lost": max(0, step_at_kill - resumed), "next_step": next_step,
            "kill_to_next_step_s": next_at - killed_at, "backoff_s": args.backoff,
            "restart_to_next_step_s": next_at - restart_at}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="global steps to train")
    parser.add_argument("--kill-at", type=int, default=250,
                        help="SIGKILL the ps once a step line shows this global step")
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--log-every", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--backoff", type=float, default=1.0,
                        help="--restart-backoff of the launch (default 1, its default)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", default="", help="run the settings whose name has these words")
    parser.add_argument("--replication", choices=("off", "on", "both", "incremental", "all"),
                        default="both",
                        help="TENSORWEAVE_PS_REPLICATION for the job (default: both, in "
                             "turn); incremental: off, with incremental checkpoints every "
                             "--incremental-secs; all: the three")
    parser.add_argument("--incremental-secs", type=float, default=0.5)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    off, on, incr = ("replication off", False, None), ("replication on", True, None), \
        (f"incremental {args.incremental_secs:g}s", False, args.incremental_secs)
    modes = {"off": [off], "on": [on], "both": [off, on], "incremental": [incr],
             "all": [off, on, incr]}[args.replication]
    for name, ps, workers, program in SETTINGS:
        if not chosen(name, args.only):
            continue
        for label, replication, secs in modes:
            results[f"{name}, {label}"] = [
                run_setting(ps, workers, program, args, replication, secs)
                for _ in range(args.rounds)]
    if args.json:
        print(json.dumps(results, indent=1))
        return results
    print(f"{'setting':<29} {'exit':>4} {'kill->next step':>16} {'back-off':>9} "
          f"{'restart->step':>14} {'killed at':>10} {'resumed at':>11} {'lost':>5}")
    for name, runs in results.items():
        for r in runs:
            print(f"{name:<29} {r['exit_code']:>4} {r['kill_to_next_step_s']:>15.2f}s "
                  f"{r['backoff_s']:>8.1f}s {r['restart_to_next_step_s']:>13.2f}s "
                  f"{r['step_at_kill']:>10} {r['resumed_step']:>11} {r['steps_lost']:>5}")
    return results


if __name__ == "__main__":
    main()
