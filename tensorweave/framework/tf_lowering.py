"""Our own ops written as the TensorFlow ops that compute the same thing.

Some tensorweave ops have no TF op of their own (they fuse what TF builds from
several ops). For a GraphDef real TF must import, each is replaced by TF's ops, in
the graph and in its function bodies (cond/while branches); the last one keeps the
node's name, so its readers are unchanged:

- ApplyDropoutMask(x, u, keep_prob) = x / keep_prob * floor(keep_prob + u)
  (what tf.nn.dropout builds in TF 1.x);
- ReductionAllAxes(x) = Range(0, Rank(x), 1) (the axes of an unknown-rank input);
- Softmax/LogSoftmax over an axis other than the last = Transpose, the op, Transpose
  back (TF's ops have no axis attr);
- the gradients' broadcast helpers: SumToShape(g, like) = Reshape(Sum(g, r1),
  Shape(like)) with r1 from BroadcastGradientArgs(Shape(g), Shape(like));
  BroadcastToLike(x, like) = BroadcastTo(x, Shape(like)); ReduceGradBroadcast(g,
  like, axes) = BroadcastTo(Reshape(g, kept), Shape(like)), the kept-dims shape
  made by DynamicStitch as TF's reduced_shape makes it (divided by the number of
  reduced elements for a mean). So exported training graphs import in TF;
- the Saver's checkpoint ops (GatePause, GateResume, SaveShard, MergeCheckpoint,
  RestoreShard) as TF's Saver graph (`tf_lowering_checkpoint.py`);
- SparseFeatureCross, VocabularyLookup and ShardIds as TF's SparseCross, hash
  table and embedding_lookup's id split (`tf_lowering_lookup.py`);
- the sigmoid cross entropy and its gradient, the sparse GradientDescent, Adam and
  LazyAdam updates as TF's ops for them (`tf_lowering_training.py`);
- the softmax, log-softmax, segment-sum, slice, top_k and prod gradients and
  report_uninitialized_variables' op (`tf_lowering_gradients.py`);
- tf.boolean_mask's BooleanMask and BooleanMaskGrad, gather's GatherV2Grad
  (`tf_lowering_array.py`);
- DeepRec's EmbeddingVariable ops (KvVariable, KvInitialize, KvGather, KvExport, KvImport,
  KvRestore) as a MutableHashTableV2 of ids -> rows and a variable of rows, restored
  from the export's variables/ (`tf_lowering_kv.py`), so a served model looks ids up.

Not lowered (no TF form here): FunctionalScan/WhileGrad (map_fn, scan, dynamic_rnn,
while-loop gradients), InitializedValueOr (TF's form needs Switch/Merge, which
tensorweave cannot import back), the sync-replicas accumulator status ops, tf.TensorArray's
TensorArrayFlow* ops (TF's form is TensorArrayV3 or TensorList ops inside a TF While, which
needs While lowered first), DenseHashTable (TF's MutableDenseHashTable has no deleted_key
input), LookupTableRemove (TF has only the resource-handle LookupTableRemoveV2), and
DeepRec's optimizer updates ApplyAdamAsync/ApplyAdagradDecay and their sparse forms and
an EmbeddingVariable update's KvStamp (stock TF has no such kernels; a serving export holds
no training op), and DeepRec's WorkQueue ops (WorkQueueHandleOp, WorkQueueTake, ...: the
training job's input, which a serving export does not read); the exporters prune them
or name them (`check_tensorflow_ops`).

`check_tensorflow_ops` is the exporters' final check: it names each op type
TensorFlow lacks and its nodes.

Example:
    >>> new_nodes = lower_for_tensorflow(graph_def, graph)
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tf_lowering_array import LOWERINGS as _ARRAY
from tensorweave.framework.tf_lowering_checkpoint import LOWERINGS as _CHECKPOINT
from tensorweave.framework.tf_lowering_kv import LOWERINGS as _KV
from tensorweave.framework.tf_lowering_lookup import LOWERINGS as _LOOKUP
from tensorweave.framework.tf_lowering_nodes import NodeBuilder
from tensorweave.framework.tf_lowering_gradients import LOWERINGS as _GRADIENTS
from tensorweave.framework.tf_lowering_training import LOWERINGS as _TRAINING
from tensorweave.framework.tf_op_signatures import TF_OP_NAMES


_I32 = graph_pb2.DT_INT32


def _dtype(t: Any) -> int:
    return int(t.dtype.base_dtype.as_datatype_enum)


def _dropout(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.outputs[0])
    x, u, keep = node.input[:3]
    scaled = b.add("scaled", "RealDiv", [x, keep], T=t)
    mask = b.add("mask", "Floor", [b.add("keep_plus_u", "AddV2", [keep, u], T=t)], T=t)
    b.add(None, "Mul", [scaled, mask], T=t)
    return b.nodes


def _all_axes(node: Any, op: Any) -> list[Any]:
    b = NodeBuilder(node)
    rank = b.add("rank", "Rank", [node.input[0]], T=_dtype(op.inputs[0]))
    b.add(None, "Range", [b.const("start", 0), rank, b.const("delta", 1)], Tidx=_I32)
    return b.nodes


def _sum_to_shape(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.inputs[0])
    grad, like = node.input[0], node.input[1]
    s_grad = b.add("grad_shape", "Shape", [grad], T=t, out_type=_I32)
    s_like = b.add("shape", "Shape", [like], T=_dtype(op.inputs[1]), out_type=_I32)
    axes = b.add("axes", "BroadcastGradientArgs", [s_grad, s_like], T=_I32)
    total = b.add("sum", "Sum", [grad, axes + ":1"], T=t, Tidx=_I32, keep_dims=False)
    b.add(None, "Reshape", [total, s_like], T=t, Tshape=_I32)
    return b.nodes


def _broadcast_to_like(node: Any, op: Any) -> list[Any]:
    b = NodeBuilder(node)
    s_like = b.add("shape", "Shape", [node.input[1]], T=_dtype(op.inputs[1]), out_type=_I32)
    b.add(None, "BroadcastTo", [node.input[0], s_like], T=_dtype(op.inputs[0]), Tidx=_I32)
    return b.nodes


def _reduce_grad(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.inputs[0])
    grad, like, axes = node.input[:3]
    s_like = b.add("shape", "Shape", [like], T=_dtype(op.inputs[1]), out_type=_I32)
    if op.get_attr("keep_dims"):
        kept = b.add("grad_shape", "Shape", [grad], T=t, out_type=_I32)
    else:  # the input's shape with 1 at each reduced axis
        if _dtype(op.inputs[2]) != _I32:
            axes = b.add("axes_int32", "Cast", [axes], SrcT=_dtype(op.inputs[2]), DstT=_I32,
                         Truncate=False)
        rank = b.add("rank", "Size", [s_like], T=_I32, out_type=_I32)
        shifted = b.add("axes_shifted", "AddV2", [axes, rank], T=_I32)
        axes = b.add("axes_positive", "FloorMod", [shifted, rank], T=_I32)
        every = b.add("all_axes", "Range", [b.const("zero", 0), rank, b.const("one", 1)],
                      Tidx=_I32)
        ones = b.add("ones", "Fill", [b.add("axes_shape", "Shape", [axes], T=_I32,
                                            out_type=_I32), b.const("one_value", 1)],
                     T=_I32, index_type=_I32)
        kept = b.add("kept_shape", "DynamicStitch", [every, axes, s_like, ones], N=2, T=_I32)
        grad = b.add("kept", "Reshape", [grad, kept], T=t, Tshape=_I32)
    if op.get_attr("mean"):  # / (input size / output size), as TF's mean gradient
        zero = b.const("axis0", 0)
        n_in = b.add("in_size", "Prod", [s_like, zero], T=_I32, Tidx=_I32, keep_dims=False)
        n_out = b.add("out_size", "Prod", [kept, zero], T=_I32, Tidx=_I32, keep_dims=False)
        at_least = b.add("out_size_1", "Maximum", [n_out, b.const("one_size", 1)], T=_I32)
        factor = b.add("factor", "FloorDiv", [n_in, at_least], T=_I32)
        grad = b.add("scaled", "RealDiv", [grad, b.add("factor_cast", "Cast", [factor],
                                                       SrcT=_I32, DstT=t, Truncate=False)],
                     T=t)
    b.add(None, "BroadcastTo", [grad, s_like], T=t, Tidx=_I32)
    return b.nodes


def _softmax_on_axis(node: Any, op: Any) -> list[Any] | None:
    """Softmax/LogSoftmax over another axis than the last: TF's ops take only the last,
    so TF 1.15 swaps the axis to the end and back (Transpose), as done here."""
    axis, rank = int(op.get_attr("axis")), op.inputs[0].shape.ndims
    if axis == -1 or rank is None:
        return None   # TF's own form, or a rank unknown here: the attr check names it
    b, t, a = NodeBuilder(node), _dtype(op.inputs[0]), axis % rank
    if a == rank - 1:
        b.add(None, node.op, [node.input[0]], T=t)
        return b.nodes
    perm = list(range(rank))
    perm[a], perm[-1] = perm[-1], perm[a]
    swapped = b.add("swapped", "Transpose", [node.input[0], b.const("perm", perm)], T=t,
                    Tperm=_I32)
    inner = b.add("last_axis", node.op, [swapped], T=t)
    b.add(None, "Transpose", [inner, b.const("perm_back", perm)], T=t, Tperm=_I32)
    return b.nodes


_LOWERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "Softmax": _softmax_on_axis,
    "LogSoftmax": _softmax_on_axis,
    "ApplyDropoutMask": _dropout,
    "ReductionAllAxes": _all_axes,
    "SumToShape": _sum_to_shape,
    "BroadcastToLike": _broadcast_to_like,
    "ReduceGradBroadcast": _reduce_grad,
    **_CHECKPOINT,
    **_LOOKUP,
    **_TRAINING,
    **_GRADIENTS,
    **_ARRAY,
    **_KV,
}


def lowerable_ops() -> frozenset[str]:
    """Names of our ops that `lower_for_tensorflow` writes as TF ops."""
    return frozenset(_LOWERINGS)


def lower_for_tensorflow(graph_def: Any, graph: Any) -> set[str]:
    """Replaces, in place, the nodes of our ops by TF ops; returns the new nodes' names.

    The new nodes carry every attr TF needs already. A node lowered to nothing (a
    checkpoint gate) is removed; whatever waited on it (a control input) waits on
    the node's own control inputs instead.
    """
    nodes, made = _lowered(list(graph_def.node), graph, in_function=False)
    if made is not None:
        del graph_def.node[:]
        graph_def.node.extend(nodes)
    return made or set()


def lower_function_body(fdef: Any, func_graph: Any) -> set[str]:
    """`lower_for_tensorflow` for one FunctionDef (a cond/while body) of `func_graph`.

    References between the new nodes are written in a function body's form
    ("node:output:0"); readers of moved outputs and the function's returns follow.
    """
    nodes, made = _lowered(list(fdef.node_def), func_graph, in_function=True)
    if made is None:
        return set()
    del fdef.node_def[:]
    fdef.node_def.extend(nodes)
    return made


def _lowered(nodes: list[Any], graph: Any, in_function: bool
             ) -> tuple[list[Any], set[str] | None]:
    """(the nodes with ours lowered, the new nodes' names); None when nothing changed."""
    out: list[Any] = []
    made: set[str] = set()
    removed: dict[str, list[str]] = {}   # dropped node -> its control inputs
    renames: dict[str, str] = {}   # "node:k" -> the new node output that computes it
    for node in nodes:
        lower = _LOWERINGS.get(node.op)
        if lower is None:
            out.append(node)
            continue
        new = lower(node, graph.get_operation_by_name(node.name))
        if new is None:   # a case of the op without a TF form: stays, for the caller to name
            out.append(node)
            continue
        moved: dict[str, str] = {}
        if isinstance(new, tuple):   # (nodes, output renames): outputs moved to new nodes
            new, moved = new
        if in_function:
            _function_refs(new, {n.name for n in new} - {node.name})
            moved = {_function_ref(k): _function_ref(v) for k, v in moved.items()}
        renames.update(moved)
        if not new:
            removed[node.name] = [i for i in node.input if i.startswith("^")]
        out += new
        made |= {n.name for n in new}
    if not made and not removed:
        return nodes, None
    result = [graph_pb2.NodeDef.FromString(n.SerializeToString()) for n in out]
    for n in result:
        if any(i.startswith("^") and i[1:] in removed for i in n.input):
            n.input[:] = _rewired(list(n.input), removed)
        if renames:
            n.input[:] = [renames.get(i, i) for i in n.input]
    return result, made


def _function_ref(ref: str) -> str:
    """A GraphDef reference ("n", "n:1") in a function body's form ("n:output:1")."""
    name, _, index = ref.partition(":")
    return f"{name}:output:{index or 0}"


def _function_refs(nodes: list[Any], new_names: set[str]) -> None:
    """Rewrites the references between a lowering's new nodes in a function body's form;
    references to the body's other nodes and arguments were already in it."""
    for n in nodes:
        n.input[:] = [_function_ref(i) if not i.startswith("^") and
                      i.split(":")[0] in new_names else i for i in n.input]


def _rewired(inputs: list[str], removed: dict[str, list[str]]) -> list[str]:
    """`inputs` with each control input on a removed node replaced by that node's own
    control inputs (transitively: gates wait on gates), without duplicates."""
    out: list[str] = []
    stack = list(reversed(inputs))
    while stack:
        i = stack.pop()
        if i.startswith("^") and i[1:] in removed:
            stack.extend(reversed(removed[i[1:]]))
        elif i not in out:
            out.append(i)
    return out


def foreign_ops(graph_def: Any) -> dict[str, list[str]]:
    """Op type -> names of the nodes (`function/node` inside the function library) whose
    op TensorFlow does not have."""
    found: dict[str, list[str]] = {}
    for n in graph_def.node:
        if n.op not in TF_OP_NAMES:
            found.setdefault(n.op, []).append(n.name)
    for f in graph_def.library.function:
        for n in f.node_def:
            if n.op not in TF_OP_NAMES:
                found.setdefault(n.op, []).append(f"{f.signature.name}/{n.name}")
    return found


def check_tensorflow_ops(graph_def: Any, what: str = "The graph") -> None:
    """Raises unless every node of `graph_def` (and of its functions) is a TF op.

    Args:
        graph_def: a GraphDef about to be written for TensorFlow (lowered already).
        what: how the error names it (e.g. "SavedModel meta graph ['serve']").

    Raises:
        ValueError: naming each op type TensorFlow lacks and its nodes.

    Example:
        >>> gd, _ = to_tensorflow(graph, graph.as_graph_def())
        >>> check_tensorflow_ops(gd, "model.meta")
    """
    found = foreign_ops(graph_def)
    if found:
        raise ValueError(f"{what} has ops TensorFlow does not have, which tensorweave "
                         f"cannot write as TensorFlow ops: {describe_ops(found)}. Leave "
                         "them out of what is exported (e.g. export the serving graph "
                         "only), or build the model from ops TensorFlow has.")


def describe_ops(found: dict[str, list[str]]) -> str:
    """"OpA (node a); OpB (nodes b, c)" for op type -> node names."""
    return "; ".join(f"{op} (node{'s' if len(nodes) > 1 else ''} {', '.join(nodes[:5])}"
                     f"{', ...' if len(nodes) > 5 else ''})"
                     for op, nodes in sorted(found.items()))


__all__ = ["check_tensorflow_ops", "describe_ops", "foreign_ops", "lower_for_tensorflow",
           "lower_function_body", "lowerable_ops"]
