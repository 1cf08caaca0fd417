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

Which is faster depends on the moment: on an idle VM OpenBLAS's awake threads
win by the helper's wake-up, and when other jobs load the machine they lose
3-30x. So the only computing task of a machine runs `adaptive`: for each matmul
shape it keeps the recent time of both ways (an average that follows changes
within a few calls), runs the faster, and now and then the other one (every
15th call, rarer the worse it was), to notice when the machine's load changes.

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
import time
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
_update_threads = 0   # element-wise updates' threads (0: as many as matmuls')
_jobs: queue.SimpleQueue = queue.SimpleQueue()
_helpers: list[threading.Thread] = []
_helpers_lock = threading.Lock()
STATS = {"split_calls": 0}   # how many matmuls were split (tests and benchmarks read it)
_EXPLORE_EVERY = 15   # calls of a shape between tries of the other way, when as fast
_ALPHA = 0.5          # weight of a slower timing in a way's recent average
_adaptive = False
# shape -> [OpenBLAS seconds, ours, calls, the call that next tries the other way]
_costs: dict[tuple[int, int, int], list[Any]] = {}
_blas_now = 0         # the thread count OpenBLAS was last set to here (0: unknown)
_setter: list[Any] = []   # the C function that sets it, once found


def use_own_threads(n: int) -> bool:
    """OpenBLAS on one thread and big matmuls split over `n` threads of ours.

    Returns False, changing nothing, when OPENBLAS_NUM_THREADS or OMP_NUM_THREADS is
    set (the user's choice wins) or NumPy's BLAS is not OpenBLAS (its own threading
    is left as it is).
    """
    global _adaptive
    if any(os.environ.get(v) for v in _THREAD_ENV) or not set_blas_threads(1):
        return False
    set_intra_op_threads(n)
    _adaptive = False
    return True


def use_adaptive(n: int) -> bool:
    """Big matmuls on OpenBLAS's `n` threads or split over `n` of ours, whichever is
    faster now (see the module docstring); False, changing nothing, where
    `use_own_threads` would be refused."""
    global _adaptive
    if any(os.environ.get(v) for v in _THREAD_ENV) or not set_blas_threads(n):
        return False
    set_intra_op_threads(n)
    _adaptive = n > 1
    return True


def adaptive_choices() -> dict[tuple[int, int, int], str]:
    """For each matmul shape seen in adaptive mode, the way it runs now."""
    return {shape: "own" if _prefers_own(e) else "openblas" for shape, e in _costs.items()}


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
    global _blas_now
    if not _setter:
        for path in _openblas_libraries():
            lib = ctypes.CDLL(path)
            found = [getattr(lib, name) for name in _SETTERS if hasattr(lib, name)]
            if found:
                _setter.append(found[0])
                log.debug("OpenBLAS's thread setter: %s in %s", found[0].__name__, path)
                break
    if not _setter:
        return False
    _setter[0](ctypes.c_int(n))
    _blas_now = n
    return True


def set_intra_op_threads(n: int) -> None:
    """Splits big matmuls over `n` threads from now on (1: never split)."""
    global _threads
    if n < 1:
        raise ValueError(f"intra-op threads must be >= 1, got {n}")
    _threads = n
    _ensure_helpers()


def set_update_threads(n: int) -> None:
    """Splits big element-wise variable updates over `n` threads from now on.

    A ps task applies updates while its workers wait for them (one worker, or
    sync training), so it may use every core of its machine for them even where
    its matmuls get fewer (`distributed/blas_threads.py`).

    Example:
        >>> set_update_threads(2)   # a 784x2048 Adagrad update: 1.40 -> ~1.05 ms
    """
    global _update_threads
    if n < 1:
        raise ValueError(f"update threads must be >= 1, got {n}")
    _update_threads = n
    _ensure_helpers()


def update_threads() -> int:
    """How many threads a big element-wise update is split over (1: not split)."""
    return _update_threads or _threads


def _ensure_helpers() -> None:
    with _helpers_lock:
        while len(_helpers) < max(_threads, _update_threads) - 1:
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
    if len(_helpers) < max(_threads, _update_threads) - 1:
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
    if _adaptive:
        return _faster_way(a, b, (rows, inner, cols), n)
    return _split(a, b, n)


def _prefers_own(entry: list[Any]) -> bool:
    blas, own = entry[0], entry[1]
    return blas is not None and (own is None or own < blas)


def _faster_way(a: np.ndarray, b: np.ndarray, shape: tuple[int, int, int], n: int
                ) -> np.ndarray:
    """Runs the matmul the way that was faster lately for its shape, or, when due, the
    other way (to notice a change of load); times it either way."""
    entry = _costs.get(shape)
    if entry is None:
        if len(_costs) > 1000:
            _costs.clear()
        entry = _costs[shape] = [None, None, 0, _EXPLORE_EVERY]
    entry[2] += 1
    own = _prefers_own(entry)
    explore = entry[1] is not None and entry[2] >= entry[3]
    if explore:
        own = not own
    threads = 1 if own else n
    if _blas_now != threads:
        set_blas_threads(threads)
    start = time.perf_counter()
    out = _split(a, b, n) if own else _blas_way(a, b, n)
    took = time.perf_counter() - start
    k = 1 if own else 0
    # A faster time is believed at once (an explored way that got faster takes over
    # the next call); a slower one moves the average halfway (one late wake-up does
    # not flip the choice, a loaded machine does within a call or two).
    last = entry[k]
    entry[k] = took if last is None or took < last else last + _ALPHA * (took - last)
    if explore:
        # The worse the other way was, the rarer it is tried: a collapsed OpenBLAS
        # matmul costs 10-30x, so trying it every 15th call would cost more than the
        # choice saves. At most every 15 x 64 calls.
        ratio = min(max(entry[0] / entry[1], entry[1] / entry[0]), 64.0)
        entry[3] = entry[2] + int(_EXPLORE_EVERY * ratio)
    return out


def _blas_way(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    return np.matmul(a, b)   # on OpenBLAS's n threads, set by the caller


def _split(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    rows, cols = a.shape[0], b.shape[1]
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
