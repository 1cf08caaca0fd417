"""The worker service: runs registered graph partitions on this task's device.

A plain class: the transport (or an in-process caller) hands it protobuf
requests plus a list of tensors, and it returns a response plus tensors. The
device's resource manager is shared by every session of every client, which is
what makes between-graph replication see one set of variables.
"""
from __future__ import annotations

import itertools
import logging
import random
import threading
from typing import Any, Callable, Protocol, Sequence

import numpy as np

import tensorweave.runtime.sendrecv_ops  # noqa: F401 - registers _Send/_Recv for partitions
from tensorweave.distributed.job import incarnation_of, owner_of
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.replica_store import ReplicaStore
from tensorweave.distributed.task_metrics import TaskMetrics
from tensorweave.distributed.transport.base import Peer
from tensorweave.framework import errors
from tensorweave.framework.device import task_device
from tensorweave.framework.graph import Graph
from tensorweave.runtime.executor import Executor, FunctionLibrary
from tensorweave.runtime.malloc_tuning import keep_step_memory
from tensorweave.runtime.rendezvous import LocalRendezvous, StepRendezvous
from tensorweave.runtime.resource_mgr import DeviceContext
from tensorweave.runtime.step import SessionRef, StepState
from tensorweave.runtime.step_stats import StepStatsCollector

log = logging.getLogger("tensorweave.worker")
_LOAD_WAIT_S = 60.0
Tensors = Sequence[np.ndarray]


class Outbox(Protocol):
    """Where one part's pushes to other tasks go, when its step's owner says so."""

    def push(self, task: str, step_id: int, items: list[tuple[str, Any]]) -> None: ...

    def push_live(self, task: str, step_id: int, items: list[tuple[str, Any]]) -> None: ...

    def flushed(self) -> None: ...


class _Registered:
    __slots__ = ("handle", "session", "graph", "executor")

    def __init__(self, handle: str, session: str, graph: Graph, executor: Executor) -> None:
        self.handle, self.session, self.graph, self.executor = handle, session, graph, executor


class WorkerService:
    """One task's worker.

    Args:
        task: this task's name, "/job:<job>/replica:0/task:<index>".
        peer: `peer(task_name)` returns the Peer (transport/base.py) of another
            task's worker; Sends to that task push through it.
        file_policy: the directories this task's file ops may touch
            (`framework/file_access.py`); None: unconfined unless TENSORWEAVE_ALLOW_DIRS.
    """

    def __init__(self, task: str, peer: Callable[[str], Peer] | None = None,
                 file_policy: Any = None) -> None:
        self.task = task
        keep_step_memory()  # a task runs the same steps again and again: keep their memory
        self.device_name = task_device(task)
        self.device = DeviceContext(self.device_name, file_policy=file_policy)
        self.rendezvous = LocalRendezvous()
        self.peer = peer
        self.incarnation = random.getrandbits(63)
        self.metrics = TaskMetrics(task)  # GET /metrics on the task port (task_metrics.py)
        self._lock = threading.Lock()
        self._graphs: dict[str, _Registered] = {}
        self._isolated: dict[str, DeviceContext] = {}
        self._libraries: dict[str, FunctionLibrary] = {}
        self._handles = itertools.count(1)
        self._sessions: set[str] = set()
        # Each session owner's newest session (by its first graph here): a task restarted
        # since it opened an older one is known without asking it (distributed/job.py).
        self._newest: dict[str, str] = {}
        self._active_steps: dict[int, StepState] = {}
        self.job_done_event = threading.Event()
        self.told_at_job_end: set[str] = set()  # tasks told before this one (JobDoneRequest)
        self.sessions_changed = threading.Condition(self._lock)
        # Other ps tasks' state held here (distributed/replica.py), and, on a replicating
        # ps, where its own goes and how old the holder's copy is.
        self.replicas = ReplicaStore()
        self.replica_status: Callable[[], tuple[str, float]] | None = None
        # Synchronous replication (distributed/replica.py): `after_step(updated)` ends
        # each part, `updated` whether it changed a variable or table of this task.
        self.after_step: Callable[[bool], None] | None = None
        # Cleared while a starting ps loads its replica: it already serves (its buddy ps
        # may be asking it for its own), but runs no graph that could initialize or
        # restore over the state it is loading.
        self.state_loaded = threading.Event()
        self.state_loaded.set()

    # ---- status ------------------------------------------------------------------
    def get_status(self, req: pb.GetStatusRequest, tensors: Tensors = ()
                   ) -> tuple[pb.GetStatusResponse, Tensors]:
        with self._lock:
            n = len(self._sessions)
        holder, lag = self.replica_status() if self.replica_status else ("", -1.0)
        return pb.GetStatusResponse(task=self.task, device=[self.device_name],
                                    incarnation=self.incarnation, open_sessions=n,
                                    replica_holder=holder, replica_lag_secs=lag), []

    # ---- replicas of other ps tasks' state ---------------------------------------
    def replica_put(self, req: pb.ReplicaPutRequest, tensors: Tensors = ()
                    ) -> tuple[pb.ReplicaPutResponse, Tensors]:
        """A ps task's state, or what changed in it, for the replica held here."""
        self.replicas.put(req, tensors)
        return pb.ReplicaPutResponse(), []

    def replica_get(self, req: pb.ReplicaGetRequest, tensors: Tensors = ()
                    ) -> tuple[pb.ReplicaGetResponse, Tensors]:
        """The replica held here for a (restarted) ps task."""
        return self.replicas.get(req.task)

    # ---- graphs ------------------------------------------------------------------
    def register_graph(self, req: pb.RegisterGraphRequest, tensors: Tensors = ()
                       ) -> tuple[pb.RegisterGraphResponse, Tensors]:
        from tensorweave.framework.graph_io import import_graph_def
        if not self.state_loaded.wait(_LOAD_WAIT_S):
            raise errors.UnavailableError(
                None, None, f"{self.task} is still loading its state from its replica; "
                "retry (sessions recover by themselves).")
        graph = Graph()
        graph._validate_names = False  # a partition: the runtime's "_send/..." ops
        with graph.as_default():
            import_graph_def(req.graph_def, name="")
        feeds = [graph.get_tensor_by_name(n) for n in req.feed]
        fetches = [graph.get_tensor_by_name(n) for n in req.fetch]
        fed = {id(t.op) for t in feeds}
        targets = [op for op in graph.get_operations() if id(op) not in fed]
        library = self._library(req.session_handle, req.isolate_session_state)
        executor = Executor(feeds, fetches, targets, library)
        handle = f"{req.session_handle}/g{next(self._handles)}"
        with self._lock:
            self._graphs[handle] = _Registered(handle, req.session_handle, graph, executor)
            if req.session_handle not in self._sessions:
                self._newest[owner_of(req.session_handle) or req.session_handle] = \
                    req.session_handle
            self._sessions.add(req.session_handle)
        return pb.RegisterGraphResponse(graph_handle=handle), []

    def _library(self, session: str, isolate: bool) -> FunctionLibrary:
        key = session if isolate else ""
        with self._lock:
            lib = self._libraries.get(key)
            if lib is None:
                device = DeviceContext(self.device_name, file_policy=self.device.file_policy
                                       ) if isolate else self.device
                lib = self._libraries[key] = FunctionLibrary(device)
            return lib

    def deregister_graph(self, req: pb.DeregisterGraphRequest, tensors: Tensors = ()
                         ) -> tuple[pb.DeregisterGraphResponse, Tensors]:
        with self._lock:
            self._graphs.pop(req.graph_handle, None)
        return pb.DeregisterGraphResponse(), []

    def run_graph(self, req: pb.RunGraphRequest, tensors: Tensors = (),
                  outbox: Outbox | None = None) -> tuple[pb.RunGraphResponse, Tensors]:
        """Runs one partition for one step; blocks until it finishes or fails.

        `outbox` (only from this task's master, which runs the step) takes the part's
        pushes to other tasks instead of `push_to`/`push_live_to`, and hears each
        flush: it starts the parts it held back (master_step.DeferredStarts)."""
        with self._lock:
            reg = self._graphs.get(req.graph_handle)
        if reg is None:
            raise errors.AbortedError(None, None, f"Graph handle {req.graph_handle} is not "
                                      f"registered on {self.task} (the task restarted?). The "
                                      "session must be re-created.")
        # Sends to other tasks push there at once; remote senders push here.
        rendezvous = StepRendezvous(self.rendezvous, req.step_id, self.task, self.push_to,
                                    self.push_live_to) if outbox is None else \
            StepRendezvous(self.rendezvous, req.step_id, self.task, outbox.push,
                           outbox.push_live, outbox.flushed)
        step = StepState(req.step_id, timeout_s=req.timeout_ms / 1000 if req.timeout_ms else None,
                         rendezvous=rendezvous,
                         stats=StepStatsCollector() if req.record_timeline else None)
        step.session = SessionRef(reg.session, owner_of(reg.session),
                                  incarnation_of(reg.session))
        with self._lock:
            self._active_steps[req.step_id] = step
        try:
            values = reg.executor.run(list(tensors), step)
            step.flush()  # a part without Recvs holds its Sends until here
        except errors.OpError as e:
            self.rendezvous.abort_step(req.step_id, e)
            raise
        finally:
            updated = bool(step.held_gates)  # it held this task's update gate (until end)
            step.end()
            with self._lock:
                self._active_steps.pop(req.step_id, None)
        if self.after_step is not None:
            self.after_step(updated)
        return self._run_graph_response(req, reg, step), [
            np.asarray(v) if not isinstance(v, np.ndarray) else v for v in values]

    @staticmethod
    def _run_graph_response(req: pb.RunGraphRequest, reg: _Registered, step: StepState
                            ) -> pb.RunGraphResponse:
        """Node stats and the partition's GraphDef, when the master asked for them."""
        resp = pb.RunGraphResponse()
        if step.stats is not None:
            step.stats.to_proto(resp.step_stats)
        if req.record_partition_graph:
            from tensorweave.framework.graph_export import graph_to_graph_def
            resp.partition_graph.add().CopyFrom(graph_to_graph_def(reg.graph))
        return resp

    def push_to(self, task: str, step_id: int, items: list[tuple[str, Any]]) -> None:
        """Delivers Sends of this task's part to `task`'s rendezvous."""
        self._peer_of(task).push(step_id, items)

    def push_live_to(self, task: str, step_id: int, items: list[tuple[str, Any]]) -> None:
        """Pushes live variable buffers: a peer that hands objects over as they are (an
        in-process task) gets copies; the others copy into their socket before returning."""
        peer = self._peer_of(task)
        if peer.shares_memory:
            items = [(k, np.array(v, copy=True)) for k, v in items]
        peer.push(step_id, items)

    def _peer_of(self, task: str) -> Peer:
        if self.peer is None:
            raise errors.InternalError(None, None, f"{self.task} has no route to {task}")
        return self.peer(task)

    def deliver(self, step_id: int, items: list[tuple[str, Any]]) -> None:
        """Tensors other tasks' _Sends pushed here, for this task's _Recvs."""
        self.metrics.delivered(items)
        self.rendezvous.send_many(step_id, items)

    def push_tensors(self, req: pb.PushTensorsRequest, tensors: Tensors = ()
                     ) -> tuple[pb.PushTensorsResponse, Tensors]:
        """`deliver` as a service method, for transports that only make calls (gRPC)."""
        self.deliver(req.step_id, list(zip(req.rendezvous_key, tensors)))
        return pb.PushTensorsResponse(), []

    # ---- step / session lifecycle ------------------------------------------------
    def abort_step(self, req: pb.AbortStepRequest, tensors: Tensors = ()
                   ) -> tuple[pb.AbortStepResponse, Tensors]:
        err = errors.make_error(req.code or errors.ABORTED, req.message or "Step aborted")
        self.rendezvous.abort_step(req.step_id, err)
        with self._lock:
            step = self._active_steps.get(req.step_id)
        if step is not None:
            step.cancel(err)
        return pb.AbortStepResponse(), []

    def close_session(self, req: pb.CloseWorkerSessionRequest, tensors: Tensors = ()
                      ) -> tuple[pb.CloseWorkerSessionResponse, Tensors]:
        with self._lock:
            for h in [h for h, r in self._graphs.items() if r.session == req.session_handle]:
                del self._graphs[h]
            self._sessions.discard(req.session_handle)
            self.sessions_changed.notify_all()
            lib = self._libraries.pop(req.session_handle, None)
        if lib is not None:
            lib.device.resource_mgr.cleanup()
        self.device.resource_mgr.session_closed(req.session_handle)
        return pb.CloseWorkerSessionResponse(), []

    def job_done(self, req: pb.JobDoneRequest, tensors: Tensors = ()
                 ) -> tuple[pb.JobDoneResponse, Tensors]:
        """Marks the job finished; the server's join() returns once sessions close."""
        log.info("%s: job done (%s)", self.task, req.reason or "training finished")
        self.told_at_job_end = set(req.told)
        self.job_done_event.set()
        with self._lock:
            self.sessions_changed.notify_all()
        return pb.JobDoneResponse(notified=[self.task]), []

    def open_sessions(self) -> list[str]:
        with self._lock:
            return sorted(self._sessions)

    def newest_session(self, owner: str) -> str | None:
        """The session `owner` (a task name) opened here last, open or closed."""
        with self._lock:
            return self._newest.get(owner)

    def reset(self, req: pb.ResetRequest,
              tensors: Tensors = ()) -> tuple[pb.ResetResponse, Tensors]:
        self.device.resource_mgr.cleanup(list(req.container))
        with self._lock:
            self._graphs.clear()
            self._libraries.clear()
        return pb.ResetResponse(), []
