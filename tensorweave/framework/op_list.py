"""The ops a GraphDef uses, as an OpList (a MetaGraphDef's `stripped_op_list`).

TF writes, with every MetaGraphDef, the OpDef of each op its graph uses (also in
function bodies), so a consumer knows the producer's op interfaces. Ops that
TensorFlow has are described by TF's interface (arg names, type attrs, ref-ness,
from `tf_op_signatures`); tensorweave's own ops by their registered inputs.

Example:
    >>> [op.name for op in stripped_op_list_for_graph(g.as_graph_def()).op]
    ['Const', 'Identity']
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.op_def import registered_ops
from tensorweave.framework.proto import graph_pb2, meta_graph_pb2
from tensorweave.framework.tf_op_signatures import SIGNATURES, TF_OP_NAMES

# Function-call plumbing TF accepts in a graph without a registered OpDef.
_PLUMBING = ("_Arg", "_Retval", "_ListToArray", "_ArrayToList")


def ops_used_by_graph_def(graph_def: Any) -> list[str]:
    """The op types used by `graph_def`'s nodes and its library's function bodies, sorted.

    A call of a library function is not an op: the function's own nodes count.

    Example:
        >>> ops_used_by_graph_def(tf.get_default_graph().as_graph_def())
        ['Const']
    """
    functions = {f.signature.name for f in graph_def.library.function}
    used = {n.op for n in graph_def.node}
    for f in graph_def.library.function:
        used.update(n.op for n in f.node_def)
    return sorted(used - functions)


def op_def_proto(op_type: str, registry: dict[str, Any] | None = None) -> Any:
    """The OpDef proto of an op (TF's interface where TensorFlow has the op).

    A TensorFlow op that tensorweave neither runs nor describes (one an export
    lowered to) gets an OpDef with its name only.

    Args:
        op_type: the op's name.
        registry: `registered_ops()`, when the caller already has it.

    Raises:
        ValueError: if `op_type` is neither registered here nor a TensorFlow op.
    """
    sig = SIGNATURES.get(op_type)
    proto = graph_pb2.OpDef(name=op_type)
    ours = (registry if registry is not None else registered_ops()).get(op_type)
    if sig is not None:
        for args, out in ((sig[0], proto.input_arg), (sig[1], proto.output_arg)):
            for name, type_attr, number_attr, type_list_attr, dtype, is_ref in args:
                out.add(name=name, type_attr=type_attr, number_attr=number_attr,
                        type_list_attr=type_list_attr, type=dtype, is_ref=is_ref)
    elif ours is not None:
        for spec in ours.inputs:
            proto.input_arg.add(name=spec.name, is_ref=spec.is_ref)
    elif op_type not in TF_OP_NAMES:   # (a TF op we do not run keeps just its name)
        raise ValueError(f"Op {op_type} is used by the graph, but is not registered in "
                         "tensorweave (nor a TensorFlow op it knows)")
    if ours is not None:
        proto.is_stateful = ours.stateful
    return proto


def stripped_op_list_for_graph(graph_def: Any) -> Any:
    """The OpList of the ops `graph_def` uses (TF's meta_graph.stripped_op_list_for_graph).

    Raises:
        ValueError: if the graph uses an op that is not registered, naming it.

    Example:
        >>> ops = stripped_op_list_for_graph(g.as_graph_def())
    """
    registry = registered_ops()
    return meta_graph_pb2.OpList(op=[op_def_proto(t, registry)
                                     for t in ops_used_by_graph_def(graph_def)
                                     if t not in _PLUMBING])


__all__ = ["op_def_proto", "ops_used_by_graph_def", "stripped_op_list_for_graph"]
