"""Closing a session on a task that could not be reached when the session closed.

A close that did not get through (the task cut off, or frozen) is sent again in the
background, for as long as a wait for the cluster lasts: a ps at the job's end keeps
serving while sessions are open on it, so one left open by a worker that re-created
its session after a cut would hold it until declared gone.

Example:
    >>> close_later(master_service, "worker.0.s1.i2a", "/job:ps/replica:0/task:0")
    ... # doctest: +SKIP
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from tensorweave.base.waits import Backoff, Wait, cluster_wait_secs

__all__ = ["close_later"]

log = logging.getLogger("tensorweave.master")


def close_later(master: Any, handle: str, task: str) -> None:
    """Retries closing session `handle` on `task` on a daemon thread until it works,
    the cluster wait ends or `master` stops (`master.pending_closes` holds it
    meanwhile; `MasterService.shutdown` makes the last try)."""
    pending = (task, handle)
    stopping = master.stopping
    master.pending_closes.add(pending)

    def retry() -> None:
        wait = Wait(f"to close session {handle} on {task}", cluster_wait_secs(),
                    backoff=Backoff(first=0.5, cap=1.0))
        try:
            while not wait.pause(event=stopping):
                if master.close_on(task, handle, timeout=5.0):
                    return
        except Exception as e:  # noqa: BLE001 - the give-up: the task is gone
            log.debug("closing session %s on %s: %s", handle, task, e)
        finally:
            if not stopping.is_set():  # else shutdown() makes the last try
                master.pending_closes.discard(pending)
    threading.Thread(target=retry, daemon=True, name="close-session-retry").start()
