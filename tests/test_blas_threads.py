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


def test_shared_machine_runs_blas_on_one_thread_and_splits_matmuls_itself(monkeypatch):
    """Cores / sharing tasks become intra-op threads; OpenBLAS itself gets one thread
    (its idle threads spin); config and environment win; a task alone keeps OpenBLAS's."""
    blas_to, intra_to = [], []
    monkeypatch.setattr(blas_threads, "set_blas_threads", lambda n: blas_to.append(n) or True)
    monkeypatch.setattr(blas_threads, "set_intra_op_threads", intra_to.append)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert limit_for_shared_machine(1) is None           # alone: OpenBLAS's default
    assert limit_for_shared_machine(1, machine_shared=True) == 8   # 1 ps + 1 worker
    assert limit_for_shared_machine(2) == 4
    assert limit_for_shared_machine(16) == 1             # never below one thread
    assert limit_for_shared_machine(2, intra_op_threads=3) == 3
    assert intra_to == [8, 4, 1, 3]
    assert blas_to == [1, 1, 1, 1]
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "5")
    assert limit_for_shared_machine(2) is None
    assert intra_to == [8, 4, 1, 3]


def test_without_openblas_nothing_is_split(monkeypatch):
    intra_to = []
    monkeypatch.setattr(blas_threads, "set_blas_threads", lambda n: False)
    monkeypatch.setattr(blas_threads, "set_intra_op_threads", intra_to.append)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert limit_for_shared_machine(2, intra_op_threads=2) is None
    assert intra_to == []
