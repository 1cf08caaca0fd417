"""Vocabulary id tables (TF 1.x `tf.contrib.lookup`): `index_table_from_tensor` /
`index_table_from_file` map keys to ids, out-of-vocabulary keys to
`vocab_size + Fingerprint64(key) % num_oov_buckets` exactly as TF's
`IdTableWithHashBuckets` with `FastHashSpec` (integer keys hashed as their decimal
string); `index_to_string_table_from_tensor` / `_from_file` map ids back. The tables
and initializers they build are in `tables.py`.

Example:
    >>> table = index_table_from_tensor(tf.constant(["a", "b"]), num_oov_buckets=1)
    >>> ids = table.lookup(tf.constant(["b", "a", "zzz"]))   # [1, 0, 2] once initialized
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.text import text_of
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.array.core_ops import no_op
from tensorweave.ops.array.fill_ops import range as _range
from tensorweave.ops.array.shape_ops import size as _size
from tensorweave.ops.lookup.hash_ops import (
    as_string, string_to_hash_bucket, string_to_hash_bucket_fast, string_to_hash_bucket_strong)
from tensorweave.ops.math.binary_ops import add, not_equal
from tensorweave.ops.math.cwise_ops import cast, select
from tensorweave.lookup.tables import (
    FastHashSpec, HashTable, HasherSpec, InitializableLookupTableBase,
    KeyValueTensorInitializer, LookupInterface, TextFileIdTableInitializer, TextFileIndex,
    TextFileStringTableInitializer, _as_keys, _dtype, _scope_base)

__all__ = ["IdTableWithHashBuckets", "StaticVocabularyTable", "index_table_from_file",
           "index_table_from_tensor",
           "index_to_string", "index_to_string_table_from_file",
           "index_to_string_table_from_tensor", "string_to_index"]


class IdTableWithHashBuckets(LookupInterface):
    """A string/int -> int64 id table whose misses hash into `num_oov_buckets` buckets
    after the table's ids: `table.size() + Fingerprint64(str(key)) % num_oov_buckets`.

    Raises:
        ValueError: num_oov_buckets < 0, no table and no buckets, or a hasher_spec other
            than FastHashSpec (tensorweave has no StringToHashBucketStrong).
    """

    def __init__(self, table: InitializableLookupTableBase | None, num_oov_buckets: int,
                 hasher_spec: HasherSpec = FastHashSpec, name: str | None = None,
                 key_dtype: Any = None) -> None:
        if not isinstance(hasher_spec, HasherSpec):
            raise TypeError(f"hasher_spec must be of type HasherSpec, got {hasher_spec!r}")
        if table is not None:
            if key_dtype is None:
                key_dtype = table.key_dtype
            if _dtype(table.value_dtype) != _dt.int64:
                raise TypeError(f"Invalid value dtype, expected int64 but got "
                                f"{table.value_dtype.name}.")
            supported = {_dt.int64: "integer", _dt.string: "string"}
            kd = _dtype(key_dtype)
            if not ((table.key_dtype == _dt.int64 and kd.is_integer) or
                    (table.key_dtype == _dt.string and kd == _dt.string)):
                raise TypeError(f"Invalid key dtype, expected {supported[table.key_dtype]} "
                                f"keys but got {kd.name}.")
            name = name or table.name
        else:
            if not isinstance(num_oov_buckets, int) or num_oov_buckets <= 0:
                raise ValueError("oov_buckets must be > 0 if no table is supplied.")
            key_dtype = _dt.string if key_dtype is None else key_dtype
            kd = _dtype(key_dtype)
            if not kd.is_integer and kd != _dt.string:
                raise TypeError(f"Invalid key_dtype, expected integer or string, got {kd!r} "
                                "(IdTableWithHashBuckets hashes integer or string keys).")
            name = name or "hash_bucket"
        if not isinstance(num_oov_buckets, int) or num_oov_buckets < 0:
            raise ValueError(f"oov_buckets must be a non-negative integer, got "
                             f"{num_oov_buckets!r}.")
        self._table = table
        self._num_oov_buckets = num_oov_buckets
        self._hasher_spec = hasher_spec
        super().__init__(key_dtype, _dt.int64, _scope_base(name))

    @property
    def init(self) -> Operation:
        if self._table is not None:
            return self._table.init
        with name_scope(None, "init"):
            return no_op()

    @property
    def initializer(self) -> Operation:
        return self.init

    def size(self, name: str | None = None) -> Tensor:
        """The table's size plus the number of buckets (int64 scalar)."""
        with name_scope(name, f"{self._name}_Size"):
            if self._table is None:
                return convert_to_tensor(self._num_oov_buckets, dtype=_dt.int64)
            return add(self._table.size(), self._num_oov_buckets)

    @property
    def resource_handle(self) -> Tensor | None:
        """The inner table's handle; None when this table only hashes."""
        return None if self._table is None else self._table.resource_handle

    def lookup(self, keys: Any, name: str | None = None) -> Any:
        """Ids of `keys` (Tensor or SparseTensor); misses go to the OOV buckets.

        Raises:
            TypeError: keys of another dtype than this table's keys.
            ValueError: a hasher_spec whose hasher tensorweave does not have (as TF
                for an unknown hasher; only FastHashSpec's "fasthash" is built here).
        """
        if self._num_oov_buckets and self._hasher_spec.hasher not in ("fasthash",
                                                                      "stronghash", "legacy"):
            raise ValueError(f"Unknown hasher {self._hasher_spec.hasher} in {self._name}: "
                             "out-of-vocabulary keys are hashed with FastHashSpec, "
                             "StrongHashSpec or HasherSpec('legacy', None).")
        sparse = isinstance(keys, SparseTensor)
        values = keys.values if sparse else _as_keys(keys, self._key_dtype)
        if values.dtype.base_dtype != self._key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self._key_dtype.name}, "
                            f"got {values.dtype.name}.")
        if self._table is not None and self._table.key_dtype == _dt.int64 and \
                values.dtype.base_dtype != _dt.int64:
            values = cast(values, _dt.int64)
        if self._num_oov_buckets == 0:
            assert self._table is not None
            ids = self._table.lookup(values, name=name)
        else:
            with name_scope(name, f"{self._name}_Lookup") as scope:
                text = values if values.dtype.base_dtype == _dt.string else as_string(values)
                if self._hasher_spec.hasher == "legacy":
                    buckets = string_to_hash_bucket(text, self._num_oov_buckets,
                                                    name="hash_bucket")
                elif self._hasher_spec.hasher == "stronghash":
                    buckets = string_to_hash_bucket_strong(
                        text, self._num_oov_buckets, key=self._hasher_spec.key,
                        name="hash_bucket")
                else:
                    buckets = string_to_hash_bucket_fast(text, self._num_oov_buckets,
                                                         name="hash_bucket")
                if self._table is not None:
                    found = self._table.lookup(values)
                    buckets = add(buckets, self._table.size())
                    hit = not_equal(found, self._table.default_value)
                    ids = select(hit, found, buckets, name=_scope_base(scope))
                else:
                    ids = buckets
        return SparseTensor(keys.indices, ids, keys.dense_shape) if sparse else ids


class StaticVocabularyTable(IdTableWithHashBuckets):
    """TF 1.15's `tf.lookup.StaticVocabularyTable`: an id table built from
    `initializer` (keys -> int64 ids) whose misses hash into `num_oov_buckets` buckets
    after the vocabulary; with no initializer, every key hashes.

    Example:
        >>> init = tf.lookup.KeyValueTensorInitializer(["a", "b"], [0, 1], tf.string,
        ...                                            tf.int64)
        >>> table = tf.lookup.StaticVocabularyTable(init, num_oov_buckets=2)
        >>> ids = table.lookup(tf.constant(["b", "zzz"]))   # [1, 2 or 3]

    Raises:
        ValueError: num_oov_buckets not positive.
        TypeError: initializer keys not int64/string, values not int64, or a
            lookup_key_dtype that cannot be cast to the initializer's keys.
    """

    def __init__(self, initializer: Any, num_oov_buckets: int, lookup_key_dtype: Any = None,
                 name: str | None = None) -> None:
        if num_oov_buckets <= 0:
            raise ValueError(f"oov_buckets must be > 0, got {num_oov_buckets} "
                             "(StaticVocabularyTable always has out-of-vocabulary buckets).")
        if name:
            name = name.rstrip("/")
        table = None
        if initializer:
            kd = initializer.key_dtype
            lookup_dt = kd if lookup_key_dtype is None else _dtype(lookup_key_dtype)
            if kd not in (_dt.int64, _dt.string):
                raise TypeError(f"Invalid key dtype, expected one of (int64, string), but got "
                                f"{kd.name}.")
            if kd.is_integer != lookup_dt.is_integer:
                raise TypeError(f"Invalid key dtype, expected "
                                f"{'integer' if lookup_dt.is_integer else 'non-integer'} but "
                                f"got {kd.name}.")
            if initializer.value_dtype != _dt.int64:
                raise TypeError(f"Invalid value dtype, expected int64 but got "
                                f"{initializer.value_dtype.name}.")
            table = HashTable(initializer, default_value=-1)
            lookup_key_dtype = lookup_dt
        super().__init__(table, num_oov_buckets, FastHashSpec, name=name,
                         key_dtype=lookup_key_dtype)


# ---- factories ------------------------------------------------------------------------
def _check_index_args(num_oov_buckets: int, dtype: Any) -> _dt.DType:
    if num_oov_buckets < 0:
        raise ValueError(f"num_oov_buckets must be greater or equal than 0, got "
                         f"{num_oov_buckets}.")
    dt = _dtype(dtype)
    if not dt.is_integer and dt != _dt.string:
        raise TypeError("Only integer and string keys are supported.")
    return dt


def index_table_from_tensor(vocabulary_list: Any = None, num_oov_buckets: int = 0,
                            default_value: int = -1, hasher_spec: HasherSpec = FastHashSpec,
                            dtype: Any = _dt.string, name: str | None = None,
                            mapping: Any = None) -> LookupInterface:
    """A table mapping each key of the 1-D `mapping` to its position (int64); other keys
    get `default_value`, or with `num_oov_buckets` > 0 an OOV bucket id
    `len(mapping) + Fingerprint64(str(key)) % num_oov_buckets`. The same ids as
    TF's, and as tensorweave's fused VocabularyLookup.

    Example:
        >>> table = index_table_from_tensor(tf.constant(["emerson", "lake"]), 1)
        >>> table.lookup(tf.constant(["lake", "palmer"]))   # [1, 2]

    `vocabulary_list` is TF's core name (`tensorflow.python.ops.lookup_ops`), `mapping`
    tf.contrib.lookup's; either may be given.

    Raises:
        ValueError: no vocabulary, num_oov_buckets < 0, or a vocabulary of another dtype.
        TypeError: a dtype other than integer or string, or hasher_spec not a HasherSpec.
    """
    mapping = _one_vocabulary(vocabulary_list, mapping)
    dt = _check_index_args(num_oov_buckets, dtype)
    with name_scope(name, "string_to_index") as feat_to_id_scope:
        keys = convert_to_tensor(mapping)
        if keys.dtype.is_integer != dt.is_integer:
            raise ValueError(f"Expected {'integer' if dt.is_integer else 'non-integer'}, "
                             f"got {keys.dtype.name}.")
        if not dt.is_integer and keys.dtype.base_dtype != dt:
            raise ValueError(f"Expected {dt.name}, got {keys.dtype.name}.")
        ids = cast(_range(_size(keys)), _dt.int64)
        table_keys = cast(keys, _dt.int64) if keys.dtype.is_integer else keys
        init = KeyValueTensorInitializer(table_keys, ids, table_keys.dtype.base_dtype,
                                         _dt.int64, name="table_init")
        table = HashTable(init, default_value)
        if num_oov_buckets:
            return IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec,
                                          name=feat_to_id_scope, key_dtype=dt)
        return table


def _one_vocabulary(vocabulary_list: Any, mapping: Any) -> Any:
    if vocabulary_list is not None and mapping is not None:
        raise ValueError("Give the vocabulary once: vocabulary_list (TF's lookup_ops) or "
                         "mapping (tf.contrib.lookup), not both.")
    vocab = mapping if vocabulary_list is None else vocabulary_list
    if vocab is None:
        raise ValueError("vocabulary_list must be specified (the vocabulary tensor; "
                         "tf.contrib.lookup calls it mapping).")
    return vocab


def _check_vocab_file(vocabulary_file: Any, vocab_size: int | None) -> None:
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    if vocab_size is not None and vocab_size < 1:
        path = vocabulary_file
        if isinstance(vocabulary_file, Tensor):
            value = constant_value(vocabulary_file)
            path = "?" if value is None else value
        if isinstance(path, (bytes, np.ndarray, np.bytes_)):
            path = text_of(path)
        raise ValueError(f"vocab_size must be greater than 0, got {vocab_size}. "
                         f"vocabulary_file: {path}")


def index_table_from_file(vocabulary_file: Any = None, num_oov_buckets: int = 0,
                          vocab_size: int | None = None, default_value: int = -1,
                          hasher_spec: HasherSpec = FastHashSpec, key_dtype: Any = _dt.string,
                          name: str | None = None,
                          key_column_index: int = TextFileIndex.WHOLE_LINE,
                          value_column_index: int = TextFileIndex.LINE_NUMBER,
                          delimiter: str = "\t") -> LookupInterface:
    """A table mapping each line of `vocabulary_file` (its first `vocab_size` lines) to
    its line number; other keys get `default_value` or an OOV bucket id, as
    `index_table_from_tensor`. `key_column_index` / `value_column_index` pick
    `delimiter`-separated columns of the line instead (as TF).

    Example:
        >>> table = index_table_from_file("vocab.txt", num_oov_buckets=1)
        >>> ids = table.lookup(tf.constant(["brain", "unknown"]))
    """
    _check_vocab_file(vocabulary_file, vocab_size)
    dt = _check_index_args(num_oov_buckets, key_dtype)
    with name_scope(name, "string_to_index") as feat_to_id_scope:
        init = TextFileIdTableInitializer(
            vocabulary_file, vocab_size=vocab_size,
            key_dtype=_dt.int64 if dt.is_integer else dt, name="table_init",
            key_column_index=key_column_index, value_column_index=value_column_index,
            delimiter=delimiter)
        table = HashTable(init, default_value)
        if num_oov_buckets:
            return IdTableWithHashBuckets(table, num_oov_buckets, hasher_spec,
                                          name=feat_to_id_scope, key_dtype=dt)
        return table


def index_to_string_table_from_tensor(vocabulary_list: Any = None, default_value: Any = "UNK",
                                      name: str | None = None,
                                      mapping: Any = None) -> HashTable:
    """A table mapping int64 ids to the strings of the 1-D `vocabulary_list` (`mapping`
    in tf.contrib.lookup; `default_value` for ids out of range).

    Example:
        >>> table = index_to_string_table_from_tensor(["a", "b"])
        >>> table.lookup(tf.constant([1, 5], tf.int64))   # [b"b", b"UNK"]
    """
    mapping = _one_vocabulary(vocabulary_list, mapping)
    with name_scope(name, "index_to_string"):
        vocab = convert_to_tensor(mapping, dtype=_dt.string)
        keys = cast(_range(_size(vocab)), _dt.int64)
        init = KeyValueTensorInitializer(keys, vocab, _dt.int64, _dt.string, name="table_init")
        return HashTable(init, default_value)


def index_to_string_table_from_file(vocabulary_file: Any, vocab_size: int | None = None,
                                    default_value: Any = "UNK", name: str | None = None,
                                    key_column_index: int = TextFileIndex.LINE_NUMBER,
                                    value_column_index: int = TextFileIndex.WHOLE_LINE,
                                    delimiter: str = "\t") -> HashTable:
    """A table mapping int64 line numbers of `vocabulary_file` to its lines (or, with
    `key_column_index` / `value_column_index`, to `delimiter`-separated columns).

    Example:
        >>> table = index_to_string_table_from_file("vocab.txt")
    """
    _check_vocab_file(vocabulary_file, vocab_size)
    with name_scope(name, "index_to_string"):
        init = TextFileStringTableInitializer(
            vocabulary_file, vocab_size=vocab_size, name="table_init",
            key_column_index=key_column_index, value_column_index=value_column_index,
            delimiter=delimiter)
        return HashTable(init, default_value)


def string_to_index(tensor: Any, mapping: Any, default_value: int = -1,
                    name: str | None = None) -> Any:
    """Deprecated TF 1.x helper: `index_table_from_tensor(mapping).lookup(tensor)`."""
    with name_scope(name, "string_to_index"):
        table = index_table_from_tensor(mapping, default_value=default_value)
        return table.lookup(tensor)


def index_to_string(tensor: Any, mapping: Any, default_value: Any = "UNK",
                    name: str | None = None) -> Any:
    """Deprecated TF 1.x helper: `index_to_string_table_from_tensor(mapping).lookup(tensor)`."""
    with name_scope(name, "index_to_string"):
        table = index_to_string_table_from_tensor(mapping, default_value=default_value)
        return table.lookup(tensor)
