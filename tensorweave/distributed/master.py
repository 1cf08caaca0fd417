"""The master service: sessions that prune, place, partition and run graphs.

For each distinct (feeds, fetches, targets) a master session prunes its graph,
places every op, splits it by task with Send/Recv pairs, registers each part on
its task's worker once, and caches that plan. A step runs every part at once;
if one fails, the step is aborted on all of them and the first real error
reaches the client.
"""
from __future__ import annotations

import itertools
import logging
import random
import sys
import threading
from typing import Any, Callable, Sequence

import numpy as np

from tensorweave.base import knobs
from tensorweave.base.waits import Backoff, Wait, cluster_wait_secs
from tensorweave.distributed.job import SERVING_JOBS
from tensorweave.distributed.master_step import Part, run_parts
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.session_close import close_later
from tensorweave.distributed.task_metrics import TaskMetrics
from tensorweave.distributed.transport.base import Peer
from tensorweave.framework import errors
from tensorweave.framework.device import (
    DeviceSpec, device_matches_filters, parse_filters, task_device, task_name)
from tensorweave.framework.graph import Graph
from tensorweave.framework.proto.config_pb2 import ConfigProto
from tensorweave.runtime.partition import Partition, partition
from tensorweave.runtime.placer import Placer, PlacementError
from tensorweave.runtime.plan import prune

log = logging.getLogger("tensorweave.master")
# How long closing a session waits for its tasks to close their part of it.
CLOSE_WAIT_S = 10.0
Tensors = Sequence[np.ndarray]


def _unavailable(message: str) -> errors.UnavailableError:
    return errors.UnavailableError(None, None, message)


class MasterSession:
    """One client session on this master: its graph, config and cached plans."""

    def __init__(self, master: "MasterService", handle: str, graph: Graph,
                 config: ConfigProto) -> None:
        self.master = master
        self.handle = handle
        self.graph = graph
        self.config = config
        # ConfigProto.device_filters: the devices (and so the tasks) this session may
        # use, always with this master's own task; create_session_from_graph has
        # checked that they parse.
        self.filters = master.session_filters(config.device_filters)
        self._plans: dict[tuple, list[Part]] = {}
        self._lock = threading.Lock()
        self._registered: set[str] = set()
        self._incarnations: dict[str, int] = {}  # task -> incarnation at first registration
        self._running: dict[int, list[Part]] = {}  # step id -> parts, for close()
        self._running_lock = threading.Lock()  # not _lock: planning may wait for tasks
        self._closed = False
        self._metadata_lock = threading.Lock()  # partitions report stats concurrently

    # ---- planning ----------------------------------------------------------------
    def plan(self, feeds: list[str], fetches: list[str], targets: list[str],
             timeout_s: float | None) -> list[Part]:
        key = (tuple(feeds), tuple(fetches), tuple(targets))
        with self._lock:
            parts = self._plans.get(key)
            if parts is None:
                parts = self._plans[key] = self._build(feeds, fetches, targets, timeout_s)
            return parts

    def _build(self, feeds: list[str], fetches: list[str], targets: list[str],
               timeout_s: float | None) -> list[Part]:
        g = self.graph
        feed_t = [g.as_graph_element(n, allow_operation=False) for n in feeds]
        fetch_t = [g.as_graph_element(n, allow_operation=False) for n in fetches]
        target_ops = [g.as_graph_element(n, allow_tensor=False) for n in targets]
        ops = prune(fetch_t, target_ops, feed_t)
        try:
            placement = self.master.placer(self.config, self.filters).place(
                ops, g.get_operation_by_name)
        except PlacementError as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        self._check_filters(ops, placement)
        if self.config.log_device_placement:
            for op in ops:
                print(f"{op.name}: ({op.type}): {placement[id(op)]}", file=sys.stderr)
        parts = partition(ops, placement, feed_t, fetch_t)
        log.debug("session %s: step of %d ops on tasks %s", self.handle, len(ops), sorted(parts))
        self.master.wait_for_tasks(sorted(parts), timeout_s)
        # A part that has nothing to do before this task's part sends to it, which it
        # does before waiting for anything, starts with those tensors (_run_parts).
        here = self.master.task
        early = parts[here].early_sends() if here in parts else set()
        return [self._register(p, p.task in early and p.waits_for(here), timeout_s)
                for p in parts.values()]

    def _check_filters(self, ops: list, placement: dict[int, str]) -> None:
        """A step may only use devices the session's device_filters allow."""
        if not self.filters:
            return
        for op in ops:
            dev = placement[id(op)]
            if not device_matches_filters(dev, self.filters):
                filters = list(self.config.device_filters)
                task = DeviceSpec.from_string(dev).replace(
                    replica=None, device_type=None, device_index=None).to_string()
                raise errors.InvalidArgumentError(
                    None, None, f"The step needs device {dev} (for op {op.name!r}), which "
                    f"this session's device_filters {filters} exclude. Add a filter that "
                    f"matches it (e.g. '{task}') to ConfigProto.device_filters, or move "
                    "the op with tf.device(...).")

    def devices(self) -> list[str]:
        """The devices of the cluster this session's device_filters allow."""
        return [d for d in self.master.all_devices() if device_matches_filters(d, self.filters)]

    def _register(self, p: Partition, deferred: bool = False,
                  timeout_s: float | None = None) -> Part:
        from tensorweave.framework.graph_io import graph_to_graph_def
        worker = self.master.worker(p.task)
        self._check_incarnation(p.task, worker, min(10.0, cluster_wait_secs(timeout_s)))
        req = pb.RegisterGraphRequest(
            session_handle=self.handle, graph_def=graph_to_graph_def(p.graph, add_sites=True),
            isolate_session_state=self.config.isolate_session_state,
            feed=[t.name for t in p.feeds.values()], fetch=[t.name for t in p.fetches.values()])
        # Bounded like the wait for the tasks: a task frozen since it answered must not
        # hold the step (or the session's lock) for ever.
        resp, _ = worker.call("register_graph", req, timeout=cluster_wait_secs(timeout_s))
        self._registered.add(p.task)
        return Part(p.task, worker, resp.graph_handle, list(p.feeds), list(p.fetches),
                     deferred)

    def _check_incarnation(self, task: str, worker: Any, timeout_s: float = 10.0) -> None:
        """A task that restarted since this session first registered a graph there has
        lost the session's state: refuse to register more (AbortedError, as TF's
        workers answer for a session they do not know), so an old session's late ops
        (a queue runner's close on stop) cannot act on the new task's fresh resources."""
        status, _ = worker.call("get_status", pb.GetStatusRequest(), timeout=timeout_s)
        known = self._incarnations.setdefault(task, status.incarnation)
        if known != status.incarnation:
            raise errors.AbortedError(
                None, None, f"Task {task} restarted since session {self.handle} first used "
                "it (its state is gone): the session must be re-created.")

    # ---- running -----------------------------------------------------------------
    def run(self, req: pb.RunStepRequest, tensors: Tensors) -> tuple[pb.RunStepResponse, Tensors]:
        if self._closed:
            raise errors.CancelledError(None, None, f"Session {self.handle} is closed")
        timeout_ms = req.options.timeout_in_ms or self.config.operation_timeout_in_ms
        timeout_s = timeout_ms / 1000 if timeout_ms > 0 else None
        parts = self.plan(list(req.feed), list(req.fetch), list(req.target), timeout_s)
        feed_values = dict(zip(req.feed, tensors))
        step_id = random.getrandbits(62)
        resp = pb.RunStepResponse(fetch=list(req.fetch))
        with self._running_lock:
            self._running[step_id] = parts
        try:
            values = run_parts(parts, feed_values, step_id, timeout_ms, self.master.task,
                               self.master.local_worker, self._abort, req.options,
                               resp.metadata, self._metadata_lock)
        finally:
            with self._running_lock:
                self._running.pop(step_id, None)
        out = [feed_values[n] if n in feed_values else values[n] for n in req.fetch]
        return resp, out

    def _abort(self, parts: list[Part], step_id: int, error: BaseException) -> None:
        code = error.error_code if isinstance(error, errors.OpError) else errors.ABORTED
        message = error.message if isinstance(error, errors.CancelledError) else \
            f"Step aborted because another task failed: {error}"
        req = pb.AbortStepRequest(step_id=step_id, code=code, message=message)
        # All at once: a frozen task must not hold up the others' abort.
        for p in parts:
            def done(resp: Any, tensors: Any, err: BaseException | None,
                     task: str = p.task) -> None:
                if err is not None:  # a dead or frozen task cannot be aborted; fine
                    log.debug("abort of step %d on %s failed: %s", step_id, task, err)
            try:
                p.worker.call_async("abort_step", req, [], done, 5.0)
            except Exception as e:  # noqa: BLE001 - as above
                done(None, [], e)

    def close(self) -> None:
        """Cancels the session's running steps (a blocked dequeue too), then closes it
        on every task it used."""
        self._closed = True
        with self._running_lock:
            running = list(self._running.items())
        closed = errors.CancelledError(None, None, f"Session {self.handle} was closed while "
                                       "the step was running (Session::Close() cancels the "
                                       "steps in flight).")
        for step_id, parts in running:
            self._abort(parts, step_id, closed)
        # On every task at once, for at most CLOSE_WAIT_S in all: a frozen task does not
        # hold up the others, nor the close, longer than that.
        tasks = sorted(self._registered)
        left, all_done = [len(tasks)], threading.Event()
        req = pb.CloseWorkerSessionRequest(session_handle=self.handle)
        for task in tasks:
            def done(resp: Any, tensors: Any, err: BaseException | None,
                     task: str = task) -> None:
                if isinstance(err, (errors.UnavailableError, errors.DeadlineExceededError)):
                    close_later(self.master, self.handle, task)  # cut off or frozen: retried
                elif err is not None:  # the task may already be gone
                    log.debug("closing session %s on %s failed: %s", self.handle, task, err)
                with self._running_lock:
                    left[0] -= 1
                    if left[0] == 0:
                        all_done.set()
            try:
                self.master.worker(task).call_async("close_session", req, [], done,
                                                    CLOSE_WAIT_S)
            except Exception as e:  # noqa: BLE001 - as above
                done(None, [], e)
        if tasks and not all_done.wait(CLOSE_WAIT_S):
            log.info("Session %s closed without an answer from every task within %gs.",
                     self.handle, CLOSE_WAIT_S)


class MasterService:
    """A task's master. `worker(task)` returns the Peer of any task's worker;
    `local_worker` is this task's WorkerService itself, which runs the step's local
    part in the master's thread (None: a master without a worker of its own)."""

    def __init__(self, tasks: dict[str, list[int]], job: str, task_index: int,
                 worker: Callable[[str], Peer], default_config: ConfigProto | None = None,
                 local_worker: Any = None) -> None:
        self.tasks = tasks
        self.job, self.task_index = job, task_index
        self.worker = worker
        self.local_worker = local_worker
        self.task = task_name(job, task_index)
        self.default_config = default_config or ConfigProto()
        self._sessions: dict[str, MasterSession] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.stopping = threading.Event()  # set by shutdown(): background retries end
        self.pending_closes: set[tuple[str, str]] = set()  # (task, handle) being retried
        # The task's metrics (task_metrics.py): its worker's, else a master's own.
        self.metrics: TaskMetrics = getattr(local_worker, "metrics", None) or \
            TaskMetrics(self.task)

    def placer(self, config: ConfigProto, filters: list[DeviceSpec] | None = None) -> Placer:
        return Placer(self.tasks, self.job, self.task_index, config.allow_soft_placement,
                      filters)

    def session_filters(self, device_filters: Any) -> list[DeviceSpec]:
        """`ConfigProto.device_filters` parsed, plus this master's own task.

        As in TF, filters never shut a session out of the task it connected to: a
        worker's session with `device_filters=["/job:ps"]` still runs its own ops
        there (and ops with no device go there first). No filters: every device.

        Raises:
            ValueError: a filter that does not parse, naming it.
        """
        filters = parse_filters(device_filters)
        if filters:
            filters.append(DeviceSpec(job=self.job, task=self.task_index))
        return filters

    def all_devices(self) -> list[str]:
        """Every device of the cluster (one CPU per task), in job and task order."""
        return [task_device(task_name(j, i)) for j in sorted(self.tasks)
                for i in self.tasks[j]]

    def wait_for_tasks(self, tasks: list[str], timeout_s: float | None) -> None:
        """Blocks until every task answers GetStatus, for `cluster_wait_secs(timeout_s)`
        (the step's timeout unless the knob says); then UnavailableError naming the rest."""
        wait = Wait("for the session's tasks to answer", cluster_wait_secs(timeout_s),
                    hint="Check that their servers are running and reachable at the "
                    "addresses in the ClusterSpec (or raise "
                    f"ConfigProto.operation_timeout_in_ms or {knobs.SESSION_DEADLINE_SECS.name}).",
                    # a step is waiting: notice a task within 0.25 s of its start
                    backoff=Backoff(cap=0.25), error=_unavailable, first_log_s=3.0)
        why: dict[str, str] = {t: "" for t in tasks}  # task -> its last failure
        while True:
            why = {t: reason for t in why if (reason := self._probe(t)) is not None}
            if not why:
                return
            said = "; ".join(f"{t} ({reason})" for t, reason in why.items())
            if wait.should_log():  # not in the first 3 s: tasks may be starting
                log.warning("Session still waiting for tasks: %s", said)
            wait.pause(f"tasks {said} did not answer")

    def _probe(self, task: str) -> str | None:
        """None if `task` answers GetStatus within 1 s, else why not (for the messages)."""
        try:
            self.worker(task).call("get_status", pb.GetStatusRequest(), timeout=1.0)
            return None
        except (errors.UnavailableError, errors.DeadlineExceededError) as e:
            return e.message.splitlines()[0] if e.message else type(e).__name__

    # ---- service methods ----------------------------------------------------------
    def create_session_from_graph(self, graph: Graph, config: ConfigProto | None) -> str:
        """In-process clients hand over their Graph itself: no GraphDef round trip."""
        # Its last field is this process's incarnation: at the job's end a ps tells the
        # sessions a restarted task left behind from its live ones (distributed/job.py).
        tag = f"i{self.local_worker.incarnation:x}" if self.local_worker is not None else \
            f"{random.getrandbits(32):x}"
        handle = f"{self.job}.{self.task_index}.s{next(self._ids)}.{tag}"
        cfg = ConfigProto()
        cfg.CopyFrom(self.default_config)
        if config is not None:
            cfg.MergeFrom(config)
        try:
            sess = MasterSession(self, handle, graph, cfg)
        except ValueError as e:  # a malformed device filter
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        with self._lock:
            self._sessions[handle] = sess
        return handle

    def create_session(self, req: pb.CreateSessionRequest, tensors: Tensors = ()
                       ) -> tuple[pb.CreateSessionResponse, Tensors]:
        from tensorweave.framework.graph_io import import_graph_def
        graph = Graph()
        with graph.as_default():
            import_graph_def(req.graph_def, name="")
        handle = self.create_session_from_graph(graph, req.config)
        return pb.CreateSessionResponse(session_handle=handle,
                                        graph_version=len(req.graph_def.node)), []

    def extend_session(self, req: pb.ExtendSessionRequest, tensors: Tensors = ()
                       ) -> tuple[pb.ExtendSessionResponse, Tensors]:
        from tensorweave.framework.graph_io import import_graph_def
        sess = self._session(req.session_handle)
        with sess.graph.as_default():
            import_graph_def(req.graph_def, name="", resolve_existing=True)
        return pb.ExtendSessionResponse(new_graph_version=len(sess.graph.get_operations())), []

    def run_step(self, req: pb.RunStepRequest, tensors: Tensors = ()
                 ) -> tuple[pb.RunStepResponse, Tensors]:
        steps = self.metrics.session(req.session_handle)  # counts and times the step
        return steps.timed(self._session(req.session_handle).run, req, list(tensors))

    def close_session(self, req: pb.CloseSessionRequest, tensors: Tensors = ()
                      ) -> tuple[pb.CloseSessionResponse, Tensors]:
        with self._lock:
            sess = self._sessions.pop(req.session_handle, None)
        if sess is not None:
            sess.close()
            self.metrics.session_closed(req.session_handle)
        return pb.CloseSessionResponse(), []

    def session_handles(self) -> list[str]:
        """The handles of the client sessions open on this master."""
        with self._lock:
            return sorted(self._sessions)

    def list_devices(self, req: pb.ListDevicesRequest, tensors: Tensors = ()
                     ) -> tuple[pb.ListDevicesResponse, Tensors]:
        """The session's devices (those its device_filters allow); all without one."""
        devs = self._session(req.session_handle).devices() if req.session_handle \
            else self.all_devices()
        return pb.ListDevicesResponse(device=devs), []

    def reset(self, req: pb.ResetRequest, tensors: Tensors = ()
              ) -> tuple[pb.ResetResponse, Tensors]:
        """Closes this master's sessions and clears containers on the filtered tasks.

        As in TF, a task's default container is named after its job: resetting
        container "worker" clears what default-container ops left on the worker tasks.
        """
        try:
            filters = self.session_filters(req.device_filters)
        except ValueError as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for s in sessions:
            s.close()
        for job in sorted(self.tasks):
            for i in self.tasks[job]:
                task = task_name(job, i)
                if device_matches_filters(task_device(task), filters):
                    containers = [n for c in req.container
                                  for n in (("", c) if c == job else (c,))]
                    self.worker(task).call("reset", pb.ResetRequest(container=containers),
                                           timeout=cluster_wait_secs())
        return pb.ResetResponse(), []

    def job_done(self, req: pb.JobDoneRequest, tensors: Tensors = ()
                 ) -> tuple[pb.JobDoneResponse, Tensors]:
        """Tells every task of the given jobs (default "ps") that training ended; the ps
        tasks last, with the tasks told before them (for `JobEndWatch`'s late workers)."""
        resp = pb.JobDoneResponse()
        jobs = list(req.jobs) or list(SERVING_JOBS)
        for job in sorted(jobs, key=lambda j: j == "ps"):  # stable: the ps job last
            for i in self.tasks.get(job, []):
                task = task_name(job, i)
                told = pb.JobDoneRequest(jobs=req.jobs, reason=req.reason, told=[
                    t for t in resp.notified if job == "ps" and not t.startswith("/job:ps/")])
                try:
                    self.worker(task).call("job_done", told, timeout=5.0)
                    resp.notified.append(task)
                except errors.OpError:
                    resp.unreachable.append(task)  # already gone: nothing to tell
        return resp, []

    def _session(self, handle: str) -> MasterSession:
        with self._lock:
            sess = self._sessions.get(handle)
        if sess is None:
            raise errors.AbortedError(None, None, f"Session {handle} is not found on master "
                                      f"{self.task} (it restarted or "
                                      "the session was closed); create a new session.")
        return sess

    def shutdown(self) -> None:
        self.stopping.set()
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for s in sessions:
            s.close()
        for task, handle in list(self.pending_closes):  # a last try before the exit
            self.close_on(task, handle, timeout=2.0)

    def close_on(self, task: str, handle: str, timeout: float) -> bool:
        """Closes session `handle` on `task` (a close that failed before); whether it did."""
        try:
            self.worker(task).call(
                "close_session", pb.CloseWorkerSessionRequest(session_handle=handle),
                timeout=timeout)
        except errors.OpError:
            return False
        self.pending_closes.discard((task, handle))
        log.info("Closed session %s on %s (it could not be reached at first)", handle, task)
        return True
