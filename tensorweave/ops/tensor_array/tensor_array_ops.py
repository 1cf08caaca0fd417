"""The TensorArray ops: each takes a flow (a `variant` scalar holding a
`TensorArrayValue`, see `kernels/tensor_array_value.py`) and returns a new flow or elements.

None has a TensorFlow name: TF 1.x's TensorArrayV3 family keeps the elements in a
resource and passes a float flow; ours carry the elements in the flow, so
`tf_graph_compat` leaves them out like FunctionalScan. The ops are stateless and
pure, so a While gradient that replays a loop body (see `control_flow/while_ops.py`)
and graph deduplication are both harmless.

Gradients follow TF 1.x's `tensor_array_grad`: a read's gradient writes into a
gradient array at the read index; a write's gradient reads the gradient array at the
written index; gather/scatter and concat/split are paired the same way. Gradient
arrays from several consumers are added element by element
(`TensorArrayFlowAddGrads`, used by `tf.gradients` for variant tensors).

Example:
    >>> flow = new_flow(3, tf.float32)
    >>> flow = write_flow(flow, 0, 1.0)
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, plain_dims, unknown_shape
from tensorweave.ops.array import expand_dims, reshape, squeeze
from tensorweave.kernels.tensor_array_value import TensorArrayValue, unwrap

_SCALAR = TensorShape([])


def _flow_out(*_: Any, **__: Any) -> Any:
    return _dt.variant, _SCALAR


def _dims(element_shape: Any) -> list | None:
    return None if element_shape is None else list(element_shape)


def _elem_shape(element_shape: Any) -> TensorShape:
    return unknown_shape() if element_shape is None else as_shape(element_shape)


# ==== creation, size ====================================================================
new_op = define_op("TensorArrayFlowNew", inputs=("size",),
                   attrs={"dtype": REQUIRED, "element_shape": None, "dynamic_size": False,
                          "clear_after_read": True, "identical_element_shapes": True,
                          "tensor_array_name": ""})
new_op.shape(_flow_out)
new_op.no_gradient()


_serial = itertools.count(1)


@new_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, size: Any, *, dtype: Any, element_shape: Any, dynamic_size: bool,
      clear_after_read: bool, identical_element_shapes: bool, tensor_array_name: str) -> Any:
    # TF names each created array "<name>_<serial>" in its errors.
    name = f"{tensor_array_name or ctx.name}_{next(_serial)}"
    return TensorArrayValue.new(name, int(np.asarray(size)),
                                _dt.as_dtype(dtype).as_numpy_dtype, bool(dynamic_size),
                                _dims(element_shape), bool(identical_element_shapes),
                                bool(clear_after_read))


size_op = define_op("TensorArrayFlowSize", inputs=("flow",))
size_op.no_gradient()


@size_op.shape
def _(flow: Tensor) -> Any:
    return _dt.int32, _SCALAR


@size_op.kernel("CPU")
def _(flow: Any) -> Any:
    return np.int32(unwrap(flow).size)


zeros_op = define_op("TensorArrayFlowZeros", inputs=("flow",))
zeros_op.shape(_flow_out)
zeros_op.no_gradient()


@zeros_op.kernel("CPU")
def _(flow: Any) -> Any:
    return unwrap(flow).zeros_grad()


add_grads_op = define_op("TensorArrayFlowAddGrads", inputs=("flows*",))
add_grads_op.shape(_flow_out)


@add_grads_op.kernel("CPU")
def _(flows: list) -> Any:
    total = unwrap(flows[0])
    for f in flows[1:]:
        total = total + unwrap(f)
    return total


@add_grads_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [grad] * len(op.inputs)


# ==== write / read ======================================================================
write_op = define_op("TensorArrayFlowWrite", inputs=("flow", "index", "value"))
write_op.shape(_flow_out)


@write_op.kernel("CPU")
def _(flow: Any, index: Any, value: Any) -> Any:
    return unwrap(flow).write(int(np.asarray(index)), value)


read_op = define_op("TensorArrayFlowRead", inputs=("flow", "index"),
                    attrs={"dtype": REQUIRED, "element_shape": None})


@read_op.shape
def _(flow: Tensor, index: Tensor, *, dtype: Any, element_shape: Any) -> Any:
    return _dt.as_dtype(dtype), _elem_shape(element_shape)


@read_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, flow: Any, index: Any, *, dtype: Any, element_shape: Any) -> Any:
    v = _check_read_dtype(unwrap(flow), dtype)
    value = v.read(int(np.asarray(index)), known=_dims(element_shape))
    v.note_reads(step, [int(np.asarray(index))])
    return value


def _check_read_dtype(v: TensorArrayValue, dtype: Any) -> TensorArrayValue:
    want = np.dtype(_dt.as_dtype(dtype).as_numpy_dtype)
    if want != v.dtype and not (want.kind in "OSU" and v.dtype.kind in "OSU"):
        from tensorweave.framework import errors
        from tensorweave.kernels.tensor_array_value import _dtname
        raise errors.InvalidArgumentError(
            None, None, f"TensorArray dtype is {_dtname(v.dtype)} but Op requested dtype "
            f"{_dtname(want)}.")
    return v


# Gradient helpers: a gradient array read at `index` (zeros shaped like `like` when
# nothing was written there), and a gradient array of the forward array's size with
# `values` written at `indices`.
grad_gather_op = define_op("TensorArrayFlowGradGather", inputs=("grad_flow", "indices", "like"))
grad_gather_op.no_gradient()


@grad_gather_op.shape
def _(grad_flow: Tensor, indices: Tensor, like: Tensor) -> Any:
    return like.dtype.base_dtype, like.shape


@grad_gather_op.kernel("CPU")
def _(grad_flow: Any, indices: Any, like: Any) -> Any:
    return unwrap(grad_flow).gather(indices, like)


grad_scatter_op = define_op("TensorArrayFlowGradScatter", inputs=("flow", "indices", "values"))
grad_scatter_op.shape(_flow_out)
grad_scatter_op.no_gradient()


@grad_scatter_op.kernel("CPU")
def _(flow: Any, indices: Any, values: Any) -> Any:
    idx = np.asarray(indices).reshape(-1)
    return unwrap(flow).zeros_grad().write_many(idx, list(np.asarray(values)))


@write_op.gradient
def _(op: Operation, grad_flow: Any) -> Any:
    if grad_flow is None:
        return [None, None, None]
    index, value = op.inputs[1], op.inputs[2]
    g = create_op("TensorArrayFlowGradGather",
                [grad_flow, reshape(index, [1]), expand_dims(value, 0)]).outputs[0]
    return [grad_flow, None, squeeze(g, [0])]


@read_op.gradient
def _(op: Operation, grad: Any) -> Any:
    flow, index = op.inputs[0], op.inputs[1]
    g = create_op("TensorArrayFlowGradScatter",
                [flow, reshape(index, [1]), expand_dims(convert_to_tensor(grad), 0)])
    return [g.outputs[0], None]


# ==== gather / scatter ==================================================================
gather_op = define_op("TensorArrayFlowGather", inputs=("flow", "indices"),
                      attrs={"dtype": REQUIRED, "element_shape": None})


@gather_op.shape
def _(flow: Tensor, indices: Tensor, *, dtype: Any, element_shape: Any) -> Any:
    es = _elem_shape(element_shape)
    n = indices.shape.as_list()[0] if indices.shape.ndims == 1 else None
    return _dt.as_dtype(dtype), (unknown_shape() if es.ndims is None
                                 else TensorShape([n] + es.as_list()))


@gather_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, flow: Any, indices: Any, *, dtype: Any, element_shape: Any) -> Any:
    v = _check_read_dtype(unwrap(flow), dtype)
    value = v.gather(indices, known=_dims(element_shape))
    v.note_reads(step, list(np.asarray(indices).reshape(-1)))
    return value


@gather_op.gradient
def _(op: Operation, grad: Any) -> Any:
    flow, indices = op.inputs[0], op.inputs[1]
    g = create_op("TensorArrayFlowGradScatter", [flow, indices, convert_to_tensor(grad)])
    return [g.outputs[0], None]


scatter_op = define_op("TensorArrayFlowScatter", inputs=("flow", "indices", "value"))
scatter_op.shape(_flow_out)


@scatter_op.kernel("CPU")
def _(flow: Any, indices: Any, value: Any) -> Any:
    idx = np.asarray(indices).reshape(-1)
    value = np.asarray(value)
    if value.ndim < 1 or value.shape[0] != idx.size:
        from tensorweave.framework import errors
        raise errors.InvalidArgumentError(
            None, None, f"Expected len(indices) == values.shape[0], but saw: {idx.size} vs. "
            f"{value.shape[0] if value.ndim else 'a scalar'}")
    return unwrap(flow).write_many(idx, list(value))


@scatter_op.gradient
def _(op: Operation, grad_flow: Any) -> Any:
    if grad_flow is None:
        return [None, None, None]
    indices, value = op.inputs[1], op.inputs[2]
    g = create_op("TensorArrayFlowGradGather", [grad_flow, indices, value]).outputs[0]
    return [grad_flow, None, g]


# ==== concat / split ====================================================================
concat_op = define_op("TensorArrayFlowConcat", inputs=("flow",),
                      attrs={"dtype": REQUIRED, "element_shape_except0": None})


@concat_op.shape
def _(flow: Tensor, *, dtype: Any, element_shape_except0: Any) -> Any:
    tail = _elem_shape(element_shape_except0)
    value = unknown_shape() if tail.ndims is None else TensorShape([None] + tail.as_list())
    return [(_dt.as_dtype(dtype), value), (_dt.int64, TensorShape([None]))]


@concat_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, flow: Any, *, dtype: Any, element_shape_except0: Any) -> Any:
    v = _check_read_dtype(unwrap(flow), dtype)
    value = v.concat(known_tail=_dims(element_shape_except0))
    v.note_reads(step, range(v.size))
    return value


grad_split_op = define_op("TensorArrayFlowGradSplit", inputs=("flow", "value", "lengths"))
grad_split_op.shape(_flow_out)
grad_split_op.no_gradient()


@grad_split_op.kernel("CPU")
def _(flow: Any, value: Any, lengths: Any) -> Any:
    v = unwrap(flow).zeros_grad()
    grad = TensorArrayValue(v.name, v.dtype, v.items, True, None, False, True, nz=())
    return grad.split(value, lengths)


grad_concat_op = define_op("TensorArrayFlowGradConcat", inputs=("grad_flow", "like", "lengths"))
grad_concat_op.no_gradient()


@grad_concat_op.shape
def _(grad_flow: Tensor, like: Tensor, lengths: Tensor) -> Any:
    return like.dtype.base_dtype, like.shape


@grad_concat_op.kernel("CPU")
def _(grad_flow: Any, like: Any, lengths: Any) -> Any:
    lengths = np.asarray(lengths).reshape(-1)
    g = unwrap(grad_flow)
    # one piece per length: the forward split's elements (later writes are not its)
    n = len(lengths)
    g = TensorArrayValue(g.name, g.dtype, (g.items + (None,) * n)[:n], True, None, False,
                         True)
    return g.concat(lengths, like)[0]


@concat_op.gradient
def _(op: Operation, grad: Any, _lengths_grad: Any) -> Any:
    if grad is None:
        return [None]
    g = create_op("TensorArrayFlowGradSplit",
                [op.inputs[0], convert_to_tensor(grad), op.outputs[1]])
    return [g.outputs[0]]


split_op = define_op("TensorArrayFlowSplit", inputs=("flow", "value", "lengths"))
split_op.shape(_flow_out)


@split_op.kernel("CPU")
def _(flow: Any, value: Any, lengths: Any) -> Any:
    return unwrap(flow).split(value, lengths)


@split_op.gradient
def _(op: Operation, grad_flow: Any) -> Any:
    if grad_flow is None:
        return [None, None, None]
    value, lengths = op.inputs[1], op.inputs[2]
    g = create_op("TensorArrayFlowGradConcat", [grad_flow, value, lengths]).outputs[0]
    return [grad_flow, g, None]


def add_flow_grads(parts: list[Tensor]) -> Tensor:
    """The sum of several gradient flows (element-wise), for `tf.gradients`."""
    return create_op("TensorArrayFlowAddGrads", [parts]).outputs[0]


def zeros_flow(flow: Tensor) -> Tensor:
    """A gradient flow of the same size as `flow` with nothing written (all zeros)."""
    return create_op("TensorArrayFlowZeros", [flow]).outputs[0]


def shape_attr(shape: TensorShape) -> Any:
    """An element shape as these ops' attrs hold it (None: unknown rank)."""
    return None if shape.ndims is None else plain_dims(shape)
