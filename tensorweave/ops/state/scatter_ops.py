"""Sparse variable updates by rows: ScatterAdd, ScatterSub, ScatterMul, ScatterDiv,
ScatterMax, ScatterMin, ScatterUpdate (stanzas and wrappers); by N-d index:
scatter_nd_ops.py.

Example:
    >>> v = tf.Variable(tf.zeros([4, 2]))
    >>> sess.run(tf.scatter_add(v, [0, 0, 3], [[1, 1], [2, 2], [5, 5]]))  # duplicates add
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_colocated, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.state.state_ops import _check_ref, _invalid, _maybe_lock, _ref_of
from tensorweave.runtime.resource_mgr import VariableResource
from tensorweave.runtime.update_gate import gated_update


def check_scatter_inputs(op_type: str, ref: Tensor, indices: Tensor, updates: Tensor) -> None:
    """The dtype checks every scatter op (Scatter*, ScatterNd*) makes at graph construction:
    a ref variable, integer indices, updates of the variable's dtype."""
    _check_ref(ref, op_type)
    if not indices.dtype.base_dtype.is_integer:
        raise TypeError(f"{op_type} indices must be int32 or int64, got "
                        f"{indices.dtype.name} ({indices.name})")
    if updates.dtype.base_dtype != ref.dtype.base_dtype:
        raise TypeError(f"{op_type} updates {updates.name} have dtype "
                        f"{updates.dtype.base_dtype.name}, but {ref.name} is "
                        f"{ref.dtype.base_dtype.name}")


def _scatter_op(op_type: str, apply: Any) -> Any:
    op = define_op(op_type, inputs=("&ref", "indices", "updates"),
                   attrs={"use_locking": False}, stateful=True)

    @op.shape
    def _(ref: Tensor, indices: Tensor, updates: Tensor, *, use_locking: bool) -> Any:
        check_scatter_inputs(op_type, ref, indices, updates)
        # TF 1.x: updates are indices.shape + ref.shape[1:], or a scalar for every row.
        if ref.shape.ndims is not None and indices.shape.ndims is not None and \
                updates.shape.ndims != 0:
            want = indices.shape.concatenate(ref.shape[1:])
            if not updates.shape.is_compatible_with(want):
                raise ValueError(f"Shapes must be equal: {op_type} updates {updates.name} "
                                 f"have shape {updates.shape}, expected indices.shape + "
                                 f"ref.shape[1:] = {want}")
        return ref.dtype, ref.shape

    @op.kernel("CPU")
    def _(ref: VariableResource, indices: np.ndarray, updates: np.ndarray, *,
          use_locking: bool) -> Any:
        with gated_update(ref), _maybe_lock(ref, use_locking):
            cur = ref.read()
            idx = np.asarray(indices).astype(np.int64, copy=False)
            flat = idx.reshape(-1)
            bad = np.nonzero((flat < 0) | (flat >= cur.shape[0]))[0] if flat.size else flat
            if bad.size:
                i = int(bad[0])
                raise _invalid(f"{op_type}: indices[{i}] = {int(flat[i])} is not in "
                               f"[0, {cur.shape[0]}) (variable {ref.name})")
            upd = np.broadcast_to(np.asarray(updates, dtype=cur.dtype),
                                  idx.shape + cur.shape[1:])
            apply(cur, idx, upd)
        return ref

    op.no_gradient()
    return op


def _scatter_set(cur: np.ndarray, idx: np.ndarray, upd: np.ndarray) -> None:
    cur[idx] = upd


def _scatter_div(cur: np.ndarray, idx: np.ndarray, upd: np.ndarray) -> None:
    if cur.dtype.kind in "iu":   # C++ integer division truncates toward zero
        for i, u in zip(idx.reshape(-1), upd.reshape((-1,) + cur.shape[1:])):
            q = np.abs(cur[i]) // np.abs(u)
            cur[i] = np.where((cur[i] < 0) != (u < 0), -q, q)
    else:
        np.divide.at(cur, idx, upd)


scatter_add_op = _scatter_op("ScatterAdd", np.add.at)       # duplicates accumulate
scatter_sub_op = _scatter_op("ScatterSub", np.subtract.at)
scatter_mul_op = _scatter_op("ScatterMul", np.multiply.at)
scatter_div_op = _scatter_op("ScatterDiv", _scatter_div)
scatter_max_op = _scatter_op("ScatterMax", np.maximum.at)
scatter_min_op = _scatter_op("ScatterMin", np.minimum.at)
scatter_update_op = _scatter_op("ScatterUpdate", _scatter_set)


# ---- wrappers ----------------------------------------------------------------------
def build_scatter(op_type: str, ref: Any, indices: Any, updates: Any, use_locking: bool,
                  name: str | None) -> Tensor:
    """One Scatter*/ScatterNd* op on `ref` (a variable or its ref), its arguments converted
    in the variable's graph and `updates` to the variable's dtype."""
    r = _ref_of(ref)
    with r.graph.as_default():
        idx = convert_to_tensor(indices)
        upd = convert_to_tensor(updates, dtype=r.dtype.base_dtype)
    return create_colocated(op_type, [r, idx, upd], {"use_locking": bool(use_locking)}, name)


def scatter_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """`tf.scatter_add`: `ref[indices[i]] += updates[i]`; duplicate indices accumulate.

    Example:
        >>> tf.scatter_add(v, [0, 0], [1.0, 2.0])  # v[0] += 3
    """
    return build_scatter("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """`tf.scatter_sub`: `ref[indices[i]] -= updates[i]`; duplicate indices accumulate.

    Example:
        >>> tf.scatter_sub(v, [1], [0.5])
    """
    return build_scatter("ScatterSub", ref, indices, updates, use_locking, name)


def scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                   name: str | None = None) -> Tensor:
    """`tf.scatter_update`: `ref[indices[i]] = updates[i]` (last duplicate wins).

    Example:
        >>> tf.scatter_update(v, [2], [7.0])
    """
    return build_scatter("ScatterUpdate", ref, indices, updates, use_locking, name)


def scatter_mul(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """`tf.scatter_mul`: `ref[indices[i]] *= updates[i]`; duplicate indices multiply.

    Example:
        >>> tf.scatter_mul(v, [0], [2.0])
    """
    return build_scatter("ScatterMul", ref, indices, updates, use_locking, name)


def scatter_div(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """`tf.scatter_div`: `ref[indices[i]] /= updates[i]` (integers truncate, as TF).

    Example:
        >>> tf.scatter_div(v, [0], [2.0])
    """
    return build_scatter("ScatterDiv", ref, indices, updates, use_locking, name)


def scatter_max(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """`tf.scatter_max`: `ref[indices[i]] = max(ref[indices[i]], updates[i])`.

    Example:
        >>> tf.scatter_max(v, [0, 1], [5.0, -1.0])
    """
    return build_scatter("ScatterMax", ref, indices, updates, use_locking, name)


def scatter_min(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """`tf.scatter_min`: `ref[indices[i]] = min(ref[indices[i]], updates[i])`.

    Example:
        >>> tf.scatter_min(v, [0], [0.5])
    """
    return build_scatter("ScatterMin", ref, indices, updates, use_locking, name)


__all__ = ["scatter_add", "scatter_sub", "scatter_mul", "scatter_div", "scatter_max",
           "scatter_min", "scatter_update"]
