"""Our gradient (and reporting) ops written as the TF ops TF 1.15's gradients build.

- SoftmaxGrad(g, y; axis) = (g - sum(g y, axis, keep_dims)) y, TF's _SoftmaxGrad;
- LogSoftmaxGrad(g, ls; axis) = g - exp(ls) sum(g, axis, keep_dims), TF's _LogSoftmaxGrad;
- UnsortedSegmentSumGrad(g, ids, n) = g gathered at max(ids, 0), rows of negative
  ids zeroed (TF's _GatherDropNegatives);
- SliceGrad(input_shape, begin, g) = StridedSliceGrad(input_shape, begin, begin +
  shape(g), 1s, g): g placed at `begin` in zeros (TF pads; the same values);
- TopKV2Grad(g, indices, x) = g scattered (ScatterNd) to the flattened positions of
  the top-k indices, row by row, reshaped as x (TF's _TopKGrad);
- ProdGrad(x, axes) = the product of the other reduced elements: the reduced axes
  moved to the front (ListDiff, Transpose), exclusive Cumprods from both ends
  multiplied, moved back (InvertPermutation), as TF's _ProdGrad;
- ReportUninitialized(flags*; names) = the names whose flag is false, as TF's
  report_uninitialized_variables builds it (Pack, LogicalNot, Where, GatherV2).

Example:
    >>> nodes = LOWERINGS["SoftmaxGrad"](node, graph.get_operation_by_name(node.name))
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tf_lowering_nodes import NodeBuilder

_I32, _I64, _BOOL, _STR = (graph_pb2.DT_INT32, graph_pb2.DT_INT64, graph_pb2.DT_BOOL,
                           graph_pb2.DT_STRING)


def _dtype(t: Any) -> int:
    return int(t.dtype.base_dtype.as_datatype_enum)


def _data(node: Any) -> list[str]:
    return [i for i in node.input if not i.startswith("^")]


def _softmax_grad(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.inputs[0])
    g, y = _data(node)[:2]
    axis = b.const("axis", int(op.get_attr("axis")))
    dot = b.add("sum", "Sum", [b.add("mul", "Mul", [g, y], T=t), axis], T=t, Tidx=_I32,
                keep_dims=True)
    b.add(None, "Mul", [b.add("sub", "Sub", [g, dot], T=t), y], T=t)
    return b.nodes


def _log_softmax_grad(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.inputs[0])
    g, ls = _data(node)[:2]
    total = b.add("sum", "Sum", [g, b.const("axis", int(op.get_attr("axis")))], T=t,
                  Tidx=_I32, keep_dims=True)
    b.add(None, "Sub", [g, b.add("mul", "Mul", [b.add("softmax", "Exp", [ls], T=t), total],
                                 T=t)], T=t)
    return b.nodes


def _segment_sum_grad(node: Any, op: Any) -> list[Any]:
    b, t, ti = NodeBuilder(node), _dtype(op.inputs[0]), _dtype(op.inputs[1])
    g, ids = _data(node)[:2]
    zero_ids = b.add("zero_ids", "ZerosLike", [ids], T=ti)
    rows = b.add("gathered", "GatherV2", [g, b.add("clipped_ids", "Maximum", [ids, zero_ids],
                                                   T=ti), b.const("axis", 0)],
                 Tparams=t, Tindices=ti, Taxis=_I32, batch_dims=0)
    keep = b.add("is_positive", "GreaterEqual", [ids, zero_ids], T=ti)
    # The mask as ids' shape followed by 1s for the rows' own dimensions.
    extra = b.add("row_rank", "Sub", [b.add("rank", "Rank", [rows], T=t),
                                      b.add("ids_rank", "Rank", [ids], T=ti)], T=_I32)
    ones = b.add("ones", "Fill", [b.add("extra_dims", "Reshape", [extra, b.const("one_shape",
                                                                                   [1])],
                                        T=_I32, Tshape=_I32), b.const("one", 1)],
                 T=_I32, index_type=_I32)
    shape = b.add("mask_shape", "ConcatV2", [b.add("ids_shape", "Shape", [ids], T=ti,
                                                   out_type=_I32), ones, b.const("zero", 0)],
                  N=2, T=_I32, Tidx=_I32)
    mask = b.add("mask", "Reshape", [keep, shape], T=_BOOL, Tshape=_I32)
    all_true = b.add("all_true", "Fill", [b.add("rows_shape", "Shape", [rows], T=t,
                                                out_type=_I32), b.const("true", True, _BOOL)],
                     T=_BOOL, index_type=_I32)
    full = b.add("full_mask", "LogicalAnd", [mask, all_true])
    b.add(None, "Select", [full, rows, b.add("zeros", "ZerosLike", [rows], T=t)], T=t)
    return b.nodes


def _slice_grad(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.inputs[2])
    shape, begin, g = _data(node)[:3]
    index = _dtype(op.inputs[0])
    if _dtype(op.inputs[1]) != index:
        begin = b.add("begin_cast", "Cast", [begin], SrcT=_dtype(op.inputs[1]), DstT=index,
                      Truncate=False)
    end = b.add("end", "AddV2", [begin, b.add("size", "Shape", [g], T=t, out_type=index)],
                T=index)
    b.add(None, "StridedSliceGrad", [shape, begin, end, b.add("strides", "OnesLike", [begin],
                                                              T=index), g],
          T=t, Index=index, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
          shrink_axis_mask=0)
    return b.nodes


def _scalar_at(b: NodeBuilder, part: str, vec: str, i: int) -> str:
    """vec[i] of an int32 vector, as a scalar (i may be -1: the last)."""
    return b.add(part, "StridedSlice", [vec, b.const(part + "_begin", [i]),
                                        b.const(part + "_end", [i + 1 if i != -1 else 0]),
                                        b.const(part + "_strides", [1])],
                 T=_I32, Index=_I32, begin_mask=0, end_mask=1 if i == -1 else 0,
                 ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=1)


def _top_k_grad(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.inputs[0])
    g, indices, x = _data(node)[:3]
    in_shape = b.add("in_shape", "Shape", [x], T=_dtype(op.inputs[2]), out_type=_I32)
    k = _scalar_at(b, "k", b.add("ind_shape", "Shape", [indices], T=_I32, out_type=_I32), -1)
    ind_2d = b.add("ind_2d", "Reshape", [indices, b.add("rows_by_k", "Pack", [
        b.const("minus_one", -1), k], N=2, T=_I32, axis=0)], T=_I32, Tshape=_I32)
    last = _scalar_at(b, "in_lastdim", in_shape, -1)
    outer = _scalar_at(b, "outerdim", b.add("ind_2d_shape", "Shape", [ind_2d], T=_I32,
                                            out_type=_I32), 0)
    offsets = b.add("offsets", "Range", [b.const("zero", 0), b.add("limit", "Mul",
                                                                   [outer, last], T=_I32),
                                         last], Tidx=_I32)
    flat = b.add("flat_indices", "Reshape", [
        b.add("shifted", "AddV2", [ind_2d, b.add("offsets_col", "ExpandDims", [
            offsets, b.const("last_axis", -1)], T=_I32, Tdim=_I32)], T=_I32),
        b.const("vector", [-1])], T=_I32, Tshape=_I32)
    size = b.add("in_size", "Prod", [in_shape, b.const("prod_axis", [0])], T=_I32, Tidx=_I32,
                 keep_dims=True)
    scattered = b.add("scattered", "ScatterNd", [
        b.add("scatter_index", "ExpandDims", [flat, b.const("last_axis_2", -1)], T=_I32,
              Tdim=_I32),
        b.add("flat_grad", "Reshape", [g, b.const("vector_2", [-1])], T=t, Tshape=_I32), size],
        T=t, Tindices=_I32)
    b.add(None, "Reshape", [scattered, in_shape], T=t, Tshape=_I32)
    return b.nodes


def _prod_grad(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.inputs[0])
    x, axes = _data(node)[:2]
    if _dtype(op.inputs[1]) != _I32:
        axes = b.add("axes_int32", "Cast", [axes], SrcT=_dtype(op.inputs[1]), DstT=_I32,
                     Truncate=False)
    rank = b.add("rank", "Rank", [x], T=t)
    reduced = b.add("reduced", "FloorMod", [b.add("axes_shifted", "AddV2", [
        b.add("axes_vector", "Reshape", [axes, b.const("vector", [-1])], T=_I32, Tshape=_I32),
        rank], T=_I32), rank], T=_I32)
    other = b.add("other", "ListDiff", [b.add("all_axes", "Range", [
        b.const("zero", 0), rank, b.const("one", 1)], Tidx=_I32), reduced], T=_I32,
        out_idx=_I32)
    perm = b.add("perm", "ConcatV2", [reduced, other, b.const("concat_axis", 0)], N=2, T=_I32,
                 Tidx=_I32)
    shape = b.add("shape", "Shape", [x], T=t, out_type=_I32)

    def count(part: str, axes_of: str) -> str:
        dims = b.add(part + "_dims", "GatherV2", [shape, axes_of, b.const(part + "_axis", 0)],
                     Tparams=_I32, Tindices=_I32, Taxis=_I32, batch_dims=0)
        return b.add(part, "Prod", [dims, b.const(part + "_prod_axis", 0)], T=_I32,
                     Tidx=_I32, keep_dims=False)

    permuted = b.add("permuted", "Transpose", [x, perm], T=t, Tperm=_I32)
    rows = b.add("reshaped", "Reshape", [permuted, b.add("matrix_shape", "Pack", [
        count("reduced_num", reduced), count("other_num", other)], N=2, T=_I32, axis=0)],
        T=t, Tshape=_I32)
    cum = {}
    for side, reverse in (("left", False), ("right", True)):
        cum[side] = b.add(side, "Cumprod", [rows, b.const(side + "_axis", 0)], T=t, Tidx=_I32,
                          exclusive=True, reverse=reverse)
    y = b.add("y", "Reshape", [b.add("others", "Mul", [cum["left"], cum["right"]], T=t),
                               b.add("permuted_shape", "Shape", [permuted], T=t,
                                     out_type=_I32)], T=t, Tshape=_I32)
    b.add(None, "Transpose", [y, b.add("inverse_perm", "InvertPermutation", [perm], T=_I32)],
          T=t, Tperm=_I32)
    return b.nodes


def _report_uninitialized(node: Any, op: Any) -> list[Any]:
    b = NodeBuilder(node)
    flags = _data(node)
    names = list(op.get_attr("names"))
    if not flags:   # no variables: an empty list of names
        b.add(None, "Const", [], dtype=_STR, value=_empty_strings())
        return b.nodes
    packed = b.add("flags", "Pack", flags, N=len(flags), T=_BOOL, axis=0)
    missing = b.add("not_initialized", "LogicalNot", [packed])
    where = b.add("where", "Where", [missing], T=_BOOL)
    idx = b.add("indices", "Squeeze", [where], T=_I64, squeeze_dims=[1])
    b.add(None, "GatherV2", [b.const("names", names, _STR), idx, b.const("axis", 0)],
          Tparams=_STR, Tindices=_I64, Taxis=_I32, batch_dims=0)
    return b.nodes


def _empty_strings() -> Any:
    t = graph_pb2.TensorProto(dtype=_STR)
    t.tensor_shape.dim.add(size=0)
    return t


LOWERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "SoftmaxGrad": _softmax_grad,
    "LogSoftmaxGrad": _log_softmax_grad,
    "UnsortedSegmentSumGrad": _segment_sum_grad,
    "SliceGrad": _slice_grad,
    "TopKV2Grad": _top_k_grad,
    "ProdGrad": _prod_grad,
    "ReportUninitialized": _report_uninitialized,
}

__all__ = ["LOWERINGS"]
