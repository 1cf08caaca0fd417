"""A step deadline against a ps cut off on the multi-host bed (issue 32): unplugged, and
cut in the proxy. Timings are printed (`-s`), never asserted; helpers:
netns_fault_helpers.py. Skipped unless root with `ip netns`."""
from __future__ import annotations

import subprocess
import sys

import pytest

from netns_fault_helpers import HOSTS, cut_host, heal_host
from tensorweave.testing.netns import NetnsBed
from tensorweave.testing.netns_cluster import NetnsCluster
from suite_markers import ACROSS_HOSTS

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


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
@pytest.mark.transports("grpc", why=ACROSS_HOSTS)
def test_step_deadline_holds_against_a_cut_ps(netns_bed: NetnsBed, how: str) -> None:
    """The ps is cut off: a step with a 3 s deadline raises DeadlineExceededError naming
    the ps (first runs: after 3.5 s); once healed, the same session runs the step again
    (after 3.2 s unplugged: TCP's back-off; 0.01 s through the proxy)."""
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
        cut_host(netns_bed, c, "ps0")
        try:
            client.stdin.write("cut\n")
            client.stdin.flush()
            cut = line("CUT")
        finally:
            heal_host(netns_bed, c, "ps0")
        client.stdin.write("healed\n")
        client.stdin.flush()
        healed = line("HEALED")
        client.wait(30)
        print(f"\n{how}: {cut}\n{how}: {healed}")
        assert cut.startswith("CUT DeadlineExceededError after "), cut
        assert "/job:ps/replica:0/task:0" in cut, cut
        assert "passed its deadline of 3000 ms" in cut, cut  # the time: printed above
        assert healed.startswith("HEALED 6.0"), healed
