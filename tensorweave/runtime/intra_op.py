"""Intra-op parallelism: one big matmul split over a few threads that block when idle.

OpenBLAS (NumPy's BLAS) parallelises a matmul with its own threads, and those
threads spin for about 0.1 s after each call before they sleep. A task that
shares a small machine with other tasks then loses a core to spinning between
its matmuls, and when the machine is oversubscribed a spinning thread holds a
core while the thread it waits for is descheduled: measured on 2 cores with
other jobs running, the 784x512 MLP's training step in one process took 2.5 ms on
one BLAS thread and 13-51 ms on two. TF sizes its own pools instead
(`intra_op_parallelism_threads`).

So a task that shares its machine with other computing tasks runs OpenBLAS
single-threaded and splits each big float matmul here, into row (or column)
blocks computed at once: one in the calling thread, the rest on helper threads
that wait on a lock, never spin. On a busy machine that degrades like one
thread, not 10x worse; on an idle one it pays a helper's wake-up per matmul
(~0.1 ms on this VM), which OpenBLAS's spinning threads do not.
`distributed/blas_threads.py` decides the number of threads for a Server's
process, a local `tf.Session`'s `ConfigProto(intra_op_parallelism_threads=N)`
for its own; in a process that sets neither, every matmul is NumPy's own call.

Example:
    >>> set_intra_op_threads(2)
    >>> out = matmul(a, b)      # the row blocks of a run on two threads
"""
from __future__ import annotations

import ctypes
import logging
import os
import queue
import threading
from typing import Any, Callable

import numpy as np

# A matmul is split when it has at least this many multiply-adds: ~0.1 ms on one
# core, about what waking a sleeping helper costs on a VM (measured here).
SPLIT_MIN_MACS = 1 << 22
_MIN_BLOCK = 16          # rows or columns per block, at least
_BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

log = logging.getLogger("tensorweave.blas")
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")
_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
_threads = 1
_jobs: queue.SimpleQueue = queue.SimpleQueue()
_helpers: list[threading.Thread] = []
_helpers_lock = threading.Lock()
STATS = {"split_calls": 0}   # how many matmuls were split (tests and benchmarks read it)


def use_own_threads(n: int) -> bool:
    """OpenBLAS on one thread and big matmuls split over `n` threads of ours.

    Returns False, changing nothing, when OPENBLAS_NUM_THREADS or OMP_NUM_THREADS is
    set (the user's choice wins) or NumPy's BLAS is not OpenBLAS (its own threading
    is left as it is).
    """
    if any(os.environ.get(v) for v in _THREAD_ENV) or not set_blas_threads(1):
        return False
    set_intra_op_threads(n)
    return True


def _openblas_libraries() -> list[str]:
    try:
        with open("/proc/self/maps") as f:   # numpy is imported: its BLAS is mapped
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def set_blas_threads(n: int) -> bool:
    """Caps OpenBLAS at `n` threads in this process; False when none was found.

    OpenBLAS is reached through its C API (`openblas_set_num_threads`, under the
    names NumPy's bundled copy exports)."""
    for path in _openblas_libraries():
        lib = ctypes.CDLL(path)
        for name in _SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(ctypes.c_int(n))
                log.debug("BLAS threads set to %d (%s in %s)", n, name, path)
                return True
    return False


def set_intra_op_threads(n: int) -> None:
    """Splits big matmuls over `n` threads from now on (1: never split)."""
    global _threads
    if n < 1:
        raise ValueError(f"intra-op threads must be >= 1, got {n}")
    _threads = n
    _ensure_helpers()


def _ensure_helpers() -> None:
    with _helpers_lock:
        while len(_helpers) < _threads - 1:
            t = threading.Thread(target=_helper, daemon=True,
                                 name=f"tw-intra-op-{len(_helpers)}")
            _helpers.append(t)
            t.start()


def _forget_helpers_after_fork() -> None:
    # A forked child has none of the parent's threads: waiting on them would hang.
    global _jobs, _helpers_lock
    _jobs = queue.SimpleQueue()
    _helpers_lock = threading.Lock()
    _helpers.clear()


os.register_at_fork(after_in_child=_forget_helpers_after_fork)


def intra_op_threads() -> int:
    """The number of threads a big matmul is split over (1 when none was set)."""
    return _threads


def _helper() -> None:
    while True:
        job, done, errs = _jobs.get()
        try:
            job()
        except BaseException as e:  # handed to the caller, which re-raises it
            errs.append(e)
        finally:
            done.release()


def run_parallel(parts: list[Callable[[], Any]]) -> None:
    """Runs every part, the first in this thread and the rest on the helpers, and
    returns when all are done; re-raises the first part's error that occurred.

    Parts never wait for each other, so a part queued behind another caller's
    parts only waits for them to finish, never deadlocks."""
    if len(_helpers) < _threads - 1:
        _ensure_helpers()   # in a forked child, started again on first use
    pending = []
    errs: list[BaseException] = []
    for part in parts[1:]:
        done = threading.Lock()
        done.acquire()
        pending.append(done)
        _jobs.put((part, done, errs))
    try:
        parts[0]()
    finally:
        for done in pending:
            done.acquire()
    if errs:
        raise errs[0]


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`np.matmul(a, b)` for 2-D `a` and `b`, split into blocks when big enough.

    The blocks write straight into the result; the values are NumPy's (each
    element is the same dot product, computed by the same BLAS kernel)."""
    n = _threads
    if (n < 2 or not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray)
            or a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype
            or a.dtype not in _BLAS_DTYPES or a.shape[1] != b.shape[0]):
        return np.matmul(a, b)
    rows, inner, cols = a.shape[0], a.shape[1], b.shape[1]
    if rows * inner * cols < SPLIT_MIN_MACS:
        return np.matmul(a, b)
    out = np.empty((rows, cols), a.dtype)
    if rows >= n * _MIN_BLOCK:
        cuts = _cuts(rows, n)
        parts = [_block(a[lo:hi], b, out[lo:hi]) for lo, hi in cuts]
    elif cols >= n * _MIN_BLOCK:
        cuts = _cuts(cols, n)
        parts = [_block(a, b[:, lo:hi], out[:, lo:hi]) for lo, hi in cuts]
    else:
        return np.matmul(a, b)
    STATS["split_calls"] += 1
    run_parallel(parts)
    return out


def _cuts(size: int, n: int) -> list[tuple[int, int]]:
    bounds = [size * i // n for i in range(n + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def _block(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> Callable[[], Any]:
    return lambda: np.matmul(a, b, out=out)
