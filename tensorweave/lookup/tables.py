"""`tf.contrib.lookup` (TF 1.x): lookup tables and their initializers.

`HashTable` is an immutable key -> value table held in its device's resource manager
(ops in `ops/lookup/table_ops.py`), filled once by its initializer, which joins the
TABLE_INITIALIZERS collection that `tf.tables_initializer()` runs. The vocabulary
id tables (`index_table_from_tensor`, ...) are in `vocab_tables.py`.

Example:
    >>> table = HashTable(KeyValueTensorInitializer(["a", "b"], [7, 8]), default_value=-1)
    >>> vals = table.lookup(tf.constant(["b", "zzz"]))
    >>> with tf.Session() as sess:
    ...     sess.run(tf.tables_initializer())
    ...     sess.run(vals)
    array([ 8, -1])
"""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import GraphKeys, add_to_collection, name_scope
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.framework.body_handles import handle_for_default_graph
from tensorweave.ops.lookup import table_ops
from tensorweave.ops.lookup.mutable_table_ops import lookup_table_export

__all__ = ["FastHashSpec", "HashTable", "HasherSpec", "StaticHashTable", "StrongHashSpec",
           "InitializableLookupTableBase",
           "KeyValueTensorInitializer", "LookupInterface", "TableInitializerBase",
           "TextFileIdTableInitializer", "TextFileIndex", "TextFileInitializer",
           "TextFileStringTableInitializer"]


class TextFileIndex:
    """Special column indices of `TextFileInitializer`."""
    WHOLE_LINE = table_ops.WHOLE_LINE
    LINE_NUMBER = table_ops.LINE_NUMBER


HasherSpec = collections.namedtuple("HasherSpec", ["hasher", "key"])
HasherSpec.__doc__ = "How out-of-vocabulary keys are hashed into buckets (TF's HasherSpec)."
FastHashSpec = HasherSpec("fasthash", None)


class StrongHashSpec(HasherSpec):
    """Hash out-of-vocabulary keys with SipHash keyed by `key`, two integers (TF's
    StrongHashSpec: `StringToHashBucketStrong`).

    Example:
        >>> spec = StrongHashSpec((1, 2))

    Raises:
        ValueError: a key of another length than 2.
        TypeError: key items that are not integers.
    """

    __slots__ = ()

    def __new__(cls, key: Any) -> "StrongHashSpec":
        if len(key) != 2:
            raise ValueError(f"key must have size 2, got {len(key)}.")
        if not all(isinstance(k, (int, np.integer)) for k in key):
            raise TypeError(f"Invalid key {key}. Must be unsigned integer values.")
        return super().__new__(cls, "stronghash", key)


def _dtype(d: Any) -> _dt.DType:
    return _dt.as_dtype(d).base_dtype


def _as_keys(keys: Any, dtype: _dt.DType) -> Tensor:
    return keys if isinstance(keys, Tensor) else convert_to_tensor(keys, dtype=dtype)


def _scope_base(scope: str) -> str:
    return scope.rstrip("/").rsplit("/", 1)[-1]


# ---- interfaces ---------------------------------------------------------------------
class _KeyValueDtypes:
    """The key and value dtypes tables and their initializers both carry."""

    def __init__(self, key_dtype: Any, value_dtype: Any) -> None:
        self._key_dtype = _dtype(key_dtype)
        self._value_dtype = _dtype(value_dtype)

    @property
    def key_dtype(self) -> _dt.DType:
        return self._key_dtype

    @property
    def value_dtype(self) -> _dt.DType:
        return self._value_dtype


class LookupInterface(_KeyValueDtypes):
    """What every lookup table offers: its dtypes and name, `size()` and `lookup()`."""

    def __init__(self, key_dtype: Any, value_dtype: Any, name: str) -> None:
        super().__init__(key_dtype, value_dtype)
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def check_table_dtypes(self, key_dtype: Any, value_dtype: Any) -> None:
        """TypeError unless the given dtypes are the table's."""
        if _dtype(key_dtype) != self.key_dtype:
            raise TypeError(f"Invalid key dtype, expected {self.key_dtype.name} but got "
                            f"{_dtype(key_dtype).name}.")
        if _dtype(value_dtype) != self.value_dtype:
            raise TypeError(f"Invalid value dtype, expected {self.value_dtype.name} but got "
                            f"{_dtype(value_dtype).name}.")

    @property
    def resource_handle(self) -> Tensor | None:
        """The handle of the table resource this object looks keys up in (TF's
        `resource_handle`); None for a table that holds no resource of its own."""
        return None

    def size(self, name: str | None = None) -> Tensor:
        raise NotImplementedError

    def lookup(self, keys: Any, name: str | None = None) -> Any:
        raise NotImplementedError


class TableInitializerBase(_KeyValueDtypes):
    """An initializer of a table: its key/value dtypes and `initialize(table)`."""

    def initialize(self, table: "InitializableLookupTableBase") -> Operation:
        raise NotImplementedError


class InitializableLookupTableBase(LookupInterface):
    """A table filled once by an initializer; `init` / `initializer` is that op."""

    def __init__(self, table_ref: Tensor, default_value: Any,
                 initializer: TableInitializerBase, key_dtype: Any, value_dtype: Any,
                 name: str) -> None:
        super().__init__(key_dtype, value_dtype, name)
        self._table_ref = table_ref
        self._body_refs: dict[Any, Tensor] = {}
        with table_ref.graph.as_default():
            self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype,
                                                    name="default_value")
        if not self._default_value.shape.is_compatible_with(TensorShape([])):
            raise ValueError(f"default_value of table {name} must be a scalar, got shape "
                             f"{self._default_value.shape}")
        self._init = initializer.initialize(self)

    def _graph_and_handle(self) -> tuple[Any, Tensor]:
        """Where this table's ops go: the default graph when it is a function body (a
        dataset map, a cond branch) inside the table's graph, so a lookup runs per call,
        with the body's own handle on the same table (framework/body_handles.py)."""
        return handle_for_default_graph(self._table_ref, self._body_refs, {"HashTable"},
                                        f"Table {self._name}")

    @property
    def table_ref(self) -> Tensor:
        return self._table_ref

    @property
    def resource_handle(self) -> Tensor:
        return self._table_ref

    @property
    def default_value(self) -> Tensor:
        return self._default_value

    @property
    def init(self) -> Operation:
        return self._init

    @property
    def initializer(self) -> Operation:
        return self._init

    def size(self, name: str | None = None) -> Tensor:
        """The number of entries (int64 scalar; 0 before initialization)."""
        g, handle = self._graph_and_handle()
        with g.as_default():
            return table_ops.lookup_table_size(handle, name=name or f"{self._name}_Size")

    def lookup(self, keys: Any, name: str | None = None) -> Any:
        """The values of `keys` (a Tensor or SparseTensor), `default_value` for keys not
        in the table; a SparseTensor keeps its indices and dense shape.

        Raises:
            TypeError: keys of another dtype than the table's keys.
        """
        sparse = isinstance(keys, SparseTensor)
        key_tensor = keys.values if sparse else _as_keys(keys, self._key_dtype)
        if key_tensor.dtype.base_dtype != self._key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self._key_dtype.name}, "
                            f"got {key_tensor.dtype.name}.")
        g, handle = self._graph_and_handle()
        with g.as_default():
            values = table_ops.lookup_table_find(handle, key_tensor, self._default_value,
                                                 name=name or f"{self._name}_Lookup")
        return SparseTensor(keys.indices, values, keys.dense_shape) if sparse else values


class HashTable(InitializableLookupTableBase):
    """A generic immutable hash table, filled by `initializer`.

    Example:
        >>> init = KeyValueTensorInitializer(["a", "b"], [0, 1], value_dtype=tf.int64)
        >>> table = HashTable(init, -1)
        >>> out = table.lookup(tf.constant(["a", "c"]))   # [0, -1] once initialized
    """

    def __init__(self, initializer: TableInitializerBase, default_value: Any,
                 shared_name: str | None = None, name: str | None = None) -> None:
        if not isinstance(initializer, TableInitializerBase):
            raise TypeError(f"HashTable: initializer must be a table initializer (e.g. "
                            f"KeyValueTensorInitializer), got {initializer!r}")
        # As TF: a table filled from a file shares one resource with every table of the
        # same file and columns (TextFileInitializer.shared_name), so a second graph or
        # worker finds it initialized.
        if shared_name is None:
            shared_name = getattr(initializer, "shared_name", None)
        # The op takes the table's name (TF names it after its scope), and its default
        # value and lookups are named after it.
        if name is not None and name.endswith("/"):
            with name_scope(name):
                table_ref = table_ops.create_hash_table(
                    initializer.key_dtype, initializer.value_dtype,
                    shared_name=shared_name or "", name="hash_table")
        else:
            table_ref = table_ops.create_hash_table(
                initializer.key_dtype, initializer.value_dtype,
                shared_name=shared_name or "", name=name or "hash_table")
        with name_scope(table_ref.op.name + "/"):
            super().__init__(table_ref, default_value, initializer, initializer.key_dtype,
                             initializer.value_dtype, _scope_base(table_ref.op.name))


    def export(self, name: str | None = None) -> tuple[Tensor, Tensor]:
        """All keys [n] and values [n] of the table (in no particular order)."""
        with name_scope(name, f"{self._name}_Export"):
            return lookup_table_export(self._table_ref, self._key_dtype, self._value_dtype)


class StaticHashTable(HashTable):
    """`tf.lookup.StaticHashTable` (TF 1.x): a HashTable taking TF's
    (initializer, default_value, name): no shared_name, so a positional name is a name.

    Example:
        >>> table = tf.lookup.StaticHashTable(init, -1, "vocab")
    """

    def __init__(self, initializer: TableInitializerBase, default_value: Any,
                 name: str | None = None) -> None:
        super().__init__(initializer, default_value, name=name)


class KeyValueTensorInitializer(TableInitializerBase):
    """Initializes a table from a keys tensor and a values tensor of the same shape.

    Example:
        >>> init = KeyValueTensorInitializer([1, 2], ["one", "two"], tf.int64, tf.string)
    """

    def __init__(self, keys: Any, values: Any, key_dtype: Any = None, value_dtype: Any = None,
                 name: str | None = None) -> None:
        with name_scope(name, "key_value_init", [keys, values]) as scope:
            self._keys = convert_to_tensor(keys, dtype=key_dtype, name="keys")
            self._values = convert_to_tensor(values, dtype=value_dtype, name="values")
            self._name = scope
        super().__init__(self._keys.dtype, self._values.dtype)

    def initialize(self, table: InitializableLookupTableBase) -> Operation:
        """The op filling `table` (added to TABLE_INITIALIZERS)."""
        table.check_table_dtypes(self._keys.dtype, self._values.dtype)
        with name_scope(self._name, values=[table.table_ref, self._keys, self._values]):
            op = table_ops.initialize_table(table.table_ref, self._keys, self._values,
                                            name="table_init")
        add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


class TextFileInitializer(TableInitializerBase):
    """Initializes a table from a text file: one entry per line, key and value taken
    from the line's `delimiter`-separated columns `key_index` / `value_index`, or the
    line number (TextFileIndex.LINE_NUMBER) or the whole line (TextFileIndex.WHOLE_LINE).

    Raises:
        ValueError: an index below -2, a dtype the index cannot give (line numbers are
            int64, whole lines string or, for keys, integer), or vocab_size <= 0.
    """

    def __init__(self, filename: Any, key_dtype: Any, key_index: int, value_dtype: Any,
                 value_index: int, vocab_size: int | None = None, delimiter: str = "\t",
                 name: str | None = None) -> None:
        if not isinstance(filename, Tensor) and not filename:
            raise ValueError(f"Filename required for {name}: TextFileInitializer needs the "
                             "vocabulary file's path (a string or a scalar string Tensor).")
        kd, vd = _dtype(key_dtype), _dtype(value_dtype)
        if key_index < TextFileIndex.WHOLE_LINE:
            raise ValueError(f"Invalid key index {key_index}.")
        if key_index == TextFileIndex.LINE_NUMBER and kd != _dt.int64:
            raise ValueError(f"Signature mismatch. Keys must be dtype int64, got {kd.name}.")
        if key_index == TextFileIndex.WHOLE_LINE and not kd.is_integer and kd != _dt.string:
            raise ValueError(f"Signature mismatch. Keys must be integer or string, got "
                             f"{kd.name}.")
        if value_index < TextFileIndex.WHOLE_LINE:
            raise ValueError(f"Invalid value index {value_index}.")
        if value_index == TextFileIndex.LINE_NUMBER and vd != _dt.int64:
            raise ValueError(f"Signature mismatch. Values must be dtype int64, got "
                             f"{vd.name}.")
        if value_index == TextFileIndex.WHOLE_LINE and vd != _dt.string:
            raise ValueError(f"Signature mismatch. Values must be dtype string, got "
                             f"{vd.name}.")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"Invalid vocab_size {vocab_size}.")
        if not delimiter:
            raise ValueError("delimiter must not be empty.")
        self._filename = filename
        self._key_index = int(key_index)
        self._value_index = int(value_index)
        self._vocab_size = vocab_size
        self._delimiter = delimiter
        self._name = name
        super().__init__(kd, vd)

    @property
    def shared_name(self) -> str:
        """The resource name tables of this file share (TF's naming:
        `hash_table_<file>[_<vocab_size>]_<key_index>_<value_index>`); "" for a file
        given as a Tensor, whose value is known only when the graph runs."""
        if not isinstance(self._filename, (str, bytes)):
            return ""
        path = self._filename.decode("utf-8") if isinstance(self._filename, bytes) \
            else self._filename
        if self._vocab_size:
            return (f"hash_table_{path}_{self._vocab_size}_{self._key_index}_"
                    f"{self._value_index}")
        return f"hash_table_{path}_{self._key_index}_{self._value_index}"

    def initialize(self, table: InitializableLookupTableBase) -> Operation:
        """The op filling `table` from the file (added to TABLE_INITIALIZERS)."""
        table.check_table_dtypes(self.key_dtype, self.value_dtype)
        with name_scope(self._name, "text_file_init", [table.table_ref]):
            filename = convert_to_tensor(self._filename, dtype=_dt.string,
                                         name="asset_filepath")
            op = table_ops.initialize_table_from_text_file(
                table.table_ref, filename, self._key_index, self._value_index,
                -1 if self._vocab_size is None else int(self._vocab_size), self._delimiter,
                name="table_init")
        add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        if constant_value(filename) is not None:
            add_to_collection(GraphKeys.ASSET_FILEPATHS, filename)
        return op


class TextFileStringTableInitializer(TextFileInitializer):
    """int64 keys -> string values from a text file (default: line number -> line)."""

    def __init__(self, filename: Any, key_column_index: int = TextFileIndex.LINE_NUMBER,
                 value_column_index: int = TextFileIndex.WHOLE_LINE,
                 vocab_size: int | None = None, delimiter: str = "\t",
                 name: str = "text_file_string_table_init") -> None:
        super().__init__(filename, _dt.int64, key_column_index, _dt.string,
                         value_column_index, vocab_size=vocab_size, delimiter=delimiter,
                         name=name)


class TextFileIdTableInitializer(TextFileInitializer):
    """keys -> int64 ids from a text file (default: line -> line number)."""

    def __init__(self, filename: Any, key_column_index: int = TextFileIndex.WHOLE_LINE,
                 value_column_index: int = TextFileIndex.LINE_NUMBER,
                 vocab_size: int | None = None, delimiter: str = "\t",
                 name: str = "text_file_id_table_init", key_dtype: Any = _dt.string) -> None:
        super().__init__(filename, key_dtype, key_column_index, _dt.int64,
                         value_column_index, vocab_size=vocab_size, delimiter=delimiter,
                         name=name)


# ---- ids with out-of-vocabulary buckets --------------------------------------------
