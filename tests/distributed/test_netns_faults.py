"""Network faults between hosts, as tests: the tasks of a job each in their own network
namespace (`netns_bed`), every link through the fault proxy (`NetnsCluster(...,
via_proxy=True)`). Skipped unless root with `ip netns`.

Timings are printed (`-s` shows them), never asserted."""
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
_STEP_LINE = r"^step (\d+) {task} loss \S+ t ([\d.]+)$"


def _trainer(checkpoint_dir: object, last_step: int, step_secs: float) -> list[str]:
    return [sys.executable, "-m", "tensorweave.testing.fault_trainer",
            f"--checkpoint_dir={checkpoint_dir}", f"--last_step={last_step}",
            f"--step_secs={step_secs}", "--save_steps=100000"]


def _steps(c: NetnsCluster, job: str, index: int) -> list[tuple[int, float]]:
    """(global step, wall time) of every step (job, index) has printed."""
    pattern = _STEP_LINE.format(task=f"{job}:{index}")
    return [(int(s), float(t)) for s, t in re.findall(pattern, c.output(job, index), re.M)]


def _cut(bed: NetnsBed, c: NetnsCluster, host: str) -> None:
    """Cuts `host` off every other host: in the proxy when there is one, else unplugged."""
    if c.proxy is not None:
        c.proxy.cut(host)
    else:
        bed.unplug(host)


def _heal(bed: NetnsBed, c: NetnsCluster, host: str) -> None:
    if c.proxy is not None:
        c.proxy.heal(host)
    else:
        bed.plug(host)


def _wait_steps(c: NetnsCluster, job: str, index: int, n: int, timeout: float = 60) -> None:
    wait = Wait(f"for {job} {index} to run {n} steps", timeout, error=TimeoutError)
    while len(_steps(c, job, index)) < n:
        if not c.alive():
            raise AssertionError(f"a task exited before the fault: "
                                 f"{ {k: c.output(*k)[-1500:] for k in c.procs} }")
        wait.pause()


@pytest.mark.parametrize("how", ["unplug", "proxy"])
def test_link_cut_for_10s_then_healed_the_job_finishes(netns_bed: NetnsBed,
                                                       tmp_path: object, how: str) -> None:
    """Worker 1's link (to every other host) is cut silently for 10 s mid-training, then
    healed: every task exits 0. Prints how long worker 1 stalled past the heal.

    "unplug" takes worker 1's cable out of the bridge (`NetnsBed.unplug`: packets are
    lost, TCP retransmits with its back-off, as across a real partition); "proxy" cuts
    it in the fault proxy (bytes wait, the senders' windows close; no back-off)."""
    prog = _trainer(tmp_path, last_step=300, step_secs=0.1)
    with NetnsCluster(netns_bed, HOSTS, via_proxy=how == "proxy",
                      programs={"ps": prog, "worker": prog}) as c:
        _wait_steps(c, "worker", 1, 5)
        cut_at = time.time()
        _cut(netns_bed, c, "worker1")
        try:
            time.sleep(10)
        finally:
            _heal(netns_bed, c, "worker1")
        healed_at = time.time()
        codes = c.wait(90)
        outputs = {f"{job}{i}": c.output(job, i)[-3000:] for job, i in c.logs}
        steps = _steps(c, "worker", 1)
        before = [t for _, t in steps if t < cut_at]
        after = [t for _, t in steps if t >= cut_at]
        chief_during = [s for s, t in _steps(c, "worker", 0) if cut_at <= t < healed_at]
        print(f"\n{how}: worker 1: last step {cut_at - before[-1]:.2f}s before the cut; "
              + (f"first step after it {after[0] - cut_at:.2f}s after the cut, "
                 f"{after[0] - healed_at:.2f}s past the heal (a 10 s cut)"
                 if after else "no step after the cut")
              + f"; the chief ran {len(chief_during)} steps during the cut")
        assert codes == {("ps", 0): 0, ("worker", 0): 0, ("worker", 1): 0}, outputs
        assert after, f"worker 1 ran no step after the heal:\n{outputs['worker1']}"


@pytest.mark.parametrize("how", ["proxy"])
def test_link_cut_across_the_chiefs_last_step_every_worker_exits_0(netns_bed: NetnsBed,
                                                                   tmp_path: object,
                                                                   how: str) -> None:
    """Worker 1's link is cut for 30 s while the chief runs its last step and ends the
    job: the ps waits for worker 1's open session, worker 1 comes back, finishes, and
    every task exits 0 (issue 32's abandoned worker).

    "proxy" only, to keep the suite short: "unplug" (a real partition) takes ~60 s. At
    0e1d37b..afb412d it abandoned worker 1 (connections stuck in TCP's back-off past the
    heal; the ps gave up at 45 s, then worker 1 waited for a ps that was gone); on
    12727d8 a one-off run passed: worker 1's step gave up after 30 s of silence, its
    new session was made 0.4 s after the heal, and every task exited 0."""
    prog = _trainer(tmp_path, last_step=60, step_secs=0.1)
    with NetnsCluster(netns_bed, HOSTS, via_proxy=how == "proxy",
                      programs={"ps": prog, "worker": prog}) as c:
        _wait_steps(c, "worker", 1, 3)
        cut_at = time.monotonic()
        _cut(netns_bed, c, "worker1")
        chief_done = None
        try:
            while time.monotonic() - cut_at < 30:
                if chief_done is None and c.procs[("worker", 0)].poll() is not None:
                    chief_done = time.monotonic() - cut_at
                time.sleep(0.1)
        finally:
            _heal(netns_bed, c, "worker1")
        codes = c.wait(120)
        ended = time.monotonic() - cut_at
        outputs = {f"{job}{i}": c.output(job, i)[-3000:] for job, i in c.logs}
        print(f"\nchief exited {chief_done}s after the cut; the job ended {ended:.1f}s after "
              f"it (healed at 30 s)")
        assert chief_done is not None, "the chief did not finish during the cut: " \
            f"raise the cut or lower last_step\n{outputs['worker0']}"
        assert codes == {("ps", 0): 0, ("worker", 0): 0, ("worker", 1): 0}, outputs
        # The ps found worker 1 silent at the job's end and kept serving it
        # (distributed/job.py); before, it exited at the first unanswered status call.
        ps_log = c.output("ps", 0)
        assert "does not answer its health check" in ps_log, ps_log[-3000:]


def test_delay_spike_the_job_finishes(netns_bed: NetnsBed, tmp_path: object) -> None:
    """Every link gets 100 ms (+ up to 50 ms jitter) each way for 5 s mid-training: the job
    finishes, every task exits 0. Prints global steps/s before, during and after."""
    prog = _trainer(tmp_path, last_step=500, step_secs=0.02)
    with NetnsCluster(netns_bed, HOSTS, via_proxy=True,
                      programs={"ps": prog, "worker": prog}) as c:
        assert c.proxy is not None
        _wait_steps(c, "worker", 1, 3)
        marks = [time.time()]
        time.sleep(2)
        marks.append(time.time())
        c.proxy.delay("*", "*", 0.1, jitter=0.05)
        try:
            time.sleep(5)
        finally:
            c.proxy.heal()
        marks.append(time.time())
        codes = c.wait(90)
        outputs = {f"{job}{i}": c.output(job, i)[-3000:] for job, i in c.logs}
        steps = sorted(_steps(c, "worker", 0) + _steps(c, "worker", 1), key=lambda st: st[1])
        marks.append(steps[-1][1])

        def rate(lo: float, hi: float) -> str:
            done = [s for s, t in steps if lo <= t < hi]
            return f"{(max(done) - min(done)) / (hi - lo):.1f}" if len(done) > 1 else "-"
        print(f"\nglobal steps/s: {rate(marks[0], marks[1])} before, {rate(marks[1], marks[2])} "
              f"with 100+-50 ms each way, {rate(marks[2], marks[3] + 1e-3)} after")
        assert codes == {("ps", 0): 0, ("worker", 0): 0, ("worker", 1): 0}, outputs


# A client of worker 0's server: a step on the ps, then (after a line on stdin) the same
# step with a 3 s deadline, then (after another line) the step again without one.
_DEADLINE_CLIENT = r"""
import sys, time
import tensorweave as tf
with tf.Graph().as_default():
    with tf.device("/job:ps/task:0"):
        v = tf.constant(3.0) * 2
    with tf.Session("grpc://" + sys.argv[1]) as sess:
        print("FIRST", sess.run(v), flush=True)
        sys.stdin.readline()
        start = time.monotonic()
        try:
            sess.run(v, options=tf.RunOptions(timeout_in_ms=3000))
            print("CUT no error", flush=True)
        except tf.errors.OpError as e:
            print(f"CUT {type(e).__name__} after {time.monotonic() - start:.2f}s: {e.message}",
                  flush=True)
        sys.stdin.readline()
        start = time.monotonic()
        print(f"HEALED {sess.run(v)} after {time.monotonic() - start:.2f}s", flush=True)
"""


@pytest.mark.parametrize("how", ["unplug", "proxy"])
def test_step_deadline_holds_against_a_cut_ps(netns_bed: NetnsBed, how: str) -> None:
    """The ps is cut off: a step with a 3 s deadline raises DeadlineExceededError naming
    the ps (first runs: after 3.5 s); once healed, the same session runs the step again
    (after 3.2 s unplugged: TCP's back-off; 0.01 s through the proxy)."""
    import subprocess
    with NetnsCluster(netns_bed, HOSTS, via_proxy=how == "proxy") as c:
        client = netns_bed.popen("worker0", [sys.executable, "-c", _DEADLINE_CLIENT,
                                             c.spec["worker"][0]],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        assert client.stdin is not None and client.stdout is not None
        lines = []

        def line(prefix: str) -> str:
            for text in client.stdout:
                lines.append(text)
                if text.startswith(prefix):
                    return text.strip()
            raise AssertionError(f"the client ended before {prefix}:\n{''.join(lines)}")
        assert line("FIRST") == "FIRST 6.0"
        _cut(netns_bed, c, "ps0")
        try:
            client.stdin.write("cut\n")
            client.stdin.flush()
            cut = line("CUT")
        finally:
            _heal(netns_bed, c, "ps0")
        client.stdin.write("healed\n")
        client.stdin.flush()
        healed = line("HEALED")
        client.wait(30)
        print(f"\n{how}: {cut}\n{how}: {healed}")
        assert cut.startswith("CUT DeadlineExceededError after "), cut
        assert "/job:ps/replica:0/task:0" in cut, cut
        assert "passed its deadline of 3000 ms" in cut, cut  # the time: printed above
        assert healed.startswith("HEALED 6.0"), healed
