"""Element structures of tf.data: nested tuples and dicts of tensors.

As in tf.data, tuples, namedtuples and dicts are structure while a Python list
is one tensor (`from_tensor_slices([1, 2, 3])` has one int32 component).
At run time an element is a flat tuple of NumPy arrays in `flatten` order.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor_shape import TensorShape


class Spec:
    """The dtype and static shape of one component of a dataset's elements."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype: Any, shape: TensorShape) -> None:
        self.dtype = dtype
        self.shape = shape

    def __repr__(self) -> str:
        return f"Spec({self.dtype.name}, {self.shape})"


def flatten(structure: Any) -> list[Any]:
    """Leaves of nested tuples/dicts (dict keys sorted); lists are leaves."""
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, tuple):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack(structure: Any, flat: Sequence[Any]) -> Any:
    """Inverse of `flatten`: `flat` rebuilt into the nesting of `structure`."""
    it = iter(flat)

    def build(s: Any) -> Any:
        if isinstance(s, dict):
            vals = {k: build(s[k]) for k in sorted(s)}
            return type(s)((k, vals[k]) for k in s)
        if isinstance(s, tuple):
            items = [build(x) for x in s]
            return type(s)(*items) if hasattr(s, "_fields") else tuple(items)
        return next(it)
    return build(structure)


def map_structure(fn: Any, structure: Any) -> Any:
    return pack(structure, [fn(x) for x in flatten(structure)])


def lists_to_tuples(structure: Any) -> Any:
    """A map function's result with lists read as tuples (TF 1.x did the same)."""
    if isinstance(structure, list):
        return tuple(lists_to_tuples(x) for x in structure)
    if isinstance(structure, tuple) and not hasattr(structure, "_fields"):
        return tuple(lists_to_tuples(x) for x in structure)
    if isinstance(structure, dict):
        return type(structure)((k, lists_to_tuples(v)) for k, v in structure.items())
    return structure


class SparseParts(NamedTuple):
    """A SparseTensor inside an element structure: its three tensors as one sub-structure
    (so flatten/pack and the iterator carry it as three components)."""

    indices: Any
    values: Any
    dense_shape: Any


def sparse_to_parts(structure: Any) -> Any:
    """`structure` with each SparseTensor replaced by its SparseParts."""
    if isinstance(structure, SparseTensor):
        return SparseParts(structure.indices, structure.values, structure.dense_shape)
    if isinstance(structure, dict):
        return type(structure)((k, sparse_to_parts(v)) for k, v in structure.items())
    if isinstance(structure, tuple) and not isinstance(structure, SparseParts):
        items = [sparse_to_parts(x) for x in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    if isinstance(structure, list):
        return [sparse_to_parts(x) for x in structure]
    return structure


def parts_to_sparse(structure: Any) -> Any:
    """Inverse of `sparse_to_parts`: SparseParts of tensors back to SparseTensors."""
    if isinstance(structure, SparseParts):
        return SparseTensor(*structure)
    if isinstance(structure, dict):
        return type(structure)((k, parts_to_sparse(v)) for k, v in structure.items())
    if isinstance(structure, tuple):
        items = [parts_to_sparse(x) for x in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    return structure


def sparse_starts(structure: Any) -> set[int]:
    """Flat positions (in `flatten` order) where each SparseParts' indices component is."""
    starts: set[int] = set()
    pos = 0

    def walk(s: Any) -> None:
        nonlocal pos
        if isinstance(s, SparseParts):
            starts.add(pos)
            pos += 3
        elif isinstance(s, dict):
            for k in sorted(s):
                walk(s[k])
        elif isinstance(s, tuple):
            for x in s:
                walk(x)
        else:
            pos += 1
    walk(structure)
    return starts


def map_sparse_aware(dense_fn: Any, sparse_fn: Any, structure: Any) -> Any:
    """Rebuilds `structure`: SparseParts through `sparse_fn`, other leaves through `dense_fn`."""
    if isinstance(structure, SparseParts):
        return sparse_fn(structure)
    if isinstance(structure, dict):
        return type(structure)((k, map_sparse_aware(dense_fn, sparse_fn, v))
                               for k, v in structure.items())
    if isinstance(structure, tuple):
        items = [map_sparse_aware(dense_fn, sparse_fn, x) for x in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    return dense_fn(structure)
