"""Per-node execution statistics of one traced step (`RunOptions.FULL_TRACE`).

The executor only touches this module when a step carries a collector, so an
untraced step pays nothing. Records use TF's `NodeExecStats` layout: an epoch
start in microseconds and the op's span relative to it.

Example:
    >>> stats = StepStatsCollector()
    >>> step = StepState(stats=stats)   # then run the executor with `step`
    >>> proto = stats.to_proto()        # a tf.StepStats
"""
from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from tensorweave.framework.proto.config_pb2 import NodeExecStats, StepStats

# perf_counter is monotonic and fine-grained; this maps it onto the epoch once.
_EPOCH_OFFSET = time.time() - time.perf_counter()


def now() -> float:
    """Seconds on the monotonic clock the executor stamps nodes with."""
    return time.perf_counter()


def _micros(t: float) -> int:
    return int((t + _EPOCH_OFFSET) * 1e6)


def timeline_label(op: Any) -> str:
    """TF's label: 'name = OpType(input, input, ...)' (control inputs with '^').

    _Send/_Recv name the transferred tensor and its destination instead, as TF does,
    so a timeline can pair the two ends: 'name = _Recv(tensor @recv_device)'.
    """
    if op.type in ("_Send", "_Recv"):
        return (f"{op.name} = {op.type}({op.get_attr('tensor_name')} "
                f"@{op.get_attr('recv_device')})")
    ins = [t.op.name if t.value_index == 0 else t.name for t in op._inputs]
    ins += ["^" + c.name for c in op._control_inputs]
    return f"{op.name} = {op.type}({', '.join(ins)})"


class StepStatsCollector:
    """Thread-safe sink of `NodeExecStats`, grouped by device.

    Async kernels (Recv, queue ops) finish on other threads, hence the lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._devices: dict[str, list[NodeExecStats]] = {}

    def record(self, device: str, op: Any, start: float, end: float, outputs: Any,
               scheduled: float | None = None) -> None:
        """Adds one node's run: `start`/`end` from `now()`, `outputs` its results."""
        start_us = _micros(start)
        span = max(int((end - start) * 1e6), 0)
        ns = NodeExecStats(node_name=op.name, all_start_micros=start_us,
                           op_start_rel_micros=0, op_end_rel_micros=span,
                           all_end_rel_micros=span, timeline_label=timeline_label(op),
                           thread_id=threading.get_native_id() & 0xFFFFFFFF)
        if scheduled is not None:
            ns.scheduled_micros = _micros(scheduled)
        _describe_outputs(ns, op, outputs)
        with self._lock:
            self._devices.setdefault(device, []).append(ns)

    def merge(self, step_stats: StepStats) -> None:
        """Adds the stats another task sent back (distributed steps)."""
        with self._lock:
            for dev in step_stats.dev_stats:
                self._devices.setdefault(dev.device, []).extend(dev.node_stats)

    def to_proto(self, into: StepStats | None = None) -> StepStats:
        """One `DeviceStepStats` per device, nodes in start order."""
        out = into if into is not None else StepStats()
        with self._lock:
            for device in sorted(self._devices):
                nodes = sorted(self._devices[device], key=lambda n: n.all_start_micros)
                dev = out.dev_stats.add(device=device)
                dev.node_stats.extend(nodes)
        return out


def _describe_outputs(ns: NodeExecStats, op: Any, outputs: Any) -> None:
    """Output slots with dtype, shape and bytes; memory is the sum of those bytes."""
    n = len(op._outputs)
    if n == 0:
        return
    values = (outputs,) if n == 1 else tuple(outputs)
    total = 0
    for slot, (t, v) in enumerate(zip(op._outputs, values)):
        desc = ns.output.add(slot=slot).tensor_description
        desc.dtype = t.dtype.as_datatype_enum
        is_array = isinstance(v, (np.ndarray, np.generic))
        nbytes = int(v.nbytes) if is_array else 0
        shape = v.shape if is_array else None
        if shape is not None:
            for d in shape:
                desc.shape.dim.add(size=int(d))
        else:
            desc.shape.unknown_rank = True
        desc.allocation_description.requested_bytes = nbytes
        desc.allocation_description.allocated_bytes = nbytes
        desc.allocation_description.allocator_name = "cpu"
        total += nbytes
    ns.memory.add(allocator_name="cpu", total_bytes=total, peak_bytes=total,
                  live_bytes=total)
