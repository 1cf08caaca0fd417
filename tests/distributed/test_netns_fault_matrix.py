"""The fault matrix (test_fault_matrix.py) on the multi-host bed (issue 32): the ps, the
chief and the worker each on a host of their own, so the kill -9, the restart on the same
address and every reconnection after it cross TCP between hosts (gRPC and the bulk
channel), never the same-host Unix links. Same cases, seeds and assertions as on
loopback; and a ps restarted from its replica on another host (issue 33). Skipped
unless root with `ip netns`."""
from __future__ import annotations

import pytest

from test_fault_matrix import MODES, VICTIMS, case_seed, check_case, program_argv
from test_ps_replication_faults import check_restart_from_replica, program, replication_env
from tensorweave.testing.faults import Fault, run_job
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


@pytest.mark.transports("grpc", why=ACROSS_HOSTS)
def test_a_ps_killed_across_hosts_carries_on_from_its_replica_on_another_host(
        netns_bed: NetnsBed, tmp_path: object) -> None:
    """Issue 33 across hosts: sync training, the ps replicating after every step to the
    chief (another host: the replica crosses TCP); the ps killed at step 25 and started
    again on its address loads it, and no step is lost."""
    lc = NetnsCluster(netns_bed, HOSTS, env=replication_env("sync_backup"),
                      programs={job: program(tmp_path, "sync_backup") for job in HOSTS})
    codes, records = run_job(lc, [Fault("ps", 0, at_step=25)], timeout=150)
    check_restart_from_replica(lc, "sync_backup", codes, records)
    assert "on /job:chief/replica:0/task:0" in lc.output("ps", 0)
