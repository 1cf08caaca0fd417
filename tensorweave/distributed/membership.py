"""Who is a member of an elastic job now: the workers the launcher runs.

An elastic job (`tensorweave launch --max-workers M`) starts with a ClusterSpec of M
worker slots, of which only some run; `tensorweave scale` starts and stops workers in
those slots. Every task keeps the ClusterSpec it started with (a ps reaches a worker by
the address its ClusterSpec names), so what changes is only which slots are members.
The launcher writes that to one small JSON file, ``{"worker": [0, 2]}``, named to every
task by TENSORWEAVE_MEMBERS_FILE; a ps reads it (`Members.left`) so that it closes the
sessions of a worker that left at once and never waits for a slot that was not started.

A ps also tells its accumulators which worker slots are not training (`Members.absent`:
no member, or a member with no session open on the ps yet), so that a synchronous step
waits only for the replicas that train (kernels/replica_roster.py has the rule).

Without the variable (a job of fixed size, a cluster manager that does not write it)
every worker of the ClusterSpec is a member, as before.

Example:
    >>> write_members("/tmp/job/members.json", [0, 2])
    >>> Members("/tmp/job/members.json").left("/job:worker/replica:0/task:1")
    True
"""
from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable

from tensorweave.base import knobs
from tensorweave.base.files import atomic_write
from tensorweave.framework.device import parse_task_name

__all__ = ["ELASTIC_JOB", "Members", "write_members"]

# The one job whose tasks come and go; ps, chief and evaluator are fixed.
ELASTIC_JOB = "worker"


def write_members(path: str, workers: Iterable[int]) -> None:
    """Writes the member worker indices to `path` (atomically: a reader never sees half).

    Args:
        path: the members file (TENSORWEAVE_MEMBERS_FILE of the job's tasks).
        workers: the indices of the worker slots that are members now.

    Example:
        >>> write_members(path, [0, 1, 2])
    """
    atomic_write(path, json.dumps({ELASTIC_JOB: sorted(set(workers))}))


class Members:
    """The members file as this task reads it, re-read when it changes.

    Args:
        path: the members file; None reads TENSORWEAVE_MEMBERS_FILE; "" means no file
            (every worker is a member).

    Example:
        >>> members = Members()          # from TENSORWEAVE_MEMBERS_FILE
        >>> members.left("/job:worker/replica:0/task:2")
        False
    """

    def __init__(self, path: str | None = None) -> None:
        self.path = knobs.MEMBERS_FILE.get() if path is None else path
        self._stamp: tuple[int, int] | None = None
        self._workers: frozenset[int] | None = None

    @property
    def elastic(self) -> bool:
        """Whether this task learns the membership from a file."""
        return bool(self.path)

    def workers(self) -> frozenset[int] | None:
        """The member worker indices, or None when not known (no file, or unreadable:
        then nobody is taken for gone)."""
        if not self.path:
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return self._workers  # the launcher removed it at the end: the last we knew
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            try:
                with open(self.path, encoding="utf-8") as f:
                    self._workers = frozenset(int(i) for i in json.load(f)[ELASTIC_JOB])
                self._stamp = stamp
            except (OSError, ValueError, KeyError, TypeError):
                pass  # mid-replace or damaged: keep what we knew, read again next time
        return self._workers

    def left(self, task: str) -> bool:
        """Whether `task` ("/job:worker/replica:0/task:1") is a worker slot that is not a
        member now: it left the job (or was never started). Other jobs never leave."""
        workers = self.workers()
        if workers is None:
            return False
        try:
            job, index = parse_task_name(task)
        except ValueError:
            return False
        return job == ELASTIC_JOB and index not in workers

    def absent(self, workers: Iterable[str], with_session: Collection[str]) -> frozenset[str]:
        """Which of `workers` (task names) do not train now: no member, or a member whose
        process has no session open here (still starting: it is counted once it has
        one, as a synchronous step would otherwise wait for its start-up).

        Args:
            workers: the worker tasks that may come and go (a ps's trainers).
            with_session: the tasks with a session open on this task.

        Example:
            >>> members.absent(["/job:worker/replica:0/task:1"], set())
            frozenset({'/job:worker/replica:0/task:1'})
        """
        if self.workers() is None:
            return frozenset()
        return frozenset(t for t in workers if self.left(t) or t not in with_session)
