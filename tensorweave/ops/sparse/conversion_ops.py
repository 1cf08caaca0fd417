"""Sparse <-> dense and re-indexing stanzas: SparseToDense, SparseReorder, SparseReshape.

Public wrappers are in `sparse_ops` (`tf.sparse_tensor_to_dense`, `tf.sparse_reorder`,
`tf.sparse_reshape`).

It also holds the sparse family's shared helpers (`create`, SparseTensor argument
checks), which the other sparse op modules import.

Example:
    >>> tf.sparse_tensor_to_dense(tf.SparseTensor([[0, 1]], [5], [2, 2]))   # [[0, 5], [0, 0]]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.array import array_ops
from tensorweave.ops.array.core_ops import shape_from_tensor
from tensorweave.ops.array.gather_nd_ops import gather_nd
from tensorweave.ops.math import math_ops
from tensorweave.ops.op_author import create_op, define_op


# ---- shared helpers of the family (formerly sparse_util.py) ----
def create(op_type: str, inputs: list[Any], attrs: dict[str, Any] | None = None,
           name: str | None = None) -> Operation:
    return create_op(op_type, inputs, attrs or {}, name=name or op_type)


def as_indices(indices: Any, rank: int | None = None) -> np.ndarray:
    idx = np.asarray(indices).astype(np.int64, copy=False)
    if idx.ndim != 2:
        raise errors.InvalidArgumentError(None, None, f"Sparse indices must be a matrix "
                                          f"[N, rank], got shape {list(idx.shape)}")
    if rank is not None and idx.shape[1] != rank:
        raise errors.InvalidArgumentError(None, None, f"Sparse indices have rank "
                                          f"{idx.shape[1]} but the shape has {rank} dims")
    return idx


def check_in_bounds(idx: np.ndarray, shape: np.ndarray, what: str) -> None:
    """Raises InvalidArgumentError naming the first index outside `shape`."""
    if not idx.size:
        return
    bad = np.any((idx < 0) | (idx >= shape.reshape(1, -1)), axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise errors.InvalidArgumentError(
            None, None, f"{what}: indices[{i}] = {idx[i].tolist()} is out of bounds: need "
            f"0 <= index < {shape.tolist()}")


def standard_order(idx: np.ndarray) -> np.ndarray:
    """The stable permutation putting the rows of `idx` in row-major order."""
    if idx.shape[0] == 0 or idx.shape[1] == 0:
        return np.arange(idx.shape[0])
    return np.lexsort(idx.T[::-1])


def check_ordered(idx: np.ndarray, what: str) -> None:
    """Raises naming the first index out of order or repeated (TF's validate_indices)."""
    if idx.shape[0] < 2:
        return
    diff = idx[1:] - idx[:-1]
    differs = diff != 0
    first = np.argmax(differs, axis=1)
    sign = diff[np.arange(diff.shape[0]), first]
    repeated, backwards = ~differs.any(axis=1), differs.any(axis=1) & (sign < 0)
    bad = repeated | backwards
    if bad.any():
        i = int(np.argmax(bad))
        problem = "repeated" if repeated[i] else "out of order"
        raise errors.InvalidArgumentError(None, None, f"{what}: indices[{i + 1}] = "
                                          f"{idx[i + 1].tolist()} is {problem}")


def sparse_shapes(indices: Tensor, values: Tensor, shape: Tensor, op: str) -> int | None:
    """Checks the three tensors of a SparseTensor input at build time; returns its rank."""
    if indices.shape.ndims not in (None, 2):
        raise ValueError(f"{op}: indices must be a matrix, got {indices.name} with shape "
                         f"{indices.shape}")
    if values.shape.ndims not in (None, 1):
        raise ValueError(f"{op}: values must be a vector, got {values.name} with shape "
                         f"{values.shape}")
    if shape.shape.ndims not in (None, 1):
        raise ValueError(f"{op}: dense shape must be a vector, got {shape.name} with shape "
                         f"{shape.shape}")
    rank = dimension_value(shape.shape[0]) if shape.shape.ndims == 1 else None
    if rank is None and indices.shape.ndims == 2:
        rank = dimension_value(indices.shape[1])
    return None if rank is None else int(rank)


def nnz_shape(indices: Tensor) -> TensorShape:
    """[N] with N taken from an [N, rank] indices tensor when known."""
    return TensorShape([indices.shape[0] if indices.shape.ndims == 2 else None])

# ---- SparseToDense ---------------------------------------------------------------------
to_dense_op = define_op("SparseToDense", inputs=("sparse_indices", "output_shape",
                                                 "sparse_values", "default_value"),
                        attrs={"validate_indices": True})


@to_dense_op.shape
def _(indices: Tensor, output_shape: Tensor, values: Tensor, default: Tensor, *,
      validate_indices: bool) -> Any:
    if not values.dtype.base_dtype.is_compatible_with(default.dtype.base_dtype):
        raise TypeError(f"SparseToDense: default_value {default.name} is "
                        f"{default.dtype.name} but values {values.name} are "
                        f"{values.dtype.name}")
    if default.shape.ndims not in (None, 0):
        raise ValueError(f"SparseToDense: default_value must be a scalar, got shape "
                         f"{default.shape} ({default.name})")
    return values.dtype.base_dtype, shape_from_tensor(output_shape) \
        if output_shape.shape.ndims != 0 else TensorShape([None])


@to_dense_op.kernel("CPU")
def _(indices: Any, output_shape: Any, values: Any, default: Any, *,
      validate_indices: bool) -> Any:
    shape = np.asarray(output_shape).astype(np.int64).reshape(-1)
    idx = np.asarray(indices).astype(np.int64)
    idx = idx.reshape(-1, 1) if idx.ndim < 2 else idx
    idx = as_indices(idx, shape.size)
    values = np.asarray(values)
    if values.ndim == 0:
        values = np.full(idx.shape[0], values)
    if values.shape != (idx.shape[0],):
        raise errors.InvalidArgumentError(None, None, f"SparseToDense: {idx.shape[0]} indices "
                                          f"but sparse_values has shape {list(values.shape)}")
    check_in_bounds(idx, shape, "SparseToDense")
    if validate_indices:
        check_ordered(idx, "SparseToDense")
    out = np.full(tuple(shape), np.asarray(default), dtype=values.dtype)
    if idx.shape[0]:
        out[tuple(idx.T)] = values
    return out


@to_dense_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # TF's rule: values read the dense gradient at their coordinates; the default
    # value gets what is left.
    indices, _, values, _ = op.inputs
    values_grad = gather_nd(grad, array_ops.reshape(indices, [-1, array_ops.size(
        op.inputs[1])]) if indices.shape.ndims != 2 else indices)
    if values.shape.ndims == 0:
        values_grad = math_ops.reduce_sum(values_grad)
    default_grad = math_ops.reduce_sum(grad) - math_ops.reduce_sum(values_grad)
    return [None, None, values_grad, default_grad]


# ---- SparseReorder ---------------------------------------------------------------------
reorder_op = define_op("SparseReorder", inputs=("input_indices", "input_values",
                                                "input_shape"))


@reorder_op.shape
def _(indices: Tensor, values: Tensor, shape: Tensor) -> Any:
    sparse_shapes(indices, values, shape, "SparseReorder")
    return [(_dt.int64, indices.shape), (values.dtype.base_dtype, values.shape)]


@reorder_op.kernel("CPU")
def _(indices: Any, values: Any, shape: Any) -> Any:
    shape = np.asarray(shape).astype(np.int64).reshape(-1)
    idx = as_indices(indices, shape.size)
    check_in_bounds(idx, shape, "SparseReorder")
    order = standard_order(idx)
    return idx[order], np.asarray(values)[order]


@reorder_op.gradient
def _(op: Operation, _grad_indices: Any, grad_values: Tensor) -> list[Any]:
    # Reordering positions 0..N-1 the same way gives the permutation to undo.
    indices, _, shape = op.inputs
    positions = array_ops.range(array_ops.shape(indices, out_type=_dt.int64)[0])
    moved = create("SparseReorder", [indices, positions, shape]).outputs[1]
    inverse = create("InvertPermutation", [moved]).outputs[0]
    return [None, array_ops.gather(grad_values, inverse), None]


# ---- SparseReshape ---------------------------------------------------------------------
reshape_op = define_op("SparseReshape", inputs=("input_indices", "input_shape", "new_shape"))


@reshape_op.shape
def _(indices: Tensor, shape: Tensor, new_shape: Tensor) -> Any:
    n = dimension_value(new_shape.shape[0]) if new_shape.shape.ndims == 1 else None
    return [(_dt.int64, TensorShape([nnz_shape(indices)[0], n])),
            (_dt.int64, TensorShape([n]))]


def _resolve_shape(in_shape: np.ndarray, new: np.ndarray) -> np.ndarray:
    total = int(np.prod(in_shape))
    unknown = np.flatnonzero(new == -1)
    if unknown.size > 1:
        raise errors.InvalidArgumentError(None, None, f"SparseReshape: only one output "
                                          f"dimension may be -1, got {new.tolist()}")
    out = new.copy()
    if unknown.size:
        rest = int(np.prod(np.delete(new, unknown)))
        if rest == 0 or total % rest:
            raise errors.InvalidArgumentError(
                None, None, f"SparseReshape: cannot reshape {in_shape.tolist()} "
                f"({total} elements) to {new.tolist()}")
        out[unknown[0]] = total // rest
    if int(np.prod(out)) != total:
        raise errors.InvalidArgumentError(
            None, None, f"SparseReshape: input has {total} dense values "
            f"({in_shape.tolist()}) but the new shape {new.tolist()} has {int(np.prod(out))}")
    return out


@reshape_op.kernel("CPU")
def _(indices: Any, shape: Any, new_shape: Any) -> Any:
    in_shape = np.asarray(shape).astype(np.int64).reshape(-1)
    idx = as_indices(indices, in_shape.size)
    new = np.asarray(new_shape).astype(np.int64).reshape(-1)
    if new.shape == in_shape.shape and (new == in_shape).all():
        return idx, new  # the same shape: TF's kernel forwards the indices too
    out_shape = _resolve_shape(in_shape, new)
    if np.array_equal(out_shape, in_shape):
        return idx, out_shape
    if idx.shape[0] == 0:
        return np.zeros((0, out_shape.size), np.int64), out_shape
    linear = np.ravel_multi_index(tuple(idx.T), tuple(in_shape))
    out = np.stack(np.unravel_index(linear, tuple(out_shape)), axis=1).astype(np.int64)
    return out.reshape(idx.shape[0], out_shape.size), out_shape


reshape_op.no_gradient()  # indices only; the values pass through unchanged
