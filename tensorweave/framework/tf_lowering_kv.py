"""DeepRec's EmbeddingVariable ops written as stock TF ops, so a served model looks ids up.

Stock TensorFlow has no table that grows with the ids it sees, but it has the two halves
of one: a `MutableHashTableV2` (id -> row) and a variable of rows. An EmbeddingVariable
`emb` of dimension d is exported as

- KvVariable -> `emb/id_table` (MutableHashTableV2: int64 or string id -> int64 row; int32
  ids are cast to int64, as TF's integer tables are) and `emb` (a VariableV2 of rows: row 0
  the value of an id the table lacks, `default_value_no_permission`, then one row per
  id). An optimizer slot (`emb/Adagrad`) is a VariableV2 on the same rows; it has no
  table of its own (its checkpoint lists the ids in its variable's order: both are
  saved in row order).
- KvRestore (the Saver's restore) -> RestoreV2 of `<name>-keys` and `<name>-values` (the
  variables/ checkpoint keeps DeepRec's layout: `-keys`, `-values`, `-freqs`,
  `-versions`), then LookupTableImportV2(table, keys, 1..n) and Assign(emb,
  Concat(row 0, values), validate_shape=False); KvImport the same without the RestoreV2.
- KvGather (a lookup) -> LookupTableFindV2(table, ids, 0) -> GatherV2(emb, rows): a known
  id reads its trained row, an unknown one row 0. Nothing is admitted at serving time:
  the table does not grow, frequencies and versions are not counted, and a new id reads
  `default_value_no_permission` (0.0 unless set), as an id not admitted yet reads in
  training. (Its initializer's default rows are not served: they are drawn at
  initialization and are not in the checkpoint, so they could not be reproduced.)
- KvExport (the Saver's save) -> LookupTableExportV2(table) -> the keys, GatherV2 of
  their rows, freqs 0 and versions -1 (the served table counts neither).
- KvInitialize -> LookupTableRemoveV2 of every id, and Assign(emb, row 0).

The rows a lookup returns as its second output are the table's rows, so the gradient
ops of an exported training graph stay valid TF; they are not a way to train the table
in TF (new ids are not admitted). Inside a function body (a tf.cond branch) the table
cannot be named: such a lookup stays unlowered, for the exporter to prune or name.

Example:
    >>> nodes = LOWERINGS["KvGather"](node, graph.get_operation_by_name(node.name))
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tf_lowering_nodes import NodeBuilder, TypeList

_I32, _I64, _STR = graph_pb2.DT_INT32, graph_pb2.DT_INT64, graph_pb2.DT_STRING

# The part name of an EmbeddingVariable's id -> row table in an export.
ID_TABLE = "id_table"


def _dtype(t: Any) -> int:
    return int(t.dtype.base_dtype.as_datatype_enum)


def _variable(op: Any) -> Any:
    """The KvVariable behind a Kv op's first input, or None (a function body's argument)."""
    var = op.inputs[0].op
    return var if var.type == "KvVariable" and var.graph is op.graph else None


def _table_of(var: Any) -> str:
    """The name of the id table an EmbeddingVariable (or its slot's primary) exports."""
    primary = var.get_attr("primary")
    return f"{primary or var.name}/{ID_TABLE}"


def _key_types(var: Any) -> tuple[int, int]:
    """(the variable's key DataType, the table's: int64 for any integer key)."""
    key = int(_as_enum(var.get_attr("key_dtype")))
    return key, (_STR if key == _STR else _I64)


def _as_enum(dtype: Any) -> int:
    return int(getattr(dtype, "as_datatype_enum", dtype))


def _no_permission(var: Any) -> float:
    """What an id the table lacks reads: its KvInitialize's `no_permission` (0.0)."""
    for reader in var.outputs[0].consumers():
        if reader.type == "KvInitialize":
            return float(reader.get_attr("no_permission"))
    return 0.0


def _row_zero(b: NodeBuilder, var: Any, no_permission: float) -> str:
    """[1, dim] of `no_permission`: the row an unknown id reads."""
    dtype = var.outputs[0].dtype.base_dtype
    t = int(dtype.as_datatype_enum)
    # tensor_content: the scalar in the rows' own type, whichever floating type it is
    proto = graph_pb2.TensorProto(dtype=t)  # type: ignore[arg-type]
    proto.tensor_shape.SetInParent()
    proto.tensor_content = np.asarray(no_permission, dtype.as_numpy_dtype).tobytes()
    value = b.add("no_permission", "Const", [], dtype=t, value=proto)
    return b.add("row_zero", "Fill", [b.const("row_zero_shape", [1, _dim(var)]), value],
                 T=t, index_type=_I32)


def _dim(var: Any) -> int:
    return int(var.get_attr("dim"))


# ---- KvVariable ----------------------------------------------------------------------
def _kv_variable(node: Any, op: Any) -> list[Any]:
    b = NodeBuilder(node)
    if not op.get_attr("primary"):   # (a slot has none: it reads its variable's table)
        _, table_key = _key_types(op)
        b.add(ID_TABLE, "MutableHashTableV2", [], container="", shared_name="",
              use_node_name_sharing=True, key_dtype=table_key, value_dtype=_I64)
    name = b.add(None, "VariableV2", [], dtype=_dtype(op.outputs[0]), container="",
                 shared_name="")
    # Unknown rank: TF's VariableV2 kernel refuses a partly known shape ([?, dim]); its
    # size is the restore's (Assign with validate_shape=False).
    shape = next(n for n in b.nodes if n.name == name).attr["shape"].shape
    shape.unknown_rank = True
    return b.nodes


# ---- KvRestore / KvImport ------------------------------------------------------------
def _put_back(b: NodeBuilder, var: Any, ref: str, keys: str, values: str) -> None:
    """Fills the table with `keys` -> 1..n and the variable with row 0, then `values`;
    the node's own name goes to a NoOp after both. Both wait for the node's control
    inputs (a Saver's restore waits for the table's KvInitialize, which forgets ids)."""
    done = [_assign_rows(b, var, ref, values)]
    if not var.get_attr("primary"):
        key, table_key = _key_types(var)
        if key != table_key:
            keys = b.add("keys_int64", "Cast", [keys], SrcT=key, DstT=table_key,
                         Truncate=False)
        n = b.add("num_keys", "Size", [keys], T=table_key, out_type=_I64)
        one = b.const("one", 1, _I64)
        rows = b.add("rows", "Range", [one, b.add("past_last", "AddV2", [n, one], T=_I64),
                                       b.const("delta", 1, _I64)], Tidx=_I64)
        done.append(b.add("import", "LookupTableImportV2",
                          [_table_of(var), keys, rows] + b.ctrl, Tin=table_key, Tout=_I64))
    b.add(None, "NoOp", ["^" + d for d in done])


def _assign_rows(b: NodeBuilder, var: Any, ref: str, values: str) -> str:
    t = _dtype(var.outputs[0])
    rows = b.add("all_rows", "ConcatV2", [_row_zero(b, var, _no_permission(var)), values,
                                          b.const("axis", 0)], N=2, T=t, Tidx=_I32)
    return b.add("assign", "Assign", [ref, rows] + b.ctrl, T=t, validate_shape=False,
                 use_locking=True)


def _kv_restore(node: Any, op: Any) -> list[Any] | None:
    var = _variable(op)
    if var is None:
        return None
    b = NodeBuilder(node)
    ref, prefix = node.input[0], node.input[1]
    names = [f"{var.name}-keys", f"{var.name}-values"]
    key, _ = _key_types(var)
    restore = b.add("RestoreV2", "RestoreV2", [prefix, b.const("tensor_names", names, _STR),
                                               b.const("shape_and_slices", ["", ""], _STR)],
                    dtypes=TypeList([key, _dtype(var.outputs[0])]))
    _put_back(b, var, ref, restore, f"{restore}:1")
    return b.nodes


def _kv_import(node: Any, op: Any) -> list[Any] | None:
    var = _variable(op)
    if var is None:
        return None
    b = NodeBuilder(node)
    ref, keys, values = node.input[:3]
    _put_back(b, var, ref, keys, values)
    return b.nodes


# ---- KvGather ------------------------------------------------------------------------
def _kv_gather(node: Any, op: Any) -> tuple[list[Any], dict[str, str]] | None:
    var = _variable(op)
    if var is None:
        return None
    b = NodeBuilder(node)
    ref, ids = node.input[0], node.input[1]
    _, table_key = _key_types(var)
    if _dtype(op.inputs[1]) != table_key:
        ids = b.add("ids_int64", "Cast", [ids], SrcT=_dtype(op.inputs[1]), DstT=table_key,
                    Truncate=False)
    rows = b.add("rows", "LookupTableFindV2",
                 [_table_of(var), ids, b.const("unknown_row", 0, _I64)],
                 Tin=table_key, Tout=_I64)
    b.add(None, "GatherV2", [ref, rows, b.const("axis", 0)], Tparams=_dtype(op.outputs[0]),
          Tindices=_I64, Taxis=_I32, batch_dims=0)
    return b.nodes, {f"{node.name}:1": rows}


# ---- KvExport ------------------------------------------------------------------------
def _kv_export(node: Any, op: Any) -> tuple[list[Any], dict[str, str]] | None:
    var = _variable(op)
    if var is None:
        return None
    b = NodeBuilder(node)
    key, table_key = _key_types(var)
    export = b.add("export", "LookupTableExportV2", [_table_of(var)] + b.ctrl,
                   Tkeys=table_key, Tvalues=_I64)
    values = b.add("values", "GatherV2", [node.input[0], f"{export}:1", b.const("axis", 0)],
                   Tparams=_dtype(op.outputs[1]), Tindices=_I64, Taxis=_I32, batch_dims=0)
    count = b.add("count", "Shape", [f"{export}:1"], T=_I64, out_type=_I32)
    freqs = b.add("freqs", "Fill", [count, b.const("freq", 0, _I64)], T=_I64,
                  index_type=_I32)
    versions = b.add("versions", "Fill", [count, b.const("version", -1, _I64)], T=_I64,
                     index_type=_I32)
    if key != table_key:
        b.add(None, "Cast", [export], SrcT=table_key, DstT=key, Truncate=False)
    else:
        b.add(None, "Identity", [export], T=key)
    return b.nodes, {f"{node.name}:1": values, f"{node.name}:2": freqs,
                     f"{node.name}:3": versions}


# ---- KvInitialize --------------------------------------------------------------------
def _kv_initialize(node: Any, op: Any) -> list[Any] | None:
    var = _variable(op)
    if var is None:
        return None
    b = NodeBuilder(node)
    t, ctrl = _dtype(op.outputs[0]), []
    if not var.get_attr("primary"):   # (re-)initializing forgets the ids, as KvInitialize
        _, table_key = _key_types(var)
        table = _table_of(var)
        export = b.add("export", "LookupTableExportV2", [table] + b.ctrl, Tkeys=table_key,
                       Tvalues=_I64)
        ctrl = ["^" + b.add("forget", "LookupTableRemoveV2", [table, export],
                            Tin=table_key)]
    row = _row_zero(b, var, float(op.get_attr("no_permission")))
    b.add(None, "Assign", [node.input[0], row] + ctrl, T=t, validate_shape=False,
          use_locking=True)
    return b.nodes


LOWERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "KvVariable": _kv_variable,
    "KvInitialize": _kv_initialize,
    "KvGather": _kv_gather,
    "KvExport": _kv_export,
    "KvImport": _kv_import,
    "KvRestore": _kv_restore,
}

__all__ = ["ID_TABLE", "LOWERINGS"]
