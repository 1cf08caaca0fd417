"""`tf.train.replica_device_setter`: variables on ps tasks, everything else on the worker.

The setter is a device *function*: `Graph.device` calls it with each new op
(after inner scopes have set what they set) and uses the device it returns.
Variable-like ops (`STANDARD_PS_OPS`) go to the ps job, on the task a strategy
picks; every other op goes to `worker_device`, with the op's own fields winning.

Two strategies pick the ps task: round robin (TF's default, simple but it can
pile big variables onto one task) and `GreedyLoadBalancingStrategy`, which puts
each variable on the least-loaded task so far (by byte size with
`byte_size_load_fn`).

Example:
    >>> cluster = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222"]}
    >>> with tf.device(tf.train.replica_device_setter(cluster=cluster)):
    ...     w = tf.Variable(tf.zeros([10]))      # /job:ps/task:0
    ...     b = tf.Variable(tf.zeros([1]))       # /job:ps/task:1
    ...     y = w * 2.0                          # /job:worker
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Sequence

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.device import DeviceSpec
from tensorweave.framework.tensor_shape import TensorShape

__all__ = ["STANDARD_PS_OPS", "replica_device_setter", "GreedyLoadBalancingStrategy",
           "byte_size_load_fn"]

# Op types that hold state a ps task should own (TF 1.x's list, in its order; then an
# EmbeddingVariable's, as DeepRec's list adds its own; then the WorkQueue every worker
# takes slices from, which DeepRec places by a variable made beside it).
STANDARD_PS_OPS = (
    "Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
    "MutableHashTableV2", "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2",
    "MutableDenseHashTable", "MutableDenseHashTableV2", "VarHandleOp", "KvVariable",
    "WorkQueueHandleOp")

DeviceFunction = Callable[[Any], str]


class _RoundRobinStrategy:
    """Returns ps task 0, 1, ..., num_tasks - 1, 0, ... on successive calls."""

    def __init__(self, num_tasks: int) -> None:
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op: Any) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


def byte_size_load_fn(op: Any) -> int:
    """The byte size of a single-output op's output: a load function for placement.

    The shape comes from the output tensor, or else from the op's "shape" attr
    (a variable op states its shape there); the element size from its dtype.

    Args:
        op: an Operation with exactly one output, e.g. a VariableV2.

    Returns:
        The number of bytes of the output (elements x element size).

    Raises:
        ValueError: if `op` has other than one output, or its shape is not fully
            known from either source.

    Example:
        >>> v = tf.Variable(tf.zeros([10, 4]))
        >>> byte_size_load_fn(v.op)
        160
    """
    if len(op.outputs) != 1:
        raise ValueError(f"Op {op.name!r} ({op.type}) must have a single output to measure "
                         f"its byte size; it has {len(op.outputs)}. Give the strategy a "
                         "load_fn that handles it.")
    out = op.outputs[0]
    shape = out.get_shape()
    if not shape.is_fully_defined() and "shape" in op.attrs:
        shape = TensorShape(op.get_attr("shape"))
    if not shape.is_fully_defined():
        raise ValueError(f"Cannot compute the byte size of op {op.name!r}: its shape {shape} "
                         "is not fully defined. Give variables a full static shape.")
    dtype = _dt.as_dtype(op.get_attr("dtype") if "dtype" in op.attrs else out.dtype)
    return int(shape.num_elements()) * dtype.base_dtype.size


class GreedyLoadBalancingStrategy:
    """Places each op on the ps task with the least load so far (ties: lowest index).

    Unlike round robin, a few big variables do not pile onto one task: with
    `byte_size_load_fn` each task ends up with about the same number of bytes.
    Like TF, it is greedy in creation order, not an optimal packing.

    Args:
        num_tasks: the number of ps tasks (>= 1).
        load_fn: op -> load (a number), e.g. `byte_size_load_fn`.

    Raises:
        ValueError: if num_tasks < 1.

    Example:
        >>> strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
        >>> setter = tf.train.replica_device_setter(ps_tasks=2, ps_strategy=strategy)
    """

    def __init__(self, num_tasks: int, load_fn: Callable[[Any], float]) -> None:
        if int(num_tasks) < 1:
            raise ValueError(f"GreedyLoadBalancingStrategy needs num_tasks >= 1, got "
                             f"{num_tasks!r}.")
        self._num_tasks = int(num_tasks)
        self._load_fn = load_fn
        self._ps_loads = [0.0] * self._num_tasks

    def __call__(self, op: Any) -> int:
        task = min(range(self._num_tasks), key=lambda t: self._ps_loads[t])
        self._ps_loads[task] += self._load_fn(op)
        return task

    @property
    def loads(self) -> list[float]:
        """The load placed on each task so far (a copy)."""
        return list(self._ps_loads)


class _ReplicaDeviceChooser:
    """The device function `replica_device_setter` returns (its bound `device_function`)."""

    def __init__(self, ps_tasks: int, ps_device: str, worker_device: str,
                 merge_devices: bool, ps_ops: Sequence[str],
                 ps_strategy: Callable[[Any], int]) -> None:
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = frozenset(ps_ops)
        self._ps_strategy = ps_strategy

    def device_function(self, op: Any) -> str:
        """The device for `op`: its ps task or the worker, merged under op.device."""
        if not self._merge_devices and op.device:
            return op.device  # legacy mode: an op with any device is left alone
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps = DeviceSpec.from_string(self._ps_device)
            # Only spend a strategy slot when the op will really land on the ps
            # job: an op pinned to another job keeps it (and the round robin
            # stays where it was for the next variable).
            if ps.job and (not current.job or current.job == ps.job):
                ps = ps.replace(task=self._ps_strategy(op))
            return ps.make_merged_spec(current).to_string()
        worker = DeviceSpec.from_string(self._worker_device or "")
        return worker.make_merged_spec(current).to_string()


def _device_string(device: Any, what: str) -> str:
    if device is None:
        return ""
    if isinstance(device, DeviceSpec):
        return device.to_string()
    if isinstance(device, str):
        return DeviceSpec.from_string(device).to_string()  # validates early
    raise TypeError(f"{what} must be a device string such as '/job:ps' or a DeviceSpec, "
                    f"got {device!r}.")


def _ps_tasks_in(cluster: Any, ps_device: str) -> int:
    from tensorweave.distributed.cluster import ClusterSpec
    spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)
    ps_job = DeviceSpec.from_string(ps_device).job
    if ps_job is None or ps_job not in spec.jobs:
        return 0
    return spec.num_tasks(ps_job)


def replica_device_setter(ps_tasks: int = 0, ps_device: Any = "/job:ps",
                          worker_device: Any = "/job:worker", merge_devices: bool = True,
                          cluster: Any = None, ps_ops: Sequence[str] | None = None,
                          ps_strategy: Callable[[Any], int] | None = None
                          ) -> DeviceFunction | None:
    """A device function for `tf.device` that puts variables on ps tasks.

    Variable-like ops (`ps_ops`) go to `ps_device` with the task chosen by
    `ps_strategy` (round robin by default); all other ops go to `worker_device`.
    Fields an op already has (from an inner `tf.device`) win over both. A
    variable pinned to a job other than the ps job keeps that job and uses no
    strategy slot. `colocate_with` beats this function entirely.

    Args:
        ps_tasks: the number of ps tasks; ignored when `cluster` is given.
        ps_device: where ps ops go, e.g. "/job:ps" (the task is added).
        worker_device: where the other ops go, e.g. "/job:worker/task:0".
        merge_devices: if False (legacy), an op with any device is left alone.
        cluster: a ClusterSpec or dict; ps_tasks becomes the size of the ps job.
        ps_ops: op types placed on ps tasks (default `STANDARD_PS_OPS`).
        ps_strategy: op -> ps task index, e.g. `GreedyLoadBalancingStrategy`.

    Returns:
        The device function, or None when there are no ps tasks (no ps job in
        `cluster`, or ps_tasks == 0); `tf.device(None)` clears outer scopes.

    Raises:
        TypeError: if ps_strategy is not callable, or a device is not a string.
        ValueError: a malformed device string or cluster.

    Example:
        >>> with tf.device(tf.train.replica_device_setter(
        ...         ps_tasks=2, worker_device="/job:worker/task:1")):
        ...     v = tf.Variable(1.0)    # /job:ps/task:0
        ...     y = v + 1.0             # /job:worker/task:1
    """
    ps_device = _device_string(ps_device, "ps_device")
    worker_device = _device_string(worker_device, "worker_device")
    if cluster is not None:
        if not isinstance(cluster, Mapping) and not hasattr(cluster, "jobs") and \
                not hasattr(cluster, "job"):
            raise TypeError(f"cluster must be a ClusterSpec, a dict of job -> addresses or a "
                            f"ClusterDef, got {cluster!r}.")
        ps_tasks = _ps_tasks_in(cluster, ps_device)
    if not ps_tasks:
        return None
    if int(ps_tasks) < 0:
        raise ValueError(f"ps_tasks must be >= 0, got {ps_tasks!r}.")
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(int(ps_tasks))
    if not callable(ps_strategy):
        raise TypeError(f"ps_strategy must be callable (op -> ps task index), got "
                        f"{ps_strategy!r}.")
    chooser = _ReplicaDeviceChooser(int(ps_tasks), ps_device, worker_device, merge_devices,
                                    ps_ops, ps_strategy)
    return chooser.device_function
