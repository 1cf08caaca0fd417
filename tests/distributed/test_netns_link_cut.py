"""A link cut for 10 s mid-training, then healed, on the multi-host bed (issue 32):
unplugged from the bridge, and cut in the fault proxy. Timings are printed (`-s`), never
asserted; shared helpers: netns_fault_helpers.py. Skipped unless root with `ip netns`."""
from __future__ import annotations

import os
import signal
import time

import pytest

from netns_fault_helpers import (HOSTS, cut_host, heal_host, outputs, task_steps,
                                 trainer_argv, wait_for_steps)
from tensorweave.testing.netns import NetnsBed
from tensorweave.testing.netns_cluster import NetnsCluster
from suite_markers import ACROSS_HOSTS

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.mark.parametrize("how", ["unplug", "proxy"])
@pytest.mark.transports("grpc", why=ACROSS_HOSTS)
def test_link_cut_for_10s_then_healed_the_job_finishes(netns_bed: NetnsBed,
                                                       tmp_path: object, how: str) -> None:
    """Worker 1's link (to every other host) is cut silently for 10 s mid-training, then
    healed: every task exits 0. Prints how long worker 1 stalled past the heal.

    "unplug" takes worker 1's cable out of the bridge (`NetnsBed.unplug`: packets are
    lost, TCP retransmits with its back-off, as across a real partition); "proxy" cuts
    it in the fault proxy (bytes wait, the senders' windows close; no back-off)."""
    prog = trainer_argv(tmp_path, last_step=300, step_secs=0.1)
    with NetnsCluster(netns_bed, HOSTS, via_proxy=how == "proxy",
                      programs={"ps": prog, "worker": prog}) as c:
        wait_for_steps(c, "worker", 1, 5)
        cut_at = time.time()
        cut_host(netns_bed, c, "worker1")
        try:
            time.sleep(10)
        finally:
            heal_host(netns_bed, c, "worker1")
        healed_at = time.time()
        codes = c.wait(90)
        steps = task_steps(c, "worker", 1)
        before = [t for _, t in steps if t < cut_at]
        after = [t for _, t in steps if t >= cut_at]
        chief_during = [s for s, t in task_steps(c, "worker", 0) if cut_at <= t < healed_at]
        print(f"\n{how}: worker 1: last step {cut_at - before[-1]:.2f}s before the cut; "
              + (f"first step after it {after[0] - cut_at:.2f}s after the cut, "
                 f"{after[0] - healed_at:.2f}s past the heal (a 10 s cut)"
                 if after else "no step after the cut")
              + f"; the chief ran {len(chief_during)} steps during the cut")
        assert codes == {("ps", 0): 0, ("worker", 0): 0, ("worker", 1): 0}, outputs(c)
        assert after, f"worker 1 ran no step after the heal:\n{c.output('worker', 1)[-3000:]}"


@pytest.mark.transports("grpc", why=ACROSS_HOSTS)
def test_ps_frozen_for_20s_then_continued_the_job_finishes(netns_bed: NetnsBed,
                                                           tmp_path: object) -> None:
    """The ps on its own host is stopped (SIGSTOP: a GC pause, a stalled VM) for 20 s
    mid-training, under the 30 s silence bound, then continued: the workers wait for it
    (no step runs meanwhile), go on, and every task exits 0."""
    prog = trainer_argv(tmp_path, last_step=200, step_secs=0.05)
    with NetnsCluster(netns_bed, HOSTS, programs={"ps": prog, "worker": prog}) as c:
        wait_for_steps(c, "worker", 1, 5)
        ps = c.procs[("ps", 0)].pid
        os.kill(ps, signal.SIGSTOP)
        frozen_at = time.time()
        try:
            time.sleep(20)
        finally:
            os.kill(ps, signal.SIGCONT)
        thawed_at = time.time()
        codes = c.wait(90)
        steps = task_steps(c, "worker", 0) + task_steps(c, "worker", 1)
        during = [s for s, t in steps if frozen_at + 1 < t < thawed_at]
        after = sorted(t for _, t in steps if t >= thawed_at)
        print(f"\nps frozen 20 s: {len(during)} worker steps while frozen; the first after "
              f"{after[0] - thawed_at:.2f}s past SIGCONT" if after else "no step after")
        assert codes == {("ps", 0): 0, ("worker", 0): 0, ("worker", 1): 0}, outputs(c)
        assert not during and after, outputs(c)
