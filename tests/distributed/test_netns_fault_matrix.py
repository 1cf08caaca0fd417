"""The fault matrix (test_fault_matrix.py) on the multi-host bed (issue 32): the ps, the
chief and the worker each on a host of their own, so the kill -9, the restart on the same
address and every reconnection after it cross TCP between hosts (gRPC and the bulk
channel), never the same-host Unix links. Same cases, seeds and assertions as on
loopback. Skipped unless root with `ip netns`."""
from __future__ import annotations

import pytest

from test_fault_matrix import MODES, VICTIMS, case_seed, check_case, program_argv
from tensorweave.testing.netns import NetnsBed
from tensorweave.testing.netns_cluster import NetnsCluster
from suite_markers import ACROSS_HOSTS

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

HOSTS = {"ps": ["ps0"], "chief": ["worker0"], "worker": ["worker1"]}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("victim", sorted(VICTIMS))
@pytest.mark.transports("grpc", why=ACROSS_HOSTS)
def test_kill_one_task_at_a_random_step_across_hosts_job_completes(
        netns_bed: NetnsBed, tmp_path: object, victim: str, mode: str) -> None:
    program = program_argv(tmp_path, mode, case_seed(victim, mode))
    check_case(NetnsCluster(netns_bed, HOSTS, programs={job: program for job in HOSTS}),
               victim, case_seed(victim, mode))
