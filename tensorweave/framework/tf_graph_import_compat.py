"""TF-written GraphDefs in the form our importer creates (the reverse of tf_graph_compat).

TensorFlow's NodeDefs carry attrs TF derives from input types that our ops do not
take; TF 1.15 Keras makes resource variables; TF-written function bodies name
outputs by arg ("node:z:0"); graphs may compute initial values with ops we lack.
`from_tensorflow` turns all of that into what `import_graph_def` creates.

Example:
    >>> tf.import_graph_def(from_tensorflow(tf_written_graph_def), name="")
"""
from __future__ import annotations

import logging
from typing import Any

from tensorweave.framework.op_def import get_op_def, registered_ops
from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tf_graph_compat import _output_counts
from tensorweave.framework.tf_op_signatures import SIGNATURES

_log = logging.getLogger("tensorweave.framework.tf_graph_import_compat")


def _flat_output_refs(fdef: Any) -> None:
    """TF's "node:<arg>:<j>" function references as our "node:output:<flat index>"."""
    nodes = {n.name: n for n in fdef.node_def}

    def ref(r: str) -> str:
        parts = r.split(":")
        node = nodes.get(parts[0])
        if r.startswith("^") or len(parts) != 3 or node is None or node.op not in SIGNATURES:
            return r
        out_args = SIGNATURES[node.op][1]
        flat = 0
        for arg, count in zip(out_args, _output_counts(out_args, node)):
            if arg[0] == parts[1]:
                return f"{parts[0]}:output:{flat + int(parts[2])}"
            flat += count
        return r

    for n in fdef.node_def:
        n.input[:] = [ref(i) for i in n.input]
    for key in list(fdef.ret):
        fdef.ret[key] = ref(fdef.ret[key])


def _list_lengths(node: Any, op_def: Any) -> None:
    """Sets our list-length attrs ("N_<input>") from TF's, for ops with several list inputs.

    Our inputs follow TF's order; lists of ours past TF's args (While's max_iter)
    are empty.
    """
    lists = [s for s in op_def.inputs if s.is_list]
    if len(lists) < 2 or node.op not in SIGNATURES:
        return
    tf_args = SIGNATURES[node.op][0]
    for i, spec in enumerate(op_def.inputs):
        key = op_def.list_attr(spec.name)
        if not spec.is_list or key in node.attr:
            continue
        count = _output_counts((tf_args[i],), node)[0] if i < len(tf_args) else 0
        node.attr[key].i = count


# TF's resource-variable ops (TF 1.15 Keras layers make resource variables) and the
# reference-variable ops with the same effect, which tensorweave has.
_RESOURCE_OPS = {"VarHandleOp": "VariableV2", "ReadVariableOp": "Identity",
                 "AssignVariableOp": "Assign", "AssignAddVariableOp": "AssignAdd",
                 "AssignSubVariableOp": "AssignSub", "VarIsInitializedOp": "IsVariableInitialized",
                 "ResourceGather": "GatherV2"}


def _from_resource_ops(gd: Any) -> None:
    extra = []
    for node in gd.node:
        new = _RESOURCE_OPS.get(node.op)
        if new is None:
            continue
        if node.op == "ResourceGather":   # GatherV2 takes the axis as an input
            if node.attr["batch_dims"].i:
                continue   # no equivalent: stays unknown
            axis = graph_pb2.NodeDef(name=node.name + "/axis", op="Const")
            axis.attr["dtype"].type = graph_pb2.DT_INT32
            axis.attr["value"].tensor.dtype = graph_pb2.DT_INT32
            axis.attr["value"].tensor.int_val.append(0)
            axis.attr["value"].tensor.tensor_shape.SetInParent()
            extra.append(axis)
            data = [i for i in node.input if not i.startswith("^")]
            ctrl = [i for i in node.input if i.startswith("^")]
            node.input[:] = data + [axis.name] + ctrl
        node.op = new
    gd.node.extend(extra)


# TF's resource-handle lookup tables (what TF 1.15's lookup ops, and our exports of
# VocabularyLookup, build) as the reference-handle table ops tensorweave has.
_TABLE_OPS = {"HashTableV2": "HashTable", "LookupTableFindV2": "LookupTableFind",
              "InitializeTableV2": "InitializeTable", "LookupTableSizeV2": "LookupTableSize",
              "InitializeTableFromTextFileV2": "InitializeTableFromTextFile",
              # mutable tables (and our EmbeddingVariable exports' id tables)
              "MutableHashTableV2": "MutableHashTable",
              "MutableHashTableOfTensorsV2": "MutableHashTableOfTensors",
              "LookupTableInsertV2": "LookupTableInsert",
              "LookupTableRemoveV2": "LookupTableRemove",
              "LookupTableExportV2": "LookupTableExport",
              "LookupTableImportV2": "LookupTableImport"}


def _from_table_and_cross_ops(gd: Any) -> None:
    """TF's V2 table ops as ours; a hashed SparseCross without dense inputs (what TF's
    crossed_column builds, and our SparseFeatureCross exports as) as SparseFeatureCross.

    A SparseCross of another kind (string output, dense inputs) stays as it is.
    """
    for node in list(gd.node) + [n for f in gd.library.function for n in f.node_def]:
        if node.op in _TABLE_OPS:
            node.op = _TABLE_OPS[node.op]
        elif node.op == "SparseCross" and node.attr["hashed_output"].b and \
                not node.attr["dense_types"].list.type:
            cross = get_op_def("SparseFeatureCross")
            n = node.attr["N"].i
            node.op = "SparseFeatureCross"
            for arg in ("indices", "values", "shapes"):
                node.attr[cross.list_attr(arg)].i = n


def _stand_ins(gd: Any, ours: dict[str, Any]) -> list[str]:
    """Replaces nodes of ops we lack by Placeholders, or drops them if nothing reads them.

    A TF-written graph may compute initial values with ops tensorweave does not have
    (e.g. stateless random ops); after a restore they never run. A stand-in keeps the
    graph whole: running it fails asking for a value to feed.

    Raises:
        ValueError: naming the ops, if an unknown multi-output node is still read.
    """
    changed: list[str] = []
    while True:
        read = {i.lstrip("^").split(":")[0] for n in gd.node for i in n.input}
        unknown = [n for n in gd.node if n.op not in ours]
        gone = {n.name for n in unknown if n.name not in read}
        if gone:
            kept = [n for n in gd.node if n.name not in gone]
            del gd.node[:]
            gd.node.extend(kept)
            changed += sorted(gone)
            continue
        replaceable = [(n, _single_output_type(n)) for n in unknown]
        replaceable = [(n, t) for n, t in replaceable if t is not None]
        if not replaceable:
            if unknown:
                raise ValueError(f"Node {unknown[0].name!r} has op type {unknown[0].op!r}, "
                                 "which tensorweave does not implement, and other nodes read "
                                 "it.")
            return changed
        for n, dtype in replaceable:
            shapes = n.attr["_output_shapes"].list.shape if "_output_shapes" in n.attr else []
            shape = graph_pb2.TensorShapeProto(unknown_rank=not shapes)
            if shapes:
                shape.CopyFrom(shapes[0])
            n.op = "Placeholder"
            n.input[:] = []
            for k in list(n.attr):
                del n.attr[k]
            n.attr["dtype"].type = dtype
            n.attr["shape"].shape.CopyFrom(shape)
            changed.append(n.name)


def _single_output_type(n: Any) -> Any:
    """The output dtype of a node with one output, if its attrs tell; else None."""
    if "_output_shapes" in n.attr and len(n.attr["_output_shapes"].list.shape) != 1:
        return None
    return next((n.attr[k].type for k in ("dtype", "T", "out_type", "DstT")
                 if k in n.attr and n.attr[k].WhichOneof("value") == "type"), None)


def from_tensorflow(graph_def: Any, stand_ins: bool = False) -> Any:
    """A copy of a TF-written GraphDef that our importer can create.

    Resource-variable ops become their reference-variable equivalents
    (VarHandleOp -> VariableV2, ReadVariableOp -> Identity, AssignVariableOp ->
    Assign, ...), TF's V2 lookup tables our table ops (HashTableV2 -> HashTable,
    ...), a hashed SparseCross our SparseFeatureCross; attrs TF derives that our
    ops do not take are removed ("_" attrs and list lengths stay). With
    `stand_ins`, nodes of ops we do not have are dropped when nothing reads them,
    else replaced by Placeholders (logged); without, they stay and the importer
    names them.

    Example:
        >>> tf.import_graph_def(from_tensorflow(tf_written_graph_def), name="")
    """
    out = graph_pb2.GraphDef()
    out.ParseFromString(graph_def.SerializeToString())
    for fdef in out.library.function:
        _flat_output_refs(fdef)
    _from_resource_ops(out)
    _from_table_and_cross_ops(out)
    ours = registered_ops()
    if stand_ins:
        replaced = _stand_ins(out, ours)
        if replaced:
            _log.warning("Nodes of ops tensorweave does not have, left out or replaced by "
                         "placeholders (they are not needed to restore and serve): %s",
                         replaced[:20])
    for node in list(out.node) + [n for f in out.library.function for n in f.node_def]:
        if node.op not in ours:
            continue
        op_def = get_op_def(node.op)
        lengths = {op_def.list_attr(s.name) for s in op_def.inputs if s.is_list}
        _list_lengths(node, op_def)
        for key in list(node.attr):
            if key.startswith("_") or key in op_def.attrs or key in lengths:
                continue
            del node.attr[key]
    return out


__all__ = ["from_tensorflow"]
