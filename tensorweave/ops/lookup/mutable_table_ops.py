"""Mutable lookup-table ops: MutableHashTable, MutableHashTableOfTensors,
LookupTableInsert, LookupTableExport, LookupTableImport (TF 1.x's reference-handle
variants, with TF's names and attrs) and LookupTableRemove.

A mutable table lives in its device's resource manager like a `HashTable`
(table_ops.py) and is found by `LookupTableFind` / `LookupTableSize` the same way;
here keys can be inserted, removed, exported and imported (the Saver saves a
checkpointed table through export/import). Values are scalars, or vectors of the
default value's shape (MutableHashTableOfTensors). TF has removal only as
`LookupTableRemoveV2` on resource handles; `LookupTableRemove` is its counterpart on
the reference handles tensorweave's tables use.

Example:
    >>> t = create_mutable_hash_table(tf.string, tf.int64)
    >>> ins = lookup_table_insert(t, tf.constant(["a"]), tf.constant([7], tf.int64))
    >>> ids = lookup_table_find(t, tf.constant(["a", "z"]), tf.constant(-1, tf.int64))
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.op_author import REQUIRED, create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.lookup.table_ops import check_handle, norm_key
from tensorweave.runtime.update_gate import gated_update, note_variable

__all__ = ["MutableHashTableResource", "create_mutable_hash_table", "lookup_table_export",
           "lookup_table_import", "lookup_table_insert", "lookup_table_remove"]


def _np_dtype(dtype: _dt.DType) -> Any:
    return object if dtype == _dt.string else dtype.as_numpy_dtype


class MutableHashTableResource:
    """The storage behind a mutable table: key -> value (a numpy row for vector values)."""

    type_name = "MutableHashTable"

    def __init__(self, name: str, key_dtype: _dt.DType, value_dtype: _dt.DType,
                 value_shape: tuple[int, ...]) -> None:
        self.name = name
        self.key_dtype = key_dtype
        self.value_dtype = value_dtype
        self.value_shape = value_shape
        self.lock = threading.Lock()
        self.table: dict[Any, Any] = {}

    def _keys(self, keys: Any) -> tuple[np.ndarray, list[Any]]:
        arr = np.asarray(keys)
        return arr, [norm_key(k) for k in arr.reshape(-1).tolist()]

    def _check_values(self, keys: np.ndarray, values: Any) -> np.ndarray:
        vals = np.asarray(values)
        expected = tuple(keys.shape) + self.value_shape
        if tuple(vals.shape) != expected:
            raise errors.InvalidArgumentError(
                None, None, f"Expected shape {list(expected)} for value, got "
                f"{list(vals.shape)} (table {self.name}: keys {list(keys.shape)}, values "
                f"{list(self.value_shape)} per key).")
        return vals.reshape((-1,) + self.value_shape)

    def insert(self, keys: Any, values: Any) -> None:
        arr, flat = self._keys(keys)
        vals = self._check_values(arr, values)
        with self.lock:
            for k, v in zip(flat, vals):
                self.table[k] = v.copy() if self.value_shape else v.item() \
                    if isinstance(v, np.ndarray) else v

    def remove(self, keys: Any) -> None:
        _, flat = self._keys(keys)
        with self.lock:
            for k in flat:
                self.table.pop(k, None)

    def find(self, keys: Any, default: Any) -> np.ndarray:
        default = np.asarray(default)
        if tuple(default.shape) != self.value_shape:
            raise errors.InvalidArgumentError(
                None, None, f"Expected shape {list(self.value_shape)} for default value, "
                f"got {list(default.shape)} (table {self.name}).")
        arr, flat = self._keys(keys)
        with self.lock:
            found = [self.table.get(k, default) for k in flat]
        out = np.empty((len(flat),) + self.value_shape, dtype=_np_dtype(self.value_dtype))
        for i, v in enumerate(found):
            out[i] = v
        return out.reshape(tuple(arr.shape) + self.value_shape)

    def export(self) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            items = list(self.table.items())
        keys = np.array([k for k, _ in items], dtype=_np_dtype(self.key_dtype))
        values = np.empty((len(items),) + self.value_shape,
                          dtype=_np_dtype(self.value_dtype))
        for i, (_, v) in enumerate(items):
            values[i] = v
        return keys.reshape(len(items)), values

    def import_(self, keys: Any, values: Any) -> None:
        arr, flat = self._keys(keys)
        vals = self._check_values(arr, values)
        with self.lock:
            self.table = {k: (v.copy() if self.value_shape else v.item())
                          for k, v in zip(flat, vals)}

    def size(self) -> int:
        return len(self.table)

    def __repr__(self) -> str:
        return (f"<MutableHashTableResource {self.name} {self.key_dtype.name}->"
                f"{self.value_dtype.name}{list(self.value_shape)} size={len(self.table)}>")


# ---- MutableHashTable / MutableHashTableOfTensors ------------------------------------
_TABLE_ATTRS = {"container": "", "shared_name": "", "use_node_name_sharing": False,
                "key_dtype": REQUIRED, "value_dtype": REQUIRED}


def _create_kernel(ctx: Any, step: Any, container: str, shared_name: str, key_dtype: Any,
                   value_dtype: Any, value_shape: tuple[int, ...]) -> MutableHashTableResource:
    k, v = _dt.as_dtype(key_dtype).base_dtype, _dt.as_dtype(value_dtype).base_dtype
    key = shared_name or ctx.name
    res = ctx.resources.lookup_or_create(
        container, key, lambda: MutableHashTableResource(key, k, v, value_shape))
    if not isinstance(res, MutableHashTableResource) or res.key_dtype != k or \
            res.value_dtype != v or res.value_shape != value_shape:
        raise errors.InvalidArgumentError(
            None, None, f"Resource {container or '<default>'}/{key} exists but is {res!r}, "
            f"not a MutableHashTable of {k.name}->{v.name}{list(value_shape)}. Use another "
            "shared_name.")
    # Its inserts, removals and imports hold the task's update gate, as variable updates
    # do: a checkpoint or a ps replica sees the table and the variables at one moment.
    note_variable(res, ctx.resources, step, ctx.device)
    return res


mutable_op = define_op("MutableHashTable", attrs=dict(_TABLE_ATTRS), stateful=True)


@mutable_op.shape
def _(**_attrs: Any) -> Any:
    return _dt.string._as_ref, TensorShape([2])


@mutable_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, container: str, shared_name: str, use_node_name_sharing: bool,
      key_dtype: Any, value_dtype: Any) -> MutableHashTableResource:
    return _create_kernel(ctx, step, container, shared_name, key_dtype, value_dtype, ())


mutable_op.no_gradient()

tensors_op = define_op("MutableHashTableOfTensors",
                       attrs=dict(_TABLE_ATTRS, value_shape=TensorShape([])), stateful=True)


@tensors_op.shape
def _(**_attrs: Any) -> Any:
    return _dt.string._as_ref, TensorShape([2])


@tensors_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, container: str, shared_name: str, use_node_name_sharing: bool,
      key_dtype: Any, value_dtype: Any, value_shape: Any) -> MutableHashTableResource:
    dims = TensorShape(value_shape).as_list()
    if len(dims) != 1 or dims[0] is None:
        raise errors.InvalidArgumentError(
            None, None, f"Default value must be a vector, got shape {dims} (node "
            f"{ctx.name}): a MutableHashTable's values are scalars or vectors.")
    return _create_kernel(ctx, step, container, shared_name, key_dtype, value_dtype,
                          (dims[0],))


tensors_op.no_gradient()


# ---- Insert / Remove / Export / Import --------------------------------------------
def _check_mutable(table: Any, op: str) -> MutableHashTableResource:
    if not isinstance(table, MutableHashTableResource):
        raise errors.InvalidArgumentError(
            None, None, f"{op}: {table!r} is not a mutable table; only MutableHashTable "
            "tables take inserts, removals and imports.")
    return table


insert_op = define_op("LookupTableInsert", inputs=("&table_handle", "keys", "values"),
                      attrs={"Tin": None, "Tout": None}, stateful=True)


@insert_op.shape
def _(handle: Tensor, keys: Tensor, values: Tensor, *, Tin: Any, Tout: Any) -> Any:
    check_handle(handle, "LookupTableInsert")
    return []


@insert_op.kernel("CPU")
def _(table: Any, keys: Any, values: Any, *, Tin: Any, Tout: Any) -> None:
    with gated_update(table):
        _check_mutable(table, "LookupTableInsert").insert(keys, values)


insert_op.no_gradient()

remove_op = define_op("LookupTableRemove", inputs=("&table_handle", "keys"),
                      attrs={"Tin": None}, stateful=True)


@remove_op.shape
def _(handle: Tensor, keys: Tensor, *, Tin: Any) -> Any:
    check_handle(handle, "LookupTableRemove")
    return []


@remove_op.kernel("CPU")
def _(table: Any, keys: Any, *, Tin: Any) -> None:
    with gated_update(table):
        _check_mutable(table, "LookupTableRemove").remove(keys)


remove_op.no_gradient()

export_op = define_op("LookupTableExport", inputs=("&table_handle",),
                      attrs={"Tkeys": REQUIRED, "Tvalues": REQUIRED}, stateful=True)


@export_op.shape
def _(handle: Tensor, *, Tkeys: Any, Tvalues: Any) -> Any:
    check_handle(handle, "LookupTableExport")
    # A dense table's keys may be vectors: [buckets, key size].
    keys_shape = TensorShape(None) if handle.op.type == "DenseHashTable" else \
        TensorShape([None])
    return [(_dt.as_dtype(Tkeys).base_dtype, keys_shape),
            (_dt.as_dtype(Tvalues).base_dtype, TensorShape(None))]


@export_op.kernel("CPU")
def _(table: Any, *, Tkeys: Any, Tvalues: Any) -> Any:
    # Every table exports, the immutable HashTable too (as TF's StaticHashTable.export).
    return list(table.export())


export_op.no_gradient()

import_op = define_op("LookupTableImport", inputs=("&table_handle", "keys", "values"),
                      attrs={"Tin": None, "Tout": None}, stateful=True)


@import_op.shape
def _(handle: Tensor, keys: Tensor, values: Tensor, *, Tin: Any, Tout: Any) -> Any:
    check_handle(handle, "LookupTableImport")
    return []


@import_op.kernel("CPU")
def _(table: Any, keys: Any, values: Any, *, Tin: Any, Tout: Any) -> None:
    with gated_update(table):
        _check_mutable(table, "LookupTableImport").import_(keys, values)


import_op.no_gradient()


# ---- graph builders ---------------------------------------------------------------
def create_mutable_hash_table(key_dtype: Any, value_dtype: Any,
                              value_shape: TensorShape | None = None, container: str = "",
                              shared_name: str = "", use_node_name_sharing: bool = False,
                              name: str | None = None) -> Tensor:
    """A MutableHashTable (scalar values) or MutableHashTableOfTensors (vector values of
    `value_shape`) op; returns its reference handle."""
    attrs: dict[str, Any] = {
        "container": container, "shared_name": shared_name or "",
        "use_node_name_sharing": bool(use_node_name_sharing),
        "key_dtype": _dt.as_dtype(key_dtype).base_dtype,
        "value_dtype": _dt.as_dtype(value_dtype).base_dtype}
    op_type = "MutableHashTable"
    if value_shape is not None and value_shape.ndims != 0:
        op_type = "MutableHashTableOfTensors"
        attrs["value_shape"] = value_shape
    return create_tensor(op_type, [], attrs,
                         name=name or op_type)


def lookup_table_insert(table_handle: Tensor, keys: Tensor, values: Tensor,
                        name: str | None = None) -> Operation:
    """An op setting `keys` -> `values` (values shaped keys.shape + value_shape)."""
    return table_handle.graph.create_op(
        "LookupTableInsert", [table_handle, keys, values],
        {"Tin": keys.dtype.base_dtype, "Tout": values.dtype.base_dtype},
        name=name or "LookupTableInsert")


def lookup_table_remove(table_handle: Tensor, keys: Tensor,
                        name: str | None = None) -> Operation:
    """An op removing `keys` (absent keys are ignored)."""
    return table_handle.graph.create_op(
        "LookupTableRemove", [table_handle, keys], {"Tin": keys.dtype.base_dtype},
        name=name or "LookupTableRemove")


def lookup_table_export(table_handle: Tensor, key_dtype: Any, value_dtype: Any,
                        name: str | None = None) -> tuple[Tensor, Tensor]:
    """All keys [n] and values [n, ...] of the table."""
    op = table_handle.graph.create_op(
        "LookupTableExport", [table_handle],
        {"Tkeys": _dt.as_dtype(key_dtype).base_dtype,
         "Tvalues": _dt.as_dtype(value_dtype).base_dtype},
        name=name or "LookupTableExport")
    return op.outputs[0], op.outputs[1]


def lookup_table_import(table_handle: Tensor, keys: Tensor, values: Tensor,
                        name: str | None = None) -> Operation:
    """An op replacing the table's contents with `keys` -> `values`."""
    return table_handle.graph.create_op(
        "LookupTableImport", [table_handle, keys, values],
        {"Tin": keys.dtype.base_dtype, "Tout": values.dtype.base_dtype},
        name=name or "LookupTableImport")
