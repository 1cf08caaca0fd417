"""GatherNd and ScatterNd: index a tensor by coordinate tuples (each the other's gradient).

`gather_nd(params, indices)`: indices [..., K] pick slices `params[i0, ..., iK-1]`;
`scatter_nd(indices, updates, shape)`: the sum of `updates` placed at `indices` in a
zero tensor of `shape`. The sparse ops' gradients (SparseToDense, SparseTensorDenseAdd)
use them to read a dense gradient at a SparseTensor's entries.

Example:
    >>> tf.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]])   # [3, 2]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.array.core_ops import shape_from_tensor
from tensorweave.ops.array.shape_ops import shape as _shape


def _check_nd(op: str, index_depth: int, outer: tuple[int, ...], idx: np.ndarray) -> None:
    flat = idx.reshape(-1, index_depth) if index_depth else idx.reshape(-1, 0)
    for k in range(index_depth):
        bad = flat[(flat[:, k] < 0) | (flat[:, k] >= outer[k]), :]
        if bad.size:
            raise errors.InvalidArgumentError(
                None, None, f"{op}: index {bad[0].tolist()} is out of bounds for a tensor of "
                f"shape {list(outer)}")


# ---- GatherNd ------------------------------------------------------------------------
gather_nd_op = define_op("GatherNd", inputs=("params", "indices"))


@gather_nd_op.shape
def _(params: Tensor, indices: Tensor) -> Any:
    if not indices.dtype.base_dtype.is_integer:
        raise TypeError(f"gather_nd: indices must be int32/int64, got {indices.dtype.name} "
                        f"({indices.name})")
    ish, psh = indices.shape, params.shape
    if ish.ndims is None or psh.ndims is None or dimension_value(ish[-1]) is None:
        return params.dtype.base_dtype, TensorShape(None)
    k = int(ish[-1])
    if k > psh.ndims:
        raise ValueError(f"gather_nd: index depth {k} (last dim of {indices.name}) exceeds "
                         f"the rank {psh.ndims} of params {params.name}")
    return params.dtype.base_dtype, ish[:-1].concatenate(psh[k:])


@gather_nd_op.kernel("CPU")
def _(params: Any, indices: Any) -> Any:
    params, idx = np.asarray(params), np.asarray(indices).astype(np.int64)
    k = idx.shape[-1]
    _check_nd("gather_nd", k, params.shape[:k], idx)
    return params[tuple(np.moveaxis(idx, -1, 0))] if k else \
        np.broadcast_to(params, idx.shape[:-1] + params.shape).copy()


@gather_nd_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    params, indices = op.inputs
    with op.graph.colocate_with(params.op):
        dense_shape = _shape(params, out_type=indices.dtype.base_dtype)
    return [scatter_nd(indices, grad, dense_shape), None]


def gather_nd(params: Any, indices: Any, name: str | None = None) -> Tensor:
    """`tf.gather_nd`: slices of `params` at the coordinate tuples in `indices`.

    Example:
        >>> tf.gather_nd([[1, 2], [3, 4]], [[1, 1]])   # [4]
    """
    params = convert_to_tensor(params, name="params")
    indices = convert_to_tensor(indices, name="indices")
    return create_op("GatherNd", [params, indices], None, name).outputs[0]


# ---- ScatterNd -----------------------------------------------------------------------
scatter_nd_op = define_op("ScatterNd", inputs=("indices", "updates", "shape"))


@scatter_nd_op.shape
def _(indices: Tensor, updates: Tensor, shape: Tensor) -> Any:
    if not indices.dtype.base_dtype.is_integer:
        raise TypeError(f"scatter_nd: indices must be int32/int64, got {indices.dtype.name}")
    return updates.dtype.base_dtype, shape_from_tensor(shape)


@scatter_nd_op.kernel("CPU")
def _(indices: Any, updates: Any, shape: Any) -> Any:
    idx, upd = np.asarray(indices).astype(np.int64), np.asarray(updates)
    shape = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    k = idx.shape[-1]
    want = idx.shape[:-1] + shape[k:]
    if upd.shape != want:
        raise errors.InvalidArgumentError(
            None, None, f"scatter_nd: updates have shape {list(upd.shape)}, expected "
            f"{list(want)} for indices {list(idx.shape)} into shape {list(shape)}")
    _check_nd("scatter_nd", k, shape[:k], idx)
    out = np.zeros(shape, dtype=upd.dtype)
    np.add.at(out, tuple(np.moveaxis(idx, -1, 0)), upd)  # repeated indices add up, as TF
    return out


@scatter_nd_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [None, gather_nd(grad, op.inputs[0]), None]


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tf.scatter_nd`: a zero tensor of `shape` with `updates` added at `indices`.

    Example:
        >>> tf.scatter_nd([[1], [3]], [9, 10], [5])   # [0, 9, 0, 10, 0]
    """
    indices = convert_to_tensor(indices, name="indices")
    updates = convert_to_tensor(updates, name="updates")
    shape = convert_to_tensor(shape, dtype=indices.dtype.base_dtype, name="shape")
    return create_op("ScatterNd", [indices, updates, shape], None, name).outputs[0]
