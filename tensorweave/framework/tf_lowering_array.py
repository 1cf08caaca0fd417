"""tf.boolean_mask's and tf.gather's fused ops written as the TF ops TF 1.15 builds.

- BooleanMask(x, mask; axis) = GatherV2(Reshape(x, shape[:axis] + [prod(shape[axis:
  axis+k])] + shape[axis+k:]), Squeeze(Where(Reshape(mask, [-1]))), axis), k the
  mask's rank: TF's boolean_mask;
- BooleanMaskGrad(shape, mask, g; axis) = the gradient TF's gather and reshape give,
  dense: g's rows scattered (ScatterNd) to the kept positions of the flattened
  masked dimensions, the axis moved to the front and back (Transpose), reshaped
  to `shape`. Needs g's rank known (else the node is left, for the caller to name);
- GatherV2Grad(params_shape, indices, g, axis) (gather over an axis other than 0) =
  TF's _GatherV2Grad: g reshaped, the axis moved to the front, UnsortedSegmentSum
  by index, moved back. Needs the rank and the axis known when exporting.

Example:
    >>> nodes = LOWERINGS["BooleanMask"](node, graph.get_operation_by_name(node.name))
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tf_lowering_nodes import NodeBuilder

_I32, _I64, _BOOL = graph_pb2.DT_INT32, graph_pb2.DT_INT64, graph_pb2.DT_BOOL


def _dtype(t: Any) -> int:
    return int(t.dtype.base_dtype.as_datatype_enum)


def _slice(b: NodeBuilder, part: str, vec: str, begin: int, end: int | None) -> str:
    """vec[begin:end] of an int32 vector (end None: to the end)."""
    return b.add(part, "StridedSlice", [vec, b.const(part + "_begin", [begin]),
                                        b.const(part + "_end", [0 if end is None else end]),
                                        b.const(part + "_strides", [1])],
                 T=_I32, Index=_I32, begin_mask=0, end_mask=1 if end is None else 0,
                 ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0)


def _flat_shape(b: NodeBuilder, shape: str, axis: int, k: int) -> str:
    """shape[:axis] + [prod(shape[axis:axis+k])] + shape[axis+k:]."""
    leading = b.add("leading_size", "Prod", [_slice(b, "masked_dims", shape, axis, axis + k),
                                             b.const("prod_axis", [0])],
                    T=_I32, Tidx=_I32, keep_dims=True)
    return b.add("flat_shape", "ConcatV2", [_slice(b, "outer_dims", shape, 0, axis), leading,
                                            _slice(b, "inner_dims", shape, axis + k, None),
                                            b.const("concat_axis", 0)], N=3, T=_I32, Tidx=_I32)


def _kept(b: NodeBuilder, mask: str) -> str:
    """Positions (int64) of the true entries of the flattened mask."""
    flat = b.add("flat_mask", "Reshape", [mask, b.const("minus_one", [-1])], T=_BOOL,
                 Tshape=_I32)
    return b.add("kept", "Squeeze", [b.add("where", "Where", [flat], T=_BOOL)], T=_I64,
                 squeeze_dims=[1])


def _boolean_mask(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.inputs[0])
    x, mask = node.input[0], node.input[1]
    axis, k = int(op.get_attr("axis")), int(op.inputs[1].shape.ndims)
    shape = b.add("shape", "Shape", [x], T=t, out_type=_I32)
    flat = b.add("flat", "Reshape", [x, _flat_shape(b, shape, axis, k)], T=t, Tshape=_I32)
    b.add(None, "GatherV2", [flat, _kept(b, mask), b.const("axis", axis)], Tparams=t,
          Tindices=_I64, Taxis=_I32, batch_dims=0)
    return b.nodes


def _boolean_mask_grad(node: Any, op: Any) -> list[Any] | None:
    rank = op.inputs[2].shape.ndims
    if rank is None:
        return None
    b, t = NodeBuilder(node), _dtype(op.inputs[2])
    shape, mask, g = node.input[:3]
    if _dtype(op.inputs[0]) != _I32:
        shape = b.add("shape_int32", "Cast", [shape], SrcT=_dtype(op.inputs[0]), DstT=_I32,
                      Truncate=False)
    axis, k = int(op.get_attr("axis")), int(op.inputs[1].shape.ndims)
    flat_shape = _flat_shape(b, shape, axis, k)
    kept = b.add("kept_int32", "Cast", [_kept(b, mask)], SrcT=_I64, DstT=_I32, Truncate=False)
    index = b.add("scatter_index", "ExpandDims", [kept, b.const("last", -1)], T=_I32,
                  Tdim=_I32)
    perm = [axis] + [d for d in range(rank) if d != axis]
    front = b.add("axis_first", "Transpose", [g, b.const("perm", perm)], T=t, Tperm=_I32)
    front_shape = b.add("axis_first_shape", "GatherV2", [flat_shape, b.const("perm_2", perm),
                                                          b.const("gather_axis", 0)],
                        Tparams=_I32, Tindices=_I32, Taxis=_I32, batch_dims=0)
    scattered = b.add("scattered", "ScatterNd", [index, front, front_shape], T=t,
                      Tindices=_I32)
    inverse = sorted(range(rank), key=lambda d: perm[d])
    back = b.add("axis_back", "Transpose", [scattered, b.const("perm_back", inverse)], T=t,
                 Tperm=_I32)
    b.add(None, "Reshape", [back, shape], T=t, Tshape=_I32)
    return b.nodes


def _gather_grad(node: Any, op: Any) -> list[Any] | None:
    pshape_t, axis_t = op.inputs[0], op.inputs[3]
    rank = pshape_t.shape.as_list()[0] if pshape_t.shape.ndims == 1 else None
    axis = _const_int(axis_t)
    if rank is None or axis is None or _dtype(pshape_t) != _I32:
        return None   # the rank or axis only known at run time: left, for the caller to name
    a = axis % rank
    b, t, ti = NodeBuilder(node), _dtype(op.inputs[2]), _dtype(op.inputs[1])
    pshape, indices, g = node.input[:3]
    values_shape = b.add("values_shape", "ConcatV2", [
        _slice(b, "outer_dims", pshape, 0, a), b.const("any_rows", [-1]),
        _slice(b, "inner_dims", pshape, a + 1, None), b.const("concat_axis", 0)],
        N=3, T=_I32, Tidx=_I32)
    values = b.add("values", "Reshape", [g, values_shape], T=t, Tshape=_I32)
    perm = [a] + [d for d in range(rank) if d != a]
    front = b.add("axis_first", "Transpose", [values, b.const("perm", perm)], T=t, Tperm=_I32)
    rows = b.add("num_rows", "StridedSlice", [pshape, b.const("rows_begin", [a]),
                                              b.const("rows_end", [a + 1]),
                                              b.const("rows_strides", [1])],
                 T=_I32, Index=_I32, begin_mask=0, end_mask=0, ellipsis_mask=0,
                 new_axis_mask=0, shrink_axis_mask=1)
    flat_idx = b.add("flat_indices", "Reshape", [indices, b.const("vector", [-1])], T=ti,
                     Tshape=_I32)
    summed = b.add("summed", "UnsortedSegmentSum", [front, flat_idx, rows], T=t, Tindices=ti,
                   Tnumsegments=_I32)
    inverse = sorted(range(rank), key=lambda d: perm[d])
    b.add(None, "Transpose", [summed, b.const("perm_back", inverse)], T=t, Tperm=_I32)
    return b.nodes


def _const_int(t: Any) -> int | None:
    if t.op.type != "Const":
        return None
    try:
        return int(t.op.get_attr("value"))
    except (TypeError, ValueError):
        return None


LOWERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "GatherV2Grad": _gather_grad,
    "BooleanMask": _boolean_mask,
    "BooleanMaskGrad": _boolean_mask_grad,
}

__all__ = ["LOWERINGS"]
