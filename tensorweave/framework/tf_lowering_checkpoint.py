"""Our checkpoint ops written as the TF ops of TF's Saver graphs.

`tf.train.Saver` (ours, default format) builds a consistent-snapshot save:
GatePause -> Identity copies -> GateResume -> SaveShard per task -> MergeCheckpoint,
and a restore of one RestoreShard per task. At export they become what TF's own
Saver builds, writing and reading TF's tensor bundle (framework/tensor_bundle.py):

- GatePause / GateResume: dropped; a node that waited on one waits on what the
  gate waited on instead (pausing other tasks' updates has no TF equivalent; TF's
  Saver copies without it);
- SaveShard (and an incremental Saver's SaveShardDelta, saving whole) of a
  single-shard save: SaveV2(prefix, names, shape_and_slices, tensors) then
  Identity(prefix) (TF's non-sharded save); of a sharded save:
  StringJoin(prefix, "_temp_<hex>/part") -> ShardedFilename(tmp, shard, n) ->
  SaveV2 -> Identity(filename) on the shard's device (TF's sharded save);
- MergeCheckpoint: Pack(shard files) -> MergeV2Checkpoints(files, prefix,
  delete_old_dirs) -> Identity(prefix); for one shard, Identity(prefix) alone;
- RestoreShard: RestoreV2(prefix, names, shape_and_slices) -> one Assign per
  variable -> NoOp (the node's name) after them.

A slice of a partitioned variable is saved under its full variable's name with
TF's shape_and_slice ("10 4 0,5:0,4"), so TF's Saver restores the partitions.

Example:
    >>> nodes = LOWERINGS["SaveShard"](node, graph.get_operation_by_name(node.name))
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Callable

from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tensor_bundle import slice_json_to_shape_and_slice
from tensorweave.framework.tf_lowering_nodes import NodeBuilder, TypeList

_STR, _I32 = graph_pb2.DT_STRING, graph_pb2.DT_INT32


def _names_and_specs(op: Any) -> tuple[list[str], list[str]]:
    names, slices = list(op.get_attr("names")), list(op.get_attr("slices"))
    keys = [json.loads(s)["full_name"] if s else n for n, s in zip(names, slices)]
    return keys, [slice_json_to_shape_and_slice(s) for s in slices]


def _dtypes(tensors: Any) -> TypeList:
    return TypeList(int(t.dtype.base_dtype.as_datatype_enum) for t in tensors)


def _gate(node: Any, op: Any) -> list[Any]:
    return []   # dropped: lower_for_tensorflow rewires its control edges


def _save_shard(node: Any, op: Any) -> list[Any]:
    b = NodeBuilder(node)
    # SaveShardDelta (an incremental Saver's) saves whole here: its `lineage` input (what
    # to leave out of an incremental save) has no TF equivalent.
    first = 2 if node.op == "SaveShardDelta" else 1
    prefix, tensors = node.input[0], [i for i in node.input[first:] if not i.startswith("^")]
    keys, specs = _names_and_specs(op)
    n = int(op.get_attr("num_shards"))
    target = prefix
    if n > 1:   # TF's sharded layout: a temporary prefix, merged into `prefix` after
        # One suffix for all shards of a save (from its prefix input): the parts share
        # one temporary directory, which MergeV2Checkpoints removes.
        suffix = f"_temp_{uuid.uuid5(uuid.NAMESPACE_OID, prefix).hex}/part"
        tmp = b.add("StringJoin", "StringJoin", [prefix, b.const("suffix", suffix, _STR)], N=2,
                    separator="")
        target = b.add("ShardedFilename", "ShardedFilename",
                       [tmp, b.const("shard", int(op.get_attr("shard"))),
                        b.const("num_shards", n)])
    save = b.add("SaveV2", "SaveV2", [target, b.const("tensor_names", keys, _STR),
                                      b.const("shape_and_slices", specs, _STR)] + tensors,
                 dtypes=_dtypes(op.inputs[first:]))
    b.add(None, "Identity", [target, "^" + save], T=_STR)
    return b.nodes


def _merge(node: Any, op: Any) -> list[Any]:
    b = NodeBuilder(node)
    prefix, shards = node.input[0], [i for i in node.input[1:] if not i.startswith("^")]
    if len(shards) == 1:   # a single-shard save wrote the checkpoint at `prefix` itself
        b.add(None, "Identity", [prefix, "^" + shards[0].split(":")[0]], T=_STR)
        return b.nodes
    packed = b.add("checkpoint_prefixes", "Pack", shards, N=len(shards), T=_STR, axis=0)
    merge = b.add("MergeV2Checkpoints", "MergeV2Checkpoints", [packed, prefix],
                  delete_old_dirs=True, allow_missing_files=False)
    b.add(None, "Identity", [prefix, "^" + merge], T=_STR)
    return b.nodes


def _restore_shard(node: Any, op: Any) -> list[Any]:
    b = NodeBuilder(node)
    prefix, refs = node.input[0], [i for i in node.input[1:] if not i.startswith("^")]
    keys, specs = _names_and_specs(op)
    restore = b.add("RestoreV2", "RestoreV2", [prefix, b.const("tensor_names", keys, _STR),
                                               b.const("shape_and_slices", specs, _STR)],
                    dtypes=_dtypes(op.inputs[1:]))
    assigns = []
    for i, (ref, t) in enumerate(zip(refs, op.inputs[1:])):
        shape = t.shape
        assigns.append("^" + b.add(f"Assign_{i}" if i else "Assign", "Assign",
                                   [ref, f"{restore}:{i}" if i else restore],
                                   T=int(t.dtype.base_dtype.as_datatype_enum),
                                   validate_shape=bool(shape is not None and
                                                       shape.is_fully_defined())))
    b.add(None, "NoOp", assigns)
    return b.nodes


LOWERINGS: dict[str, Callable[[Any, Any], list[Any]]] = {
    "GatePause": _gate,
    "GateResume": _gate,
    "SaveShard": _save_shard,
    "SaveShardDelta": _save_shard,
    "MergeCheckpoint": _merge,
    "RestoreShard": _restore_shard,
}

__all__ = ["LOWERINGS"]
