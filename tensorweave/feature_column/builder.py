"""The per-call feature cache (TF's _LazyBuilder) and input conversions.

A column's transformation runs once per `input_layer`/`linear_model` call however many
columns use it (a bucketized column feeding both an indicator and a cross).
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.sparse_tensor import (
    SparseTensor, convert_to_tensor_or_sparse_tensor)
from tensorweave.framework.tensor import Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.gather_nd_ops import gather_nd
from tensorweave.ops.math import math_ops
from tensorweave.ops.sparse.conversion_ops import sparse_reshape
from tensorweave.framework.graph_defaults import control_dependencies
from tensorweave.ops.control_flow.assert_ops import Assert


class FeatureBuilder:
    """Maps a column (or a raw feature key) to its transformed tensor, built once.

    Example:
        >>> builder = FeatureBuilder({"age": ages}); builder.get("age")
    """

    def __init__(self, features: dict[str, Any]) -> None:
        if not isinstance(features, dict):
            raise ValueError(f"features must be a dict of feature name -> Tensor or "
                             f"SparseTensor, got {type(features).__name__}")
        self._features = dict(features)
        self._cache: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        """The raw feature `key` (rank-1 dense made [batch, 1]) or column `key`'s output."""
        if key in self._cache:
            return self._cache[key]
        if isinstance(key, str):
            if key not in self._features:
                raise ValueError(f"{key} is not in features dictionary (keys: "
                                 f"{sorted(self._features)}); feed it or drop the column "
                                 "that reads it")
            value = _expand_rank1(self._features[key], key)
        elif not hasattr(key, "_transform_feature"):
            raise TypeError(f'"key" must be either a "str" or "_FeatureColumn". Provided: '
                            f"{key!r} (pass a feature name or a tf.feature_column column)")
        else:
            value = key._transform_feature(self)
        self._cache[key] = value
        return value


def _expand_rank1(value: Any, key: str) -> Any:
    # As TF's _LazyBuilder: a SparseTensorValue or nested list becomes a (Sparse)Tensor,
    # rank 0 is refused, and rank 1 (dense or sparse) becomes [batch, 1].
    t = convert_to_tensor_or_sparse_tensor(value)
    rank = t.get_shape().ndims
    if rank == 0:
        raise ValueError(f"Feature (key: {key}) cannot have rank 0. Given: {t}; give one "
                         "value per example, e.g. shape [batch] or [batch, 1].")
    if rank == 1:
        if isinstance(t, SparseTensor):
            one = convert_to_tensor(1, dtype=_dt.int64)
            return sparse_reshape(t, array_ops.stack([t.dense_shape[0], one]))
        return array_ops.expand_dims(t, -1)
    if rank is None:
        return _expand_dynamic_rank1(t, key)
    return t


def _expand_dynamic_rank1(t: Any, key: str) -> Any:
    # Rank known only when the graph runs (a placeholder of unknown shape): assert it
    # is not 0 and append a dimension of 1 when it is 1, as TF.
    sparse = isinstance(t, SparseTensor)
    shape = t.dense_shape if sparse else array_ops.shape(t, out_type=_dt.int64)
    rank = array_ops.size(shape)
    check = Assert(math_ops.greater(rank, 0),
                   [f"Feature (key: {key}) cannot have rank 0. Given: ", shape])
    with control_dependencies([check]):
        extra = array_ops.fill(array_ops.reshape(
            math_ops.cast(math_ops.equal(rank, 1), _dt.int32), [1]),
            convert_to_tensor(1, dtype=_dt.int64))
        new_shape = array_ops.concat([shape, extra], 0)
    if sparse:
        return sparse_reshape(t, new_shape)
    return array_ops.reshape(t, new_shape)


def to_sparse_ids(value: Any) -> SparseTensor:
    """A dense id/string tensor as SparseTensor, dropping '' (strings) or -1 (ints), as TF.

    Example:
        >>> to_sparse_ids(tf.constant([["a", ""]]))   # one value at [0, 0]
    """
    if isinstance(value, SparseTensor):
        return value
    t = convert_to_tensor(value)
    ignore = "" if t.dtype.base_dtype == _dt.string else -1
    keep = math_ops.not_equal(t, math_ops.cast(ignore, t.dtype) if ignore == -1 else ignore)
    indices = math_ops.where(keep)
    return SparseTensor(indices, gather_nd(t, indices),
                        array_ops.shape(t, out_type=_dt.int64))


def map_values(sp: SparseTensor, values: Tensor) -> SparseTensor:
    """`sp` with the same indices and shape but new values."""
    return SparseTensor(sp.indices, values, sp.dense_shape)


def as_tensor(value: Any, what: str) -> Tensor:
    if isinstance(value, SparseTensor):
        raise ValueError(f"The corresponding Tensor of numerical column must be a Tensor. "
                         f"SparseTensor is not supported. key: {what}")
    return convert_to_tensor(value)
