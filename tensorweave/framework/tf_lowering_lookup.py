"""Our fused feature-column ops written as the TF ops TF's feature columns build.

- SparseFeatureCross(indices*, values*, shapes*) = TF's SparseCross with
  hashed_output=True, the same num_buckets and hash_key, no dense inputs (the ids
  are TF's, see ops/lookup/cross_ops.py); int32 values are cast to int64 first,
  as TF's SparseCross takes only int64 and string;
- VocabularyLookup(keys) = what TF's index_table_from_tensor builds: a
  HashTableV2 from the vocabulary to its positions, initialized by an
  InitializeTableV2 (a table initializer: `table_initializers` names them, and
  the exporters run them as TF's tables_initializer would be), read by
  LookupTableFindV2; with num_oov_buckets, a key the table lacks gets
  vocab_size + StringToHashBucketFast(key) (integer keys as their decimal
  string, AsString), chosen by Select where the table gave -1;
- ShardIds(ids) = what TF's embedding_lookup builds to split ids by shard: each
  id's shard and row ("mod": FloorMod/FloorDiv; "div": TF's Maximum/FloorDiv/
  Select arithmetic), then two DynamicPartitions (rows; positions from Range).
  The positions' outputs move to the second one: its readers are rewired.

Example:
    >>> nodes = LOWERINGS["VocabularyLookup"](node, graph.get_operation_by_name(node.name))
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tf_lowering_nodes import NodeBuilder, TypeList

_STR, _I64, _BOOL = graph_pb2.DT_STRING, graph_pb2.DT_INT64, graph_pb2.DT_BOOL

# The part name of the table initializer a VocabularyLookup lowers to.
TABLE_INIT = "table_init"
TABLE_INITIALIZERS = "table_initializer"   # GraphKeys.TABLE_INITIALIZERS


def _dtype(t: Any) -> int:
    return int(t.dtype.base_dtype.as_datatype_enum)


def _cross(node: Any, op: Any) -> list[Any]:
    b = NodeBuilder(node)
    data = [i for i in node.input if not i.startswith("^")]
    k = len(data) // 3
    indices, values, shapes = data[:k], data[k:2 * k], data[2 * k:]
    types = []
    for i, t in enumerate(op.inputs[k:2 * k]):
        if _dtype(t) == _STR or _dtype(t) == _I64:
            types.append(_dtype(t))
        else:   # TF's SparseCross takes int64 and string values only
            values[i] = b.add(f"values_{i}_int64", "Cast", [values[i]], SrcT=_dtype(t),
                              DstT=_I64, Truncate=False)
            types.append(_I64)
    b.add(None, "SparseCross", indices + values + shapes, N=k, hashed_output=True,
          num_buckets=int(op.get_attr("num_buckets")), hash_key=int(op.get_attr("hash_key")),
          sparse_types=TypeList(types), dense_types=TypeList(), out_type=_I64,
          internal_type=_I64)
    return b.nodes


def _vocabulary(node: Any, op: Any) -> list[Any]:
    b = NodeBuilder(node)
    keys, key_type = node.input[0], _dtype(op.inputs[0])
    vocab = list(op.get_attr("vocabulary"))
    default, oov = int(op.get_attr("default_value")), int(op.get_attr("num_oov_buckets"))
    table_type = _STR if key_type == _STR else _I64
    if key_type not in (_STR, _I64):   # TF's integer tables are int64-keyed
        keys = b.add("keys_int64", "Cast", [keys], SrcT=key_type, DstT=_I64, Truncate=False)
    table = b.add("hash_table", "HashTableV2", [], container="", shared_name="",
                  use_node_name_sharing=False, key_dtype=table_type, value_dtype=_I64)
    b.add(TABLE_INIT, "InitializeTableV2",
          [table, b.const("table_keys", vocab, table_type),
           b.const("table_values", list(range(len(vocab))), _I64)],
          Tkey=table_type, Tval=_I64)
    missing = -1 if oov else default
    found = b.add(None if not oov else "hash_table_Lookup", "LookupTableFindV2",
                  [table, keys, b.const("default_value", missing, _I64)],
                  Tin=table_type, Tout=_I64)
    if not oov:
        return b.nodes
    text = keys if table_type == _STR else b.add(
        "to_string", "AsString", [keys], T=_I64, precision=-1, scientific=False,
        shortest=False, width=-1, fill="")
    bucket = b.add("hash_bucket", "StringToHashBucketFast", [text], num_buckets=oov)
    shifted = b.add("hash_bucket_shifted", "AddV2",
                    [bucket, b.const("vocab_size", len(vocab), _I64)], T=_I64)
    hit = b.add("is_in_vocabulary", "NotEqual", [found, b.const("missing", -1, _I64)],
                T=_I64, incompatible_shape_error=True)
    b.add(None, "Select", [hit, found, shifted], T=_I64)
    return b.nodes


def _shard_ids(node: Any, op: Any) -> tuple[list[Any], dict[str, str]]:
    b = NodeBuilder(node)
    ids, t = node.input[0], _dtype(op.inputs[0])
    n, total = int(op.get_attr("num_shards")), int(op.get_attr("total_rows"))

    def num(part: str, v: int) -> str:
        return b.const(part, v, t) if t in (_I64, graph_pb2.DT_INT32) else b.add(
            part, "Cast", [b.const(part + "_int64", v, _I64)], SrcT=_I64, DstT=t,
            Truncate=False)

    if op.get_attr("strategy") == "mod":   # TF's embedding_lookup, partition_strategy="mod"
        shard = b.add("shard", "FloorMod", [ids, num("num_shards", n)], T=t)
        row = b.add("row", "FloorDiv", [ids, num("num_shards_1", n)], T=t)
    else:   # "div": the first total % n shards hold one row more
        per, extras = divmod(total, n)
        shard = b.add("shard", "Maximum", [
            b.add("shard_long", "FloorDiv", [ids, num("rows_long", per + 1)], T=t),
            b.add("shard_short", "FloorDiv", [
                b.add("ids_past_extras", "Sub", [ids, num("extras", extras)], T=t),
                num("rows_short", per)], T=t)], T=t)
        row = b.add("row", "Select", [
            b.add("in_long_shard", "Less", [shard, num("extras_1", extras)], T=t),
            b.add("row_long", "FloorMod", [ids, num("rows_long_1", per + 1)], T=t),
            b.add("row_short", "FloorMod", ["{}/ids_past_extras".format(node.name),
                                             num("rows_short_1", per)], T=t)], T=t)
    i32 = graph_pb2.DT_INT32
    shard = b.add("shard_int32", "Cast", [shard], SrcT=t, DstT=i32, Truncate=False)
    positions = b.add("positions", "Range", [
        b.const("zero", 0), b.add("size", "Size", [ids], T=t, out_type=i32), b.const("one", 1)],
        Tidx=i32)
    b.add("position_parts", "DynamicPartition", [positions, shard], T=i32, num_partitions=n)
    b.add(None, "DynamicPartition", [row, shard], T=t, num_partitions=n)
    # Outputs n..2n-1 (the positions) are the second partition's.
    renames = {f"{node.name}:{n + j}": f"{node.name}/position_parts:{j}" for j in range(n)}
    if n == 1:
        renames[f"{node.name}:1"] = f"{node.name}/position_parts"
    return b.nodes, renames


def table_initializers(graph_def: Any) -> list[str]:
    """Names of the table initializers lowered VocabularyLookups made in `graph_def`."""
    return [n.name for n in graph_def.node
            if n.op == "InitializeTableV2" and n.name.endswith("/" + TABLE_INIT)]


def collect_table_initializers(meta_graph_def: Any) -> list[str]:
    """Lists the lowered tables' initializers in the MetaGraphDef's "table_initializer"
    collection (where TF's `tf.tables_initializer()` and Scaffold find them, as for
    TF's own tables); returns their names.

    Example:
        >>> mg = create_meta_graph_def(graph=g, tf_compatible=True)
        >>> collect_table_initializers(mg)
        ['city_lookup/table_init']
    """
    inits = table_initializers(meta_graph_def.graph_def)
    if inits:
        col = meta_graph_def.collection_def[TABLE_INITIALIZERS].node_list.value
        col.extend(i for i in inits if i not in col)
    return inits


LOWERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "ShardIds": _shard_ids,
    "SparseFeatureCross": _cross,
    "VocabularyLookup": _vocabulary,
}

__all__ = ["LOWERINGS", "TABLE_INIT", "collect_table_initializers", "table_initializers"]
