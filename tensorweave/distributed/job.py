"""The end of a job, in one place: who says training is over and who stops then.

TF 1.x's parameter servers block in `server.join()` forever. Here:

1. the chief's MonitoredTrainingSession / Supervisor calls `notify_job_done`
   when training ends normally (through its master, which tells every task of
   the "ps" job: `MasterService.job_done` -> `WorkerService.job_done`);
2. each ps server's `join()` asks its `JobEndWatch` every 0.2 s and, once the
   job is done and no live worker session is open on it, stops the server and
   ends the process with exit code 0: as in TF, `join()` never returns into the
   program. A worker's sessions are closed when that worker is gone: silent
   across several health checks for TENSORWEAVE_JOB_END_SILENCE_SECS (one lost
   call is no death: a worker cut off for a while comes back and finishes);
   after `done_grace_secs` open sessions are given up on. A worker (not the chief)
   of the ClusterSpec that never opened a session here, and has not exited, is given
   TENSORWEAVE_JOB_END_LATE_WORKER_SECS to do so: started late, it finds the job
   finished (its model ready, its last step reached) and exits 0.
3. in an elastic job (TENSORWEAVE_MEMBERS_FILE, distributed/membership.py) a worker
   that is no member any more has left: its sessions are closed as soon as that is
   seen, during training too, and a slot never started is no late worker. The
   workers not training are told to this task's resources (sync-replicas
   accumulators stop waiting for them).

Set TENSORWEAVE_NOTIFY_JOB_DONE=0 to keep TF's behaviour (the ps never exits).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from tensorweave.base import knobs
from tensorweave.base.waits import Backoff, Wait
from tensorweave.distributed.membership import Members
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.topology import PS_STANDBY
from tensorweave.framework import errors
from tensorweave.framework.device import task_name

log = logging.getLogger("tensorweave.job")


def notify_enabled() -> bool:
    """Whether the chief's end tells the ps tasks (TENSORWEAVE_NOTIFY_JOB_DONE, default on)."""
    return knobs.NOTIFY_JOB_DONE.get()


# The jobs told when training ends: the ps tasks, and the standby tasks that hold their
# replicas (distributed/replica.py), which have nothing to serve once the ps tasks go.
SERVING_JOBS = ("ps", PS_STANDBY)


def notify_job_done(master_target: str, jobs: tuple[str, ...] = SERVING_JOBS,
                    reason: str = "training finished") -> list[str]:
    """Tells every task of `jobs` that the job is done, through `master_target`.

    Args:
        master_target: the chief's session target, "grpc://host:port"; "" (a
            local session) has no cluster and notifies nothing.
        jobs: which jobs' servers should stop waiting (a job the cluster does not
            have is skipped).
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


CHECKS_BEFORE_GONE = 3
"""A silent worker is declared gone only after this many failed health checks (one
lost call, or one slow answer, never ends a session)."""

LATE_PROBE_SECS = 0.5
"""How often, and how long, the job's end asks a late trainer whether it still runs."""

CHECK_TIMEOUT_SECS = 2.0
"""How long one health check (a `get_status` call) may take before it counts as failed."""


def owner_of(session_handle: str) -> str | None:
    """The task whose master opened a session, from its handle
    "<job>.<index>.s<n>.i<incarnation hex>" (`MasterService.create_session_from_graph`);
    None for a handle of another form.

    Example:
        >>> owner_of("worker.1.s3.i9f2c")
        '/job:worker/replica:0/task:1'
    """
    job, _, rest = session_handle.partition(".")
    index = rest.split(".", 1)[0]
    return task_name(job, int(index)) if job and index.isdigit() else None


def incarnation_of(session_handle: str) -> int | None:
    """The incarnation of the process that opened a session (its handle's "i<hex>"
    field), or None when the handle does not say.

    Example:
        >>> incarnation_of("worker.1.s3.i9f2c")
        40748
    """
    tag = session_handle.rsplit(".", 1)[-1]
    try:
        return int(tag[1:], 16) if tag.startswith("i") and owner_of(session_handle) else None
    except ValueError:
        return None


class _Health:
    """What the job's end knows of one session owner: its checks and its silence."""

    def __init__(self, owner: str, now: float, backoff: Backoff) -> None:
        self.owner, self.backoff = owner, backoff
        self.attempt = 0            # checks since its state last changed, for the back-off
        self.next_check = now       # when to send the next check
        self.sent_at: float | None = None   # the check in flight, if any
        self.probe = 0              # its number: a late outcome of an older one is ignored
        self.failed = 0             # failed checks since it last answered
        self.silent_since: float | None = None   # when the first of those was sent
        self.last_error = ""
        self.incarnation: int | None = None   # what its last answer said

    def schedule(self, now: float, changed: bool) -> None:
        self.attempt = 1 if changed else self.attempt + 1
        self.next_check = now + self.backoff.delay(self.attempt)


class JobEndWatch:
    """Decides when a server's `join()` may return because the job ended.

    Once the job is done, each worker that still has a session open here is
    health-checked (`get_status`, `CHECK_TIMEOUT_SECS` each, spaced by the one back-off
    policy of `base.waits`). A worker whose checks fail is declared gone, and its
    sessions closed, only after `CHECKS_BEFORE_GONE` failed checks spanning the silence
    bound (TENSORWEAVE_JOB_END_SILENCE_SECS, at most `grace_secs`): a worker cut off for
    a while, frozen or partitioned, that answers again before then keeps its sessions
    and finishes. Sessions still open after `grace_secs` are given up on.

    Args:
        task: this task's name.
        worker: this task's WorkerService (its `job_done_event` and sessions).
        peer: `peer(task)` -> Peer of another task's worker (to see whether the
            master that opened a session still answers).
        enabled: False keeps TF's behaviour (join() blocks until stop()).
        grace_secs: after the job is done, how long open sessions may keep it.
        trainers: the cluster's workers (not the chief): those that never opened a
            session here are waited for a while (TENSORWEAVE_JOB_END_LATE_WORKER_SECS).

    Example:
        >>> watch = JobEndWatch(server.task, server.worker, server.peer, True, 60.0)
        >>> watch.finished()  # False until the job is done and no live session is open
        False
    """

    def __init__(self, task: str, worker: Any, peer: Callable[[str], Any], enabled: bool,
                 grace_secs: float, trainers: tuple[str, ...] = ()) -> None:
        self.task, self._worker, self._peer = task, worker, peer
        self._trainers = tuple(t for t in trainers if t != task)
        self._late_said = False
        self._answered: set[str] = set()   # late trainers seen alive (their server answered)
        self._exited: set[str] = set()     # ... and since gone: no longer waited for
        self._next_probe = 0.0
        self._enabled, self._grace = enabled, grace_secs
        self._done_at: float | None = None
        self._silence = grace_secs
        self._health: dict[str, _Health] = {}
        self._lock = threading.Lock()
        self._wait: Wait | None = None
        self._members = Members()

    def finished(self) -> bool:
        """True once the job is done and no live session remains (or grace ran out)."""
        if self._members.elastic:
            self._close_departed()
            open_by = {o for o in map(owner_of, self._worker.open_sessions()) if o}
            self._worker.device.resource_mgr.set_absent_tasks(
                self._members.absent(self._trainers, open_by))
        if not (self._enabled and self._worker.job_done_event.is_set()):
            return False
        now = time.monotonic()
        if self._done_at is None:
            self._done_at = now
            # Tasks the chief told before this one were up then: one that stops answering
            # has exited (it is no late starter to wait for).
            with self._lock:
                self._answered |= self._worker.told_at_job_end
            self._silence = min(knobs.JOB_END_SILENCE_SECS.get(), self._grace)
            self._wait = Wait("for the workers' open sessions to close", self._grace,
                              first_log_s=min(5.0, self._grace), log_every_s=10.0)
        by_owner: dict[str, list[str]] = {}
        for handle in self._worker.open_sessions():
            owner = owner_of(handle)
            if owner != self.task:  # this task's own sessions end with its own program
                by_owner.setdefault(owner or handle, []).append(handle)
        with self._lock:  # owners whose sessions all closed need no more checks
            for gone in set(self._health) - set(by_owner):
                del self._health[gone]
        still_open = [h for owner, handles in by_owner.items()
                      for h in self._still_open(owner, handles, now)]
        if not still_open:
            return not self._late_workers(now)
        assert self._wait is not None
        if self._wait.expired():
            log.warning("%s: job done; giving up on %d open session(s) after %.0fs: %s",
                        self.task, len(still_open), self._grace, still_open)
            return True
        if self._wait.should_log():
            log.info("%s: job done; waiting for %d open session(s) of %s to close (%.0fs "
                     "left)", self.task, len(still_open),
                     sorted({owner_of(h) or h for h in still_open}), self._wait.remaining())
        return False

    def _late_workers(self, now: float) -> list[str]:
        """The cluster's trainers that never opened a session here, while the window for
        them (from the job's end) lasts: a worker still starting when the chief finished
        would otherwise find no ps and fail after its session deadline. One whose server
        answered and then stopped answering has exited: it is not waited for."""
        assert self._done_at is not None
        window = min(knobs.JOB_END_LATE_WORKER_SECS.get(), self._grace)
        if now - self._done_at >= window:
            return []
        with self._lock:
            exited = set(self._exited)
        late = [t for t in self._trainers if t not in exited and not self._members.left(t)
                and self._worker.newest_session(t) is None]
        if late and now >= self._next_probe:
            self._next_probe = now + LATE_PROBE_SECS
            for task in late:  # all at once: their answers come back by themselves
                self._probe_late(task)
        if late and not self._late_said:
            self._late_said = True
            log.info("%s: job done; serving up to %.0fs more for %s, which never opened a "
                     "session here (a late start finds the job finished)", self.task, window,
                     late)
        return late

    def _close_departed(self) -> None:
        """Closes the sessions of workers that left an elastic job (the launcher says so:
        their process has ended), so that nothing waits for them: not the job's end, not
        the slices a WorkQueue handed them."""
        departed: dict[str, list[str]] = {}
        for handle in self._worker.open_sessions():
            owner = owner_of(handle)
            if owner is not None and self._members.left(owner):
                departed.setdefault(owner, []).append(handle)
        for owner, handles in departed.items():
            log.info("%s: %s has left the job (no longer a member of it): closing its "
                     "session(s) %s", self.task, owner, handles)
            self._close(handles)

    def _probe_late(self, task: str) -> None:
        """One short status call to a late trainer, not waited for (a partitioned host
        must not hold up the others' probes): its answer says alive; a failure after an
        answer says it has exited, and the next poll stops waiting for it."""
        def done(_resp: Any, _tensors: Any, err: BaseException | None) -> None:
            with self._lock:
                if err is None:
                    self._answered.add(task)
                elif task in self._answered:
                    self._exited.add(task)
        try:
            self._peer(task).call_async("get_status", pb.GetStatusRequest(), [], done,
                                        timeout=LATE_PROBE_SECS)
        except Exception as e:  # noqa: BLE001 - cannot even connect: not answering now
            done(None, None, e)

    def _still_open(self, owner: str, handles: list[str], now: float) -> list[str]:
        """Checks `owner` when due; returns its sessions that stay open (none once it is
        declared gone; not those an earlier incarnation of it opened)."""
        if not owner.startswith("/job:"):
            return handles   # a handle of another form: nothing to check, it is kept
        with self._lock:
            h = self._health.get(owner)
            answered = None if h is None else h.incarnation
        # The owner's live incarnation: what it answered, else that of the newest session it
        # opened here (a process that opened a session after it replaced the older one).
        newest = self._worker.newest_session(owner)
        live = answered if answered is not None else incarnation_of(newest or "")
        stale = [x for x in handles if live is not None
                 and incarnation_of(x) not in (None, live)]
        if stale:
            log.warning("%s: job done; %s restarted since it opened session(s) %s: closing "
                        "them", self.task, owner, stale)
            self._close(stale)
            handles = [x for x in handles if x not in stale]
        if not handles:
            return []
        return handles if self._alive(owner, handles, now) else []

    def _close(self, handles: list[str]) -> None:
        for handle in handles:
            self._worker.close_session(pb.CloseWorkerSessionRequest(session_handle=handle))

    def _alive(self, owner: str, handles: list[str], now: float) -> bool:
        """Checks `owner` when due; False (its sessions closed) once it is declared gone."""
        with self._lock:
            h = self._health.get(owner)
            if h is None:
                h = self._health[owner] = _Health(owner, now, Backoff(
                    first=0.5, cap=max(0.5, min(5.0, self._silence / CHECKS_BEFORE_GONE))))
            if h.sent_at is not None and now - h.sent_at > 2 * CHECK_TIMEOUT_SECS + 1:
                # The transport did not end the check in time: it failed all the same.
                self._failed(h, h.probe, now, f"no answer in {now - h.sent_at:.0f}s")
            gone = (h.failed >= CHECKS_BEFORE_GONE and h.silent_since is not None
                    and now - h.silent_since >= self._silence)
            due = not gone and h.sent_at is None and now >= h.next_check
            if due:
                h.probe += 1
                h.sent_at = now
            probe, failed, silent_since, last_error = (h.probe, h.failed, h.silent_since,
                                                       h.last_error)
        if gone:
            assert silent_since is not None
            log.warning("%s: job done; %s answered none of its last %d health checks, silent "
                        "for %.0fs (last: %s): it is gone, closing its session(s) %s",
                        self.task, owner, failed, now - silent_since, last_error, handles)
            self._close(handles)
            with self._lock:
                self._health.pop(owner, None)
            return False
        if due:
            self._check(owner, h, probe)
        return True

    def _check(self, owner: str, h: _Health, probe: int) -> None:
        """Sends one health check; its outcome is recorded when it comes."""
        def done(resp: Any, tensors: Any, err: BaseException | None) -> None:
            with self._lock:
                if err is None:
                    if h.failed:
                        log.info("%s: %s answers again after %d failed health check(s)",
                                 self.task, owner, h.failed)
                    changed = h.failed > 0
                    h.failed, h.silent_since, h.last_error = 0, None, ""
                    h.incarnation = getattr(resp, "incarnation", None) or None
                    if h.probe == probe:
                        h.sent_at = None
                    h.schedule(time.monotonic(), changed)
                else:
                    self._failed(h, probe, time.monotonic(), _short(err))
        try:
            self._peer(owner).call_async("get_status", pb.GetStatusRequest(), [], done,
                                         timeout=CHECK_TIMEOUT_SECS)
        except Exception as e:  # noqa: BLE001 - cannot even connect: a failed check
            with self._lock:
                self._failed(h, probe, time.monotonic(), _short(e))

    def _failed(self, h: _Health, probe: int, now: float, error: str) -> None:
        """Counts check `probe` as failed (once; under the lock)."""
        if probe != h.probe or h.sent_at is None:
            return   # already counted (it ran past its time), or an older check
        if h.failed == 0:
            h.silent_since = h.sent_at
            log.warning("%s: job done; %s, which has a session open here, does not answer "
                        "its health check (%s); it is declared gone after %.0fs of silence",
                        self.task, h.owner, error, self._silence)
        h.failed += 1
        h.last_error = error
        h.sent_at = None
        h.schedule(now, h.failed == 1)


def _short(err: BaseException) -> str:
    text = getattr(err, "message", None) or str(err) or type(err).__name__
    return f"{type(err).__name__}: {text.splitlines()[0][:200]}"


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
