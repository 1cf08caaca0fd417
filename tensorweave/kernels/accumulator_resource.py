"""Accumulator resources: gradients stamped with a step, averaged on demand (TF1 rules).

- A gradient whose local_step is older than the accumulator's global step is
  stale and silently dropped (SyncReplicasOptimizer relies on this).
- take_grad waits until `num_required` fresh gradients have arrived, returns
  their average (or sum), resets the aggregate and increments the global step.
- The sparse variant keeps one running sum per row index; each row is averaged
  over the gradients that touched it, and duplicate indices inside one
  gradient are summed first.
- Beyond TF: each gradient may name its replica (the worker task that computed
  it; "" when unnamed); the accumulator keeps, per replica, the step and time of
  its last gradient and whether it is gone, so a stalled take_grad can be explained by
  name (`replica_status`). One dict update per gradient. A take of
  SyncReplicasOptimizer's waits for as many gradients as the replicas still training
  can give (kernels/replica_roster.py has the rule), evaluated again whenever a
  replica finishes or an elastic job's membership changes (`set_absent`).
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

import numpy as np

from tensorweave.framework import errors
from tensorweave.kernels.replica_roster import ReplicaRoster
from tensorweave.runtime.waiting import PENDING, Attempt, WaitingResource

log = logging.getLogger("tensorweave.accumulator")
Later = list[Callable[[], None]]


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


def _compatible(want: Any, have: tuple[int, ...]) -> bool:
    return want is None or (len(want) == len(have) and
                            all(w is None or w == h for w, h in zip(want, have)))


class AccumulatorBase(WaitingResource):
    """Global step, count of fresh gradients and the waiting take_grad attempts."""

    type_name = "ConditionalAccumulator"

    def __init__(self, name: str, dtype: Any, shape: Any, reduction_type: str,
                 absent: frozenset[str] = frozenset()) -> None:
        super().__init__()
        if reduction_type not in ("MEAN", "SUM"):
            raise _invalid(f"reduction_type must be 'MEAN' or 'SUM', got {reduction_type!r}")
        self.name = name
        self.dtype = dtype
        self.np_dtype = dtype.as_numpy_dtype
        self.shape = None if shape is None else list(shape)
        self.mean = reduction_type == "MEAN"
        self.global_step = 0
        self.count = 0
        self._takes: list[Attempt] = []
        self.roster = ReplicaRoster(absent)  # who trains: how many gradients a take needs
        # The sync barrier, for the task's metrics: since when the first waiting take
        # waits, and [takes served, seconds they waited] (`barrier`).
        self._waiting_since = 0.0
        self.barrier_waits = [0, 0.0]

    def snapshot(self) -> np.ndarray:
        return np.array([b"", self.name.encode()], dtype=object)

    def num_accumulated(self) -> int:
        with self.lock:
            return self.count

    def set_global_step(self, step: int) -> None:
        with self.lock:
            if step < self.global_step:
                log.warning("Setting the global step of accumulator %s from %d back to %d.",
                            self.name, self.global_step, step)
            self.global_step = step

    def replica_departed(self, replica: str = "") -> None:
        """One replica stopped training: a waiting take needs one gradient fewer."""
        self._changed(lambda: self.roster.departed(replica))

    def set_absent(self, absent: frozenset[str]) -> None:
        """The tasks of an elastic job not training now (`ResourceMgr.set_absent_tasks`):
        a waiting take of SyncReplicasOptimizer's needs fewer gradients once one left."""
        self._changed(lambda: self.roster.set_absent(absent))

    def _changed(self, change: Callable[[], Any]) -> None:
        later: Later = []
        with self.lock:
            change()
            self._serve(later)
        for fn in later:
            fn()

    def apply(self, local_step: int, *grad: Any, replica: str = "") -> None:
        """Adds a gradient unless it is stale; serves take_grad attempts it completes.

        `replica` names who computed it (a stale gradient still shows it is alive)."""
        later: Later = []
        with self.lock:
            self.roster.sent(replica, local_step)
            if local_step < self.global_step:
                log.debug("Dropping stale gradient for %s: local_step %d < global step %d",
                          self.name, local_step, self.global_step)
                return
            self._add(*grad)
            self.count += 1
            self._serve(later)
        for fn in later:
            fn()

    def replica_status(self) -> tuple[list[str], list[int], list[float], list[bool]]:
        """Per replica seen, sorted by name: the local step of its last gradient, the
        seconds since it, and whether it is gone (finished, or left an elastic job)."""
        with self.lock:
            return self.roster.status()

    def replicas_gone(self) -> int:
        """Replicas not training now (finished, or absent from an elastic job)."""
        with self.lock:
            return self.roster.gone()

    def barrier(self) -> tuple[float | None, list[str]]:
        """The sync barrier now: seconds the waiting take has waited (None: no take
        waits) and the replicas it waits for (named ones that are not gone and sent no
        gradient for the current global step)."""
        with self.lock:
            if not self._takes:
                return None, []
            waited = time.monotonic() - self._waiting_since
            names, steps, _idle, gone = self.roster.status()
            step = self.global_step
        return waited, [n for n, s, g in zip(names, steps, gone) if n and not g and s < step]

    def close_on_reset(self) -> None:
        self.cancel_all(errors.CancelledError(
            None, None, f"{self.type_name} '{self.name}' was destroyed (its session was closed "
            "or its container reset) while take_grad waited on it."))

    # ---- attempts ----------------------------------------------------------------
    def _pending_lists(self) -> list[list[Attempt]]:
        return [self._takes]

    def _start(self, attempt: Attempt, later: Later) -> None:
        if not self._takes:
            self._waiting_since = time.monotonic()
        attempt.state = PENDING
        self._takes.append(attempt)
        self._serve(later)

    def _serve(self, later: Later) -> None:
        # payload: (num_required, tokens_per_step or None, floor); see replica_roster.py
        while self._takes and self.count >= self.roster.need(*self._takes[0].payload):
            head = self._takes.pop(0)
            now = time.monotonic()
            self.barrier_waits[0] += 1
            self.barrier_waits[1] += now - self._waiting_since
            self._waiting_since = now  # the next take's wait starts now
            result = self._extract()
            self.global_step += 1
            self.count = 0
            head.finish(result, later)

    def _add(self, *grad: Any) -> None:
        raise NotImplementedError

    def _extract(self) -> Any:
        raise NotImplementedError

    def _reduce(self, total: np.ndarray, n: Any) -> np.ndarray:
        if not self.mean:
            return total.astype(self.np_dtype, copy=False)
        if np.issubdtype(self.np_dtype, np.integer):
            return (total // n).astype(self.np_dtype)
        return (total / n).astype(self.np_dtype)


class DenseAccumulator(AccumulatorBase):
    """Sums dense gradients of one shape."""

    def __init__(self, name: str, dtype: Any, shape: Any, reduction_type: str,
                 absent: frozenset[str] = frozenset()) -> None:
        super().__init__(name, dtype, shape, reduction_type, absent)
        self._sum: np.ndarray | None = None

    def _add(self, grad: Any) -> None:
        g = np.asarray(grad, dtype=self.np_dtype)
        if not _compatible(self.shape, g.shape):
            raise _invalid(f"Shape mismatch: accumulator {self.name} expects gradients of "
                           f"shape {self.shape}, got {list(g.shape)}.")
        if self._sum is None:
            self._sum = g.copy()
        elif self._sum.shape != g.shape:
            raise _invalid(f"Shape mismatch: accumulator {self.name} holds gradients of shape "
                           f"{list(self._sum.shape)}, got {list(g.shape)}.")
        else:
            self._sum += g

    def _extract(self) -> np.ndarray:
        total, self._sum = self._sum, None
        assert total is not None  # callers check the count first
        return self._reduce(total, self.count)


class SparseAccumulator(AccumulatorBase):
    """Sums IndexedSlices-style gradients row by row; a row's mean divides by the number
    of gradients that touched it (duplicates within one gradient are summed, counted once).

    The gradients are kept as they came and summed when taken, vectorised: a ps of a
    sync wide & deep job applies a few hundred rows per gradient, per variable, and a
    Python loop over rows was most of its step."""

    type_name = "SparseConditionalAccumulator"

    def __init__(self, name: str, dtype: Any, shape: Any, reduction_type: str,
                 absent: frozenset[str] = frozenset()) -> None:
        super().__init__(name, dtype, shape, reduction_type, absent)
        # (indices, values, touched) each: touched is None for a gradient as it came
        # (each of its rows counts once), or, for gradients folded into one entry
        # (distinct rows), how many gradients touched each row.
        self._grads: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
        self._dense_shape: list[int] | None = None
        self._row_shape: tuple[int, ...] | None = None

    def _add(self, indices: Any, values: Any, dense_shape: Any) -> None:
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        vals = np.asarray(values, dtype=self.np_dtype)
        if vals.ndim == 0 or vals.shape[0] != idx.shape[0]:
            raise _invalid(f"Sparse gradient for {self.name} has {idx.shape[0]} indices but "
                           f"values of shape {list(vals.shape)}; they must agree in dim 0.")
        self._check_shapes(vals.shape[1:], dense_shape)
        self._grads.append((idx, vals, None))
        if len(self._grads) >= _FOLD_AT:  # bounded memory for many applies between takes
            self._grads = [self._fold()]

    def _check_shapes(self, row_shape: tuple[int, ...], dense_shape: Any) -> None:
        if self.shape is not None and not _compatible(self.shape[1:], row_shape):
            raise _invalid(f"Shape mismatch: accumulator {self.name} expects rows of shape "
                           f"{self.shape[1:]}, got {list(row_shape)}.")
        if self._row_shape is not None and self._row_shape != tuple(row_shape):
            raise _invalid(f"Shape mismatch: accumulator {self.name} holds rows of shape "
                           f"{list(self._row_shape)}, got {list(row_shape)}.")
        self._row_shape = tuple(row_shape)
        if dense_shape is not None:
            ds = [int(d) for d in np.asarray(dense_shape).reshape(-1)]
            if not _compatible(self.shape, tuple(ds)):
                raise _invalid(f"Shape mismatch: accumulator {self.name} has shape "
                               f"{self.shape}, gradient dense_shape is {ds}.")
            self._dense_shape = ds

    def _fold(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The stored gradients as one entry: distinct rows (sorted), their sums and
        how many gradients touched each."""
        grads, row_shape = self._grads, self._row_shape or ()
        idx = np.concatenate([g[0] for g in grads])
        order = idx.argsort(kind="stable")  # by row; within one, as the gradients came
        ordered = idx[order]
        new = np.empty(idx.size, bool)  # where a row's run starts
        new[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
        keys, row = ordered[new], np.cumsum(new) - 1
        starts = np.flatnonzero(new)
        values = np.concatenate([g[1] for g in grads])[order]
        # Each row's values are adjacent: one reduceat sums them (np.add.at, one element
        # at a time, took 4-7x longer: 670 us for 4000 rows of 16, on the sync path).
        total = np.add.reduceat(values, starts, axis=0) if starts.size else \
            np.zeros((0,) + row_shape, self.np_dtype)
        # A row's first value from each gradient counts that gradient's touch (a folded
        # entry's rows are distinct and carry their own counts).
        grad = np.repeat(np.arange(len(grads)), [g[0].size for g in grads])[order]
        opens = new.copy()
        opens[1:] |= grad[1:] != grad[:-1]
        weight = np.concatenate([np.ones(g[0].size, np.int64) if g[2] is None else g[2]
                                 for g in grads])[order]
        touched = np.bincount(row[opens], weights=weight[opens], minlength=keys.size)
        return keys, total, touched.astype(np.int64)

    def _extract(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        row_shape = self._row_shape or ()
        if self._grads:
            keys, values, touched = self._fold()
            values = self._reduce(values, touched.reshape((-1,) + (1,) * len(row_shape)))
        else:
            keys = np.zeros(0, np.int64)
            values = np.zeros((0,) + row_shape, self.np_dtype)
        self._grads = []
        shape = self._dense_shape
        if shape is None:
            first = self.shape[0] if self.shape and self.shape[0] is not None else \
                (int(keys[-1]) + 1 if keys.size else 0)
            shape = [first] + list(row_shape)
        self._dense_shape = None
        return (keys.astype(np.int64, copy=False), values.astype(self.np_dtype, copy=False),
                np.asarray(shape, dtype=np.int64))


# Gradients stored before they are folded into one entry: a sync step brings one per
# replica, so takes find them unfolded; many applies between takes stay bounded.
_FOLD_AT = 32
