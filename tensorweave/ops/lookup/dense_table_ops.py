"""The dense (open-addressing) mutable hash table behind `tf.lookup.experimental.
DenseHashTable` / `tf.contrib.lookup.MutableDenseHashTable`.

As TF's MutableDenseHashTable kernel: keys are scalars or vectors, held in a power-of-2
array of buckets probed quadratically; `empty_key` marks a free bucket and
`deleted_key` a removed one (neither may be used as a key); the buckets double when
an insert would pass `max_load_factor`; export gives every bucket (free ones as
`empty_key` with zero values). Inserts, lookups, removals, export and import are the
mutable-table ops (mutable_table_ops.py). The creating op is tensorweave's
`DenseHashTable` on reference handles (TF's reference op has no deleted_key input;
its V2 op takes resource handles).

Example:
    >>> t = create_dense_hash_table(tf.constant(0, tf.int64), tf.constant(-1, tf.int64),
    ...                             tf.float32, initial_num_buckets=8)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.lookup.mutable_table_ops import MutableHashTableResource
from tensorweave.ops.lookup.table_ops import norm_key

__all__ = ["DenseHashTableResource", "create_dense_hash_table"]


def _np_dtype(dtype: _dt.DType) -> Any:
    return object if dtype == _dt.string else dtype.as_numpy_dtype


class DenseHashTableResource(MutableHashTableResource):
    """Buckets of keys [n, *key_shape] and values [n, *value_shape], as TF's kernel."""

    type_name = "MutableDenseHashTable"

    def __init__(self, name: str, key_dtype: _dt.DType, value_dtype: _dt.DType,
                 value_shape: tuple[int, ...], empty_key: np.ndarray,
                 deleted_key: np.ndarray, num_buckets: int, max_load_factor: float) -> None:
        super().__init__(name, key_dtype, value_dtype, value_shape)
        self.key_shape = tuple(empty_key.shape)
        self.empty_key, self.deleted_key = np.array(empty_key), np.array(deleted_key)
        self.empty = self._key(empty_key)
        self.deleted = self._key(deleted_key)
        self.max_load_factor = max_load_factor
        self.num_entries = 0
        self._allocate(num_buckets)

    def _key(self, k: Any) -> Any:
        a = np.asarray(k)
        return norm_key(a) if a.ndim == 0 else tuple(norm_key(x) for x in a.tolist())

    def _allocate(self, n: int) -> None:
        self.slots: list[Any] = [self.empty] * n
        self.values = np.zeros((n,) + self.value_shape, dtype=_np_dtype(self.value_dtype))
        if self.value_dtype == _dt.string:
            self.values[...] = b""
        self.num_entries = 0

    def _batch(self, keys: Any, what: str) -> list[Any]:
        arr = np.asarray(keys)
        batch = 1 if arr.ndim == 0 else arr.shape[0]
        if arr.size != batch * int(np.prod(self.key_shape, dtype=np.int64)):
            raise errors.InvalidArgumentError(
                None, None, f"Expected key shape {[batch, *self.key_shape]} got "
                f"{list(arr.shape)} ({what} on table {self.name}).")
        flat = arr.reshape((batch,) + self.key_shape)
        out = [self._key(k) for k in flat]
        for k in out:
            if k == self.empty:
                raise errors.InvalidArgumentError(
                    None, None, f"Using the empty_key as a table key is not allowed "
                    f"({what} on table {self.name}, key {k!r}).")
            if k == self.deleted:
                raise errors.InvalidArgumentError(
                    None, None, f"Using the deleted_key as a table key is not allowed "
                    f"({what} on table {self.name}, key {k!r}).")
        return out

    def _probe(self, key: Any) -> Any:
        mask = len(self.slots) - 1
        index = hash(key) & mask
        for probes in range(1, len(self.slots) + 1):
            yield index
            index = (index + probes) & mask  # quadratic probing, as TF

    def _put(self, key: Any, value: Any) -> None:
        for i in self._probe(key):
            slot = self.slots[i]
            if slot == key:
                self.values[i] = value
                return
            if slot == self.empty or slot == self.deleted:
                self.slots[i] = key
                self.values[i] = value
                self.num_entries += 1
                return
        raise errors.InternalError(None, None, f"Table {self.name} is full.")

    def _rebucket(self, n: int) -> None:
        live = [(k, v.copy()) for k, v in zip(self.slots, self.values)
                if k != self.empty and k != self.deleted]
        self._allocate(n)
        for k, v in live:
            self._put(k, v)

    def insert(self, keys: Any, values: Any) -> None:
        flat = self._batch(keys, "insert")
        vals = np.asarray(values)
        expected = (len(flat),) + self.value_shape
        if vals.size != int(np.prod(expected, dtype=np.int64)):
            raise errors.InvalidArgumentError(
                None, None, f"Expected shape {list(expected)} for value, got "
                f"{list(vals.shape)} (table {self.name}).")
        vals = vals.reshape(expected)
        with self.lock:
            pending = self.num_entries + len(flat)
            if pending > len(self.slots) * self.max_load_factor:
                n = len(self.slots)
                while pending > n * self.max_load_factor:
                    n <<= 1
                self._rebucket(n)
            for k, v in zip(flat, vals):
                self._put(k, v)

    def remove(self, keys: Any) -> None:
        flat = self._batch(keys, "remove")
        with self.lock:
            for key in flat:
                for i in self._probe(key):
                    if self.slots[i] == key:
                        self.slots[i] = self.deleted
                        self.num_entries -= 1
                        break
                    if self.slots[i] == self.empty:
                        break

    def find(self, keys: Any, default: Any) -> np.ndarray:
        default = np.asarray(default)
        flat = self._batch(keys, "lookup")
        out = np.empty((len(flat),) + self.value_shape, dtype=_np_dtype(self.value_dtype))
        with self.lock:
            for j, key in enumerate(flat):
                out[j] = default
                for i in self._probe(key):
                    if self.slots[i] == key:
                        out[j] = self.values[i]
                        break
                    if self.slots[i] == self.empty:
                        break
        return out

    def export(self) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            keys = np.array(self.slots, dtype=_np_dtype(self.key_dtype))
            return keys.reshape((len(self.slots),) + self.key_shape), self.values.copy()

    def import_(self, keys: Any, values: Any) -> None:
        # TF keeps the imported buckets as they are; its hash is not ours, so the live
        # entries are placed again in as many buckets as were saved.
        k = np.asarray(keys)
        v = np.asarray(values)
        with self.lock:
            self._allocate(k.shape[0])
            for key, val in zip(k, v.reshape((k.shape[0],) + self.value_shape)):
                nk = self._key(key)
                if nk != self.empty and nk != self.deleted:
                    self._put(nk, val)

    def size(self) -> int:
        return self.num_entries


dense_op = define_op("DenseHashTable", inputs=("empty_key", "deleted_key"),
                     attrs={"container": "", "shared_name": "",
                            "use_node_name_sharing": False, "key_dtype": REQUIRED,
                            "value_dtype": REQUIRED, "value_shape": TensorShape([]),
                            "initial_num_buckets": 131072, "max_load_factor": 0.8},
                     stateful=True)


@dense_op.shape
def _(empty_key: Tensor, deleted_key: Tensor, **_attrs: Any) -> Any:
    return _dt.string._as_ref, TensorShape([2])


@dense_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, empty_key: Any, deleted_key: Any, *, container: str,
      shared_name: str, use_node_name_sharing: bool, key_dtype: Any, value_dtype: Any,
      value_shape: Any, initial_num_buckets: int, max_load_factor: float
      ) -> DenseHashTableResource:
    k, v = _dt.as_dtype(key_dtype).base_dtype, _dt.as_dtype(value_dtype).base_dtype
    where = f"(node {ctx.name})"
    if not 0 < max_load_factor < 1:
        raise errors.InvalidArgumentError(
            None, None, f"max_load_factor must be between 0 and 1, got: {max_load_factor} "
            f"{where}")
    vshape = TensorShape(value_shape).as_list()
    if len(vshape) > 1 or None in vshape:
        raise errors.InvalidArgumentError(
            None, None, f"Empty value must be a scalar or a vector, got shape {vshape} "
            f"{where}")
    empty, deleted = np.asarray(empty_key), np.asarray(deleted_key)
    if empty.ndim > 1:
        raise errors.InvalidArgumentError(
            None, None, f"Empty key must be a scalar or a vector, got shape "
            f"{list(empty.shape)} {where}")
    if empty.shape != deleted.shape:
        raise errors.InvalidArgumentError(
            None, None, f"Empty and deleted keys must have same shape, got shapes: "
            f"{list(empty.shape)} and {list(deleted.shape)} {where}")
    if np.array_equal(empty, deleted):
        raise errors.InvalidArgumentError(
            None, None, f"Empty and deleted keys cannot be equal {where}: give the table "
            "two distinct keys it never stores.")
    n = int(initial_num_buckets)
    if n < 4 or n & (n - 1):
        raise errors.InvalidArgumentError(
            None, None, f"Number of buckets must be at least 4 and a power of 2, got: {n} "
            f"{where}")
    key = shared_name or ctx.name
    res = ctx.resources.lookup_or_create(
        container, key, lambda: DenseHashTableResource(
            key, k, v, tuple(d for d in vshape if d is not None), empty, deleted, n,
            float(max_load_factor)))
    if not isinstance(res, DenseHashTableResource) or res.key_dtype != k or \
            res.value_dtype != v:
        raise errors.InvalidArgumentError(
            None, None, f"Resource {container or '<default>'}/{key} exists but is {res!r}, "
            f"not a dense table of {k.name}->{v.name}. Use another shared_name.")
    return res


dense_op.no_gradient()


def create_dense_hash_table(empty_key: Tensor, deleted_key: Tensor, value_dtype: Any,
                            value_shape: TensorShape | None = None,
                            initial_num_buckets: int = 131072, max_load_factor: float = 0.8,
                            container: str = "", shared_name: str = "",
                            use_node_name_sharing: bool = False,
                            name: str | None = None) -> Tensor:
    """A DenseHashTable op keyed like `empty_key`; returns its reference handle."""
    return empty_key.graph.create_op(
        "DenseHashTable", [empty_key, deleted_key],
        {"container": container, "shared_name": shared_name or "",
         "use_node_name_sharing": bool(use_node_name_sharing),
         "key_dtype": empty_key.dtype.base_dtype,
         "value_dtype": _dt.as_dtype(value_dtype).base_dtype,
         "value_shape": value_shape if value_shape is not None else TensorShape([]),
         "initial_num_buckets": int(initial_num_buckets),
         "max_load_factor": float(max_load_factor)},
        name=name or "DenseHashTable").outputs[0]
