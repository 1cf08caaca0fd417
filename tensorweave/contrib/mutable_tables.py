"""`tf.contrib.lookup.MutableHashTable` (TF 1.x): a key -> value table the graph can
insert into, remove from and export, saved and restored by `tf.train.Saver`.

The ops are in ops/lookup/mutable_table_ops.py. A checkpointed table (the default)
joins the SAVEABLE_OBJECTS collection, so a plain `tf.train.Saver()` saves it as
`<name>-keys` / `<name>-values`, TF's names, and restoring replaces its contents.
Values are scalars, or vectors when `default_value` is a vector.

Example:
    >>> table = tf.contrib.lookup.MutableHashTable(tf.string, tf.int64, default_value=-1)
    >>> sess.run(table.insert(tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64)))
    >>> sess.run(table.lookup(tf.constant(["b", "z"])))   # [2, -1]
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph_defaults import GraphKeys, add_to_collection, name_scope
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.lookup import mutable_table_ops as _ops
from tensorweave.ops.lookup.dense_table_ops import create_dense_hash_table
from tensorweave.ops.lookup.table_ops import lookup_table_find, lookup_table_size
from tensorweave.lookup.tables import LookupInterface
from tensorweave.train.saveable_object import SaveableObject, SaveSpec

__all__ = ["DenseHashTable", "MutableHashTable"]


class MutableHashTable(LookupInterface):
    """A generic mutable hash table: `insert`, `remove`, `lookup`, `size`, `export`.

    Args:
        key_dtype: the keys' dtype.
        value_dtype: the values' dtype.
        default_value: returned for absent keys; a vector makes every value a vector of
            its shape.
        name: the table op's name (and, checkpointed, its name in checkpoints).
        checkpoint: save and restore the contents with `tf.train.Saver` (TF's default);
            the table is then shared by node name, so every worker finds the same one.

    Example:
        >>> t = MutableHashTable(tf.int64, tf.float32, default_value=[0., 0.])
        >>> t.insert(tf.constant([3], tf.int64), tf.constant([[1., 2.]]))
    """

    def __init__(self, key_dtype: Any, value_dtype: Any, default_value: Any,
                 name: str = "MutableHashTable", checkpoint: bool = True) -> None:
        self._default_value = convert_to_tensor(default_value, dtype=value_dtype)
        self._value_shape = self._default_value.shape
        self._checkpoint = checkpoint
        super().__init__(key_dtype, value_dtype, name)
        self._table_ref = _ops.create_mutable_hash_table(
            self._key_dtype, self._value_dtype, value_shape=self._value_shape,
            use_node_name_sharing=checkpoint, name=name)
        self._name = self._table_ref.op.name.split("/")[-1]
        self._saveable_name = name
        self._saveable: _TableSaveable | None = None
        if checkpoint:
            self._saveable = _TableSaveable(self, name)
            add_to_collection(GraphKeys.SAVEABLE_OBJECTS, self._saveable)

    def saveable_objects(self) -> list[SaveableObject]:
        """What a Saver given this table in `var_list` saves: its keys and values, as
        `<name>-keys` / `<name>-values`."""
        if self._saveable is None:
            self._saveable = _TableSaveable(self, self._saveable_name)
        return [self._saveable]

    @property
    def resource_handle(self) -> Tensor:
        return self._table_ref

    @property
    def default_value(self) -> Tensor:
        return self._default_value

    def size(self, name: str | None = None) -> Tensor:
        """The number of entries (int64 scalar)."""
        with name_scope(name, f"{self._name}_Size"):
            return lookup_table_size(self._table_ref)

    def _keys(self, keys: Any) -> Tensor:
        k = convert_to_tensor(keys, dtype=self._key_dtype, name="keys")
        if k.dtype.base_dtype != self._key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self._key_dtype.name}, "
                            f"got {k.dtype.base_dtype.name} (table {self._name}).")
        return k

    def lookup(self, keys: Any, name: str | None = None) -> Tensor:
        """Values of `keys` (any shape), `default_value` for absent keys.

        Raises:
            TypeError: keys of another dtype than the table's.
        """
        with name_scope(name, f"{self._name}_lookup_table_find"):
            return lookup_table_find(self._table_ref, self._keys(keys), self._default_value)

    def insert(self, keys: Any, values: Any, name: str | None = None) -> Operation:
        """An op associating `keys` with `values` (shaped keys.shape + value shape).

        Raises:
            TypeError: keys or values of other dtypes than the table's.
        """
        with name_scope(name, f"{self._name}_lookup_table_insert"):
            k = self._keys(keys)
            v = convert_to_tensor(values, dtype=self._value_dtype, name="values")
            return _ops.lookup_table_insert(self._table_ref, k, v)

    def remove(self, keys: Any, name: str | None = None) -> Operation:
        """An op removing `keys` and their values; absent keys are ignored.

        Raises:
            TypeError: keys of another dtype than the table's.
        """
        if isinstance(keys, Tensor) and keys.dtype.base_dtype != self._key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self._key_dtype.name}, "
                            f"got {keys.dtype.name} (table {self._name}).")
        with name_scope(name, f"{self._name}_lookup_table_remove"):
            return _ops.lookup_table_remove(self._table_ref, self._keys(keys))

    def export(self, name: str | None = None) -> tuple[Tensor, Tensor]:
        """All keys [n] and their values [n, ...] (in no particular order)."""
        with name_scope(name, f"{self._name}_lookup_table_export_values"):
            return _ops.lookup_table_export(self._table_ref, self._key_dtype,
                                            self._value_dtype)


class DenseHashTable(MutableHashTable):
    """TF's `tf.lookup.experimental.DenseHashTable` (`tf.contrib.lookup.
    MutableDenseHashTable`): a mutable table in open-addressing buckets, with scalar or
    vector keys (shaped like `empty_key`) and values (shaped like `default_value`).

    Args:
        key_dtype: the keys' dtype.
        value_dtype: the values' dtype.
        default_value: returned for absent keys; its shape is each value's shape.
        empty_key: a key never stored, marking free buckets.
        deleted_key: another key never stored, marking removed entries.
        initial_num_buckets: a power of 2 >= 4 (default 2**17); the buckets double
            when an insert would fill more than 80% of them.
        name: the table op's name (and its name in checkpoints).
        checkpoint: save and restore the contents with `tf.train.Saver`.

    Example:
        >>> t = tf.lookup.experimental.DenseHashTable(
        ...     tf.int64, tf.int64, default_value=-1, empty_key=0, deleted_key=-1)
        >>> sess.run(t.insert(tf.constant([11], tf.int64), tf.constant([7], tf.int64)))
    """

    def __init__(self, key_dtype: Any, value_dtype: Any, default_value: Any, empty_key: Any,
                 deleted_key: Any, initial_num_buckets: int | None = None,
                 name: str = "MutableDenseHashTable", checkpoint: bool = True) -> None:
        self._default_value = convert_to_tensor(default_value, dtype=value_dtype,
                                                name="default_value")
        self._value_shape = self._default_value.shape
        self._checkpoint = checkpoint
        LookupInterface.__init__(self, key_dtype, value_dtype, name)
        self._empty_key = convert_to_tensor(empty_key, dtype=key_dtype, name="empty_key")
        self._deleted_key = convert_to_tensor(deleted_key, dtype=key_dtype,
                                              name="deleted_key")
        self._table_ref = create_dense_hash_table(
            self._empty_key, self._deleted_key, self._value_dtype,
            value_shape=self._value_shape,
            initial_num_buckets=131072 if initial_num_buckets is None else
            initial_num_buckets, use_node_name_sharing=checkpoint, name=name)
        self._name = self._table_ref.op.name.split("/")[-1]
        self._saveable_name = name
        self._saveable = None
        if checkpoint:
            self._saveable = _TableSaveable(self, name)
            add_to_collection(GraphKeys.SAVEABLE_OBJECTS, self._saveable)


class _TableSaveable(SaveableObject):
    """A mutable table in checkpoints: `<name>-keys` and `<name>-values` (TF's names)."""

    def __init__(self, table: MutableHashTable, name: str) -> None:
        keys, values = table.export()
        specs = [SaveSpec(keys, "", name + "-keys"), SaveSpec(values, "", name + "-values")]
        super().__init__(table, specs, name)

    def restore(self, restored_tensors: list[Tensor], restored_shapes: Any) -> Any:
        table = self.op
        with name_scope(None, f"{table.name}_table_restore"):
            return _ops.lookup_table_import(table.resource_handle, restored_tensors[0],
                                            restored_tensors[1])

