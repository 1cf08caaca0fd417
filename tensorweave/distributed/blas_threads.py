"""How many threads a task's matmuls use when it shares its machine.

OpenBLAS (what NumPy's wheels link) runs a big matmul on as many threads as
the machine has cores, and its idle threads spin for ~0.1 s after each call.
Several tasks of one cluster on one machine (a ps and workers on a laptop, the
benchmarks, the tests) then fight over the cores: measured on 2 cores, the
784x512 MLP step of a 1 ps + 1 worker job went from 13 ms to 45 ms, and with
other jobs on the machine two BLAS threads made a 2 ms matmul pair 13-51 ms.
TF 1.x sizes its own pools per process (intra_op_parallelism_threads).

So a Server whose machine runs other computing tasks of its cluster runs
OpenBLAS on one thread and splits big matmuls over its own intra-op threads
(`runtime/intra_op.py`: helpers that block when idle, never spin): cores /
(tasks of the cluster on this machine that compute: every job but ps), or
`intra_op_parallelism_threads` of its default ConfigProto when set. ps tasks
apply updates (element-wise, no BLAS) and wait while a worker runs its matmuls,
so they are not counted, and they get cores / (all local tasks) themselves. For
their big dense updates (element-wise NumPy passes, not BLAS), ps tasks use
cores / (ps tasks of the machine): the workers wait for those updates.
The only computing task of its machine (1 ps + 1 worker) chooses as it goes
(`intra_op.use_adaptive`): on an otherwise idle machine OpenBLAS's spinning keeps
the other core awake between matmuls, which our helpers, woken each time, do
not (MLP-512 job on 2 cores: 30.0-35.1k examples/s against 25.4-33.5k split);
when other jobs load the machine that spinning costs 3-30x (one such job ran at
3.9k examples/s against 35k alone). Each matmul shape runs the way that was
faster lately. `intra_op_parallelism_threads` fixes ours instead. An explicit
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS, or a BLAS other than OpenBLAS, leaves
everything as it is (`runtime/intra_op.py`).
"""
from __future__ import annotations

import os

from tensorweave.runtime.intra_op import set_update_threads, use_adaptive, use_own_threads


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


def limit_for_shared_machine(sharing: int, intra_op_threads: int = 0) -> int | None:
    """Applies the policy above; returns this task's matmul threads, or None when
    left alone.

    Args:
        sharing: `tasks_sharing_blas` for this task.
        intra_op_threads: the ConfigProto's setting (0: not set).
    """
    if intra_op_threads > 0:
        n = intra_op_threads
    elif sharing > 1:
        n = max(1, (os.cpu_count() or 1) // sharing)
    else:
        n = os.cpu_count() or 1
        return n if n > 1 and use_adaptive(n) else None
    return n if use_own_threads(n) else None


def ps_update_threads(local_jobs: list[str], job: str, intra_op_threads: int = 0) -> int | None:
    """Sets and returns the threads a ps task splits big dense updates over, or None
    (not a ps: its updates use its matmul threads).

    A ps applies updates while its workers wait for them (one worker, or sync
    training), so its machine's cores are shared only among its ps tasks;
    `intra_op_parallelism_threads`, when set, wins as for matmuls.

    Example:
        >>> ps_update_threads(["ps", "worker"], "ps")   # on 2 cores
        2
    """
    if job != "ps":
        return None
    n = intra_op_threads or max(1, (os.cpu_count() or 1) // max(1, local_jobs.count("ps")))
    set_update_threads(n)
    return n
