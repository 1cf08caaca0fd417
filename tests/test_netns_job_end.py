"""The job's end across hosts waits for a worker cut off when the chief finishes (issue 32).

Worker 1's link to every other host is cut for 30 s, and the chief runs its last
step during the cut. The ps, told the job is done, finds worker 1's session still
open and worker 1 silent: it keeps serving (worker 1 is declared gone only after
TENSORWEAVE_JOB_END_SILENCE_SECS of silence over several health checks), so when the
link heals worker 1 finishes, and every task exits 0. Before, the ps exited at once
and worker 1 met "Connection refused" until it gave up with exit 1.

Each task in its own network namespace (`netns_bed`); skipped unless root with
`ip netns`. Timings are printed (`-s` shows them), never asserted.
"""
from __future__ import annotations

import re
import sys
import time

import pytest

from tensorweave.base.waits import Wait
from tensorweave.testing.netns import NetnsBed
from tensorweave.testing.netns_cluster import NetnsCluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

HOSTS = {"ps": ["ps0"], "worker": ["worker0", "worker1"]}
CUT_SECS = 30.0


def _trainer(checkpoint_dir: object) -> list[str]:
    return [sys.executable, "-m", "tensorweave.testing.fault_trainer",
            f"--checkpoint_dir={checkpoint_dir}", "--last_step=60", "--step_secs=0.1",
            "--save_steps=100000"]


def _wait_for(c: NetnsCluster, job: str, index: int, pattern: str, timeout: float) -> None:
    wait = Wait(f"for {job} {index} to print {pattern!r}", timeout, error=AssertionError)
    while not re.search(pattern, c.output(job, index), re.M):
        if c.procs[(job, index)].poll() is not None:
            raise AssertionError(f"{job} {index} exited before printing {pattern!r}:\n"
                                 f"{c.output(job, index)[-3000:]}")
        wait.pause(lambda: c.output(job, index)[-1500:])


# Only the fault proxy's cut (bytes held, no TCP back-off) for now: with worker 1's cable
# out of the bridge for 30 s (`NetnsBed.unplug`), the ps's gRPC connection to worker 1
# stays stuck in TCP's retransmission back-off well past the heal (no keepalive
# notices it), so the ps's health checks still go unanswered and worker 1 is declared
# gone at 45 s. That needs keepalive pings in distributed/transport/ (issue 32).
@pytest.mark.parametrize("how", ["proxy"])
def test_a_30s_cut_across_the_chiefs_last_step_still_ends_with_every_task_exit_0(
        netns_bed: NetnsBed, tmp_path: object, how: str) -> None:
    """"proxy": the fault proxy holds worker 1's bytes to and from every host (a silent
    cut); "unplug" (see above) would take its cable out of the bridge."""
    prog = _trainer(tmp_path)
    with NetnsCluster(netns_bed, HOSTS, via_proxy=how == "proxy",
                      programs={"ps": prog, "worker": prog}) as c:
        _wait_for(c, "worker", 1, r"^step \d+ worker:1 ", 90)
        cut_at = time.monotonic()
        if c.proxy is not None:
            c.proxy.cut("worker1")
        else:
            netns_bed.unplug("worker1")
        try:
            # The chief runs its last step during the cut (it trains alone meanwhile).
            _wait_for(c, "worker", 0, r"^done worker:0$", CUT_SECS - 2)
            chief_done = time.monotonic() - cut_at
            time.sleep(max(0.0, CUT_SECS - (time.monotonic() - cut_at)))
            ps_waiting = c.procs[("ps", 0)].poll() is None
        finally:
            if c.proxy is not None:
                c.proxy.heal("worker1")
            else:
                netns_bed.plug("worker1")
        healed_at = time.monotonic()
        codes = c.wait(180)
        ended = time.monotonic() - healed_at
        outputs = {f"{job}{i}": c.output(job, i)[-3000:] for job, i in c.procs}
    print(f"\n{how}: the chief finished {chief_done:.1f}s into the {CUT_SECS:.0f}s cut; "
          f"every task ended {ended:.1f}s after the heal")
    assert ps_waiting, f"the ps exited while worker 1 was cut off:\n{outputs['ps0']}"
    assert codes == {("ps", 0): 0, ("worker", 0): 0, ("worker", 1): 0}, outputs
    assert "done worker:1" in outputs["worker1"], outputs["worker1"]
    assert "does not answer its health check" in outputs["ps0"], outputs["ps0"]
    assert "is gone" not in outputs["ps0"] and "giving up on" not in outputs["ps0"]
