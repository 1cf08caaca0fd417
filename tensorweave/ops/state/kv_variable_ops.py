"""EmbeddingVariable ops (DeepRec's): a table of rows that grows with the ids it admits.

KvVariable makes (or finds) the table on its device; KvInitialize gives it its default
rows; KvGather looks ids up (admitting new ones, counting their frequency). Its
checkpoint ops are in kv_checkpoint_ops.py; KvStamp (kv_stamp_ops.py) gives updated ids
the global step of their update.

Storage (`EmbeddingResource`): the rows live in one NumPy buffer [capacity, dim] that
doubles when full, so every optimizer's SparseApply* kernel updates it unchanged: a
lookup's gradient is an IndexedSlices over *rows* of the buffer, not over ids. An
EmbeddingVariable and its optimizer slots ("emb/Adagrad") share one `KvIndex` (id ->
row in a vectorized hash index, per-row frequency and version; a batch of ids is looked
up, counted and admitted in NumPy passes, not a loop per id), so a slot's row i belongs
to the same id. Row 0 is
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
from tensorweave.kernels.counting_lock import CountingRLock
from tensorweave.kernels.int_hash_index import DictIndex, IntHashIndex
from tensorweave.runtime.resource_mgr import VariableResource
from tensorweave.runtime.update_gate import gated_update, note_variable

__all__ = ["EmbeddingResource", "KvIndex", "as_embedding", "create_kv_variable",
           "kv_gather", "kv_gather_kernel", "kv_initialize"]

_FIRST_CAPACITY = 64


def key_of(k: Any) -> Any:
    """A table key: bytes for strings, a Python int for integers."""
    if isinstance(k, (bytes, str)):
        return k.encode() if isinstance(k, str) else k
    return int(k)


def _default_rows(keys: np.ndarray, n: int) -> np.ndarray:
    # DeepRec's: id % default_value_dim; a string by a stable hash of its bytes.
    if keys.dtype == object:
        return np.array([zlib.crc32(k) % n for k in keys.tolist()], np.int64)
    return keys % n


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct keys, each key's position among them, each distinct key's count): ints
    sorted, strings in order of first appearance."""
    if keys.dtype != object:
        uniq, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        return uniq, inverse.reshape(-1), counts
    first: dict[Any, int] = {}
    inverse = np.fromiter((first.setdefault(k, len(first)) for k in keys.tolist()),
                          np.int64, len(keys))
    return _objects(list(first)), inverse, np.bincount(inverse, minlength=len(first))


def _objects(items: list[Any]) -> np.ndarray:
    out = np.empty(len(items), object)
    out[:] = items
    return out


def _put_rows(buf: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """`buf[rows] = values` for a C-contiguous 2-D `buf`, as one record per row: NumPy
    assigns whole records ~2.5x faster than the rows of a 2-D fancy index."""
    if buf.ndim != 2 or not buf.flags.c_contiguous or not buf.shape[1]:
        buf[rows] = values
        return
    rec = np.dtype((np.void, buf.shape[1] * buf.itemsize))
    buf.view(rec).reshape(-1)[rows] = \
        np.ascontiguousarray(values, buf.dtype).reshape(len(rows), -1).view(rec).reshape(-1)


class KvIndex:
    """The ids of an EmbeddingVariable and its slots: id -> row, and per row its
    frequency and version (the global step of its last update, stamped by KvStamp after
    the optimizer's; an id admitted but never trained keeps its admission's step).

    Integer ids live in an `IntHashIndex` (kernels/int_hash_index.py: two NumPy arrays
    probed a batch of ids at once, 24-48 bytes an id; a dict took ~100 and a Python
    step per id), strings in a `DictIndex` (a dict behind the same interface: a string
    id is a Python object already, and a 64-bit fingerprint could merge two ids, which
    DeepRec's string keys never do). `pending` holds the ids a filter has not admitted
    yet and how often they were looked up (counted exactly, CBFFilter's too), in an
    index of the same kind. Every method runs under `lock` (its caller holds it).
    """

    def __init__(self, key_dtype: _dt.DType, filter_freq: int, steps_to_live: int,
                 l2_threshold: float) -> None:
        self.key_dtype = key_dtype
        self.filter_freq, self.steps_to_live = filter_freq, steps_to_live
        self.l2_threshold = l2_threshold
        # Every change takes it; its count of holds tells ps replicas whether the table
        # changed since their last copy (distributed/replica_embeddings.py).
        self.lock = CountingRLock()
        self.members: list[EmbeddingResource] = []   # the variable first, then its slots
        self.clear()

    def _new_index(self) -> IntHashIndex | DictIndex:
        return DictIndex() if self.key_dtype == _dt.string else IntHashIndex()

    def clear(self) -> None:
        self.rows = self._new_index()      # id -> row
        self.pending = self._new_index()   # id not admitted -> its lookups so far
        self.free = np.zeros(0, np.int64)  # rows of removed ids, reused last-freed first
        self.n, self.capacity = 1, _FIRST_CAPACITY
        self.freqs = np.zeros(self.capacity, np.int64)
        self.versions = np.full(self.capacity, -1, np.int64)
        for m in self.members:
            m.allocate()

    def keys_of(self, keys: Any) -> np.ndarray:
        """`keys` as the index holds them: int64, or bytes in an object array."""
        if self.key_dtype == _dt.string:
            return _objects([key_of(k) for k in np.asarray(keys, object).reshape(-1).tolist()])
        return np.asarray(keys).astype(np.int64, copy=False).reshape(-1)

    def rows_of(self, keys: Any) -> np.ndarray:
        """The rows of distinct `keys`, admitting (frequency 0, no version) those that
        have none."""
        keys = self.keys_of(keys)
        rows, slots = self.rows.find_slots(keys)
        missing = np.flatnonzero(rows < 0)
        if len(missing):
            rows[missing] = self.admit_new(keys[missing], np.zeros(len(missing), np.int64),
                                           -1, slots[missing])
        return rows

    def lookup(self, ids: np.ndarray, step: int) -> np.ndarray:
        """Each id's row (0: not admitted) for one lookup of `ids` (keys_of form) at
        global step `step`: counts the known ids, and admits the new ones that reach
        filter_freq (DeepRec's CounterFilter), their version `step`. A known id's version
        is left alone: DeepRec's GlobalStepEvict counts from its last update (KvStamp),
        and a lookup alone (an evaluation) does not keep it alive."""
        rows, slots = self.rows.find_slots(ids)
        known = rows >= 0
        np.add.at(self.freqs, rows[known], 1)
        new = np.flatnonzero(~known)
        if not len(new):
            return rows
        # New ids: each distinct one once (in key order: the rows a batch admits follow it).
        keys, inverse, seen = _distinct(ids[new])
        at = np.empty(len(keys), slots.dtype)
        at[inverse] = slots[new]   # (repeats of an id ended their probes at one slot)
        admit = self._count_pending(keys, seen) if self.filter_freq > 1 else \
            np.ones(len(keys), bool)
        got = np.zeros(len(keys), np.int64)   # 0: the scratch row, for ids not admitted
        if admit.any():
            got[admit] = self.admit_new(keys[admit], seen[admit], step, at[admit])
        rows[new] = got[inverse]
        return rows

    def _count_pending(self, keys: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """Adds `seen` (this lookup's counts, updated in place) to the pending counts of
        new `keys`; returns which reached filter_freq (they leave `pending`)."""
        before, slots = self.pending.find_slots(keys)
        held = before >= 0
        seen += np.maximum(before, 0)
        wait = seen < self.filter_freq
        self.pending.set_at(slots[held & wait], seen[held & wait])
        fresh, done = ~held & wait, held & ~wait
        # Inserting first: a removal may empty slots the new ids' probes passed. (A
        # rebuild moves every key: then the admitted ones are found again.)
        if self.pending.insert_at(keys[fresh], seen[fresh], slots[fresh]):
            self.pending.remove(keys[done])
        else:
            self.pending.remove_at(slots[done])
        return ~wait

    def admit_new(self, keys: np.ndarray, freqs: np.ndarray, version: int,
                  slots: np.ndarray | None = None) -> np.ndarray:
        """Rows for distinct ids that have none (each member's default rows, at once);
        `slots`: their `rows.find_slots` results, if nothing was admitted since."""
        reused = self.free[::-1][:len(keys)]
        self.free = self.free[:len(self.free) - len(reused)]
        fresh = len(keys) - len(reused)
        while self.n + fresh > self.capacity:
            self._grow()
        out = np.concatenate([reused, np.arange(self.n, self.n + fresh, dtype=np.int64)])
        self.n += fresh
        self.rows.insert_at(keys, out, slots)
        self.freqs[out], self.versions[out] = freqs, version
        for m in self.members:
            m.fill(out, keys)
        return out

    def _grow(self) -> None:
        # Zeros, not a fill: untouched pages of a big array cost no memory, and rows
        # past `n` are set when admitted.
        self.capacity *= 2
        for name in ("freqs", "versions"):
            old = getattr(self, name)
            new = np.zeros(self.capacity, np.int64)
            new[:len(old)] = old
            setattr(self, name, new)
        for m in self.members:
            m.grow(self.capacity)

    def remove(self, keys: Any) -> None:
        """Forgets distinct `keys` (those held); their rows are reused."""
        rows = self.rows.remove(self.keys_of(keys))
        rows = rows[rows >= 0]
        self.freqs[rows], self.versions[rows] = 0, -1
        self.free = np.concatenate([self.free, rows])

    def evict(self, global_step: int) -> None:
        """Drops the ids a GlobalStepEvict or L2WeightEvict option retires (at a save)."""
        keys, rows = self.live()
        doomed = np.zeros(len(rows), bool)
        if self.steps_to_live > 0 and global_step >= 0:
            doomed |= self.versions[rows] < global_step - self.steps_to_live
        if self.l2_threshold > 0 and self.members and self.members[0].value is not None:
            doomed |= np.linalg.norm(self.members[0].value[rows], axis=1) < self.l2_threshold
        if doomed.any():
            self.remove(keys[doomed])

    def live(self) -> tuple[np.ndarray, np.ndarray]:
        """The admitted ids (keys_of form) and their rows, in row order (stable between
        saves): the index's pairs placed by row, no sort."""
        keys, rows = self.rows.items()
        by_row = np.empty(self.n, keys.dtype)
        by_row[rows] = keys
        held = np.zeros(self.n, bool)
        held[rows] = True
        order = np.flatnonzero(held)
        return by_row[order], order

    @property
    def nbytes(self) -> int:
        """The index's bytes: ids, pending counts, per-row frequencies and versions."""
        return self.rows.nbytes + self.pending.nbytes + self.freqs.nbytes + \
            self.versions.nbytes + self.free.nbytes


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

    def fill(self, rows: np.ndarray, keys: np.ndarray) -> None:
        """Sets `rows` to the default rows of `keys` (`key % len(defaults)`)."""
        if self.value is not None and self.defaults is not None and len(keys):
            _put_rows(self.value, rows, np.take(self.defaults, _default_rows(
                keys, len(self.defaults)), axis=0))

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


def kv_gather_kernel(res: EmbeddingResource, ids: Any,
                     global_step: Any) -> tuple[np.ndarray, np.ndarray]:
    """KvGather's kernel: (the rows of `ids`, their buffer rows), admitting, counting
    and stamping the ids (the scale benchmark calls it directly)."""
    res.read()   # uninitialized: FailedPrecondition, naming it
    ids = np.asarray(ids)
    step = int(np.asarray(global_step))
    index = res.index
    # The index's lock only, not the update gate: a gate hold lasts for the step's whole
    # part on the task, and a sync worker's step waits there for its token, which the
    # chief's save (pausing the gate) would then wait for. Counts and admissions are
    # bookkeeping a checkpoint may take from either side of a step.
    with index.lock:
        rows = index.lookup(index.keys_of(ids), step)
        # (admitting may have grown the buffer; np.take is ~4x a 2-D fancy index)
        out = np.take(res.read(), rows, axis=0)
    out[rows == 0] = res.no_permission
    return out.reshape(ids.shape + (res.dim,)), rows


@kv_gather_op.kernel("CPU")
def _(ref: Any, ids: Any, global_step: Any) -> tuple[np.ndarray, np.ndarray]:
    return kv_gather_kernel(as_embedding(ref, "KvGather"), ids, global_step)


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
