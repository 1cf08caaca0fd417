"""One step of a master session: every task's part issued at once, the first error
aborting it everywhere, and the deferred starts of the parts that wait for this task.

The master owns the step, so it owns the deferred starts too: a remote part that has
nothing to do before this task's part sends to it (`Partition.waits_for`) is held
back, and `DeferredStarts` (the local part's outbox) issues its RunGraph together
with the first tensors for it. The runtime below only sees push/push_live/flushed.

Example (what `MasterSession.run` does):
    >>> values = run_parts(parts, feed_values, step_id, timeout_ms, here=master.task,
    ...                    local_worker=master.local_worker, abort=session._abort)
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable

from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.step_watch import StepWatch
from tensorweave.distributed.transport.base import Items, Peer
from tensorweave.framework import errors

Start = Callable[[Items], None]
# How long past its deadline the master waits for a part's answer before it counts the
# RunGraph as lost: the part itself gives up at the deadline and says which node waited.
RUN_GRAPH_GRACE_S = 10.0
# How long past its deadline a step waits for its parts' answers before it names the
# tasks that did not answer (each part gives up at the deadline itself).
DEADLINE_GRACE_S = 0.5
# How long, after a part failed, the step waits for the others to answer the abort
# before it reports that failure (a frozen task never answers it).
ABORT_WAIT_S = 2.0


class Part:
    """A registered partition of a plan: where it runs and what it feeds and fetches."""

    __slots__ = ("task", "worker", "handle", "feeds", "fetches", "deferred")

    def __init__(self, task: str, worker: Peer, handle: str, feeds: list[str],
                 fetches: list[str], deferred: bool = False) -> None:
        self.task, self.worker, self.handle = task, worker, handle
        self.feeds, self.fetches = feeds, fetches
        # Started by this task's own part, with its first tensors for it (DeferredStarts).
        self.deferred = deferred


class DeferredStarts:
    """The other tasks' parts of one step that this task's part starts: its outbox.

    `push` to such a task issues that part's RunGraph with the tensors (one message
    where the peer can: `Peer.push_and_call_async`); `push_live` starts it first;
    `flushed` (this part is about to wait, or has ended) starts the rest. Pushes to
    any other task go through `worker` (the local WorkerService) as usual.
    """

    def __init__(self, worker: Any, starts: dict[str, Start]) -> None:
        self._worker = worker
        self._starts = starts

    def take(self, task: str) -> Start | None:
        """`task`'s start if it has not run yet (then the caller runs it)."""
        return self._starts.pop(task, None)

    def pending(self) -> list[str]:
        """The tasks whose parts have not been started yet."""
        return sorted(self._starts)

    def push(self, task: str, step_id: int, items: Items) -> None:
        start = self.take(task)
        if start is None:
            self._worker.push_to(task, step_id, items)
        else:
            start(items)

    def push_live(self, task: str, step_id: int, items: Items) -> None:
        start = self.take(task)
        if start is not None:  # its RunGraph first: the live buffer goes out now
            start([])
        self._worker.push_live_to(task, step_id, items)

    def flushed(self) -> None:
        while self._starts:
            try:
                _, start = self._starts.popitem()
            except KeyError:  # taken meanwhile by another thread of this part
                return
            start([])


def with_task(e: BaseException, task: str) -> BaseException:
    """`e` (a tf.errors.OpError) with the task it happened on in its message."""
    if isinstance(e, errors.OpError) and task not in e.message:
        err = type(e)(None, e.op, f"{e.message}\n\t (on task {task})")
        err.__cause__ = e.__cause__
        return err
    return e


def run_parts(parts: list[Part], feed_values: dict[str, Any], step_id: int, timeout_ms: int,
              here: str, local_worker: Any, abort: Callable[[list[Part], int, BaseException],
                                                          None],
              options: Any = None, metadata: Any = None, metadata_lock: Any = None
              ) -> dict[str, Any]:
    """Issues every part's RunGraph at once; one part (task `here`'s, when it has one)
    runs in this thread, through `local_worker` itself. The first failure starts
    `abort(parts, step_id, error)` once (on its own thread), so parts blocked on its
    tensors wake up; the first real error is raised. Returns {fetch name: value}."""
    local = next((p for p in parts if p.task == here), None)
    remote = [p for p in parts if p is not local]
    if local is not None and not remote:  # one part, here: no calls, no answers to await
        return _run_alone(local, feed_values, step_id, timeout_ms, local_worker, options,
                          metadata, metadata_lock or threading.Lock())
    step = _Step(parts, feed_values, step_id, timeout_ms, abort, options, metadata,
                 metadata_lock or threading.Lock())
    if remote:  # health checks are for other tasks (a step on this task alone has none)
        step.watch = StepWatch(step_id, remote, step.finished_silent)
    try:
        if local is not None:
            _run_local(step, local, remote, feed_values, local_worker)
        else:  # nothing runs here: every part is a call, as a remote one
            for p in remote:
                step.start(p, [])
        return step.collect()
    finally:
        if step.watch is not None:
            step.watch.stop()  # however the step ended: no more health checks


def _run_alone(local: Part, feed_values: dict[str, Any], step_id: int, timeout_ms: int,
               local_worker: Any, options: Any, metadata: Any, metadata_lock: Any
               ) -> dict[str, Any]:
    """A step whose only part is this task's: run in this thread (a queue runner's
    enqueue, a local read). Its failure names the task, as every part's does; the worker
    has aborted the step's rendezvous itself, and there is no other part to abort."""
    req = _request(local, step_id, timeout_ms, options)
    try:
        resp, outs = local_worker.run_graph(req, [feed_values[n] for n in local.feeds])
    except BaseException as e:
        raise with_task(e, local.task) from e.__cause__
    if metadata is not None:
        _merge_metadata(metadata, metadata_lock, resp)
    return dict(zip(local.fetches, outs))


def _merge_metadata(metadata: Any, lock: Any, resp: pb.RunGraphResponse) -> None:
    """A part's node stats and partition graph, into the step's RunMetadata."""
    with lock:
        metadata.step_stats.dev_stats.extend(resp.step_stats.dev_stats)
        metadata.partition_graphs.extend(resp.partition_graph)


def _request(p: Part, step_id: int, timeout_ms: int, options: Any) -> pb.RunGraphRequest:
    return pb.RunGraphRequest(
        graph_handle=p.handle, step_id=step_id, timeout_ms=max(timeout_ms, 0),
        record_timeline=options is not None and options.trace_level > 0,  # above NO_TRACE
        record_partition_graph=options is not None and options.output_partition_graphs)


def _run_local(step: "_Step", local: Part, remote: list[Part], feed_values: dict[str, Any],
               local_worker: Any) -> None:
    """Starts the remote parts and runs `local` in this thread, through `local_worker`."""
    # Parts with nothing to do before this task's tensors arrive start with them:
    # one message, and a wake-up fewer on each side.
    deferred = DeferredStarts(local_worker, {p.task: step.starter(p) for p in remote
                                             if p.deferred})
    held = set(deferred.pending())
    for p in remote:
        if p.task not in held:
            step.start(p, [])
    failed = False
    try:
        resp, outs = local_worker.run_graph(step.request(local),
                                            [feed_values[n] for n in local.feeds],
                                            outbox=deferred)
    except BaseException as e:  # noqa: BLE001 - reported with the others below
        failed = True
        step.finished(local, None, [], e)
    else:
        step.finished(local, resp, outs, None)
    for p in remote:  # deferred parts the local part never started
        if deferred.take(p.task) is None:
            continue
        if failed:  # the step failed here before they were needed: not run
            step.finished(p, None, [], errors.CancelledError(
                None, None, f"Step not started on {p.task}: it failed on {local.task} "
                "first"))
        else:  # the local part ended without a flush
            step.start(p, [])


class _Step:
    """What `run_parts` keeps for one step: its requests, one result per part, the
    abort started by the first failure."""

    def __init__(self, parts: list[Part], feed_values: dict[str, Any], step_id: int,
                 timeout_ms: int, abort: Callable[[list[Part], int, BaseException], None],
                 options: Any, metadata: Any, metadata_lock: Any) -> None:
        self.parts, self.feed_values, self.step_id = parts, feed_values, step_id
        self.timeout_ms = max(timeout_ms, 0)
        # A step with a deadline never waits without bound for a part whose RunGraph (or
        # its answer) was lost; one without waits as long as its ops do (as TF).
        self.call_timeout = timeout_ms / 1000 + RUN_GRAPH_GRACE_S if timeout_ms > 0 else None
        self.options = options
        self.abort, self.metadata, self.lock = abort, metadata, metadata_lock
        self.deadline = time.monotonic() + timeout_ms / 1000 if timeout_ms > 0 else None
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        self.aborted = threading.Event()
        self.answered: set[str] = set()  # the parts (tasks) with an outcome: one each
        self._answer_lock = threading.Lock()
        self.watch: StepWatch | None = None

    def request(self, p: Part) -> pb.RunGraphRequest:
        return _request(p, self.step_id, self.timeout_ms, self.options)

    def finished(self, p: Part, resp: Any, outs: Any, err: BaseException | None) -> None:
        """`p`'s outcome; only its first counts (a late answer after the health checks
        gave up on it, or after the deadline, is dropped)."""
        with self._answer_lock:
            if p.task in self.answered:
                return
            self.answered.add(p.task)
        if self.watch is not None:
            self.watch.done(p.task)
        if err is None and self.metadata is not None:  # each task's node stats go back
            _merge_metadata(self.metadata, self.lock, resp)
        if err is not None:
            err = with_task(err, p.task)
            if not self.aborted.is_set():
                self.aborted.set()
                threading.Thread(target=self.abort, args=(self.parts, self.step_id, err),
                                 daemon=True).start()
        self.results.put((p, outs, err))

    def start(self, p: Part, items: Items) -> None:
        """Issues `p`'s RunGraph (after `items`, Sends of this task's part for it)."""
        args = ("run_graph", self.request(p), [self.feed_values[n] for n in p.feeds],
                lambda resp, outs, err: self.finished(p, resp, outs, err), self.call_timeout)
        try:
            if items:
                p.worker.push_and_call_async(self.step_id, items, *args)
            else:
                p.worker.call_async(*args)
        except BaseException as e:
            self.finished(p, None, [], e)  # one result per part, whatever happens
            raise

    def finished_silent(self, p: Part, error: BaseException) -> None:
        """The health checks gave up on `p`'s task (StepWatch)."""
        self.finished(p, None, [], error)

    def starter(self, p: Part) -> Start:
        return lambda items: self.start(p, items)

    def collect(self) -> dict[str, Any]:
        """Every part's fetches, once all have answered; raises the first error.

        With a deadline, parts that have not answered shortly after it are named in a
        DeadlineExceededError (a frozen or cut-off task never answers); after a
        failure, the others get `ABORT_WAIT_S` to answer the abort."""
        values: dict[str, Any] = {}
        first_error: BaseException | None = None
        waiting = {p.task for p in self.parts}
        failed_at = 0.0
        while waiting:
            limit = None if self.deadline is None else self.deadline + DEADLINE_GRACE_S
            if first_error is not None:
                limit = min(limit or float("inf"), failed_at + ABORT_WAIT_S)
            try:
                p, outs, err = self.results.get(
                    timeout=None if limit is None else max(0.0, limit - time.monotonic()))
            except queue.Empty:
                break
            waiting.discard(p.task)
            if err is None:
                values.update(zip(p.fetches, outs))
            elif first_error is None:
                first_error, failed_at = err, time.monotonic()
        if waiting and (first_error is None
                        or isinstance(first_error, errors.DeadlineExceededError)):
            raise self._unanswered(sorted(waiting), first_error)
        if first_error is not None:
            raise first_error
        return values

    def _unanswered(self, tasks: list[str], error: BaseException | None) -> BaseException:
        """DeadlineExceededError naming the tasks whose parts did not answer in time."""
        names = ", ".join(tasks)
        message = (f"Step {self.step_id:x} passed its deadline of {self.timeout_ms} ms: no "
                   f"answer from {names} (its part of the step, RunGraph). The task is "
                   "frozen, overloaded or cut off; raise RunOptions.timeout_in_ms or "
                   "ConfigProto.operation_timeout_in_ms if it is only slow.")
        if isinstance(error, errors.OpError):
            message += f"\n\t{error.message}"
        err = errors.DeadlineExceededError(None, None, message)
        if not self.aborted.is_set():  # nothing failed yet: stop the parts still running
            self.aborted.set()
            threading.Thread(target=self.abort, args=(self.parts, self.step_id, err),
                             daemon=True).start()
        return err
