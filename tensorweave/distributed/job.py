"""The end of a job, in one place: who says training is over and who stops then.

TF 1.x's parameter servers block in `server.join()` forever. Here:

1. the chief's MonitoredTrainingSession / Supervisor calls `notify_job_done`
   when training ends normally (through its master, which tells every task of
   the "ps" job: `MasterService.job_done` -> `WorkerService.job_done`);
2. each ps server's `join()` asks its `JobEndWatch` every 0.2 s and, once the
   job is done and no live worker session is open on it (a session whose owner
   no longer answers is closed; after `done_grace_secs` open sessions are given
   up on), stops the server and ends the process with exit code 0: as in TF,
   `join()` never returns into the program.

Set TENSORWEAVE_NOTIFY_JOB_DONE=0 to keep TF's behaviour (the ps never exits).
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

from tensorweave.base import knobs
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.framework import errors
from tensorweave.framework.device import task_name

log = logging.getLogger("tensorweave.job")


def notify_enabled() -> bool:
    """Whether the chief's end tells the ps tasks (TENSORWEAVE_NOTIFY_JOB_DONE, default on)."""
    return knobs.NOTIFY_JOB_DONE.get()


def notify_job_done(master_target: str, jobs: tuple[str, ...] = ("ps",),
                    reason: str = "training finished") -> list[str]:
    """Tells every task of `jobs` that the job is done, through `master_target`.

    Args:
        master_target: the chief's session target, "grpc://host:port"; "" (a
            local session) has no cluster and notifies nothing.
        jobs: which jobs' servers should stop waiting.
        reason: logged by each notified task.

    Returns:
        The tasks that were told.

    Example:
        >>> notify_job_done(server.target)
        ['/job:ps/replica:0/task:0']
    """
    if not master_target or not master_target.startswith("grpc://") or not notify_enabled():
        return []
    from tensorweave.distributed import peers
    from tensorweave.distributed.protocol.methods import MASTER_SERVICE
    address = master_target.split("://", 1)[1]
    req = pb.JobDoneRequest(jobs=list(jobs), reason=reason)
    master = peers.connect(address, "", MASTER_SERVICE)
    try:
        resp, _ = master.call("job_done", req, timeout=10.0)
    except errors.OpError as e:
        log.warning("Could not tell the ps tasks the job is done: %s", e)
        return []
    finally:
        master.close()
    if resp.unreachable:
        log.info("Tasks already gone at job end: %s", list(resp.unreachable))
    return list(resp.notified)


class JobEndWatch:
    """Decides when a server's `join()` may return because the job ended.

    Args:
        task: this task's name.
        worker: this task's WorkerService (its `job_done_event` and sessions).
        peer: `peer(task)` -> Peer of another task's worker (to see whether the
            master that opened a session still answers).
        enabled: False keeps TF's behaviour (join() blocks until stop()).
        grace_secs: after the job is done, how long open sessions may keep it.
    """

    def __init__(self, task: str, worker: Any, peer: Callable[[str], Any], enabled: bool,
                 grace_secs: float) -> None:
        self.task, self._worker, self._peer = task, worker, peer
        self._enabled, self._grace = enabled, grace_secs
        self._done_at: float | None = None

    def finished(self) -> bool:
        """True once the job is done and no live session remains (or grace ran out)."""
        if not (self._enabled and self._worker.job_done_event.is_set()):
            return False
        self._done_at = self._done_at or time.monotonic()
        still_open = [h for h in self._worker.open_sessions() if self._owner_alive(h)]
        if still_open and time.monotonic() - self._done_at < self._grace:
            return False
        if still_open:
            log.warning("%s: job done; giving up on %d open session(s) after %.0fs: %s",
                        self.task, len(still_open), self._grace, still_open)
        return True

    def _owner_alive(self, session_handle: str) -> bool:
        """Whether the master that opened a session still answers (a crashed worker's
        sessions must not keep a finished job's ps alive). Handles are
        "<job>.<index>.s<n>.<hex>" (MasterService.create_session_from_graph)."""
        job, _, rest = session_handle.partition(".")
        index = rest.split(".", 1)[0]
        if not index.isdigit():
            return True
        owner = task_name(job, int(index))
        if owner == self.task:
            return True
        try:
            self._peer(owner).call("get_status", pb.GetStatusRequest(), timeout=1.0)
            return True
        except errors.OpError:
            self._worker.close_session(
                pb.CloseWorkerSessionRequest(session_handle=session_handle))
            return False


_uncaught: list[BaseException] = []


def at_normal_exit(fn: Callable[[], None]) -> None:
    """Runs `fn` at interpreter exit unless the program died of an uncaught exception.

    Seed-style programs never call `sv.stop()`: a chief whose main() returns
    normally has finished the job, one that crashed has not (its ps tasks must
    keep serving the restarted chief). The main thread's uncaught exceptions
    are noted through `sys.excepthook` (chained to whatever hook was set).

    Example:
        >>> at_normal_exit(lambda: notify_job_done(server.target))
    """
    import sys

    from tensorweave.runtime.threads import at_exit
    previous = sys.excepthook
    if not getattr(previous, "_tensorweave_job_end", False):
        def hook(exc_type: Any, exc: Any, tb: Any) -> None:
            _uncaught.append(exc)
            previous(exc_type, exc, tb)
        hook._tensorweave_job_end = True  # type: ignore[attr-defined]
        sys.excepthook = hook
    at_exit(lambda: None if _uncaught else fn())
