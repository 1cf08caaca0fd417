"""Variable updates at N-d indices: ScatterNdUpdate, ScatterNdAdd, ScatterNdSub (stanzas
and wrappers), and `tf.batch_scatter_update` built on ScatterNdUpdate.

`indices` has shape [..., K]: each innermost vector names one slice
`ref[i0, ..., iK-1]`, and `updates` has shape `indices.shape[:-1] + ref.shape[K:]`.

Example:
    >>> v = tf.Variable(tf.zeros([2, 3]))
    >>> tf.scatter_nd_update(v, [[0, 1], [1, 2]], [5.0, 6.0])   # v[0,1]=5, v[1,2]=6
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.fill_ops import range as _range
from tensorweave.ops.state.scatter_ops import build_scatter, check_scatter_inputs, scatter_update
from tensorweave.ops.state.state_ops import _invalid, _maybe_lock, _ref_of
from tensorweave.runtime.resource_mgr import VariableResource
from tensorweave.runtime.update_gate import gated_update


def _nd_op(op_type: str, apply: Any) -> Any:
    op = define_op(op_type, inputs=("&ref", "indices", "updates"),
                   attrs={"use_locking": True}, stateful=True)

    @op.shape
    def _(ref: Tensor, indices: Tensor, updates: Tensor, *, use_locking: bool) -> Any:
        check_scatter_inputs(op_type, ref, indices, updates)
        k = indices.shape[-1] if indices.shape.ndims else None
        k = getattr(k, "value", k)
        if ref.shape.ndims is not None and k is not None:
            if k > ref.shape.ndims:
                raise ValueError(f"{op_type}: the last dimension of indices ({k}) is more "
                                 f"than the rank of {ref.name} ({ref.shape.ndims})")
            want = indices.shape[:-1].concatenate(ref.shape[k:])
            if not updates.shape.is_compatible_with(want):
                raise ValueError(f"{op_type}: updates {updates.name} have shape "
                                 f"{updates.shape}, expected indices.shape[:-1] + "
                                 f"ref.shape[{k}:] = {want}")
        return ref.dtype, ref.shape

    @op.kernel("CPU")
    def _(ref: VariableResource, indices: np.ndarray, updates: np.ndarray, *,
          use_locking: bool) -> Any:
        with gated_update(ref), _maybe_lock(ref, use_locking):
            cur = ref.read()
            k = indices.shape[-1]
            idx = np.asarray(indices).astype(np.int64, copy=False).reshape(-1, k)
            bound = np.asarray(cur.shape[:k])
            bad = np.nonzero(((idx < 0) | (idx >= bound)).any(axis=1))[0]
            if bad.size:
                raise _invalid(f"{op_type}: indices {idx[bad[0]].tolist()} are not in "
                               f"[0, {cur.shape[:k]}) for variable {ref.name}")
            upd = np.asarray(updates, dtype=cur.dtype).reshape(
                (idx.shape[0],) + cur.shape[k:])
            apply(cur, tuple(idx.T), upd)
        return ref

    op.no_gradient()
    return op


def _nd_set(cur: np.ndarray, idx: tuple[np.ndarray, ...], upd: np.ndarray) -> None:
    cur[idx] = upd


scatter_nd_update_op = _nd_op("ScatterNdUpdate", _nd_set)
scatter_nd_add_op = _nd_op("ScatterNdAdd", np.add.at)      # duplicates accumulate
scatter_nd_sub_op = _nd_op("ScatterNdSub", np.subtract.at)


def scatter_nd_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                      name: str | None = None) -> Tensor:
    """`tf.scatter_nd_update`: `ref[indices[i]] = updates[i]` at N-d indices.

    Example:
        >>> tf.scatter_nd_update(v, [[1], [3]], [[9.0, 9.0], [8.0, 8.0]])  # rows 1, 3
    """
    return build_scatter("ScatterNdUpdate", ref, indices, updates, use_locking, name)


def scatter_nd_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                   name: str | None = None) -> Tensor:
    """`tf.scatter_nd_add`: `ref[indices[i]] += updates[i]`; duplicates accumulate.

    Example:
        >>> tf.scatter_nd_add(v, [[0, 0], [0, 0]], [1.0, 2.0])  # v[0, 0] += 3
    """
    return build_scatter("ScatterNdAdd", ref, indices, updates, use_locking, name)


def scatter_nd_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                   name: str | None = None) -> Tensor:
    """`tf.scatter_nd_sub`: `ref[indices[i]] -= updates[i]`; duplicates accumulate.

    Example:
        >>> tf.scatter_nd_sub(v, [[2]], [[1.0, 1.0]])
    """
    return build_scatter("ScatterNdSub", ref, indices, updates, use_locking, name)


def batch_scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                         name: str | None = None) -> Tensor:
    """`tf.batch_scatter_update`: per batch entry b, `ref[b, indices[b, j]] = updates[b, j]`.

    `indices` has the batch dimensions of `ref` plus one (the positions to set in
    the next dimension); its rank must be known.

    Raises:
        ValueError: indices of unknown rank, or batch dimensions that differ from ref's.

    Example:
        >>> tf.batch_scatter_update(v, [[0], [2]], [[1.0], [2.0]])  # v[0,0]=1, v[1,2]=2
    """
    r = _ref_of(ref)
    g = r.graph
    with g.as_default(), g.name_scope(name or "BatchScatterUpdate"):
        idx = convert_to_tensor(indices, name="indices")
        upd = convert_to_tensor(updates, dtype=r.dtype.base_dtype, name="updates")
        rank = idx.shape.ndims
        if rank is None:
            raise ValueError(f"batch_scatter_update needs indices of known rank "
                             f"({idx.name} has an unknown shape).")
        if rank == 1:
            return scatter_update(r, idx, upd, use_locking=use_locking)
        batch = idx.shape[:-1]
        if r.shape.ndims is not None and not batch.is_compatible_with(r.shape[:rank - 1]):
            raise ValueError(f"batch_scatter_update: the batch dimensions of indices "
                             f"{batch} do not match those of {r.name} {r.shape}")
        # One coordinate per batch dimension, broadcast to indices' shape, then the
        # indices themselves: [..., rank] N-d indices into ref.
        dims = array_ops.shape(idx, out_type=idx.dtype)
        coords = []
        for axis in range(rank - 1):
            along = _range(0, dims[axis], dtype=idx.dtype)
            shape = [1] * rank
            shape[axis] = -1
            coords.append(array_ops.reshape(along, shape) + array_ops.zeros_like(idx))
        nd = array_ops.stack(coords + [idx], axis=-1)
        return scatter_nd_update(r, nd, upd, use_locking=use_locking)

__all__ = ["scatter_nd_update", "scatter_nd_add", "scatter_nd_sub", "batch_scatter_update"]
