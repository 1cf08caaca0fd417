"""The partitioner: one graph per task, a _Send/_Recv pair on every cross-task edge.

Input is a pruned, placed op list; output is a Partition per task holding a
fresh Graph whose ops keep their original names and devices, plus the maps
from the client's feeds and fetches to tensors of that partition.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from tensorweave.framework.graph import Graph
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework import dtypes
from tensorweave.framework.device import device_task as task_name
from tensorweave.framework.device import task_device
from tensorweave.runtime.sendrecv_ops import CONTROL_VALUE
from tensorweave.framework.tensor_shape import plain_dims


# What a part may do before its first Recv without holding anything up (`waits_for`).
_NO_WORK = frozenset({"Const", "Identity", "NoOp", "_Send", "_Recv", "Placeholder",
                      "VariableV2", "Variable", "VarHandleOp", "ReadVariableOp"})
# Small by nature (constants, shapes), and conversions that keep what they convert small.
_SMALL = frozenset({"Const", "Shape", "ShapeN", "Size", "Rank"})
_CONVERSIONS = frozenset({"Cast", "Pack", "Reshape", "ExpandDims", "Squeeze", "Identity"})


def _runtime_graph() -> Graph:
    g = Graph()
    g._validate_names = False  # "_send/...", "_ctrl/...": names of the runtime's own ops
    return g


@dataclass
class Partition:
    """One task's share of a step."""

    task: str  # "/job:ps/replica:0/task:0"
    graph: Graph = field(default_factory=_runtime_graph)
    feeds: dict[str, Tensor] = field(default_factory=dict)    # client tensor name -> placeholder
    fetches: dict[str, Tensor] = field(default_factory=dict)  # client tensor name -> tensor
    recv_from: set[str] = field(default_factory=set)          # tasks this partition pulls from

    def run_targets(self) -> list[Operation]:
        """Every op but the feed placeholders: sends and updates have no consumers here."""
        fed = {id(t.op) for t in self.feeds.values()}
        return [op for op in self.graph.get_operations() if id(op) not in fed]

    def early_sends(self) -> set[str]:
        """The tasks this part sends to before it waits for anything: tasks of the
        _Sends that need no _Recv (the first burst of a wide & deep worker: the ids)."""
        return {task_name(op.get_attr("recv_device"))
                for op, behind in self._behind(lambda op: op.type == "_Recv")
                if op.type == "_Send" and not behind}

    def waits_for(self, task: str) -> bool:
        """Whether this part has nothing to compute before tensors from `task` arrive:
        every op but variable reads, constants and Send/Recv needs one of them.

        A ps part of a training step waits for the worker's ids or gradients; started
        later, with them, it loses nothing (its variable reads are copies it sends).
        Ops that only look up a resource (a variable, queue or accumulator: `_handle`)
        are no work either, nor shapes and conversions of shapes and constants (a
        sparse gradient's dense_shape, a cast local step): a sync replica's ps part
        holds its accumulators, the token queue and the shapes of its variables."""
        small: set[int] = set()  # constants, shapes and conversions of them only
        for op, behind in self._behind(
                lambda op: op.type == "_Recv" and task_name(op.get_attr("send_device")) == task):
            if op.type in _SMALL or op.type in _CONVERSIONS and all(
                    id(t.op) in small for t in op.inputs):
                small.add(id(op))
            elif not (behind or op.type in _NO_WORK or _handle(op)):
                return False
        return True

    def _behind(self, source: Callable[[Operation], bool]) -> Iterator[tuple[Operation, bool]]:
        """Each op, in creation order (inputs first), and whether it needs (data or
        control) an op that `source` picks, or is one."""
        behind: set[int] = set()
        for op in self.graph.get_operations():
            if source(op) or any(id(t.op) in behind for t in op.inputs) or any(
                    id(c) in behind for c in op.control_inputs):
                behind.add(id(op))
                yield op, True
            else:
                yield op, False


def _handle(op: Operation) -> bool:
    """An op that only looks up (or creates) a resource: no inputs, and every output a
    reference (VariableV2, FIFOQueue, ConditionalAccumulator, ...)."""
    return not op.inputs and bool(op.outputs) and all(
        t.dtype.is_ref_dtype for t in op.outputs)


class _Builder:
    def __init__(self, placement: dict[int, str], feeds: set[Tensor]) -> None:
        self.placement = placement
        self.feeds = feeds
        self.parts: dict[str, Partition] = {}
        self.mapped: dict[Tensor, Tensor] = {}
        self.mapped_ops: dict[int, Operation] = {}
        self.recvs: dict[tuple[str, str], Tensor] = {}  # (tensor or ^op name, dst task) -> recv
        # (ids of the control inputs, dst task) -> the _Recv of their one shared token
        self.groups: dict[tuple[frozenset[int], str], Operation] = {}

    def part(self, task: str) -> Partition:
        if task not in self.parts:
            self.parts[task] = Partition(task)
        return self.parts[task]

    def feed_input(self, t: Tensor, task: str) -> Tensor:
        p = self.part(task)
        if t.name not in p.feeds:
            p.feeds[t.name] = p.graph.create_op(
                "Placeholder", [], {"dtype": t.dtype.base_dtype, "shape": plain_dims(t.shape)},
                name=f"_feed/{t.op.name}_{t.value_index}", compute_device=False).outputs[0]
        return p.feeds[t.name]

    def value_input(self, t: Tensor, task: str) -> Tensor:
        if t in self.feeds:
            return self.feed_input(t, task)
        src_dev = self.placement[id(t.op)]
        if task_name(src_dev) == task:
            return self.mapped[t]
        if t.op.type == "Const" and not t.op._control_inputs:
            return self.const_copy(t, task)
        return self._cross(self.mapped[t], t.name, src_dev, task, t.dtype.base_dtype, t.shape)

    def const_copy(self, t: Tensor, task: str) -> Tensor:
        """A constant read on another task is copied into that task's partition (the
        same immutable value), not sent every step: an optimizer's hyperparameters
        (learning rate, FTRL's l1/l2, ...) are Consts on the worker that every ApplyX
        on the ps reads (11 Sends a wide & deep step)."""
        key = (t.name, task)
        if key not in self.recvs:
            op = self.part(task).graph.create_op(
                "Const", [], {"value": t.op._attrs["value"], "dtype": t.op._attrs["dtype"]},
                name=f"_const/{_safe(t.op.name)}", compute_device=False)
            op._device = task_device(task)
            op._traceback = t.op._traceback
            self.recvs[key] = op.outputs[0]
        return self.recvs[key]

    def control_input(self, c: Operation, task: str) -> Operation:
        src_dev = self.placement[id(c)]
        if task_name(src_dev) == task:
            return self.mapped_ops[id(c)]
        src_part = self.part(task_name(src_dev))
        with src_part.graph.control_dependencies([self.mapped_ops[id(c)]]):
            token = src_part.graph.create_op(
                "Const", [], {"value": _control_value(), "dtype": _int32()},
                name=f"_ctrl/{c.name}", compute_device=False).outputs[0]
        token.op._device = src_dev
        return self._cross(token, "^" + c.name, src_dev, task, _int32(), None).op

    def control_inputs(self, op: Operation, task: str) -> list[Operation]:
        """`op`'s control inputs in its partition. Several from one other task cross as
        ONE control Send/Recv (a token that waits for all of them), not one each: an
        optimizer's update group on a worker waits for every ApplyX on the ps. Ops
        with the same group share that token: SyncReplicasOptimizer makes every
        aggregated gradient wait for every take_grad (35 tokens a step between two
        ps tasks otherwise, 2 with sharing)."""
        local: list[Operation] = []
        remote: dict[str, list[Operation]] = {}
        for c in op._control_inputs:
            if id(c) in self.placement:
                src_task = task_name(self.placement[id(c)])
                if src_task == task:
                    local.append(self.mapped_ops[id(c)])
                else:
                    remote.setdefault(src_task, []).append(c)
        for group in remote.values():
            if len(group) == 1:
                local.append(self.control_input(group[0], task))
                continue
            key = frozenset(id(c) for c in group)
            shared = self.groups.get((key, task))
            if shared is not None:  # the same ops already cross to this task as one token
                local.append(shared)
                continue
            src_dev = self.placement[id(group[0])]
            src_part = self.part(task_name(src_dev))
            with src_part.graph.control_dependencies([self.mapped_ops[id(c)] for c in group]):
                token = src_part.graph.create_op(
                    "Const", [], {"value": _control_value(), "dtype": _int32()},
                    name=f"_ctrl_group/{op.name}", compute_device=False).outputs[0]
            token.op._device = src_dev
            recv = self._cross(token, f"^{op.name}/_ctrl_group", src_dev, task, _int32(),
                               None).op
            self.groups[(key, task)] = recv
            local.append(recv)
        return local

    def _cross(self, src: Tensor, name: str, src_dev: str, task: str, dtype: Any,
               shape: Any) -> Tensor:
        key = (name, task)
        if key in self.recvs:
            return self.recvs[key]
        dst_dev = task_device(task)
        attrs = {"tensor_name": name, "send_device": src_dev, "recv_device": dst_dev}
        src_part = self.part(task_name(src_dev))
        send = src_part.graph.create_op("_Send", [src], dict(attrs),
                                        name=f"_send/{_safe(name)}/{_safe(task)}",
                                        compute_device=False)
        send._device = src_dev
        dst_part = self.part(task)
        recv = dst_part.graph.create_op(
            "_Recv", [], dict(attrs, tensor_type=dtype,
                              shape=None if shape is None else plain_dims(shape)),
            name=f"_recv/{_safe(name)}", compute_device=False)
        recv._device = dst_dev
        dst_part.recv_from.add(task_name(src_dev))
        self.recvs[key] = recv.outputs[0]
        return recv.outputs[0]

    def copy(self, op: Operation) -> None:
        dev = self.placement[id(op)]
        task = task_name(dev)
        p = self.part(task)
        flat = [self.value_input(t, task) for t in op._inputs]
        grouped, it = [], iter(flat)
        for spec in op.op_def.inputs:
            n = op._attrs[op.op_def.list_attr(spec.name)] if spec.is_list else 1
            chunk = [next(it) for _ in range(n)]
            grouped.append(chunk if spec.is_list else chunk[0])
        controls = self.control_inputs(op, task)
        attrs = {k: v for k, v in op._attrs.items() if k in op.op_def.attrs or k.startswith("_")}
        with p.graph.control_dependencies(controls):
            new = p.graph.create_op(op.type, grouped, attrs, name=op.name, compute_device=False)
        new._device = dev
        new._traceback = op._traceback
        self.mapped_ops[id(op)] = new
        for old_t, new_t in zip(op._outputs, new._outputs):
            self.mapped[old_t] = new_t


def partition(ops: list[Operation], placement: dict[int, str], feeds: list[Tensor],
              fetches: list[Tensor]) -> dict[str, Partition]:
    """Splits topologically ordered, placed `ops` into per-task partitions."""
    b = _Builder(_relocate_no_ops(ops, placement), set(feeds))
    for op in ops:
        b.copy(op)
    for t in fetches:
        if t in b.feeds:
            continue
        p = b.part(task_name(b.placement[id(t.op)]))
        p.fetches[t.name] = b.mapped[t]
    return b.parts


def _relocate_no_ops(ops: list[Operation], placement: dict[int, str]) -> dict[int, str]:
    """Runs a NoOp, or a Const behind control inputs, on the task of its consumers when
    they all live on one other task; a NoOp that nothing consumes, on the task of its
    inputs when they all do.

    Neither computes anything that depends on where it runs; left in place each costs
    a message in and a message out per step. The case that matters: an optimizer's
    "update" group is placed on the worker (replica_device_setter) between the ApplyX
    ops and the global-step increment, both on the ps, and so is the increment's `1`
    (a Const made inside `control_dependencies(updates)`). That made every training
    step wait for a ps -> worker -> ps round trip before finishing. With the
    embeddings on several ps tasks the ApplyX ops span them all and the increment
    lives on one: the group and the `1` then run beside the increment, and the other
    ps tasks' tokens go straight there (one hop, as TF's grappler bypasses such
    NoOps). Moving never adds a message: each input task sends one token either way.
    """
    consumers: dict[int, list[Operation]] = {}
    for op in ops:
        for c in op._control_inputs:
            consumers.setdefault(id(c), []).append(op)
        for t in op._inputs:
            consumers.setdefault(id(t.op), []).append(op)
    moved = dict(placement)

    def movable(op: Operation) -> bool:
        return (op.type == "NoOp" or op.type == "Const") and not op._inputs and bool(
            op._control_inputs)

    for op in reversed(ops):  # consumers first, so a chain of NoOps moves as a whole
        users = consumers.get(id(op), [])
        tasks = {task_name(moved[id(o)]) for o in users}
        if movable(op) and len(tasks) == 1 and task_name(moved[id(op)]) not in tasks:
            moved[id(op)] = moved[id(users[0])]
    for op in ops:
        inputs = [c for c in op._control_inputs if id(c) in moved]
        tasks = {task_name(moved[id(o)]) for o in inputs}
        if (op.type == "NoOp" and movable(op) and id(op) not in consumers
                and len(tasks) == 1 and task_name(moved[id(op)]) not in tasks):
            moved[id(op)] = moved[id(inputs[0])]
    return moved


def _safe(name: str) -> str:
    return name.replace(":", "_").replace("^", "ctl_").strip("/")


def _int32() -> Any:
    return dtypes.int32


def _control_value() -> Any:
    return CONTROL_VALUE.copy()
