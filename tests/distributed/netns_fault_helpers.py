"""What the network-fault tests on the multi-host bed share (issue 32): the trainer they
run, reading its step lines, cutting and healing a host, waiting for steps, and a job's
outputs as one failure message that pytest shows whole.

The tests are split by fault (test_netns_link_cut.py, test_netns_last_step_cut.py,
test_netns_deadline.py) so pytest-xdist runs them side by side, each module on its own bed.
"""
from __future__ import annotations

import re
import sys

from tensorweave.base.waits import Wait
from tensorweave.testing.netns import NetnsBed
from tensorweave.testing.netns_cluster import NetnsCluster

HOSTS = {"ps": ["ps0"], "worker": ["worker0", "worker1"]}
_STEP_LINE = r"^step (\d+) {task} loss \S+ t ([\d.]+)$"


def trainer_argv(checkpoint_dir: object, last_step: int, step_secs: float) -> list[str]:
    return [sys.executable, "-m", "tensorweave.testing.fault_trainer",
            f"--checkpoint_dir={checkpoint_dir}", f"--last_step={last_step}",
            f"--step_secs={step_secs}", "--save_steps=100000"]


def task_steps(c: NetnsCluster, job: str, index: int) -> list[tuple[int, float]]:
    """(global step, wall time) of every step (job, index) has printed."""
    pattern = _STEP_LINE.format(task=f"{job}:{index}")
    return [(int(s), float(t)) for s, t in re.findall(pattern, c.output(job, index), re.M)]


def cut_host(bed: NetnsBed, c: NetnsCluster, host: str) -> None:
    """Cuts `host` off every other host: in the proxy when there is one, else unplugged."""
    if c.proxy is not None:
        c.proxy.cut(host)
    else:
        bed.unplug(host)


def heal_host(bed: NetnsBed, c: NetnsCluster, host: str) -> None:
    if c.proxy is not None:
        c.proxy.heal(host)
    else:
        bed.plug(host)


def wait_for_steps(c: NetnsCluster, job: str, index: int, n: int, timeout: float = 60) -> None:
    wait = Wait(f"for {job} {index} to run {n} steps", timeout, error=TimeoutError)
    while len(task_steps(c, job, index)) < n:
        if not c.alive():
            raise AssertionError(f"a task exited before the fault: "
                                 f"{ {k: c.output(*k)[-1500:] for k in c.procs} }")
        wait.pause()


def outputs(c: NetnsCluster, tail: int = 3000) -> str:
    """Every task's last output, one block each."""
    return "\n".join(f"===== {job} {i}:\n{c.output(job, i)[-tail:]}" for job, i in c.logs)
