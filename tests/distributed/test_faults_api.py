"""The fault-injection helpers themselves: seeded faults, step watching, restarts."""
from __future__ import annotations

import sys

import pytest

from tensorweave.testing.cluster import LocalCluster, cluster_dict
from tensorweave.testing.faults import Fault, FaultInjector, StepWatch
from suite_markers import TASK_PROCESSES


def test_fault_needs_exactly_one_trigger():
    with pytest.raises(ValueError, match=r"/job:ps/task:0 needs exactly one of at_step and "
                                         r"after_secs, got None and None"):
        Fault("ps", 0)
    with pytest.raises(ValueError, match="exactly one"):
        Fault("ps", 0, at_step=3, after_secs=1.0)


def test_seeded_faults_repeat_and_stay_in_range():
    steps = [Fault.at_random_step("worker", 1, seed=s, low=5, high=9).at_step for s in range(50)]
    assert steps == [Fault.at_random_step("worker", 1, seed=s, low=5, high=9).at_step
                     for s in range(50)]
    assert set(steps) == {5, 6, 7, 8, 9}
    delay = Fault.after_random_delay("ps", 0, seed=3, low_secs=1, high_secs=2).after_secs
    assert delay is not None and 1 <= delay <= 2


class _Logs:
    def __init__(self, paths):
        self.logs = {("chief", 0): paths}


def test_step_watch_reads_whole_lines_only(tmp_path):
    log = tmp_path / "chief0-0.log"
    log.write_text("session at step 0\nstep 3 chief:0\nstep 1")  # "step 1..." still written
    watch = StepWatch(_Logs([str(log)]))
    assert watch.poll() == 3
    with open(log, "a") as f:
        f.write("2 chief:0\nnot a step 99\n")
    assert watch.poll() == 12


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_programs_must_name_jobs_of_the_cluster():
    with pytest.raises(ValueError, match=r"programs names jobs \['chief'\] that are not in "
                                         r"the cluster \['ps', 'worker'\]"):
        LocalCluster(spec=cluster_dict(1, 1), programs={"chief": [sys.executable]})


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_kill_after_a_delay_and_restart_on_the_same_port():
    with LocalCluster(ps=1, workers=0, spec=cluster_dict(1, 0)) as lc:
        first = lc.procs[("ps", 0)].pid
        with FaultInjector(lc, [Fault("ps", 0, after_secs=0.1, restart_after_secs=0.0)]) as inj:
            assert inj.wait_injected(30)
        rec = inj.records[0]
        assert rec.error is None and rec.restarted_at is not None
        lc.wait_task("ps", 0)  # listening again, on the port of the cluster spec
        assert lc.procs[("ps", 0)].pid != first and len(lc.logs[("ps", 0)]) == 2
