"""SparseTensorsMap stanzas: AddSparseToTensorsMap, AddManySparseToTensorsMap,
TakeManySparseFromTensorsMap (TF's names, inputs and attrs).

A queue holds dense tensors only, so the TF1 batchers (`tf.train.batch` and its
siblings) park each SparseTensor in a map on the device and queue its int64
handle instead; after the dequeue, TakeMany looks the handles up, removes those
entries and concatenates them along a new first dimension. The map is a device
resource keyed by (container, shared_name), where an empty shared_name means the
storing op's own node name; TakeMany names the map explicitly, so it reads the
map the storing op wrote (`take_many_sparse_from_tensors_map` does this for you).

Example:
    >>> sp = tf.SparseTensor([[0]], [1.0], [3])
    >>> h = add_sparse_to_tensors_map(sp)
    >>> back = take_many_sparse_from_tensors_map(h.op, tf.stack([h]), rank=2)
"""
from __future__ import annotations

import itertools
import threading
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.graph import colocate_with, get_default_graph
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape

_MAP_ATTRS = {"container": "", "shared_name": ""}
_STORING_OPS = ("AddSparseToTensorsMap", "AddManySparseToTensorsMap")


class SparseTensorsMap:
    """Int64 handle -> (indices, values, shape) of SparseTensors parked on a device."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self._entries: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def add(self, indices: np.ndarray, values: np.ndarray, shape: np.ndarray) -> int:
        with self._lock:
            handle = next(self._counter)
            self._entries[handle] = (indices, values, shape)
            return handle

    def take(self, handles: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The entries of `handles`, removed from the map (all of them or none)."""
        with self._lock:
            missing = [int(h) for h in handles if int(h) not in self._entries]
            if missing:
                raise errors.InvalidArgumentError(
                    None, None, f"Unable to find SparseTensor: {missing[0]} in map: {self.name} "
                    "(each handle can be taken once; was it taken already, or stored in "
                    "another map?)")
            return [self._entries.pop(int(h)) for h in handles]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"<SparseTensorsMap {self.name} entries={len(self)}>"


def _map(ctx: Any, container: str, shared_name: str) -> SparseTensorsMap:
    key = shared_name or ctx.name
    found = ctx.resources.lookup_or_create(container, key, lambda: SparseTensorsMap(key))
    if not isinstance(found, SparseTensorsMap):
        raise errors.InvalidArgumentError(
            None, None, f"Resource {container or '<default>'}/{key} exists but is a "
            f"{type(found).__name__}, not a SparseTensorsMap. Use another shared_name.")
    return found


def _check_parts(op_type: str, indices: Any, values: Any, shape: Any
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ix, vals, sh = np.asarray(indices), np.asarray(values), np.asarray(shape)
    if ix.ndim != 2:
        raise errors.InvalidArgumentError(None, None, f"{op_type}: Input indices should be a "
                                          f"matrix but received shape {list(ix.shape)}")
    if vals.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"{op_type}: Input values should be a "
                                          f"vector but received shape {list(vals.shape)}")
    if sh.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"{op_type}: Input shape should be a "
                                          f"vector but received shape {list(sh.shape)}")
    if ix.shape[0] != vals.shape[0] or ix.shape[1] != sh.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, f"{op_type}: indices {list(ix.shape)}, values {list(vals.shape)} and "
            f"shape {list(sh.shape)} do not describe one SparseTensor (need [N, rank], [N], "
            "[rank]).")
    return ix.astype(np.int64, copy=False), vals, sh.astype(np.int64, copy=False)


def _store_shape(op_type: str, indices: Tensor, values: Tensor, shape: Tensor) -> None:
    for t, rank, what in ((indices, 2, "indices"), (values, 1, "values"), (shape, 1, "shape")):
        if t.shape.ndims not in (None, rank):
            raise ValueError(f"{op_type}: sparse {what} {t.name} must have rank {rank}, but "
                             f"has shape {t.shape}.")


# ---- AddSparseToTensorsMap ---------------------------------------------------------------
add_op = define_op("AddSparseToTensorsMap",
                   inputs=("sparse_indices", "sparse_values", "sparse_shape"),
                   attrs=dict(_MAP_ATTRS), stateful=True)


@add_op.shape
def _(indices: Tensor, values: Tensor, shape: Tensor, **attrs: Any) -> Any:
    _store_shape("AddSparseToTensorsMap", indices, values, shape)
    return _dt.int64, TensorShape([])


@add_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, indices: Any, values: Any, shape: Any, *, container: str,
      shared_name: str) -> Any:
    ix, vals, sh = _check_parts("AddSparseToTensorsMap", indices, values, shape)
    return np.int64(_map(ctx, container, shared_name).add(ix.copy(), vals.copy(), sh.copy()))


add_op.no_gradient()

# ---- AddManySparseToTensorsMap -----------------------------------------------------------
add_many_op = define_op("AddManySparseToTensorsMap",
                        inputs=("sparse_indices", "sparse_values", "sparse_shape"),
                        attrs=dict(_MAP_ATTRS), stateful=True)


@add_many_op.shape
def _(indices: Tensor, values: Tensor, shape: Tensor, **attrs: Any) -> Any:
    _store_shape("AddManySparseToTensorsMap", indices, values, shape)
    return _dt.int64, TensorShape([None])


@add_many_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, indices: Any, values: Any, shape: Any, *, container: str,
      shared_name: str) -> Any:
    ix, vals, sh = _check_parts("AddManySparseToTensorsMap", indices, values, shape)
    if sh.size < 2:
        raise errors.InvalidArgumentError(
            None, None, "AddManySparseToTensorsMap: Rank of input SparseTensor should be > 1, "
            f"but saw rank: {sh.size} (the first dimension is the minibatch)")
    n = int(sh[0])
    rows = ix[:, 0]
    bad = (rows < 0) | (rows >= n)
    if bad.any():
        raise errors.InvalidArgumentError(
            None, None, "AddManySparseToTensorsMap: Received unexpected column 0 value in "
            f"input SparseTensor: {int(rows[bad][0])} < 0 or >= N (= {n})")
    order = np.argsort(rows, kind="stable")
    ix, vals, rows = ix[order], vals[order], rows[order]
    starts = np.searchsorted(rows, np.arange(n + 1))
    the_map = _map(ctx, container, shared_name)
    row_shape = sh[1:].copy()
    handles = np.empty([n], dtype=np.int64)
    for b in range(n):
        lo, hi = starts[b], starts[b + 1]
        handles[b] = the_map.add(ix[lo:hi, 1:].copy(), vals[lo:hi].copy(), row_shape)
    return handles


add_many_op.no_gradient()

# ---- TakeManySparseFromTensorsMap --------------------------------------------------------
take_op = define_op("TakeManySparseFromTensorsMap", inputs=("sparse_handles",),
                    attrs=dict(_MAP_ATTRS, dtype=_dt.float32), stateful=True)


@take_op.shape
def _(handles: Tensor, *, dtype: Any, **attrs: Any) -> Any:
    if handles.shape.ndims not in (None, 1):
        raise ValueError("TakeManySparseFromTensorsMap: sparse_handles should be a vector, "
                         f"but {handles.name} has shape {handles.shape}.")
    return [(_dt.int64, TensorShape([None, None])),
            (_dt.as_dtype(dtype).base_dtype, TensorShape([None])),
            (_dt.int64, TensorShape([None]))]


@take_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, handles: Any, *, dtype: Any, container: str,
      shared_name: str) -> Any:
    h = np.asarray(handles)
    if h.ndim != 1:
        raise errors.InvalidArgumentError(
            None, None, "TakeManySparseFromTensorsMap: sparse_handles should be a vector but "
            f"received shape {list(h.shape)}")
    if h.size == 0:
        raise errors.InvalidArgumentError(
            None, None, "TakeManySparseFromTensorsMap: Must have at least 1 serialized "
            "SparseTensor, but input matrix has 0 rows")
    entries = _map(ctx, container, shared_name).take(h)
    want = _dt.as_dtype(dtype).base_dtype
    rank = entries[0][2].size
    for i, (_, vals, sh) in enumerate(entries):
        have = _dt.as_dtype(vals.dtype).base_dtype if vals.dtype != object else _dt.string
        if have != want:
            raise errors.InvalidArgumentError(
                None, None, f"TakeManySparseFromTensorsMap: Requested SparseTensor of type "
                f"{want.name} but SparseTensor[{i}].values.dtype() == {have.name}")
        if sh.size != rank:
            raise errors.InvalidArgumentError(
                None, None, "TakeManySparseFromTensorsMap: Inconsistent rank across "
                f"SparseTensors: rank prior to SparseTensor[{i}] was: {rank + 1} but rank of "
                f"SparseTensor[{i}] is: {sh.size + 1}")
    shape = np.concatenate([[len(entries)], np.max([e[2] for e in entries], axis=0)
                            if rank else np.zeros([0], np.int64)]).astype(np.int64)
    out_ix = np.concatenate([
        np.concatenate([np.full([e[0].shape[0], 1], b, np.int64), e[0]], axis=1)
        for b, e in enumerate(entries)], axis=0)
    out_vals = np.concatenate([e[1] for e in entries]).astype(want.as_numpy_dtype, copy=False)
    return out_ix, out_vals, shape


take_op.no_gradient()


# ---- wrappers ----------------------------------------------------------------------------
def _add_to_map(op_type: str, sp: Any, container: str | None, shared_name: str | None,
            name: str | None) -> Tensor:
    if isinstance(sp, SparseTensorValue):
        sp = SparseTensor.from_value(sp)
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"{op_type} stores a SparseTensor (or SparseTensorValue), got {sp!r}.")
    return create_tensor(
        op_type, [sp.indices, sp.values, sp.dense_shape],
        {"container": container or "", "shared_name": shared_name or ""},
        name=name or op_type)


def add_sparse_to_tensors_map(sp_input: SparseTensor | SparseTensorValue,
                              container: str | None = None, shared_name: str | None = None,
                              name: str | None = None) -> Tensor:
    """Parks `sp_input` in a SparseTensorsMap; returns its int64 scalar handle.

    Args:
        sp_input: the SparseTensor to store.
        container, shared_name: the map's key (default: this op's node name).

    Example:
        >>> h = add_sparse_to_tensors_map(tf.SparseTensor([[0]], [1.0], [3]))
    """
    return _add_to_map("AddSparseToTensorsMap", sp_input, container, shared_name, name)


def add_many_sparse_to_tensors_map(sp_input: SparseTensor | SparseTensorValue,
                                   container: str | None = None, shared_name: str | None = None,
                                   name: str | None = None) -> Tensor:
    """Parks each row (along dimension 0) of `sp_input` in a map; returns [N] handles.

    Rows without entries are stored as empty SparseTensors of the row shape.

    Example:
        >>> hs = add_many_sparse_to_tensors_map(tf.SparseTensor([[1, 0]], [2.0], [3, 4]))
    """
    return _add_to_map("AddManySparseToTensorsMap", sp_input, container, shared_name, name)


def take_many_sparse_from_tensors_map(sparse_map_op: Operation, sparse_handles: Any,
                                      rank: int | None = None,
                                      name: str | None = None) -> SparseTensor:
    """The SparseTensors of `sparse_handles` (taken out of the map `sparse_map_op` stored
    them in), concatenated along a new dimension 0; other dimensions take the largest size.

    Args:
        sparse_map_op: the AddSparseToTensorsMap/AddManySparseToTensorsMap op.
        sparse_handles: int64 [N] handles it returned.
        rank: the rank of the result, when known (sets static shapes).

    Raises:
        TypeError: if `sparse_map_op` is not one of the storing ops.

    Example:
        >>> sp = take_many_sparse_from_tensors_map(h.op, tf.stack([h]), rank=2)
    """
    if not isinstance(sparse_map_op, Operation):
        raise TypeError(f"sparse_map_op must be an Operation, got {sparse_map_op!r}.")
    if sparse_map_op.type not in _STORING_OPS:
        raise TypeError("sparse_map_op must be one of AddSparseToTensorsMap or "
                        f"AddManySparseToTensorsMap. Instead, found `{sparse_map_op.type}` "
                        f"({sparse_map_op.name}).")
    g = get_default_graph()
    shared = sparse_map_op.get_attr("shared_name") or sparse_map_op.name
    with colocate_with(sparse_map_op):
        handles = convert_to_tensor(sparse_handles, dtype=_dt.int64, name="sparse_handles")
        op = g.create_op("TakeManySparseFromTensorsMap", [handles], {
            "dtype": sparse_map_op.inputs[1].dtype.base_dtype,
            "container": sparse_map_op.get_attr("container"), "shared_name": shared},
            name=name or "TakeManySparseFromTensorsMap")
    indices, values, shape = op.outputs
    indices.set_shape(TensorShape([None, rank]))
    shape.set_shape(TensorShape([rank]))
    return SparseTensor(indices, values, shape)


__all__ = ["SparseTensorsMap", "add_sparse_to_tensors_map", "add_many_sparse_to_tensors_map",
           "take_many_sparse_from_tensors_map"]
