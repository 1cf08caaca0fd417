"""How many threads a task's matmuls use when it shares its machine.

OpenBLAS (what NumPy's wheels link) runs a big matmul on as many threads as
the machine has cores, and its idle threads spin for ~0.1 s after each call.
Several tasks of one cluster on one machine (a ps and workers on a laptop, the
benchmarks, the tests) then fight over the cores: measured on 2 cores, the
784x512 MLP step of a 1 ps + 1 worker job went from 13 ms to 45 ms, and with
other jobs on the machine two BLAS threads made a 2 ms matmul pair 13-51 ms.
TF 1.x sizes its own pools per process (intra_op_parallelism_threads).

So a Server that shares its machine with other tasks of its cluster runs
OpenBLAS on one thread and splits big matmuls over its own intra-op threads
(`runtime/intra_op.py`: helpers that block when idle, never spin), as many as
`intra_op_parallelism_threads` of its default ConfigProto when set, else cores /
(tasks of the cluster on this machine that compute: every job but ps). ps tasks
apply updates (element-wise, no BLAS) and wait while a worker runs its matmuls,
so they are not counted: with 1 ps + 1 worker on 2 cores the worker's matmuls get
both cores. A ps task itself gets cores / (all local tasks). A task alone on its
machine keeps OpenBLAS's own threads. An explicit OPENBLAS_NUM_THREADS /
OMP_NUM_THREADS wins: then nothing is changed.
With another BLAS than OpenBLAS nothing is changed (`runtime/intra_op.py`).
"""
from __future__ import annotations

import os

from tensorweave.runtime.intra_op import set_blas_threads, use_own_threads

__all__ = ["limit_for_shared_machine", "set_blas_threads", "tasks_sharing_blas"]


def tasks_sharing_blas(local_jobs: list[str], job: str) -> int:
    """How many tasks of this machine share its cores for BLAS, as this task sees it.

    Args:
        local_jobs: the job name of every task of the cluster on this machine
            (this task's included).
        job: this task's job.

    Example:
        >>> tasks_sharing_blas(["ps", "worker"], "worker")   # the ps is not counted
        1
    """
    if job == "ps":
        return len(local_jobs)
    return sum(1 for j in local_jobs if j != "ps")


def limit_for_shared_machine(sharing: int, intra_op_threads: int = 0,
                             machine_shared: bool | None = None) -> int | None:
    """Applies the policy above; returns this task's matmul threads, or None when
    left alone (a task alone on its machine keeps OpenBLAS's own threads).

    Args:
        sharing: `tasks_sharing_blas` for this task.
        intra_op_threads: the ConfigProto's setting (0: not set).
        machine_shared: whether other tasks of the cluster run on this machine
            (default: `sharing > 1`).
    """
    shared = sharing > 1 if machine_shared is None else machine_shared
    if intra_op_threads > 0:
        n = intra_op_threads
    elif shared:
        n = max(1, (os.cpu_count() or 1) // max(sharing, 1))
    else:
        return None
    return n if use_own_threads(n) else None
