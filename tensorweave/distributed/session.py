"""The client side of `tf.Session("grpc://host:port")`.

The master is reached through `peers.connect` (the one transport choice). When
the target's server lives in this process the session talks to its master
object directly and shares its Graph (no RPC, no GraphDef); otherwise it sends
the graph once and then only the ops added since, as TF's ExtendSession does.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from tensorweave.base.waits import Backoff, Wait
from tensorweave.client.local import DeviceAttributes, cpu_device
from tensorweave.client.session import register_session_backend
from tensorweave.distributed import peers
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.protocol.methods import MASTER_SERVICE
from tensorweave.framework import errors
from tensorweave.framework.proto.config_pb2 import ConfigProto
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.runtime.step import StepState
from tensorweave.runtime.threads import at_exit



# How long past a step's deadline the client waits for its master (which gives up on the
# step's parts half a second after it: master_step.DEADLINE_GRACE_S).
RUN_STEP_GRACE_S = 2.0


class GrpcSessionRuntime:
    """Runs steps on one server's master for one client graph."""

    def __init__(self, target: str, graph: Any, config: ConfigProto) -> None:
        self.address = target.split("://", 1)[1]
        self.graph = graph
        self.config = config
        self._lock = threading.Lock()
        _open_runtimes.add(self)
        # RPCOptions.use_rpc_for_inprocess_master: as TF, go through the RPC stack even
        # to a server of this process (tests of the wire path ask for it).
        self._master = peers.connect(
            self.address, self.address, MASTER_SERVICE,
            in_process=not config.rpc_options.use_rpc_for_inprocess_master)
        local = self._master.local_service
        if local is not None:
            self.handle = local.create_session_from_graph(graph, config)
            self._sent = None  # the master shares our Graph object
        else:
            self._sent = 0
            self._sent_names: set[str] = set()
            self.handle = ""

    def _sync_graph(self) -> None:
        from tensorweave.framework.graph_io import graph_to_graph_def
        if self._sent is None:
            return
        ops = self.graph.get_operations()
        if self.handle and len(ops) == self._sent:
            return
        gd = graph_to_graph_def(self.graph, add_sites=True)
        if not self.handle:
            request = pb.CreateSessionRequest(graph_def=gd, config=self.config,
                                              target=self.address)
            resp = _call_until_deadline(
                lambda: self._master.call("create_session", request,
                                          timeout=self._timeout())[0],
                self.config.operation_timeout_in_ms, f"creating a session on {self.address}")
            self.handle = resp.session_handle
        else:
            new = type(gd)()
            new.node.extend(n for n in gd.node if n.name not in self._sent_names)
            new.library.CopyFrom(gd.library)
            self._master.call("extend_session", pb.ExtendSessionRequest(
                session_handle=self.handle, graph_def=new, current_graph_version=self._sent),
                timeout=self._timeout())
        self._sent = len(ops)
        self._sent_names = {op.name for op in ops}

    def _timeout(self) -> float | None:
        ms = self.config.operation_timeout_in_ms
        return ms / 1000 if ms > 0 else 60.0

    def run(self, feeds: list[Tensor], feed_values: list[Any], fetches: list[Tensor],
            targets: list[Operation], step: StepState) -> list[Any]:
        with self._lock:
            self._sync_graph()
        req = pb.RunStepRequest(session_handle=self.handle, feed=[t.name for t in feeds],
                                fetch=[t.name for t in fetches], target=[o.name for o in targets])
        if step.options is not None:
            req.options.CopyFrom(step.options)
        token = step.register_cancel(lambda err: self._cancel())
        try:
            resp, values = self._master.call("run_step", req, feed_values,
                                             timeout=_run_step_timeout(step))
        except errors.OpError:
            # A step cancelled here (Session.close(), its timeout) reports why, not how
            # the cancelled call ended (e.g. the transport closing under it).
            if step.cancelled is not None:
                raise step.cancelled from None
            raise
        finally:
            step.deregister_cancel(token)
        if step.cancelled is not None:
            raise step.cancelled
        if step.stats is not None:  # the master merged every task's node stats
            step.stats.merge(resp.metadata.step_stats)
        if step.partition_graphs is not None:
            step.partition_graphs.extend(resp.metadata.partition_graphs)
        return values

    def _cancel(self) -> None:
        # Closing the master session aborts its running steps on every worker.
        try:
            self._master.call("close_session", pb.CloseSessionRequest(session_handle=self.handle),
                              timeout=10.0)
        except Exception:  # noqa: BLE001 - best effort; the step fails either way
            pass

    def list_devices(self) -> list[DeviceAttributes]:
        """The devices this session may use (its ConfigProto.device_filters apply)."""
        with self._lock:
            self._sync_graph()  # as TF: a remote session is created first if need be
        resp, _ = self._master.call("list_devices",
                                    pb.ListDevicesRequest(session_handle=self.handle),
                                    timeout=self._timeout())
        return [cpu_device(d) for d in resp.device]

    def close(self) -> None:
        _open_runtimes.discard(self)
        if self.handle:
            self._cancel()
        self._master.close()


def _run_step_timeout(step: StepState) -> float | None:
    """How long the client waits for the master's answer to a step: the step's deadline
    plus `RUN_STEP_GRACE_S` (the master answers at its deadline, naming the tasks that
    did not answer: a frozen master does not); none without a deadline, as TF."""
    remaining = step.remaining()
    return None if remaining is None else max(remaining, 0.0) + RUN_STEP_GRACE_S


def _call_until_deadline(call: Callable[[], Any], timeout_ms: int, what: str) -> Any:
    """`call()`, retried while the master is unreachable until `timeout_ms` has passed.

    As TF's master client (it waits for the channel and retries UNAVAILABLE until
    the call's deadline): with an operation timeout, a master that is not up yet
    may still come up in time; one that never answers is DeadlineExceededError.
    With no timeout (0), UnavailableError is raised at once.
    """
    if timeout_ms <= 0:
        return call()
    wait = Wait(f"for a master ({what})", timeout_ms / 1000,
                backoff=Backoff(first=0.01, cap=0.5), error=_deadline_exceeded,
                hint="Check that its server is running at that address, or raise "
                "ConfigProto.operation_timeout_in_ms.")
    while True:
        try:
            return call()
        except errors.UnavailableError as e:
            last = e
        wait.pause(f"no master answered within the operation timeout of {timeout_ms} ms; "
                   f"last error: {last.message}")


def _deadline_exceeded(message: str) -> errors.DeadlineExceededError:
    return errors.DeadlineExceededError(None, None, message)


def _reset(target: str, containers: list[str] | None, config: Any) -> None:
    address = target.split("://", 1)[1]
    filters = list(config.device_filters) if config is not None else []
    ms = config.operation_timeout_in_ms if config is not None else 0
    request = pb.ResetRequest(container=list(containers or []), device_filters=filters)

    def call() -> None:
        master = peers.connect(address, address, MASTER_SERVICE)
        try:
            master.call("reset", request, timeout=ms / 1000 if ms > 0 else None)
        finally:
            master.close()
    _call_until_deadline(call, ms, f"Session.reset({target!r})")


# Programs that exit without closing their sessions (seed-style trainers) still close
# them, so ps tasks waiting for the job's sessions to end need not wait for a timeout.
_open_runtimes: "weakref.WeakSet[GrpcSessionRuntime]" = weakref.WeakSet()


def _close_open_sessions() -> None:
    for runtime in list(_open_runtimes):
        try:
            runtime.close()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


at_exit(_close_open_sessions)
GrpcSessionRuntime.reset = staticmethod(_reset)  # type: ignore[attr-defined]
register_session_backend("grpc", GrpcSessionRuntime)
