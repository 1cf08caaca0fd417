"""`tf.ConditionalAccumulator` and `tf.SparseConditionalAccumulator`: their ops and classes.

Example:
    >>> acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    >>> with tf.Session() as sess:
    ...     sess.run(acc.apply_grad([1.0, 2.0], local_step=0))
    ...     sess.run(acc.apply_grad([3.0, 4.0], local_step=0))
    ...     sess.run(acc.take_grad(2))
    array([2., 3.], dtype=float32)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.ops.op_author import REQUIRED, create_tensor, define_op
from tensorweave.framework.op_outputs import op_result
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, plain_dims
from tensorweave.kernels.accumulator_resource import (
    AccumulatorBase, DenseAccumulator, SparseAccumulator)
from tensorweave.runtime.waiting import run_attempt
from tensorweave.ops.math.math_ops import cast

_ACC_ATTRS = {"dtype": REQUIRED, "shape": None, "container": "", "shared_name": "",
              "reduction_type": "MEAN"}


def _resource_op(op_type: str, kind: type[AccumulatorBase]) -> Any:
    op = define_op(op_type, attrs=dict(_ACC_ATTRS), stateful=True)

    @op.shape
    def _(**attrs: Any) -> Any:
        return _dt.string._as_ref, TensorShape([2])

    @op.kernel("CPU", kind="context")
    def _(ctx: Any, step: Any, *, dtype: Any, shape: Any, container: str, shared_name: str,
          reduction_type: str) -> AccumulatorBase:
        key = shared_name or ctx.name
        # Made knowing who is absent from an elastic job now; told of changes later.
        acc = ctx.resources.lookup_or_create(
            container, key, lambda: kind(key, dtype.base_dtype, shape, reduction_type,
                                         ctx.resources.absent_tasks))
        if type(acc) is not kind or acc.dtype != dtype.base_dtype:
            raise errors.InvalidArgumentError(
                None, None, f"Resource {container or '<default>'}/{key} exists but is not a "
                f"{kind.type_name} of {dtype.name}. Use another shared_name.")
        return acc

    op.no_gradient()
    return op


_resource_op("ConditionalAccumulator", DenseAccumulator)
_resource_op("SparseConditionalAccumulator", SparseAccumulator)


def _simple_op(op_type: str, inputs: tuple[str, ...], out: Any, fn: Any) -> None:
    op = define_op(op_type, inputs=inputs, attrs={"dtype": None}, stateful=True)
    op.shape(lambda *a, dtype: out(dtype))
    op.kernel("CPU")(lambda *a, dtype: fn(*a))
    op.no_gradient()


_simple_op("AccumulatorNumAccumulated", ("&handle",),
           lambda dtype: (_dt.int32, TensorShape([])),
           lambda acc: np.int32(acc.num_accumulated()))
_simple_op("AccumulatorSetGlobalStep", ("&handle", "new_global_step"),
           lambda dtype: [], lambda acc, s: acc.set_global_step(int(s)))
_simple_op("AccumulatorReplicasGone", ("&handle",),
           lambda dtype: (_dt.int32, TensorShape([])),
           lambda acc: np.int32(acc.replicas_gone()))

# The replica a gradient comes from rides in the node's "_replica" attr (set by
# SyncReplicasOptimizer to the worker's device; TF ignores "_" attrs), so these
# kernels read their node: one attr lookup, cached per node.
REPLICA_ATTR = "_replica"


def _replica_of(ctx: Any) -> str:
    name = ctx.state.get(REPLICA_ATTR)
    if name is None:
        raw = ctx.op._attrs.get(REPLICA_ATTR, "")
        name = ctx.state[REPLICA_ATTR] = raw.decode() if isinstance(raw, bytes) else str(raw)
    return name


def _replica_op(op_type: str, inputs: tuple[str, ...], fn: Any) -> None:
    op = define_op(op_type, inputs=inputs, attrs={"dtype": None}, stateful=True)
    op.shape(lambda *a, dtype: [])
    op.kernel("CPU", kind="context")(
        lambda ctx, step, acc, *a, dtype: fn(acc, *a, replica=_replica_of(ctx)))
    op.no_gradient()


_replica_op("AccumulatorApplyGradient", ("&handle", "local_step", "gradient"),
            lambda acc, step, g, replica: acc.apply(int(step), g, replica=replica))
_replica_op("SparseAccumulatorApplyGradient",
            ("&handle", "local_step", "gradient_indices", "gradient_values", "gradient_shape"),
            lambda acc, step, i, v, s, replica: acc.apply(
                int(step), i, v, s if np.size(s) else None, replica=replica))
_replica_op("AccumulatorReplicaDeparted", ("&handle",),
            lambda acc, replica: acc.replica_departed(replica))

_status_op = define_op("AccumulatorReplicaStatus", inputs=("&handle",), stateful=True)
_status_op.shape(lambda handle: [(_dt.string, TensorShape([None])),
                                 (_dt.int64, TensorShape([None])),
                                 (_dt.float64, TensorShape([None])),
                                 (_dt.bool, TensorShape([None]))])


@_status_op.kernel("CPU")
def _(acc: AccumulatorBase) -> tuple[np.ndarray, ...]:
    names, steps, idle, departed = acc.replica_status()
    return (np.array([n.encode() for n in names], dtype=object),
            np.array(steps, np.int64), np.array(idle, np.float64), np.array(departed, bool))


_status_op.no_gradient()


# SyncReplicasOptimizer's takes carry its tokens per step and floor in these attrs
# (TF ignores "_" attrs): the accumulator then waits only for gradients that the
# replicas still training can give (kernels/replica_roster.py).
TOKENS_ATTR = "_tokens_per_step"
FLOOR_ATTR = "_min_replicas"


def _sync_rule(ctx: Any) -> tuple[int | None, int]:
    """(tokens_per_step or None, floor) of a take's node, cached per node."""
    rule = ctx.state.get(TOKENS_ATTR)
    if rule is None:
        attrs = ctx.op._attrs
        tokens = attrs.get(TOKENS_ATTR)
        rule = ctx.state[TOKENS_ATTR] = (None if tokens is None else int(tokens),
                                         int(attrs.get(FLOOR_ATTR, 1)))
    return rule


def _take_op(op_type: str, outputs: Any) -> None:
    op = define_op(op_type, inputs=("&handle", "num_required"), attrs={"dtype": REQUIRED},
                   stateful=True)
    op.shape(lambda handle, n, dtype: outputs(dtype.base_dtype))

    @op.kernel("CPU", kind="async")
    def _(ctx: Any, step: Any, done: Any, acc: AccumulatorBase, num_required: Any, *,
          dtype: Any) -> None:
        n = int(num_required)
        if n < 1:
            raise errors.InvalidArgumentError(
                None, None, f"Argument num_required must be positive, but was {n} (take_grad "
                f"on accumulator {acc.name}).")
        run_attempt(acc, step, done, (n, *_sync_rule(ctx)))

    op.no_gradient()


_take_op("AccumulatorTakeGradient", lambda dt: (dt, TensorShape(None)))
_take_op("SparseAccumulatorTakeGradient",
         lambda dt: [(_dt.int64, TensorShape([None])), (dt, TensorShape(None)),
                     (_dt.int64, TensorShape([None]))])


# ---- Python API --------------------------------------------------------------------
class ConditionalAccumulatorBase:
    """What both accumulators share: the reference, dtype, shape, count and global step."""

    def __init__(self, dtype: Any, shape: Any, accumulator_ref: Tensor) -> None:
        self._dtype = _dt.as_dtype(dtype).base_dtype
        self._shape = as_shape(shape)
        self._accumulator_ref = accumulator_ref

    @property
    def accumulator_ref(self) -> Tensor:
        return self._accumulator_ref

    @property
    def name(self) -> str:
        return self._accumulator_ref.op.name

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    def _op(self, op_type: str, inputs: list[Any], name: str | None, default: str,
            attrs: dict[str, Any] | None = None) -> Operation:
        g = self._accumulator_ref.graph
        with g.as_default():
            return g.create_op(op_type, [self._accumulator_ref] + inputs, attrs or {},
                               name=name or f"{self.name.rsplit('/', 1)[-1]}_{default}")

    def num_accumulated(self, name: str | None = None) -> Tensor:
        """How many fresh gradients have been applied since the last take (int32)."""
        return self._op("AccumulatorNumAccumulated", [], name, "NumAccumulated").outputs[0]

    def set_global_step(self, new_global_step: Any, name: str | None = None) -> Operation:
        """An op setting the step below which gradients count as stale.

        Example:
            >>> sess.run(acc.set_global_step(5))
        """
        with self._accumulator_ref.graph.as_default():
            s = _as_int64(new_global_step, "new_global_step")
        return self._op("AccumulatorSetGlobalStep", [s], name, "SetGlobalStep")


def _replica_departed(self: "ConditionalAccumulatorBase", name: str | None = None
                      ) -> Operation:
    """An op telling the accumulator that one replica has finished for good.

    take_grad then waits for one gradient fewer (never fewer than one), so the
    replicas still training are not held forever by one that stopped (beyond
    TF 1.x, whose last workers hung at the end of synchronous training).
    """
    return self._op("AccumulatorReplicaDeparted", [], name, "ReplicaDeparted")


def _replica_status(self: "ConditionalAccumulatorBase", name: str | None = None
                    ) -> tuple[Tensor, ...]:
    """(replicas, last_steps, idle_secs, departed): per replica that has sent this
    accumulator a gradient, the local step of its last one, the seconds since, and
    whether it departed (tensorweave-specific: explains a take_grad that waits)."""
    return tuple(self._op("AccumulatorReplicaStatus", [], name, "ReplicaStatus").outputs)


def _replicas_gone(self: "ConditionalAccumulatorBase", name: str | None = None) -> Tensor:
    """int32: the replicas not training now, as this accumulator knows them: those that
    finished (replica_departed) and those absent from an elastic job (tensorweave-specific:
    SyncReplicasOptimizer's chief issues one token per replica still training)."""
    return self._op("AccumulatorReplicasGone", [], name, "ReplicasGone").outputs[0]


def sync_rule(take: Tensor | Operation, tokens_per_step: int, floor: int) -> None:
    """Marks a take_grad with SyncReplicasOptimizer's tokens per step and floor: it then
    waits for max(floor, min(num_required, tokens_per_step - gone)) gradients."""
    op = take.op if isinstance(take, Tensor) else take
    op._attrs[TOKENS_ATTR] = int(tokens_per_step)
    op._attrs[FLOOR_ATTR] = int(floor)


def from_replica(op: Operation, replica: str) -> Operation:
    """Marks an apply_grad / replica_departed op with the replica that runs it."""
    op._attrs[REPLICA_ATTR] = replica
    return op


ConditionalAccumulatorBase.replica_departed = _replica_departed  # type: ignore[attr-defined]
ConditionalAccumulatorBase.replica_status = _replica_status  # type: ignore[attr-defined]
ConditionalAccumulatorBase.replicas_gone = _replicas_gone  # type: ignore[attr-defined]


def _as_int64(value: Any, name: str) -> Tensor:
    """Steps may be int32 variables (a hand-made global step): cast, as TF does."""
    t = convert_to_tensor(value, name=name)
    if t.dtype.base_dtype != _dt.int64:
        t = cast(t, _dt.int64)
    return t


def _make_ref(op_type: str, dtype: Any, shape: Any, shared_name: str | None, name: str,
              reduction_type: str) -> Tensor:
    if reduction_type not in ("MEAN", "SUM"):
        raise ValueError(f"reduction_type must be 'MEAN' or 'SUM', got {reduction_type!r}")
    s = as_shape(shape)
    attrs = {"dtype": _dt.as_dtype(dtype).base_dtype, "shape": plain_dims(s),
             "shared_name": shared_name or "", "reduction_type": reduction_type}
    return create_tensor(op_type, [], attrs, name=name)


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Averages dense gradients stamped with a step; stale ones are dropped.

    Args:
        dtype: dtype of the gradients.
        shape: shape of the gradients (optional).
        shared_name: share the accumulator across sessions under this name.
        name: the op name.
        reduction_type: "MEAN" (default) or "SUM".

    Example:
        >>> acc = tf.ConditionalAccumulator(tf.float32, shape=[])
        >>> apply = acc.apply_grad(g, local_step=step)
        >>> avg = acc.take_grad(num_required=2)   # waits for 2 fresh gradients
    """

    def __init__(self, dtype: Any, shape: Any = None, shared_name: str | None = None,
                 name: str = "conditional_accumulator", reduction_type: str = "MEAN") -> None:
        ref = _make_ref("ConditionalAccumulator", dtype, shape, shared_name, name,
                        reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad: Any, local_step: Any = 0, name: str | None = None) -> Operation:
        """An op adding `grad` unless `local_step` < the accumulator's global step.

        Raises:
            ValueError: if grad's static shape does not match the accumulator's.
        """
        with self._accumulator_ref.graph.as_default():
            g = convert_to_tensor(grad, dtype=self._dtype, name="grad")
            if not self._shape.is_compatible_with(g.shape):
                raise ValueError(f"Shape mismatch: gradient {g.name} has shape {g.shape} but "
                                 f"accumulator {self.name} has shape {self._shape}.")
            step = _as_int64(local_step, "local_step")
        return self._op("AccumulatorApplyGradient", [step, g], name, "ApplyGradient",
                        {"dtype": self._dtype})

    def take_grad(self, num_required: Any, name: str | None = None) -> Tensor:
        """The average of `num_required` fresh gradients; waits until they arrive.

        Taking resets the aggregate and increments the global step by one.
        """
        with self._accumulator_ref.graph.as_default():
            n = convert_to_tensor(num_required, dtype=_dt.int32, name="num_required")
        out = self._op("AccumulatorTakeGradient", [n], name, "TakeGradient",
                       {"dtype": self._dtype}).outputs[0]
        out.set_shape(self._shape)
        return out


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """Averages IndexedSlices gradients row by row; stale ones are dropped.

    Each row of the result is the average over the gradients that contained its
    index; duplicate indices inside one gradient are summed first.

    Example:
        >>> acc = tf.SparseConditionalAccumulator(tf.float32, shape=[10, 3])
        >>> sess.run(acc.apply_indexed_slices_grad(tf.IndexedSlices(v, i, [10, 3])))
        >>> slices = acc.take_indexed_slices_grad(1)
    """

    def __init__(self, dtype: Any, shape: Any = None, shared_name: str | None = None,
                 name: str = "sparse_conditional_accumulator",
                 reduction_type: str = "MEAN") -> None:
        ref = _make_ref("SparseConditionalAccumulator", dtype, shape, shared_name, name,
                        reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_indexed_slices_grad(self, grad: IndexedSlices, local_step: Any = 0,
                                  name: str | None = None) -> Operation:
        """apply_grad with the indices, values and dense_shape of `grad`."""
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step, name)

    def apply_grad(self, grad_indices: Any, grad_values: Any, grad_shape: Any = None,
                   local_step: Any = 0, name: str | None = None) -> Operation:
        """An op adding a sparse gradient unless `local_step` is stale.

        Raises:
            ValueError: if the values' static row shape does not match the accumulator's.
        """
        with self._accumulator_ref.graph.as_default():
            idx = _as_int64(grad_indices, "indices")  # int32 indices are cast, as in TF
            vals = convert_to_tensor(grad_values, dtype=self._dtype, name="values")
            if self._shape.ndims is not None and vals.shape.ndims is not None and \
                    not TensorShape(self._shape.as_list()[1:]).is_compatible_with(
                        TensorShape(vals.shape.as_list()[1:])):
                raise ValueError(f"Shape mismatch: values {vals.name} of shape {vals.shape} "
                                 f"do not match accumulator {self.name} of shape "
                                 f"{self._shape}.")
            shp = (convert_to_tensor(np.zeros([0], np.int64), name="shape")
                   if grad_shape is None else _as_int64(grad_shape, "shape"))
            step = _as_int64(local_step, "local_step")
        return self._op("SparseAccumulatorApplyGradient", [step, idx, vals, shp], name,
                        "ApplyGradient", {"dtype": self._dtype})

    def take_grad(self, num_required: Any, name: str | None = None) -> tuple[Tensor, ...]:
        """(indices, values, shape) of the averaged gradient, waiting for enough; TF's
        namedtuple `SparseAccumulatorTakeGradient`."""
        with self._accumulator_ref.graph.as_default():
            n = convert_to_tensor(num_required, dtype=_dt.int32, name="num_required")
        op = self._op("SparseAccumulatorTakeGradient", [n], name, "TakeGradient",
                      {"dtype": self._dtype})
        if self._shape.ndims is not None:
            op.outputs[1].set_shape([None] + self._shape.as_list()[1:])
        return op_result(op)

    def take_indexed_slices_grad(self, num_required: Any, name: str | None = None
                                 ) -> IndexedSlices:
        """take_grad as an IndexedSlices(values, indices, dense_shape)."""
        indices, values, shape = self.take_grad(num_required, name)
        return IndexedSlices(values, indices, shape)
