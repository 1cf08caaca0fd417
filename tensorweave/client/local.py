"""The in-process runtime behind `tf.Session('')`: one local CPU device.

Each local session owns its device's resource manager, so two sessions on one
graph hold separate variables (as in TF 1.x's DirectSession).
"""
from __future__ import annotations

import collections
import sys
import threading
from typing import Any

from tensorweave.framework import errors
from tensorweave.framework.device import DeviceSpec
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.runtime.executor import Executor, FunctionLibrary
from tensorweave.runtime.resource_mgr import DeviceContext
from tensorweave.runtime.step import StepState
from tensorweave.framework.graph_def_writer import graph_to_graph_def, node_def_of
from tensorweave.framework.proto.graph_pb2 import GraphDef

LOCAL_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"

# What Session.list_devices() returns per device, with TF's field names. Every device
# is a CPU; TF reports its CPU allocator's limit as 256 MiB and so do we.
DeviceAttributes = collections.namedtuple(
    "DeviceAttributes", ["name", "device_type", "memory_limit_bytes", "incarnation"])
CPU_MEMORY_LIMIT_BYTES = 268435456


def cpu_device(name: str) -> DeviceAttributes:
    """The attributes of the CPU device `name` ("/job:.../device:CPU:0")."""
    return DeviceAttributes(name, "CPU", CPU_MEMORY_LIMIT_BYTES, 0)


def partition_graph_def(ops: list[Operation], device: str) -> Any:
    """The GraphDef of the ops one device runs for a step, each placed on `device`
    (what TF returns in RunMetadata.partition_graphs)."""
    gd = graph_to_graph_def(ops[0].graph) if ops else None
    if gd is None:
        return GraphDef()
    del gd.node[:]  # keep versions and the function library, list only this step's ops
    for op in ops:
        node = gd.node.add()
        node.CopyFrom(node_def_of(op))
        node.device = device
    return gd


class LocalRuntime:
    """Compiles and caches one Executor per (feeds, fetches, targets) signature."""

    def __init__(self, graph: Any, config: Any, device: DeviceContext | None = None) -> None:
        self.graph = graph
        self.config = config
        self.device = device or DeviceContext(LOCAL_DEVICE)
        self.library = FunctionLibrary(self.device)
        self._plans: dict[tuple, Executor] = {}
        self._lock = threading.Lock()
        self._logged: set[int] = set()

    def executor(self, feeds: list[Tensor], fetches: list[Tensor],
                 targets: list[Operation]) -> Executor:
        key = (tuple(map(id, feeds)), tuple(map(id, fetches)), tuple(map(id, targets)))
        ex = self._plans.get(key)
        if ex is None:
            with self._lock:
                ex = self._plans.get(key)
                if ex is None:
                    ex = Executor(feeds, fetches, targets, self.library)
                    self._check_devices(ex)
                    self._log_placement(ex)
                    self._plans[key] = ex
        return ex

    def run(self, feeds: list[Tensor], feed_values: list[Any], fetches: list[Tensor],
            targets: list[Operation], step: StepState) -> list[Any]:
        ex = self.executor(feeds, fetches, targets)
        if step.partition_graphs is not None:
            step.partition_graphs.append(partition_graph_def(ex.ops, self.device.name))
        return ex.run(feed_values, step)

    def _check_devices(self, ex: Executor) -> None:
        # TF's DirectSession refuses an op pinned to a device it does not have (a ps task,
        # a GPU) unless soft placement is on. The common cause is a cluster graph run in
        # tf.Session() without the server's target: silently running it here would train
        # a private copy of the model on every worker.
        if self.config is not None and self.config.allow_soft_placement:
            return
        names = self.device_names()
        for op in ex.ops:
            if op.device and not any(DeviceSpec.from_string(op.device).matches(n) for n in names):
                raise errors.InvalidArgumentError(
                    None, op,
                    f"Cannot assign a device for operation {op.name}: Operation was explicitly "
                    f"assigned to {op.device} but available devices are [ {', '.join(names)} ]. "
                    "Make sure the device specification refers to a valid device. This session "
                    "runs in-process (tf.Session() with no target): to run on a cluster, pass "
                    "the server's target, tf.Session(server.target); to run here anyway, set "
                    "ConfigProto(allow_soft_placement=True) or import with clear_devices=True.")

    def _log_placement(self, ex: Executor) -> None:
        if not (self.config is not None and self.config.log_device_placement):
            return
        for op in ex.ops:
            if id(op) not in self._logged:
                self._logged.add(id(op))
                print(f"{op.name}: ({op.type}): {self.device.name}", file=sys.stderr)

    def device_names(self) -> list[str]:
        """The CPU devices this session offers: ConfigProto.device_count["CPU"] of them
        (default 1), as TF's DirectSession; every one runs on this process's one device."""
        n = max(1, self.config.device_count.get("CPU", 1)) if self.config is not None else 1
        base = self.device.name.rsplit(":", 1)[0]
        return [f"{base}:{i}" for i in range(n)]

    def list_devices(self) -> list[DeviceAttributes]:
        """This session's CPU devices (TF's DirectSession lists its local CPUs)."""
        return [cpu_device(n) for n in self.device_names()]

    def close(self) -> None:
        self.device.resource_mgr.cleanup()
        self._plans.clear()
