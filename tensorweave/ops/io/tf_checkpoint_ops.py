"""TensorFlow's own checkpoint ops, with TF's exact signatures: SaveV2, RestoreV2,
MergeV2Checkpoints, ShardedFilename, and the string ops TF's Saver graphs use
(StringJoin, StaticRegexFullMatch). They read and write TF's tensor-bundle format
(`framework/tensor_bundle.py`), so a graph with them is what real TF's Saver and
SavedModel loader expect, and a graph real TF wrote runs here.

`build_tf_save` / `build_tf_restore` lay them out as TF's non-sharded Saver does:
`save/SaveV2` -> `save/control_dependency` (the save tensor) and `save/RestoreV2`
-> `save/Assign*` -> `save/restore_all`.

Example:
    >>> save_t = build_tf_save(entries, filename)      # entries: io_ops.SaveEntry
    >>> restore = build_tf_restore(entries, filename)
    >>> sess.run(save_t, {filename: "/tmp/m/variables/variables"})
"""
from __future__ import annotations

import json
import os
import re
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework import file_access as _files
from tensorweave.framework import checkpoint_format as _io
from tensorweave.framework import tensor_bundle as _tb
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.framework.convert import constant


def _strs(v: Any) -> list[str]:
    return [x.decode() if isinstance(x, bytes) else str(x)
            for x in np.asarray(v, dtype=object).reshape(-1)]


def _str(v: Any) -> str:
    return _strs(v)[0]


def _policy(ctx: Any) -> Any:
    """The file policy of the kernel's device (framework/file_access.py)."""
    return ctx.library.device.file_policy


def _what(ctx: Any) -> str:
    return f"{ctx.type} {ctx.name} on {ctx.device}"


# ---- SaveV2 ------------------------------------------------------------------------
save_v2 = define_op("SaveV2", inputs=("prefix", "tensor_names", "shape_and_slices", "tensors*"),
                    attrs={"dtypes": REQUIRED}, stateful=True)


@save_v2.shape
def _(prefix: Tensor, tensor_names: Tensor, shape_and_slices: Tensor, tensors: list[Tensor],
      *, dtypes: list[Any]) -> list:
    if len(dtypes) != len(tensors):
        raise ValueError(f"SaveV2: dtypes lists {len(dtypes)} types for {len(tensors)} tensors")
    return []


@save_v2.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, prefix: Any, tensor_names: Any, shape_and_slices: Any,
      tensors: list[Any], *, dtypes: list[Any]) -> None:
    names, specs = _strs(tensor_names), _strs(shape_and_slices)
    p = _files.check_prefix(_policy(ctx), _str(prefix), "write", _what(ctx))
    if not (len(names) == len(specs) == len(tensors)):
        raise errors.InvalidArgumentError(None, None, f"SaveV2 to {p}: {len(names)} names, "
                                          f"{len(specs)} shape_and_slices, {len(tensors)} "
                                          "tensors; they must match")
    items = [(n, np.asarray(t), _tb.parse_shape_and_slice(s, n))
             for n, s, t in zip(names, specs, tensors)]
    try:
        _tb.write_bundle(p, items, [_dt.as_dtype(d) for d in dtypes])
    except OSError as e:
        raise errors.PermissionDeniedError(None, None, f"Cannot write checkpoint {p}: {e}. "
                                           "Check the directory exists and is writable."
                                           ) from None


save_v2.no_gradient()

# ---- RestoreV2 ---------------------------------------------------------------------
restore_v2 = define_op("RestoreV2", inputs=("prefix", "tensor_names", "shape_and_slices"),
                       attrs={"dtypes": REQUIRED}, stateful=True)


@restore_v2.shape
def _(prefix: Tensor, tensor_names: Tensor, shape_and_slices: Tensor, *,
      dtypes: list[Any]) -> list:
    return [(_dt.as_dtype(d), TensorShape(None)) for d in dtypes]


@restore_v2.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, prefix: Any, tensor_names: Any, shape_and_slices: Any, *,
      dtypes: list[Any]) -> Any:
    p = _files.check_prefix(_policy(ctx), _str(prefix), "read", _what(ctx))
    reader = _io.open_reader(p)   # TF's format or ours
    out = []
    for name, spec, dt in zip(_strs(tensor_names), _strs(shape_and_slices), dtypes):
        sl = _tb.parse_shape_and_slice(spec, name)
        value = reader.get_tensor(name) if sl is None else \
            reader.read_slice(name, sl[0], *_tb.slice_extent(sl[0], sl[1]))
        want = _dt.as_dtype(dt)
        if _dt.from_numpy(np.asarray(value)) != want and want != _dt.string:
            raise errors.InvalidArgumentError(
                None, None, f"tensor_name = {name}; expected dtype {want.name} does not "
                f"equal original dtype {_dt.from_numpy(np.asarray(value)).name} (checkpoint "
                f"{p}; RestoreV2 reads it for a variable of the other dtype)")
        out.append(np.asarray(value, dtype=object) if want == _dt.string else np.asarray(value))
    return out[0] if len(out) == 1 else out   # the executor takes one output unwrapped


restore_v2.no_gradient()

# ---- MergeV2Checkpoints, ShardedFilename ------------------------------------------
merge_v2 = define_op("MergeV2Checkpoints", inputs=("checkpoint_prefixes", "destination_prefix"),
                     attrs={"delete_old_dirs": True, "allow_missing_files": False},
                     stateful=True)


@merge_v2.shape
def _(checkpoint_prefixes: Tensor, destination_prefix: Tensor, *, delete_old_dirs: bool,
      allow_missing_files: bool) -> list:
    return []


@merge_v2.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, checkpoint_prefixes: Any, destination_prefix: Any, *,
      delete_old_dirs: bool, allow_missing_files: bool) -> None:
    # The sources are read, renamed and (delete_old_dirs) removed: writes, all of them.
    prefixes = [_files.check_prefix(_policy(ctx), p, "write", _what(ctx))
                for p in _strs(checkpoint_prefixes)]
    dest = _files.check_prefix(_policy(ctx), _str(destination_prefix), "write", _what(ctx))
    if allow_missing_files:
        prefixes = [p for p in prefixes if os.path.exists(_tb.index_filename(p))]
    _tb.merge_bundles(prefixes, dest, delete_old_dirs)


merge_v2.no_gradient()

sharded_filename = define_op("ShardedFilename", inputs=("basename", "shard", "num_shards"))


@sharded_filename.shape
def _(basename: Tensor, shard: Tensor, num_shards: Tensor) -> Any:
    return _dt.string, TensorShape([])


@sharded_filename.kernel("CPU")
def _(basename: Any, shard: Any, num_shards: Any) -> np.ndarray:
    name = f"{_str(basename)}-{int(shard):05d}-of-{int(num_shards):05d}"
    return np.asarray(name.encode(), dtype=object)


sharded_filename.no_gradient()

# ---- the string ops of TF's sharded Saver graph -----------------------------------
string_join = define_op("StringJoin", inputs=("inputs*",), attrs={"separator": ""})


@string_join.shape
def _(inputs: list[Tensor], *, separator: str) -> Any:
    shape = TensorShape([])
    for t in inputs:
        if t.shape.ndims != 0:
            shape = t.shape if shape.ndims == 0 else shape.merge_with(t.shape)
    return _dt.string, shape


@string_join.kernel("CPU")
def _(inputs: list[Any], *, separator: str) -> np.ndarray:
    arrs = np.broadcast_arrays(*[np.asarray(x, dtype=object) for x in inputs])
    sep = separator.encode() if isinstance(separator, str) else separator
    flat = [sep.join(x if isinstance(x, bytes) else str(x).encode() for x in parts)
            for parts in zip(*[a.reshape(-1) for a in arrs])]
    return np.asarray(flat, dtype=object).reshape(arrs[0].shape)


string_join.no_gradient()

regex_full_match = define_op("StaticRegexFullMatch", inputs=("input",),
                             attrs={"pattern": REQUIRED})


@regex_full_match.shape
def _(input: Tensor, *, pattern: str) -> Any:
    return _dt.bool, input.shape


@regex_full_match.kernel("CPU")
def _(input: Any, *, pattern: str) -> np.ndarray:
    # TF's patterns are RE2; the ones its Saver graphs use ("^s3://.*") read the same in re.
    rx = re.compile(pattern.decode() if isinstance(pattern, bytes) else pattern)
    arr = np.asarray(input, dtype=object)
    flat = [rx.fullmatch(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))
            is not None for v in arr.reshape(-1)]
    return np.asarray(flat, dtype=bool).reshape(arr.shape)


regex_full_match.no_gradient()


# ---- graph builders (TF's Saver layouts) --------------------------------
def _key(e: Any) -> str:
    return json.loads(e.slice_spec)["full_name"] if e.slice_spec else e.name


def _groups(entries: list[Any], sharded: bool) -> list[list[Any]]:
    """One group per device (sorted) when sharded, else all entries together."""
    if not sharded:
        return [list(entries)]
    by_dev: dict[str, list[Any]] = {}
    for e in entries:
        by_dev.setdefault(e.ref.op.device, []).append(e)
    return [by_dev[d] for d in sorted(by_dev)]


def _save_v2(prefix: Tensor, entries: list[Any]) -> Operation:
    names = constant([_key(e) for e in entries], name="SaveV2/tensor_names")
    specs = constant([_tb.slice_json_to_shape_and_slice(e.slice_spec) for e in entries],
                     name="SaveV2/shape_and_slices")
    return prefix.graph.create_op("SaveV2", [prefix, names, specs, [e.ref for e in entries]],
                                  {"dtypes": [e.ref.dtype.base_dtype for e in entries]},
                                  name="SaveV2")


def build_tf_save(entries: list[Any], filename: Tensor, sharded: bool = False) -> Tensor:
    """Saves every entry to `filename`; returns the save tensor (the prefix, once written).

    Sharded (TF's sharded layout): each device's variables are saved on that
    device into `<prefix>_temp/part-<i>-of-<n>`, then MergeV2Checkpoints joins
    the parts into one checkpoint at the prefix and removes the temporary dir.
    """
    g = filename.graph
    if not sharded:
        save = _save_v2(filename, entries)
        with g.control_dependencies([save]):
            return g.create_op("Identity", [filename], name="control_dependency").outputs[0]
    groups = _groups(entries, True)
    tmp = g.create_op("StringJoin", [[filename, constant("_temp/part")]],
                      name="StringJoin").outputs[0]
    num = constant(len(groups), name="num_shards")
    parts = []
    for i, group in enumerate(groups):
        with g.colocate_with(group[0].ref.op):
            part = g.create_op("ShardedFilename", [tmp, constant(i, name="shard"), num],
                               name="ShardedFilename").outputs[0]
            with g.control_dependencies([_save_v2(part, group)]):
                parts.append(g.create_op("Identity", [part],
                                         name="control_dependency").outputs[0])
    packed = g.create_op("Pack", [parts], {"axis": 0},
                         name="MergeV2Checkpoints/checkpoint_prefixes").outputs[0]
    merge = g.create_op("MergeV2Checkpoints", [packed, filename], {"delete_old_dirs": True},
                        name="MergeV2Checkpoints")
    with g.control_dependencies([merge]):
        return g.create_op("Identity", [filename], name="Identity").outputs[0]


def build_tf_restore(entries: list[Any], filename: Tensor, sharded: bool = False,
                     reshape: bool = False, extra: list[Operation] | None = None
                     ) -> Operation:
    """RestoreV2 then one Assign per entry (per device when sharded); returns `restore_all`.

    With `reshape`, each restored tensor is reshaped to its variable's shape first (TF's
    Saver(reshape=True)).
    """
    g = filename.graph
    shards = []
    for group in _groups(entries, sharded):
        if not group:
            continue   # only custom saveables (`extra`) to restore
        where = group[0].ref.op if sharded else None
        with g.colocate_with(where, ignore_existing=where is None):
            names = constant([_key(e) for e in group], name="RestoreV2/tensor_names")
            specs = constant([_tb.slice_json_to_shape_and_slice(e.slice_spec) for e in group],
                             name="RestoreV2/shape_and_slices")
            restore = g.create_op("RestoreV2", [filename, names, specs],
                                  {"dtypes": [e.ref.dtype.base_dtype for e in group]},
                                  name="RestoreV2")
        assigns = []
        for e, value in zip(group, restore.outputs):
            with g.colocate_with(e.ref.op):
                shape = as_shape(e.ref.shape) if e.ref.shape is not None else TensorShape(None)
                if reshape and shape.is_fully_defined():
                    value = g.create_op("Reshape", [value, constant(shape.as_list(),
                                                                    dtype=_dt.int32)],
                                        name="Reshape").outputs[0]
                assigns.append(g.create_op("Assign", [e.ref, value],
                                           {"validate_shape": shape.is_fully_defined()},
                                           name="Assign"))
        if sharded:
            with g.control_dependencies(assigns):
                shards.append(g.create_op("NoOp", [], name="restore_shard"))
        else:
            shards += assigns
    with g.control_dependencies(shards + list(extra or [])):
        return g.create_op("NoOp", [], name="restore_all")


__all__ = ["build_tf_restore", "build_tf_save"]
