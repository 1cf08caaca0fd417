"""How many threads NumPy's BLAS may use in a task that shares its machine.

OpenBLAS (what NumPy's wheels link) runs a big matmul on as many threads as
the machine has cores, and its idle threads spin. Several tasks of one cluster
on one machine (a ps and workers on a laptop, the benchmarks, the tests) then
fight over the cores: measured on 2 cores, the 784x512 MLP step of a 1 ps + 1
worker job went from 13 ms to 45 ms, and any matmul over ~32 KB of weights
paid it. TF 1.x sizes its own pools per process (intra_op_parallelism_threads).

So a Server caps its process's BLAS threads at `intra_op_parallelism_threads`
of its default ConfigProto when set, else at cores / (tasks of the cluster on
this machine that compute: every job but ps). ps tasks apply updates (element-
wise, no BLAS) and wait while a worker runs its matmuls, so they are not counted:
with 1 ps + 1 worker on 2 cores the worker's matmuls get both cores (MLP 784-2048-10
+21%, 784-512-10 +10-20%, 20 layers 64x64 +6-14% in bench.trainer; with the
original step path the same setting was 3x slower, its ps working while the
worker's idle BLAS threads spun). A ps task itself is capped at cores / (all local
tasks). An explicit OPENBLAS_NUM_THREADS / OMP_NUM_THREADS wins.
OpenBLAS is reached through its C API (`openblas_set_num_threads`, under the
names NumPy's bundled copy exports); other BLAS builds are left alone.
"""
from __future__ import annotations

import ctypes
import logging
import os

log = logging.getLogger("tensorweave.blas")
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")


def _openblas_libraries() -> list[str]:
    import numpy  # noqa: F401 - loads the BLAS library we look for
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def set_blas_threads(n: int) -> bool:
    """Caps OpenBLAS at `n` threads in this process; False when none was found."""
    for path in _openblas_libraries():
        lib = ctypes.CDLL(path)
        for name in _SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(ctypes.c_int(n))
                log.debug("BLAS threads set to %d (%s in %s)", n, name, path)
                return True
    return False


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


def limit_for_shared_machine(local_tasks: int, intra_op_threads: int = 0) -> int | None:
    """Applies the policy above; returns the cap set, or None when left alone (the
    only computing task of its machine keeps OpenBLAS's default: every core)."""
    if any(os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")):
        return None
    if intra_op_threads > 0:
        n = intra_op_threads
    elif local_tasks > 1:
        n = max(1, (os.cpu_count() or 1) // local_tasks)
    else:
        return None
    return n if set_blas_threads(n) else None
