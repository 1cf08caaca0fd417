"""Which replicas of a synchronous job still train, as one accumulator sees them.

SyncReplicasOptimizer's chief takes, per variable and step, `need` gradients:

    live = tokens_per_step - gone
    need = max(floor, min(num_required, live))

- `tokens_per_step` is TF's: max(total_num_replicas, replicas_to_aggregate).
- `gone` counts the replicas that finished training (their departure op) and, in an
  elastic job (distributed/membership.py), the worker slots that are not training: no
  member of the job, or a member whose process has no session open on this task.
- `num_required` is what the chief's step asked: replicas_to_aggregate, capped by the
  tokens it issued for this step. A worker that joined is counted from the first step
  whose tokens included it, so no step waits for a gradient nobody holds a token for.
- `floor` is the program's (`min_replicas_to_aggregate`, default 1): a step never
  aggregates fewer gradients than that; with fewer replicas live it waits.

A leave lowers `need` at once, also for a take already waiting (the barrier is
evaluated again whenever the roster changes); when nothing changes, need is
replicas_to_aggregate, TF's rule. A take without a tokens_per_step (a program's own
ConditionalAccumulator) keeps the older rule: each finished replica lowers
num_required by one, never below one.

Example:
    >>> roster = ReplicaRoster()
    >>> roster.set_absent(frozenset({"/job:worker/replica:0/task:2"}))
    True
    >>> roster.need(num_required=3, tokens_per_step=3, floor=1)
    2
"""
from __future__ import annotations

import time
from typing import Any

__all__ = ["ReplicaRoster"]


class ReplicaRoster:
    """Per replica seen: the local step and time of its last gradient; who is gone.

    Args:
        absent: the tasks not training when the accumulator is made (its task's
            resource manager knows them: `ResourceMgr.absent_tasks`).

    Not thread-safe: the accumulator calls it under its own lock.
    """

    def __init__(self, absent: frozenset[str] = frozenset()) -> None:
        self._last: dict[str, list[Any]] = {}  # name -> [local step, time.monotonic()]
        self._departed: set[str] = set()       # named replicas that finished training
        self._unnamed_departed = 0             # departures of replicas that name no task
        self._absent = absent

    def sent(self, replica: str, local_step: int) -> None:
        """A gradient came from `replica` (fresh or stale: either shows it trains)."""
        self._last[replica] = [local_step, time.monotonic()]
        if replica:
            # A named replica that trains again (restarted after it finished) is back.
            self._departed.discard(replica)

    def departed(self, replica: str) -> None:
        """`replica` finished training for good (idempotent for a named replica)."""
        self._last.setdefault(replica, [-1, time.monotonic()])
        if replica:
            self._departed.add(replica)
        else:  # unnamed replicas cannot be told apart: each departure counts
            self._unnamed_departed += 1

    def set_absent(self, absent: frozenset[str]) -> bool:
        """The tasks of an elastic job not training now; returns whether that changed."""
        if absent == self._absent:
            return False
        self._absent = absent
        return True

    def departures(self) -> int:
        """Replicas that finished training (the older rule's count)."""
        return len(self._departed) + self._unnamed_departed

    def gone(self) -> int:
        """Replicas not training: finished, or absent from an elastic job (once each)."""
        return len(self._departed | self._absent) + self._unnamed_departed

    def need(self, num_required: int, tokens_per_step: int | None, floor: int) -> int:
        """Gradients a take waits for now (the module docstring's rule).

        Args:
            num_required: what the take asked for.
            tokens_per_step: the optimizer's tokens per step; None for a take that is
                not SyncReplicasOptimizer's (then each departure lowers num_required).
            floor: the fewest gradients a step aggregates.
        """
        if tokens_per_step is None:
            return max(1, num_required - self.departures())
        return max(floor, min(num_required, tokens_per_step - self.gone()))

    def status(self) -> tuple[list[str], list[int], list[float], list[bool]]:
        """Per replica seen, sorted by name: the local step of its last gradient, the
        seconds since, and whether it is gone (finished, or left an elastic job)."""
        now = time.monotonic()
        items = sorted(self._last.items())
        gone = self._departed | self._absent
        return ([name for name, _ in items], [int(r[0]) for _, r in items],
                [now - r[1] for _, r in items],
                [name in gone or (not name and self._unnamed_departed > 0)
                 for name, _ in items])
