"""examples/s over time as an elastic job goes 1 -> 2 -> 4 -> 2 workers (issue 35).

An async job of 1 ps and `--max-workers 4` worker slots runs
`tensorweave.testing.fault_trainer` (between-graph, replica_device_setter,
MonitoredTrainingSession; a linear model of 8 weights on the ps, so a step is mostly the
distributed step's own cost), started with `tensorweave launch --workers 1`. Every
`--phase-secs` the bench calls `tensorweave scale <logdir> --workers N` with the next
count of `--plan`. Each worker logs its global step with a timestamp every
`--print-every` steps; after the run the global step is sampled from those lines on a 1 s
grid (the highest step logged by then), and examples/s is global steps x batch per
second over the last `--smooth` seconds. Printed: a table per phase (workers, median
examples/s from `--settle` seconds after the scale event, to let joining workers start,
to the next event); written: a PNG of the series with a vertical line at each event
(`--out`; `--save-docs` also writes docs/elastic.png).

`--step-secs` sleeps after each step, as a worker waiting on its input would: the rate
is then bounded by the workers' pace, not by the machine's cores. Unpaced (the default),
every worker and the ps compete for the CPUs, so on 2 cores the rate cannot grow much
beyond 2 workers: this bench measures how much it does.

Needs matplotlib (not a dependency of tensorweave: `pip install 'tensorweave[bench]'`).

    .venv/bin/python -m bench.elastic [--plan 1,2,4,2] [--phase-secs 20] [--save-docs]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import ROOT

_STEP = re.compile(r"^step (\d+) worker:(\d+) .* t ([0-9.]+)$", re.MULTILINE)
DOCS_PNG = os.path.join(ROOT, "docs", "elastic.png")


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files only, no display).

    Raises:
        SystemExit: matplotlib is not installed, naming the extra that brings it.
    """
    try:
        import matplotlib
    except ImportError:
        raise SystemExit(
            "bench.elastic draws its plot with matplotlib, which tensorweave does not "
            "depend on: install the 'bench' extra (pip install 'tensorweave[bench]', or "
            ".venv/bin/pip install 'matplotlib>=3.8') and run it again.") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


@dataclass
class Event:
    """A `tensorweave scale` call: when (seconds from the job's first step) and to how
    many workers."""
    t: float
    workers: int


def start_job(logdir: Path, work: Path, args: argparse.Namespace) -> subprocess.Popen:
    """`tensorweave launch --max-workers` with `args.plan[0]` worker(s) of fault_trainer."""
    trainer = [sys.executable, "-m", "tensorweave.testing.fault_trainer",
               "--checkpoint_dir", str(work / "ck"), "--last_step", "1000000000",
               "--save_steps", "1000000000", "--step_secs", str(args.step_secs),
               "--batch_size", str(args.batch), "--print_every", str(args.print_every),
               "--stop_file", str(work / "stop")]
    launch = [sys.executable, "-m", "tensorweave", "launch", "--ps", "1",
              "--workers", str(args.plan[0]), "--max-workers", str(max(args.plan)),
              "--logdir", str(logdir), "--no-progress", "--kill-grace", "5", "--", *trainer]
    err = (work / "launch.err").open("w")
    return subprocess.Popen(launch, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT))


def step_lines(logdir: Path) -> list[tuple[float, int]]:
    """(wall time, global step) of every step line the workers logged, by time."""
    out = []
    for log in logdir.glob("worker-*.log"):
        for m in _STEP.finditer(log.read_text(errors="replace")):
            out.append((float(m.group(3)), int(m.group(1))))
    return sorted(out)


def scale(logdir: Path, workers: int) -> None:
    """`tensorweave scale LOGDIR --workers N`, in this process (its line is printed)."""
    from tensorweave.launch.cli import main as cli
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = cli(["scale", str(logdir), "--workers", str(workers)])
    if code != 0:
        raise RuntimeError(f"tensorweave scale --workers {workers} failed (code {code})")
    print(f"  scale -> {workers}: {text.getvalue().strip()}", flush=True)


def run(args: argparse.Namespace, work: Path) -> tuple[list[tuple[float, int]], list[Event]]:
    """Runs the job through `args.plan`; the step lines (t from the first step) and events."""
    logdir = work / "logs"
    proc = start_job(logdir, work, args)
    try:
        deadline = time.time() + 120
        while not step_lines(logdir):
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("the job logged no step:\n" +
                                   (work / "launch.err").read_text()[-3000:])
            time.sleep(0.2)
        t0 = step_lines(logdir)[0][0]
        events = [Event(0.0, args.plan[0])]
        for workers in args.plan[1:]:
            time.sleep(max(0.0, t0 + events[-1].t + args.phase_secs - time.time()))
            events.append(Event(time.time() - t0, workers))
            scale(logdir, workers)
        time.sleep(max(0.0, t0 + events[-1].t + args.phase_secs - time.time()))
        end = time.time() - t0
        (work / "stop").touch()
        code = proc.wait(timeout=120)
        if code != 0:
            print(f"  the job ended with exit code {code}:\n"
                  + (work / "launch.err").read_text()[-2000:], flush=True)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [(t - t0, g) for t, g in step_lines(logdir) if t - t0 <= end]
    return lines, events + [Event(end, 0)]   # the last marks the end, not a scale


def series(lines: list[tuple[float, int]], end: float, smooth: float,
           batch: int) -> list[tuple[float, float]]:
    """(t, examples/s) on a 1 s grid: the highest global step logged by t, its rise over
    the last `smooth` seconds, times the batch."""
    highest: list[int] = []
    i, top = 0, 0
    for t in range(int(end) + 1):
        while i < len(lines) and lines[i][0] <= t:
            top = max(top, lines[i][1])
            i += 1
        highest.append(top)
    w = max(1, int(round(smooth)))
    return [(float(t), (highest[t] - highest[t - w]) * batch / w)
            for t in range(w, len(highest))]


def phase_table(points: list[tuple[float, float]], events: list[Event],
                settle: float, smooth: float) -> list[dict[str, Any]]:
    """Per phase: workers, its span, the median examples/s once settled."""
    rows = []
    for ev, nxt in zip(events, events[1:]):
        # A sample's window must start after the event plus the settle time.
        rates = [r for t, r in points if ev.t + settle + smooth <= t <= nxt.t]
        rows.append({"workers": ev.workers, "start": ev.t, "end": nxt.t,
                     "median": statistics.median(rates) if rates else None,
                     "samples": len(rates)})
    return rows


def plot(points: list[tuple[float, float]], events: list[Event], rows: list[dict[str, Any]],
         title: str, paths: list[str]) -> None:
    """The series, a dashed line at each scale event, each phase's median as a step."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 3.6), dpi=100)
    ax.plot([t for t, _ in points], [r / 1000 for _, r in points], lw=1.4,
            color="tab:blue", label="examples/s (smoothed)")
    for row in rows:
        if row["median"] is not None:
            ax.hlines(row["median"] / 1000, row["start"], row["end"], colors="tab:orange",
                      lw=1.0, linestyles="dotted")
    top = max((r for _, r in points), default=1.0) / 1000
    for ev in events[1:-1]:
        ax.axvline(ev.t, color="0.4", ls="--", lw=1)
        ax.text(ev.t + 0.4, top * 1.02, f"scale -> {ev.workers}", fontsize=8, va="bottom")
    ax.text(0.4, top * 1.02, f"{events[0].workers} worker", fontsize=8, va="bottom")
    ax.set_ylim(0, top * 1.15)
    ax.set_xlabel("seconds since the first step")
    ax.set_ylabel("thousand examples/s")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    for path in paths:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        fig.savefig(path)
        print(f"  wrote {path} ({os.path.getsize(path) // 1024} KiB)", flush=True)
    plt.close(fig)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", default="1,2,4,2", help="worker counts, one per phase")
    parser.add_argument("--phase-secs", type=float, default=22.0)
    parser.add_argument("--step-secs", type=float, default=0.0,
                        help="sleep after each step (a worker waiting on input)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--print-every", type=int, default=5)
    parser.add_argument("--smooth", type=float, default=3.0, help="seconds a rate covers")
    parser.add_argument("--settle", type=float, default=4.0,
                        help="seconds after an event a phase's median leaves out")
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "elastic.png"))
    parser.add_argument("--save-docs", action="store_true", help="also write docs/elastic.png")
    args = parser.parse_args(argv)
    args.plan = [int(n) for n in args.plan.split(",")]
    if args.plan[0] < 1 or min(args.plan) < 1:
        parser.error("--plan: every phase needs at least 1 worker (worker 0 stays)")
    pyplot()   # fail before a minute of running when matplotlib is missing
    pace = f"{args.step_secs:g} s asleep per step" if args.step_secs else "unpaced"
    print(f"elastic job: 1 ps, workers {' -> '.join(map(str, args.plan))}, "
          f"{args.phase_secs:g} s a phase, batch {args.batch}, {pace}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-elastic-") as tmp:
        lines, events = run(args, Path(tmp))
    points = series(lines, events[-1].t, args.smooth, args.batch)
    rows = phase_table(points, events, args.settle, args.smooth)
    print("  | workers | from s | to s | examples/s (median) |")
    for row in rows:
        median = f"{row['median']:,.0f}" if row["median"] is not None else "-"
        print(f"  | {row['workers']} | {row['start']:.0f} | {row['end']:.0f} | {median} |")
    title = (f"tensorweave elastic async job (fault_trainer, batch {args.batch}, {pace}): "
             f"workers {' -> '.join(map(str, args.plan))}")
    plot(points, events, rows, title, [args.out] + ([DOCS_PNG] if args.save_docs else []))
    return rows


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
