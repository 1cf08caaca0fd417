"""Who shares a machine's cores for BLAS (distributed/blas_threads.py)."""
import os

import pytest

from tensorweave.distributed import blas_threads
from tensorweave.distributed.blas_threads import limit_for_shared_machine, tasks_sharing_blas


@pytest.mark.parametrize("local_jobs,job,expected", [
    (["ps", "worker"], "worker", 1),            # the ps waits while the worker computes
    (["ps", "worker"], "ps", 2),
    (["ps", "worker", "worker"], "worker", 2),  # two workers compute at once
    (["ps", "ps", "worker", "worker"], "worker", 2),
    (["ps", "chief", "worker"], "chief", 2),
    (["worker"], "worker", 1),
])
def test_ps_tasks_do_not_count_for_a_computing_task(local_jobs, job, expected):
    assert tasks_sharing_blas(local_jobs, job) == expected


def test_cap_is_cores_over_sharing_tasks_and_config_and_environment_win(monkeypatch):
    set_to = []
    monkeypatch.setattr(blas_threads, "set_blas_threads", lambda n: set_to.append(n) or True)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert limit_for_shared_machine(1) is None           # alone: OpenBLAS's default
    assert limit_for_shared_machine(2) == 4
    assert limit_for_shared_machine(16) == 1             # never below one thread
    assert limit_for_shared_machine(2, intra_op_threads=3) == 3
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "5")
    assert limit_for_shared_machine(2) is None
    assert set_to == [4, 1, 3]
