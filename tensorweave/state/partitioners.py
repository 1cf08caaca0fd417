"""Partitioners: how many shards each axis of a partitioned variable gets.

`fixed_size_partitioner`, `min_max_variable_partitioner` and
`variable_axis_size_partitioner` return callables `(shape, dtype) -> [k0, k1, ...]`
for `tf.get_variable(..., partitioner=)`; only one axis may be split. The
partitioned variables themselves live in `partitioned_variables`.

Example:
    >>> p = tf.fixed_size_partitioner(3)
    >>> p(tf.TensorShape([10, 4]), dtype=tf.float32)
    [3, 1]
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.tensor_shape import TensorShape, as_shape


Partitioner = Callable[..., Sequence[int]]


def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Partitioner:
    """A partitioner splitting `axis` into `num_shards` (at most the axis length).

    Example:
        >>> tf.fixed_size_partitioner(3)(shape=tf.TensorShape([10, 4]), dtype=tf.float32)
        [3, 1]
    """
    if int(num_shards) < 1:
        raise ValueError(f"fixed_size_partitioner needs num_shards >= 1, got {num_shards!r}.")

    def _partitioner(shape: TensorShape, **unused: Any) -> list[int]:
        dims = _checked_dims(shape, axis, "fixed_size_partitioner")
        out = [1] * len(dims)
        out[axis] = min(int(num_shards), dims[axis])
        return out
    return _partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0,
                                 min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16) -> Partitioner:
    """A partitioner giving each shard at least `min_slice_size` bytes, at most
    `max_partitions` shards (and never more shards than rows along `axis`).

    Example:
        >>> p = tf.min_max_variable_partitioner(max_partitions=4, min_slice_size=1024)
        >>> p(shape=tf.TensorShape([1000, 1]), dtype=tf.float32)  # 4000 bytes
        [4, 1]
    """
    def _partitioner(shape: TensorShape, dtype: Any) -> list[int]:
        dims = _checked_dims(shape, axis, "min_max_variable_partitioner")
        total = math.prod(dims) * _element_bytes(dtype, bytes_per_string_element)
        out = [1] * len(dims)
        out[axis] = max(1, min(dims[axis], int(max_partitions),
                               int(math.ceil(total / min_slice_size))))
        return out
    return _partitioner


def variable_axis_size_partitioner(max_shard_bytes: int, axis: int = 0,
                                   bytes_per_string_element: int = 16,
                                   max_shards: int | None = None) -> Partitioner:
    """A partitioner keeping each shard under `max_shard_bytes` (whole slices of
    `axis` per shard; at most `max_shards` shards when given).

    Example:
        >>> p = tf.variable_axis_size_partitioner(max_shard_bytes=64)
        >>> p(shape=tf.TensorShape([10, 4]), dtype=tf.float32)   # 16 bytes per row
        [3, 1]
    """
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError(f"max_shard_bytes ({max_shard_bytes!r}) and "
                         f"bytes_per_string_element ({bytes_per_string_element!r}) must be "
                         "positive.")
    if max_shards is not None and max_shards < 1:
        raise ValueError(f"max_shards must be positive, got {max_shards!r}.")

    def _partitioner(shape: TensorShape, dtype: Any) -> list[int]:
        dims = _checked_dims(shape, axis, "variable_axis_size_partitioner")
        row_bytes = math.prod(dims) / dims[axis] * _element_bytes(dtype,
                                                                 bytes_per_string_element)
        rows_per_shard = max(1, math.floor(max_shard_bytes / row_bytes))
        shards = int(math.ceil(dims[axis] / rows_per_shard))
        out = [1] * len(dims)
        out[axis] = min(shards, max_shards) if max_shards else shards
        return out
    return _partitioner


def _checked_dims(shape: Any, axis: int, who: str) -> list[int]:
    shape = as_shape(shape)
    if not shape.is_fully_defined():
        raise ValueError(f"{who}: shape {shape} must be fully defined.")
    dims = shape.as_list()
    if not 0 <= axis < len(dims):
        raise ValueError(f"{who}: can not partition a variable along axis {axis} when its "
                         f"shape is only {shape}.")
    return dims


def _element_bytes(dtype: Any, bytes_per_string_element: int) -> int:
    dtype = _dt.as_dtype(dtype).base_dtype
    return bytes_per_string_element if dtype == _dt.string else dtype.size
