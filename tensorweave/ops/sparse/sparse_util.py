"""Helpers shared by the sparse op stanzas: op creation, NumPy index checks, ordering.

Indices arrive in kernels as int64 [N, rank] arrays; "standard order" is row-major
(lexicographic) order of those rows, the order TF's sparse kernels produce.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value


def create(op_type: str, inputs: list[Any], attrs: dict[str, Any] | None = None,
           name: str | None = None) -> Operation:
    return get_default_graph().create_op(op_type, inputs, attrs or {}, name=name or op_type)


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
