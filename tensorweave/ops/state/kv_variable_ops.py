"""EmbeddingVariable ops (DeepRec's): a table of rows that grows with the ids it admits.

KvVariable makes (or finds) the table on its device; KvInitialize gives it its default
rows; KvGather looks ids up (admitting new ones, counting their frequency, stamping the
global step). Its checkpoint ops are in kv_checkpoint_ops.py.

Storage (`EmbeddingResource`): the rows live in one NumPy buffer [capacity, dim] that
doubles when full, so every optimizer's SparseApply* kernel updates it unchanged: a
lookup's gradient is an IndexedSlices over *rows* of the buffer, not over ids. An
EmbeddingVariable and its optimizer slots ("emb/Adagrad") share one `KvIndex` (id ->
row, per-row frequency and version), so a slot's row i belongs to the same id. Row 0 is
a scratch row: ids not admitted (a CounterFilter's below its frequency) read their
default value and their gradients land there, where nothing reads them. A new id's row
is the default row `id % default_value_dim` of the initializer's values (DeepRec's
InitializerOption). Updates of the rows hold the task's update gate and the index's
lock (they always lock: a lookup that grows the buffer must not race them); a lookup
takes the lock only (see KvGather).

Example:
    >>> ev = create_kv_variable("emb", 8, tf.int64, tf.float32)
    >>> rows, where = kv_gather(ev, ids, global_step)
"""
from __future__ import annotations

import threading
import zlib
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.ops import array as array_ops
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.runtime.resource_mgr import VariableResource
from tensorweave.runtime.update_gate import gated_update, note_variable

__all__ = ["EmbeddingResource", "KvIndex", "as_embedding", "create_kv_variable",
           "kv_gather", "kv_initialize"]

_FIRST_CAPACITY = 64


def key_of(k: Any) -> Any:
    """A table key: bytes for strings, a Python int for integers."""
    if isinstance(k, (bytes, str)):
        return k.encode() if isinstance(k, str) else k
    return int(k)


def _default_rows(keys: list[Any], n: int) -> np.ndarray:
    # DeepRec's: id % default_value_dim; a string by a stable hash of its bytes.
    if isinstance(keys[0], bytes):
        return np.array([zlib.crc32(k) % n for k in keys], np.int64)
    return np.array(keys, np.int64) % n


class KvIndex:
    """The ids of an EmbeddingVariable and its slots: id -> row, and per row its id,
    frequency and version (the global step of its last lookup)."""

    def __init__(self, key_dtype: _dt.DType, filter_freq: int, steps_to_live: int,
                 l2_threshold: float) -> None:
        self.key_dtype = key_dtype
        self.filter_freq, self.steps_to_live = filter_freq, steps_to_live
        self.l2_threshold = l2_threshold
        self.lock = threading.RLock()
        self.members: list[EmbeddingResource] = []   # the variable first, then its slots
        self.clear()

    def clear(self) -> None:
        self.rows: dict[Any, int] = {}
        self.pending: dict[Any, int] = {}   # ids seen but not admitted: their count
        self.free: list[int] = []
        self.n, self.capacity = 1, _FIRST_CAPACITY
        self.freqs = np.zeros(self.capacity, np.int64)
        self.versions = np.full(self.capacity, -1, np.int64)
        for m in self.members:
            m.allocate()

    def rows_of(self, keys: list[Any]) -> np.ndarray:
        """The rows of `keys`, admitting (frequency 0, no version) those that have none."""
        rows = np.fromiter((self.rows.get(k, -1) for k in keys), np.int64, len(keys))
        missing = np.flatnonzero(rows < 0)
        if len(missing):
            rows[missing] = self.admit_new([keys[i] for i in missing], [0] * len(missing), -1)
        return rows

    def admit_new(self, keys: list[Any], freqs: list[int], version: int) -> np.ndarray:
        """Rows for ids that have none (each member's default rows, at once)."""
        rows = [self.free.pop() for _ in range(min(len(self.free), len(keys)))]
        fresh = len(keys) - len(rows)
        while self.n + fresh > self.capacity:
            self._grow()
        rows += range(self.n, self.n + fresh)
        self.n += fresh
        out = np.array(rows, np.int64)
        self.rows.update(zip(keys, rows))
        self.freqs[out], self.versions[out] = freqs, version
        for m in self.members:
            m.fill(out, keys)
        return out

    def _grow(self) -> None:
        self.capacity *= 2
        added = self.capacity - len(self.freqs)
        self.freqs = np.concatenate([self.freqs, np.zeros(added, np.int64)])
        self.versions = np.concatenate([self.versions, np.full(added, -1, np.int64)])
        for m in self.members:
            m.grow(self.capacity)

    def remove(self, keys: list[Any]) -> None:
        for k in keys:
            row = self.rows.pop(k, None)
            if row is not None:
                self.freqs[row], self.versions[row] = 0, -1
                self.free.append(row)

    def evict(self, global_step: int) -> None:
        """Drops the ids a GlobalStepEvict or L2WeightEvict option retires (at a save)."""
        keys, rows = self.live()
        doomed = np.zeros(len(rows), bool)
        if self.steps_to_live > 0 and global_step >= 0:
            doomed |= self.versions[rows] < global_step - self.steps_to_live
        if self.l2_threshold > 0 and self.members and self.members[0].value is not None:
            doomed |= np.linalg.norm(self.members[0].value[rows], axis=1) < self.l2_threshold
        self.remove([k for k, d in zip(keys, doomed) if d])

    def live(self) -> tuple[list[Any], np.ndarray]:
        """The admitted ids and their rows, in row order (stable between saves)."""
        pairs = sorted(self.rows.items(), key=lambda kr: kr[1])
        return [k for k, _ in pairs], np.array([r for _, r in pairs], np.int64)


class EmbeddingResource(VariableResource):
    """One EmbeddingVariable's (or slot's) rows: `value` is the buffer [capacity, dim]."""

    __slots__ = ("index", "dim", "defaults", "no_permission")
    always_lock = True   # see the module docstring
    type_name = "EmbeddingVariable"

    def __init__(self, name: str, dtype: Any, dim: int, index: KvIndex) -> None:
        super().__init__(name, dtype, TensorShape([None, dim]))
        self.index, self.dim = index, dim
        # apply kernels take it: one (reentrant) lock for the whole table
        self.lock = index.lock  # type: ignore[assignment]
        self.defaults: np.ndarray | None = None
        self.no_permission = 0.0
        index.members.append(self)

    def allocate(self) -> None:
        if self.defaults is None:
            return
        self.value = np.zeros((self.index.capacity, self.dim), self.dtype.as_numpy_dtype)
        keys, rows = self.index.live()
        self.fill(rows, keys)

    def fill(self, rows: np.ndarray, keys: list[Any]) -> None:
        """Sets `rows` to the default rows of `keys` (`key % len(defaults)`)."""
        if self.value is not None and self.defaults is not None and len(keys):
            self.value[rows] = self.defaults[_default_rows(keys, len(self.defaults))]

    def grow(self, capacity: int) -> None:
        if self.value is not None:
            new = np.zeros((capacity, self.dim), self.value.dtype)
            new[:len(self.value)] = self.value
            self.value = new


def as_embedding(x: Any, op: str) -> EmbeddingResource:
    """`x` if it is an EmbeddingVariable's storage, else InvalidArgumentError naming `op`."""
    if not isinstance(x, EmbeddingResource):
        raise errors.InvalidArgumentError(None, None, f"{op} needs an EmbeddingVariable, got "
                                          f"{type(x).__name__} {getattr(x, 'name', '')}")
    return x


# ---- KvVariable ----------------------------------------------------------------------
kv_variable_op = define_op(
    "KvVariable", attrs={"dim": REQUIRED, "key_dtype": REQUIRED, "dtype": REQUIRED,
                         "container": "", "shared_name": "", "primary": "",
                         "filter_freq": 0, "steps_to_live": 0, "l2_weight_threshold": 0.0},
    stateful=True)


@kv_variable_op.shape
def _(*, dim: int, dtype: Any, **_attrs: Any) -> Any:
    return _dt.as_dtype(dtype)._as_ref, TensorShape([None, dim])


@kv_variable_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, dim: int, key_dtype: Any, dtype: Any, container: str,
      shared_name: str, primary: str, filter_freq: int, steps_to_live: int,
      l2_weight_threshold: float) -> EmbeddingResource:
    name = shared_name or ctx.name
    # A slot shares its variable's ids (looked up first: the manager's lock is not
    # reentrant, and its creator runs under it).
    owner = as_embedding(ctx.resources.lookup(container, primary), "KvVariable") \
        if primary else None

    def make() -> EmbeddingResource:
        index = owner.index if owner is not None else KvIndex(
            _dt.as_dtype(key_dtype), int(filter_freq), int(steps_to_live),
            float(l2_weight_threshold))
        return EmbeddingResource(name, _dt.as_dtype(dtype).base_dtype, int(dim), index)
    res = as_embedding(ctx.resources.lookup_or_create(container, name, make), "KvVariable")
    note_variable(res, ctx.resources, step, ctx.device)
    return res


kv_variable_op.no_gradient()


def create_kv_variable(name: str, dim: int, key_dtype: Any, dtype: Any, primary: str = "",
                       filter_freq: int = 0, steps_to_live: int = 0,
                       l2_weight_threshold: float = 0.0) -> Tensor:
    """A KvVariable op's reference output (prefer `tf.get_embedding_variable`)."""
    return create_op("KvVariable", [], {
        "dim": int(dim), "key_dtype": _dt.as_dtype(key_dtype).base_dtype,
        "dtype": _dt.as_dtype(dtype).base_dtype, "primary": primary,
        "filter_freq": int(filter_freq), "steps_to_live": int(steps_to_live),
        "l2_weight_threshold": float(l2_weight_threshold)}, name=name).outputs[0]


# ---- KvInitialize --------------------------------------------------------------------
kv_init_op = define_op("KvInitialize", inputs=("&ref", "defaults"),
                       attrs={"no_permission": 0.0}, stateful=True)


@kv_init_op.shape
def _(ref: Tensor, defaults: Tensor, *, no_permission: float) -> Any:
    return ref.dtype, ref.shape


@kv_init_op.kernel("CPU")
def _(ref: Any, defaults: Any, *, no_permission: float) -> EmbeddingResource:
    res = as_embedding(ref, "KvInitialize")
    d = np.asarray(defaults, res.dtype.as_numpy_dtype)
    if d.ndim != 2 or d.shape[1] != res.dim or not len(d):
        raise errors.InvalidArgumentError(
            None, None, f"KvInitialize: the default rows of {res.name} must be [n >= 1, "
            f"{res.dim}], got {list(d.shape)}")
    with gated_update(res), res.index.lock:
        res.defaults, res.no_permission = d.copy(), float(no_permission)
        if res is res.index.members[0]:
            res.index.clear()   # (re-)initializing the variable forgets its ids
        else:
            res.allocate()
    return res


kv_init_op.no_gradient()


def kv_initialize(ref: Tensor, defaults: Tensor, no_permission: float = 0.0) -> Operation:
    """Sets the default rows new ids start from (and forgets the ids of a variable)."""
    return create_op("KvInitialize", [ref, defaults],
                     {"no_permission": float(no_permission)}, name="KvInitialize")


# ---- KvGather ------------------------------------------------------------------------
kv_gather_op = define_op("KvGather", inputs=("&ref", "ids", "global_step"), stateful=True)


@kv_gather_op.shape
def _(ref: Tensor, ids: Tensor, global_step: Tensor) -> Any:
    return [(ref.dtype.base_dtype, ids.shape.concatenate(ref.shape[1:])),
            (_dt.int64, TensorShape([ids.shape.num_elements()]))]


def _unique(flat: np.ndarray) -> tuple[list[Any], np.ndarray, np.ndarray]:
    """(distinct keys, each id's position among them, each key's count)."""
    if flat.dtype == object:
        keyed = [key_of(k) for k in flat.tolist()]
        first: dict[Any, int] = {}
        inverse = np.fromiter((first.setdefault(k, len(first)) for k in keyed), np.int64,
                              len(keyed))
        return list(first), inverse, np.bincount(inverse, minlength=len(first))
    uniq, inverse, counts = np.unique(flat.astype(np.int64), return_inverse=True,
                                      return_counts=True)
    return uniq.tolist(), inverse.reshape(-1), counts


@kv_gather_op.kernel("CPU")
def _(ref: Any, ids: Any, global_step: Any) -> tuple[np.ndarray, np.ndarray]:
    res = as_embedding(ref, "KvGather")
    res.read()   # uninitialized: FailedPrecondition, naming it
    ids = np.asarray(ids)
    flat = ids.reshape(-1)
    step = int(np.asarray(global_step))
    index = res.index
    # The index's lock only, not the update gate: a gate hold lasts for the step's whole
    # part on the task, and a sync worker's step waits there for its token, which the
    # chief's save (pausing the gate) would then wait for. Counts and admissions are
    # bookkeeping a checkpoint may take from either side of a step.
    with index.lock:
        uniq, inverse, counts = _unique(flat)
        where = np.zeros(len(uniq), np.int64)   # 0: not admitted (the scratch row)
        new_keys: list[Any] = []
        new_counts: list[int] = []
        new_at: list[int] = []
        known: list[int] = []
        for i, (k, c) in enumerate(zip(uniq, counts.tolist())):
            row = index.rows.get(k)
            if row is not None:
                where[i] = row
                known.append(i)
                continue
            seen = index.pending.pop(k, 0) + c
            if seen < index.filter_freq:
                index.pending[k] = seen
            else:
                new_keys.append(k)
                new_counts.append(seen)
                new_at.append(i)
        if known:
            old = where[known]
            index.freqs[old] += counts[known]
            index.versions[old] = np.maximum(index.versions[old], step)
        if new_keys:
            where[new_at] = index.admit_new(new_keys, new_counts, step)
        rows = where[inverse]
        out = res.read()[rows]   # (admitting may have grown the buffer)
    out[rows == 0] = res.no_permission
    return out.reshape(ids.shape + (res.dim,)), rows


@kv_gather_op.gradient
def _(op: Operation, grad: Any, _rows_grad: Any) -> Any:
    ref, ids, _step = op.inputs
    rows = op.outputs[1]
    with op.graph.colocate_with(ref.op):
        shape = create_op("Shape", [ref], {"out_type": _dt.int64}, "Shape").outputs[0]
    values = array_ops.reshape(grad, [-1, ref.shape[1]])
    return [IndexedSlices(values, rows, shape), None, None]


def kv_gather(ref: Tensor, ids: Tensor, global_step: Tensor,
              name: str = "KvGather") -> tuple[Tensor, Tensor]:
    """(rows of `ids`, their buffer rows); admits ids, counts and stamps them."""
    op = create_op("KvGather", [ref, ids, global_step], None, name=name)
    return op.outputs[0], op.outputs[1]
