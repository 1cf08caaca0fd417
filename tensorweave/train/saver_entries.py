"""What a `tf.train.Saver` saves: checkpoint entries of its variables (and partitions).

A PartitionedVariable saves as its parts, "<name>/part_<i>", each a slice of
<name> (its SaveSliceInfo); a variable listed twice is saved once.

Example:
    >>> [e.name for e in save_entries(None)]
    ['global_step', 'w']
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.io import io_ops
from tensorweave.state.partitioned_variables import SaveSliceInfo
from tensorweave.train.saveable_object import SaveableObject


def _ref(var: Any) -> Tensor:
    ref = var._ref() if hasattr(var, "_ref") else var
    if not isinstance(ref, Tensor) or not ref.dtype.is_ref_dtype:
        raise TypeError(f"Variable to save is not a Variable: {var!r}. A Saver saves "
                        "tf.Variable objects (and partitioned variables); pass those.")
    return ref


def save_entries(var_list: Any) -> tuple[list[io_ops.SaveEntry], list[SaveableObject]]:
    """What a Saver over `var_list` saves: one entry per variable, partition or SaveSpec.

    Returns:
        (the entries, the SaveableObjects among them: restored through their
        own `restore()`, not assigned).

    Args:
        var_list: None (all global variables and SAVEABLE_OBJECTS), a list (saved
            under their op names) or a dict name -> variable.

    Raises:
        TypeError: for an object that is not a variable (named).
        ValueError: if two variables would be saved under one name.

    Example:
        >>> [e.name for e in save_entries({"weights": w})[0]]
        ['weights']
    """
    if var_list is None:
        g = get_default_graph()
        var_list = g.get_collection(GraphKeys.GLOBAL_VARIABLES) + \
            g.get_collection(GraphKeys.SAVEABLE_OBJECTS)
    items: list[tuple[str | None, Any]] = list(var_list.items()) \
        if isinstance(var_list, dict) else [(None, v) for v in var_list]
    out: dict[str, io_ops.SaveEntry] = {}
    saveables: list[SaveableObject] = []
    seen: set[int] = set()
    # An object saved through its own saveables (a MutableHashTable) stands for them,
    # as TF saves a trackable given in var_list.
    items = [(None, sv) if owner else (name, sv) for name, var in items
             for owner in [not isinstance(var, SaveableObject) and
                           hasattr(var, "saveable_objects")]
             for sv in (var.saveable_objects() if owner else [var])]
    for name, var in _expand_partitioned(items):
        if isinstance(var, SaveableObject):
            if id(var) not in seen:
                seen.add(id(var))
                saveables.append(var)
                for spec in var.specs:
                    _add(out, spec.name, io_ops.SaveEntry(spec.name, spec.tensor,
                                                          _no_slice(spec, var)))
            continue
        ref = _ref(var)
        if name is None and id(ref.op) in seen:
            continue  # the same variable twice in a collection list
        seen.add(id(ref.op))
        info = getattr(var, "_save_slice_info", None)
        key = name or ref.op.name
        if info is not None and name is not None and "/part_" in name:
            info = SaveSliceInfo(name.rsplit("/part_", 1)[0], info.full_shape,
                                 info.var_offset, info.var_shape)
        _add(out, key, io_ops.SaveEntry(key, ref, info.saver_spec() if info is not None else ""))
    return list(out.values()), saveables


def _add(out: dict[str, io_ops.SaveEntry], key: str, entry: io_ops.SaveEntry) -> None:
    if key in out:
        raise ValueError(f"Two variables would be saved as {key!r}; pass a dict name->var "
                         "to the Saver to give them distinct names.")
    out[key] = entry


def _no_slice(spec: Any, saveable: Any) -> str:
    if spec.slice_spec:
        raise ValueError(f"SaveableObject {saveable.name!r}: SaveSpec {spec.name!r} has the "
                         f"slice {spec.slice_spec!r}; tensorweave saves whole tensors of "
                         "saveables (partition the variables themselves instead).")
    return ""


def _expand_partitioned(items: list[tuple[str | None, Any]]) -> list[tuple[str | None, Any]]:
    # A PartitionedVariable saves as its parts: "<name>/part_<i>", slices of <name>.
    out: list[tuple[str | None, Any]] = []
    for name, var in items:
        parts = getattr(var, "_get_variable_list", None)
        if parts is None:
            out.append((name, var))
        else:
            out += [(f"{name}/part_{i}" if name else None, p) for i, p in enumerate(parts())]
    return out


__all__ = ["save_entries"]
