"""Lookup-table ops: HashTable, LookupTableFind, LookupTableSize, InitializeTable and
InitializeTableFromTextFile (TF 1.x's reference-handle variants, with TF's names and attrs).

A `HashTable` op creates (or finds, by container and shared_name) a `HashTableResource`
in its device's resource manager and outputs a string reference handle to it, as
`VariableV2` does for a variable; the other ops take that reference and so run where
the table lives. A table placed on a ps task is therefore shared by every worker's
session on that cluster, like variables. The Python classes are in `tables.py`.

Example:
    >>> t = create_hash_table(tf.string, tf.int64)
    >>> init = initialize_table(t, tf.constant(["a", "b"]), tf.constant([0, 1], tf.int64))
    >>> ids = lookup_table_find(t, tf.constant(["b", "z"]), tf.constant(-1, tf.int64))
    >>> sess.run(init); sess.run(ids)     # [1, -1]
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from tensorweave.framework.text import text_of
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework import file_access as _files
from tensorweave.ops.op_author import REQUIRED, create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape

__all__ = ["HashTableResource", "create_hash_table", "initialize_table",
           "initialize_table_from_text_file", "lookup_table_find", "lookup_table_size"]

_KEY_DTYPES = (_dt.int32, _dt.int64, _dt.string)
_INT32_KEY_VALUES = (_dt.int32, _dt.float32, _dt.float64, _dt.string)
_VALUE_DTYPES = (_dt.int64, _dt.string, _dt.float32, _dt.float64, _dt.int32, _dt.bool)


def norm_key(k: Any) -> Any:
    """A key as the table holds it: bytes for strings, a Python int for integers."""
    if isinstance(k, bytes):
        return k
    if isinstance(k, str):
        return k.encode("utf-8")
    if isinstance(k, np.ndarray):
        return norm_key(k.item())
    return int(k)


class HashTableResource:
    """The storage behind a `HashTable` op: an immutable dict, set once by an
    initializer op (None until then)."""

    type_name = "HashTable"

    def __init__(self, name: str, key_dtype: _dt.DType, value_dtype: _dt.DType) -> None:
        self.name = name
        self.key_dtype = key_dtype
        self.value_dtype = value_dtype
        self.lock = threading.Lock()
        self.table: dict[Any, Any] | None = None

    def initialize(self, keys: list[Any], values: list[Any]) -> None:
        """Fills the table; FailedPreconditionError if a key repeats with another value,
        or if the table already holds other data (identical data again is a no-op,
        as TF >= 1.13, so that shared tables survive every worker's initializer)."""
        table: dict[Any, Any] = {}
        for k, v in zip(keys, values):
            k = norm_key(k)
            old = table.setdefault(k, v)
            if old is not v and old != v:
                raise errors.FailedPreconditionError(
                    None, None, f"HashTable has different value for same key. Key {k!r} has "
                    f"{old!r} and trying to add value {v!r} (table {self.name}).")
        with self.lock:
            if self.table is not None:
                if self.table == table:
                    return
                raise errors.FailedPreconditionError(
                    None, None, f"Table already initialized (table {self.name}, with "
                    "different data). A table is initialized once per resource; give "
                    "tables with other contents another shared_name.")
            self.table = table

    def get(self) -> dict[Any, Any]:
        table = self.table
        if table is None:
            raise errors.FailedPreconditionError(
                None, None, f"Table not initialized: {self.name}. Run its initializer "
                "first (sess.run(tf.tables_initializer()), which runs every table's).")
        return table

    def find(self, keys: Any, default: Any) -> np.ndarray:
        table = self.get()
        arr = np.asarray(keys)
        if arr.dtype.kind == "U":
            arr = np.vectorize(lambda s: s.encode("utf-8"), otypes=[object])(arr)
        flat = arr.reshape(-1).tolist()
        get = table.get
        miss = object()
        found = [get(k, miss) for k in flat]
        if any(f is miss for f in found):  # a str or numpy key under its plain form
            found = [f if f is not miss else get(norm_key(k), default)
                     for k, f in zip(flat, found)]
        np_dtype = object if self.value_dtype == _dt.string else \
            self.value_dtype.as_numpy_dtype
        return np.asarray(found, dtype=np_dtype).reshape(arr.shape)

    def size(self) -> int:
        table = self.table
        return 0 if table is None else len(table)

    def export(self) -> tuple[np.ndarray, np.ndarray]:
        """All keys [n] and values [n] (nothing before initialization)."""
        items = list((self.table or {}).items())
        def arr(xs: list[Any], dtype: _dt.DType) -> np.ndarray:
            return np.array(xs, dtype=object if dtype == _dt.string else dtype.as_numpy_dtype)
        return (arr([k for k, _ in items], self.key_dtype).reshape(len(items)),
                arr([v for _, v in items], self.value_dtype).reshape(len(items)))

    def __repr__(self) -> str:
        state = "uninitialized" if self.table is None else f"size={len(self.table)}"
        return (f"<HashTableResource {self.name} {self.key_dtype.name}->"
                f"{self.value_dtype.name} {state}>")


# ---- HashTable --------------------------------------------------------------------
hash_table_op = define_op(
    "HashTable", attrs={"container": "", "shared_name": "", "use_node_name_sharing": False,
                        "key_dtype": REQUIRED, "value_dtype": REQUIRED}, stateful=True)


@hash_table_op.shape
def _(*, container: str, shared_name: str, use_node_name_sharing: bool, key_dtype: Any,
      value_dtype: Any) -> Any:
    k, v = _dt.as_dtype(key_dtype).base_dtype, _dt.as_dtype(value_dtype).base_dtype
    if k not in _KEY_DTYPES:
        raise TypeError(f"HashTable: key_dtype must be int32, int64 or string, got {k.name}")
    if v not in _VALUE_DTYPES:
        raise TypeError(f"HashTable: value_dtype must be one of "
                        f"{[d.name for d in _VALUE_DTYPES]}, got {v.name}")
    return _dt.string._as_ref, TensorShape([2])


@hash_table_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, container: str, shared_name: str, use_node_name_sharing: bool,
      key_dtype: Any, value_dtype: Any) -> HashTableResource:
    k, v = _dt.as_dtype(key_dtype).base_dtype, _dt.as_dtype(value_dtype).base_dtype
    if k == _dt.int32 and v not in _INT32_KEY_VALUES:
        # TF registers int32-keyed tables only for these value dtypes.
        raise errors.InvalidArgumentError(
            None, None, f"No HashTable kernel for int32 keys and {v.name} values (node "
            f"{ctx.name}): int32 keys take {[d.name for d in _INT32_KEY_VALUES]} values; "
            "use int64 keys for other values.")
    key = shared_name or ctx.name
    res = ctx.resources.lookup_or_create(container, key, lambda: HashTableResource(key, k, v))
    if not isinstance(res, HashTableResource) or res.key_dtype != k or res.value_dtype != v:
        raise errors.InvalidArgumentError(
            None, None, f"Resource {container or '<default>'}/{key} exists but is "
            f"{res!r}, not a HashTable of {k.name}->{v.name}. Use another shared_name.")
    return res


hash_table_op.no_gradient()


def _check_key_dtype(table: HashTableResource, dtype: Any, what: str) -> None:
    if _dt.as_dtype(dtype).base_dtype != table.key_dtype:
        raise errors.InvalidArgumentError(
            None, None, f"{what}: table {table.name} has {table.key_dtype.name} keys, got "
            f"{_dt.as_dtype(dtype).name} keys.")


def _check_value_dtype(table: HashTableResource, dtype: Any, what: str) -> None:
    if _dt.as_dtype(dtype).base_dtype != table.value_dtype:
        raise errors.InvalidArgumentError(
            None, None, f"{what}: table {table.name} has {table.value_dtype.name} values, "
            f"got {_dt.as_dtype(dtype).name} values.")


def check_handle(t: Tensor, op: str) -> None:
    if t.dtype.base_dtype != _dt.string or not t.dtype.is_ref_dtype:
        raise TypeError(f"{op}: table_handle must be a table's reference handle (a "
                        f"HashTable op's output), got {t.name} ({t.dtype.name})")


# ---- LookupTableFind --------------------------------------------------------------
find_op = define_op("LookupTableFind", inputs=("&table_handle", "keys", "default_value"),
                    attrs={"Tin": None, "Tout": None}, stateful=True)


@find_op.shape
def _(handle: Tensor, keys: Tensor, default_value: Tensor, *, Tin: Any, Tout: Any) -> Any:
    check_handle(handle, "LookupTableFind")
    if default_value.shape.ndims not in (None, 0, 1):
        raise ValueError(f"LookupTableFind: default_value must be a scalar or a vector (a "
                         f"MutableHashTableOfTensors' values), got {default_value.name} of "
                         f"shape {default_value.shape}")
    if handle.op.type == "DenseHashTable":
        # Keys of a dense table may be vectors (its empty_key's shape): one value each.
        key_rank = handle.op.inputs[0].shape.ndims
        if key_rank is None or keys.shape.ndims is None:
            return default_value.dtype.base_dtype, TensorShape(None)
        batch = keys.shape[:keys.shape.ndims - key_rank] if keys.shape.ndims else \
            TensorShape([1])
        return default_value.dtype.base_dtype, batch.concatenate(default_value.shape)
    return default_value.dtype.base_dtype, keys.shape.concatenate(default_value.shape)


@find_op.kernel("CPU")
def _(table: Any, keys: Any, default_value: Any, *, Tin: Any,
      Tout: Any) -> np.ndarray:
    if Tin is not None:
        _check_key_dtype(table, Tin, "LookupTableFind")
    if Tout is not None:
        _check_value_dtype(table, Tout, "LookupTableFind")
    default = np.asarray(default_value)
    if getattr(table, "value_shape", None) is not None:  # a mutable table: any value shape
        return table.find(keys, default)
    if default.ndim != 0:
        raise errors.InvalidArgumentError(
            None, None, f"Expected shape [] for default value, got {list(default.shape)} "
            f"(table {table.name}).")
    return table.find(keys, default.item())


find_op.no_gradient()


# ---- LookupTableSize --------------------------------------------------------------
size_op = define_op("LookupTableSize", inputs=("&table_handle",), stateful=True)


@size_op.shape
def _(handle: Tensor) -> Any:
    check_handle(handle, "LookupTableSize")
    return _dt.int64, TensorShape([])


@size_op.kernel("CPU")
def _(table: HashTableResource) -> np.ndarray:
    return np.asarray(table.size(), dtype=np.int64)


size_op.no_gradient()


# ---- InitializeTable --------------------------------------------------------------
init_op = define_op("InitializeTable", inputs=("&table_handle", "keys", "values"),
                    attrs={"Tkey": None, "Tval": None}, stateful=True)


@init_op.shape
def _(handle: Tensor, keys: Tensor, values: Tensor, *, Tkey: Any, Tval: Any) -> Any:
    check_handle(handle, "InitializeTable")
    if not keys.shape.is_compatible_with(values.shape):
        raise ValueError(f"InitializeTable: keys {keys.name} {keys.shape} and values "
                         f"{values.name} {values.shape} must have the same shape")
    return []


@init_op.kernel("CPU")
def _(table: HashTableResource, keys: Any, values: Any, *, Tkey: Any, Tval: Any) -> None:
    k, v = np.asarray(keys), np.asarray(values)
    if Tkey is not None:
        _check_key_dtype(table, Tkey, "InitializeTable")
    if Tval is not None:
        _check_value_dtype(table, Tval, "InitializeTable")
    if k.shape != v.shape:
        raise errors.InvalidArgumentError(
            None, None, f"Keys and values must have the same size: keys {list(k.shape)} vs "
            f"values {list(v.shape)} (table {table.name}).")
    if k.size == 0:
        raise errors.InvalidArgumentError(
            None, None, f"keys and values cannot be empty tensors (table {table.name}): "
            "give the table at least one entry, or use no table.")
    table.initialize(k.reshape(-1).tolist(), v.reshape(-1).tolist())


init_op.no_gradient()


# ---- InitializeTableFromTextFile --------------------------------------------------
WHOLE_LINE, LINE_NUMBER = -2, -1

text_init_op = define_op("InitializeTableFromTextFile", inputs=("&table_handle", "filename"),
                         attrs={"key_index": REQUIRED, "value_index": REQUIRED,
                                "vocab_size": -1, "delimiter": "\t"}, stateful=True)


@text_init_op.shape
def _(handle: Tensor, filename: Tensor, *, key_index: int, value_index: int, vocab_size: int,
      delimiter: str) -> Any:
    check_handle(handle, "InitializeTableFromTextFile")
    if filename.dtype.base_dtype != _dt.string or filename.shape.ndims not in (None, 0):
        raise ValueError(f"InitializeTableFromTextFile: filename must be a scalar string, "
                         f"got {filename.name} ({filename.dtype.name}, {filename.shape})")
    if int(key_index) < WHOLE_LINE or int(value_index) < WHOLE_LINE:
        raise ValueError(f"InitializeTableFromTextFile: key_index {key_index} and "
                         f"value_index {value_index} must be >= -2")
    if int(vocab_size) < -1 or int(vocab_size) == 0:
        raise ValueError(f"InitializeTableFromTextFile: vocab_size must be -1 (all lines) "
                         f"or positive, got {vocab_size}")
    if not delimiter:
        raise ValueError("InitializeTableFromTextFile: delimiter must not be empty")
    return []


def _field(line: bytes, tokens: list[bytes], index: int, dtype: _dt.DType, lineno: int,
           path: str) -> Any:
    if index == LINE_NUMBER:
        return lineno
    token = line if index == WHOLE_LINE else tokens[index]
    if dtype == _dt.string:
        return token
    what = "int64" if dtype.is_integer else "float"
    try:
        text = token.decode("utf-8").strip()
        if "_" in text:
            raise ValueError(text)
        return int(text) if dtype.is_integer else float(text)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"Field {token.decode('utf-8', 'replace')} in line {lineno} of {path} "
            f"is not a valid {what}.") from None


def read_text_table(path: str, key_index: int, value_index: int, vocab_size: int,
                    delimiter: str, key_dtype: _dt.DType, value_dtype: _dt.DType
                    ) -> tuple[list[Any], list[Any]]:
    """The keys and values TF's InitializeTableFromTextFile takes from a text file:
    line numbers (LINE_NUMBER, -1), whole lines (WHOLE_LINE, -2) or delimiter-split
    columns, from the first `vocab_size` lines (-1: all)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"InitializeTableFromTextFile: {path} does "
                                   "not exist.") from None
    except OSError as e:
        raise errors.PermissionDeniedError(None, None, f"InitializeTableFromTextFile: cannot "
                                           f"read {path}: {e.strerror or e}.") from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline ending the last line starts no new line
    total = len(lines)
    if vocab_size != -1:
        if total < vocab_size:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid vocab_size in {path}: expected {vocab_size} but got "
                f"{total} lines.")
        lines = lines[:vocab_size]
    delim = delimiter.encode("utf-8")
    need = max(key_index, value_index)
    keys: list[Any] = []
    values: list[Any] = []
    for n, line in enumerate(lines):
        if line.endswith(b"\r"):
            line = line[:-1]
        tokens = line.split(delim) if need >= 0 else []
        if need >= len(tokens) and need >= 0:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid number of columns in {path} line {n} "
                f"({line.decode('utf-8', 'replace')}): expected more than {need} columns, "
                f"got {len(tokens)}.")
        keys.append(_field(line, tokens, key_index, key_dtype, n, path))
        values.append(_field(line, tokens, value_index, value_dtype, n, path))
    return keys, values


@text_init_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, table: HashTableResource, filename: Any, *, key_index: int,
      value_index: int, vocab_size: int, delimiter: str) -> None:
    what = f"{ctx.type} {ctx.name} on {ctx.device}"
    path = _files.check_path(ctx.library.device.file_policy, text_of(filename), "read", what)
    keys, values = read_text_table(path, int(key_index), int(value_index), int(vocab_size),
                                   delimiter, table.key_dtype, table.value_dtype)
    table.initialize(keys, values)


text_init_op.no_gradient()


# ---- graph builders ---------------------------------------------------------------
def create_hash_table(key_dtype: Any, value_dtype: Any, container: str = "",
                      shared_name: str = "", use_node_name_sharing: bool = False,
                      name: str | None = None) -> Tensor:
    """A HashTable op; returns its reference handle."""
    return create_tensor(
        "HashTable", [], {"container": container, "shared_name": shared_name or "",
          "use_node_name_sharing": bool(use_node_name_sharing),
          "key_dtype": _dt.as_dtype(key_dtype).base_dtype,
          "value_dtype": _dt.as_dtype(value_dtype).base_dtype},
        name=name or "HashTable")


def lookup_table_find(table_handle: Tensor, keys: Tensor, default_value: Tensor,
                      name: str | None = None) -> Tensor:
    """Values of `keys` (default_value where absent), in the shape of `keys`."""
    return table_handle.graph.create_op(
        "LookupTableFind", [table_handle, keys, default_value],
        {"Tin": keys.dtype.base_dtype, "Tout": default_value.dtype.base_dtype},
        name=name or "LookupTableFind").outputs[0]


def lookup_table_size(table_handle: Tensor, name: str | None = None) -> Tensor:
    """The number of entries in the table (int64 scalar)."""
    return table_handle.graph.create_op("LookupTableSize", [table_handle], {},
                                        name=name or "LookupTableSize").outputs[0]


def initialize_table(table_handle: Tensor, keys: Tensor, values: Tensor,
                     name: str | None = None) -> Operation:
    """An op filling the table with `keys` -> `values` (once)."""
    return table_handle.graph.create_op(
        "InitializeTable", [table_handle, keys, values],
        {"Tkey": keys.dtype.base_dtype, "Tval": values.dtype.base_dtype},
        name=name or "InitializeTable")


def initialize_table_from_text_file(table_handle: Tensor, filename: Tensor, key_index: int,
                                    value_index: int, vocab_size: int = -1,
                                    delimiter: str = "\t", name: str | None = None
                                    ) -> Operation:
    """An op filling the table from a text file's lines (once)."""
    return table_handle.graph.create_op(
        "InitializeTableFromTextFile", [table_handle, filename],
        {"key_index": int(key_index), "value_index": int(value_index),
         "vocab_size": int(vocab_size), "delimiter": delimiter},
        name=name or "InitializeTableFromTextFile")
