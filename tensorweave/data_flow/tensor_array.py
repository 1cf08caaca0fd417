"""`tf.TensorArray`: TF 1.x's graph-mode array of tensors written once per index.

Each method builds an op on the array's `flow` (a variant scalar carrying the
elements; see `kernels/tensor_array_value.py`) and the write-like methods return a NEW
TensorArray on the op's output flow, as in TF: code must use the result (`ta = ta.write(i, x)`).
TensorArrays may be `tf.while_loop` variables and `tf.cond` results (the op carries
their flows and hands the body and the caller TensorArrays again: the class registers
itself with `framework/composite_values.py` at import, as control flow sits below this
layer), and `tf.gradients` flows through read/write/gather/scatter/stack/unstack/concat/
split. The ops (TensorArrayFlow*) and their gradients are `ops/tensor_array/`.

Static element shapes follow TF 1.x: the shape given or learned from the first
write is shared by every TensorArray derived from this one (also across a loop), each
write must be compatible with it (a ValueError "Inconsistent shapes: ..." otherwise),
and reads and stacks carry it.

Example:
    >>> ta = tf.TensorArray(tf.float32, size=3)
    >>> ta = ta.write(0, 1.0).write(1, 2.0).write(2, 3.0)
    >>> total = tf.reduce_sum(ta.stack())                    # 6.0
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.composite_values import register_composite_value
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.graph_defaults import control_dependencies, name_scope
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from tensorweave.ops.array.core_ops import identity as _identity
from tensorweave.ops.array.core_ops import no_op
from tensorweave.ops.array.fill_ops import range as _range
from tensorweave.ops.array.shape_ops import shape as _shape_of
from tensorweave.ops.math.math_ops import cast
from tensorweave.ops.op_author import create_op
from tensorweave.ops.tensor_array.tensor_array_ops import shape_attr, zeros_flow

__all__ = ["TensorArray", "build_ta_with_new_flow"]


class TensorArray:
    """A list of tensors of one dtype, indexed 0..size-1, for graph loops.

    Args:
        dtype: the elements' dtype.
        size: int32 scalar, the number of elements (required unless `flow`/`handle`).
        dynamic_size: writes past the end grow the array (default False).
        clear_after_read: accepted for TF compatibility; elements stay readable.
        tensor_array_name: the name errors print for this array.
        handle: TF passes an existing array's handle with its `flow`; here the flow
            carries the array, and `handle` is the flow.
        flow: an existing array's flow (from `ta.flow`).
        infer_shape: all elements must share a shape, learned from the first write.
        element_shape: a (partial) TensorShape each element must fit.
        colocate_with_first_write_call: accepted for TF compatibility.
        name: the name scope of the creating op.

    Raises:
        ValueError: TF's checks on the argument combinations (handle with size, ...).
        TypeError: a `handle` that is not a Tensor.

    Example:
        >>> ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        >>> ta = ta.unstack([[1.0, 2.0], [3.0, 4.0]])
        >>> row = ta.read(1)                                 # [3.0, 4.0]
    """

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: bool | None = None,
                 clear_after_read: bool | None = None, tensor_array_name: str | None = None,
                 handle: Any = None, flow: Any = None, infer_shape: bool = True,
                 element_shape: Any = None, colocate_with_first_write_call: bool = True,
                 name: str | None = None) -> None:
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot construct with both handle and tensor_array_name")
        if handle is not None and not isinstance(handle, Tensor):
            raise TypeError(f"Handle must be a Tensor, got {handle!r}")
        if handle is None and flow is None and size is None:
            raise ValueError("Size must be provided if handle is not provided")
        existing = handle if handle is not None else flow
        for arg, val in (("size", size), ("element_shape", element_shape),
                         ("dynamic_size", dynamic_size),
                         ("clear_after_read", clear_after_read)):
            if existing is not None and val is not None:
                what = "handle" if handle is not None else "flow"
                raise ValueError(f"Cannot provide both a {what} and {arg} at the same time")
        if handle is not None and flow is None:
            raise ValueError("flow must not be None if handle is not None.")
        self._dtype = _dt.as_dtype(dtype).base_dtype
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._colocate_with_first_write_call = colocate_with_first_write_call
        # One list shared by every TensorArray derived from this one (TF's rule), so
        # a shape learned by a write is known to all of them.
        self._element_shape: list[TensorShape] = [as_shape(element_shape)]
        self._static_size: int | None = None  # a fixed size known when built
        # TF's colocate_with_first_write_call: the array is created with no device and
        # goes, with its writes, where the first written value lives. Shared by every
        # TensorArray derived from this one: its creating op and first written value.
        self._colocation: dict[str, Any] | None = \
            {"creator": None, "first": None} if colocate_with_first_write_call else None
        if flow is not None:
            flow = convert_to_tensor(flow)
            if flow.dtype.base_dtype != _dt.variant:
                raise TypeError(f"flow must be the variant flow of a tf.TensorArray (its "
                                f"`.flow`), got {flow.name} of dtype {flow.dtype.name}")
            self._flow = flow
            return
        g = get_default_graph()
        with name_scope(name, "TensorArray") as scope:
            size_t = convert_to_tensor(size, dtype=_dt.int32, name="size")
            known = constant_value(size_t)
            if known is not None and not self._dynamic_size:
                self._static_size = int(np.asarray(known))
            placement = (_unplaced(g) if colocate_with_first_write_call
                         else contextlib.nullcontext())
            with placement:
                self._flow = self._new_flow(size_t, scope, clear_after_read,
                                            tensor_array_name, infer_shape)
            if self._colocation is not None:
                self._colocation["creator"] = self._flow.op

    def _new_flow(self, size_t: Tensor, scope: str, clear_after_read: bool | None,
                  tensor_array_name: str | None, infer_shape: bool) -> Tensor:
        return create_op("TensorArrayFlowNew", [size_t], {
                "dtype": self._dtype, "element_shape": shape_attr(self.element_shape),
                "dynamic_size": self._dynamic_size,
                "clear_after_read": True if clear_after_read is None else clear_after_read,
                "identical_element_shapes": bool(infer_shape),
                "tensor_array_name": tensor_array_name or ""},
                name=scope).outputs[0]  # "scope/" names the op exactly, as TF

    # ---- properties -------------------------------------------------------------
    @property
    def flow(self) -> Tensor:
        """The scalar variant tensor carrying this array's elements."""
        return self._flow

    @property
    def handle(self) -> Tensor:
        """The array itself (its flow; TF 1.x's separate resource handle does not exist
        here)."""
        return self._flow

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def element_shape(self) -> TensorShape:
        """The static shape every element fits (learned from writes if infer_shape)."""
        return self._element_shape[0]

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    def _with_flow(self, flow: Tensor) -> "TensorArray":
        ta = TensorArray(self._dtype, flow=flow, infer_shape=self._infer_shape,
                         colocate_with_first_write_call=self._colocate_with_first_write_call)
        ta._dynamic_size = self._dynamic_size
        ta._element_shape = self._element_shape  # shared, as TF's build_ta_with_new_flow
        ta._static_size = self._static_size
        ta._colocation = self._colocation
        return ta

    def _check_element_shape(self, shape: TensorShape) -> None:
        if not shape.is_compatible_with(self.element_shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected "
                             f"{self.element_shape} (TensorArray elements must all fit "
                             "element_shape; pass infer_shape=False for ragged elements)")
        if self._infer_shape:
            self._element_shape[0] = self.element_shape.merge_with(shape)

    @contextlib.contextmanager
    def _colocated(self, value: Tensor) -> Iterator[None]:
        """Places a write with the array's first written value (TF's rule); the first
        write also gives the creating op that value's device."""
        c = self._colocation
        if c is None:
            yield
            return
        if c["first"] is None:
            c["first"] = value
            creator = c["creator"]
            # (also from a loop body: device names are the same in every graph)
            if creator is not None and value.op.device and not creator.device:
                creator._set_device(value.op.device)
        first = c["first"]
        if first.graph is not get_default_graph():  # written inside a loop body
            yield
            return
        with first.graph.colocate_with(first.op):
            yield

    def _value(self, value: Any) -> Tensor:
        value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
        if value.dtype.base_dtype != self._dtype:
            raise TypeError(f"TensorArray dtype is {self._dtype.name} but Op is trying to "
                            f"write dtype {value.dtype.base_dtype.name}: {value.name}; cast "
                            "the value or create the TensorArray with its dtype")
        return value

    # ---- single elements --------------------------------------------------------
    def read(self, index: Any, name: str | None = None) -> Tensor:
        """Element `index` (a scalar int32)."""
        return create_op("TensorArrayFlowRead", [self._flow, _index(index)], {
            "dtype": self._dtype, "element_shape": shape_attr(self.element_shape)},
            name=name or "TensorArrayReadV3").outputs[0]

    def write(self, index: Any, value: Any, name: str | None = None) -> "TensorArray":
        """A new TensorArray with `value` at `index` (each index is written once)."""
        with name_scope(name, "TensorArrayWrite"):
            value = self._value(value)
            self._check_element_shape(value.shape)
            with self._colocated(value):
                flow = create_op("TensorArrayFlowWrite", [self._flow, _index(index), value],
                               name="TensorArrayWriteV3").outputs[0]
        return self._with_flow(flow)

    # ---- many elements ----------------------------------------------------------
    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        """The elements at `indices`, stacked along a new dim 0."""
        indices = convert_to_tensor(indices, dtype=_dt.int32, name="indices")
        return create_op("TensorArrayFlowGather", [self._flow, indices], {
            "dtype": self._dtype, "element_shape": shape_attr(self.element_shape)},
            name=name or "TensorArrayGatherV3").outputs[0]

    def stack(self, name: str | None = None) -> Tensor:
        """All elements stacked along a new dim 0 (shape [size] + element_shape)."""
        with name_scope(name, "TensorArrayStack"):
            value = self.gather(_range(0, self.size()), name=name)
        if self._static_size is not None and self.element_shape.ndims is not None:
            value.set_shape(TensorShape([self._static_size]).concatenate(self.element_shape))
        return value

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> "TensorArray":
        """A new TensorArray with row k of `value` at `indices[k]`."""
        with name_scope(name, "TensorArrayScatter"):
            value = self._value(value)
            if value.shape.ndims is not None:
                self._check_element_shape(value.shape[1:] if value.shape.ndims else
                                          unknown_shape())
            indices = convert_to_tensor(indices, dtype=_dt.int32, name="indices")
            with self._colocated(value):
                flow = create_op("TensorArrayFlowScatter", [self._flow, indices, value],
                               name="TensorArrayScatterV3").outputs[0]
        return self._with_flow(flow)

    def unstack(self, value: Any, name: str | None = None) -> "TensorArray":
        """A new TensorArray with element i = `value[i]`."""
        with name_scope(name, "TensorArrayUnstack"):
            value = self._value(value)
            n = _shape_of(value)[0]
            return self.scatter(_range(0, n), value, name=name)

    def concat(self, name: str | None = None) -> Tensor:
        """All elements concatenated along their dim 0."""
        es = self.element_shape
        tail = es[1:] if es.ndims else unknown_shape()
        value, _ = create_op("TensorArrayFlowConcat", [self._flow], {
            "dtype": self._dtype, "element_shape_except0": shape_attr(tail)},
            name=name or "TensorArrayConcatV3").outputs
        return value

    def split(self, value: Any, lengths: Any, name: str | None = None) -> "TensorArray":
        """A new TensorArray whose element i is the i-th piece of `value` (dim 0 cut
        into `lengths`)."""
        with name_scope(name, "TensorArraySplit"):
            value = convert_to_tensor(value, dtype=self._dtype, name="value")
            lengths_t = convert_to_tensor(lengths, name="lengths")
            lengths64 = cast(lengths_t, _dt.int64)
            known = constant_value(lengths_t)
            if value.shape.ndims is not None and known is not None:
                known = np.asarray(known)
                if known.ndim == 1 and known.size and known.max() == known.min():
                    self._check_element_shape(
                        TensorShape([int(known[0])]).concatenate(value.shape[1:]))
            with self._colocated(value):
                flow = create_op("TensorArrayFlowSplit", [self._flow, value, lengths64],
                               name="TensorArraySplitV3").outputs[0]
        return self._with_flow(flow)

    # ---- the array itself -------------------------------------------------------
    def size(self, name: str | None = None) -> Tensor:
        """The number of elements (int32 scalar)."""
        return create_op("TensorArrayFlowSize", [self._flow],
                       name=name or "TensorArraySizeV3").outputs[0]

    def close(self, name: str | None = None) -> Operation:
        """An op that runs after the array's last flow (the elements go when unused)."""
        with control_dependencies([self._flow]):
            return no_op(name=name or "TensorArrayCloseV3")

    def identity(self) -> "TensorArray":
        """The same array on an Identity of its flow (for control dependencies)."""
        return self._with_flow(_identity(self._flow))

    def grad(self, source: str, flow: Any = None, name: str | None = None) -> "TensorArray":
        """A gradient array of this array's size, nothing written (reads give zeros)."""
        del source, name  # each gradient flow is its own value here; no shared store
        with self._flow.graph.colocate_with(self._flow.op):  # TF: with the forward array
            g = self._with_flow(zeros_flow(self._flow if flow is None else flow))
        g._dynamic_size = True
        return g

    def mark_used(self) -> None:
        """TF's should-use marker on write results; nothing to mark here."""

    def __repr__(self) -> str:
        return f"<tf.TensorArray dtype={self._dtype.name} flow={self._flow.name}>"


@contextlib.contextmanager
def _unplaced(g: Any) -> Iterator[None]:
    """No device scope and no colocation: the first write places the array."""
    with g.device(None), g.colocate_with(None, ignore_existing=True):
        yield


def _index(index: Any) -> Tensor:
    return convert_to_tensor(index, dtype=_dt.int32, name="index")


def build_ta_with_new_flow(old_ta: TensorArray, flow: Tensor) -> TensorArray:
    """A TensorArray like `old_ta` (dtype, shared element shape) on `flow`.

    Example:
        >>> ta2 = build_ta_with_new_flow(ta, tf.identity(ta.flow))
    """
    if not isinstance(old_ta, TensorArray):
        raise TypeError(f"build_ta_with_new_flow needs a tf.TensorArray, got {old_ta!r}")
    return old_ta._with_flow(convert_to_tensor(flow))


# cond and while_loop (ops/control_flow, below this layer) carry a TensorArray as its
# flow and hand back TensorArrays that share its settings (dtype, element shape, size).
register_composite_value(TensorArray, to_flow=lambda ta: ta.flow,
                         from_flow=lambda ta, flow: ta._with_flow(flow))
