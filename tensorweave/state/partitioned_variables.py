"""Partitioned variables: one logical variable stored as shards `name/part_i`.

A partitioner (`fixed_size_partitioner`, `min_max_variable_partitioner`,
`variable_axis_size_partitioner`) says how many shards each axis gets; only one
axis may be split. `tf.get_variable(..., partitioner=p)` (or a variable scope's
partitioner) then creates the shards as ordinary Variables inside the current
device scope, so `replica_device_setter` spreads them over the ps tasks. Each
shard carries `_save_slice_info` (full name, full shape, offset, shape), and
the shards are returned together as a `PartitionedVariable`.

Shard sizes follow TF: the first `dim % k` shards get one extra row, which is
the layout `embedding_lookup(..., partition_strategy="div")` expects.

Example:
    >>> with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
    ...     emb = tf.get_variable("emb", [10, 4],
    ...                           partitioner=tf.fixed_size_partitioner(3))
    >>> [v.name for v in emb], [v.get_shape().as_list() for v in emb]
    (['emb/part_0:0', 'emb/part_1:0', 'emb/part_2:0'], [[4, 4], [3, 4], [3, 4]])
"""
from __future__ import annotations

import json
import weakref
from typing import Any, Iterator, Sequence, cast

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor, register_tensor_conversion_function
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_bundle import format_shape_and_slice
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.state.partitioners import (
    Partitioner, fixed_size_partitioner as fixed_size_partitioner,
    min_max_variable_partitioner as min_max_variable_partitioner,
    variable_axis_size_partitioner as variable_axis_size_partitioner)
from tensorweave.ops import array as array_ops
from tensorweave.ops.array import core_ops, index_ops
from tensorweave.ops.nn.embedding_ops import gather_partitioned

__all__ = ["PartitionedVariable", "SaveSliceInfo", "fixed_size_partitioner",
           "min_max_variable_partitioner", "variable_axis_size_partitioner"]


# ---- slice bookkeeping ----------------------------------------------------------------
class SaveSliceInfo:
    """Where a shard sits in its full variable (what a Saver needs to write slices).

    Attributes:
        full_name: the full variable's name, e.g. "emb".
        full_shape: the full variable's shape.
        var_offset: the shard's offset in each dimension.
        var_shape: the shard's shape.
    """

    def __init__(self, full_name: str, full_shape: Sequence[int],
                 var_offset: Sequence[int], var_shape: Sequence[int]) -> None:
        self.full_name = full_name
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)
        self.var_shape = list(var_shape)

    @property
    def spec(self) -> str:
        """TF's slice spec string, e.g. "10 4 0,4:0,4" (full shape, then offset,length)."""
        return format_shape_and_slice(self.full_shape, self.var_offset, self.var_shape)

    def saver_spec(self) -> str:
        """The slice as our checkpoint format stores it (`io_ops.SaveEntry.slice_spec`'s JSON)."""
        return json.dumps({"full_name": self.full_name, "full_shape": self.full_shape,
                           "offset": self.var_offset, "shape": self.var_shape})

    def __repr__(self) -> str:
        return (f"SaveSliceInfo({self.full_name!r}, full_shape={self.full_shape}, "
                f"var_offset={self.var_offset}, var_shape={self.var_shape})")


class _PartitionInfo:
    """Passed to initializers as `partition_info`: the full shape and this shard's offset."""

    def __init__(self, full_shape: Sequence[int], var_offset: Sequence[int]) -> None:
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)

    def single_offset(self, shape: Sequence[int]) -> int:
        dim = self.single_slice_dim(shape)
        return 0 if dim is None else self.var_offset[dim]

    def single_slice_dim(self, shape: Sequence[int]) -> int | None:
        for i, (full, part) in enumerate(zip(self.full_shape, shape)):
            if full != part:
                return i
        return None


def _slice_axis(partitions: Sequence[int]) -> tuple[int, int]:
    for dim, n in enumerate(partitions):
        if n > 1:
            return dim, n
    return 0, 1  # nothing split: one shard


def _iter_slices(full_shape: list[int], num_slices: int,
                 dim: int) -> Iterator[tuple[list[int], list[int]]]:
    """(offset, shape) of each shard; the first `size % num_slices` get one extra row."""
    base, extra = divmod(full_shape[dim], num_slices)
    offset = [0] * len(full_shape)
    for i in range(num_slices):
        shape = list(full_shape)
        shape[dim] = base + (1 if i < extra else 0)
        yield list(offset), shape
        offset[dim] += shape[dim]


def _call_partitioner(partitioner: Partitioner, name: str, shape: TensorShape,
                      dtype: _dt.DType) -> list[int]:
    if not shape.is_fully_defined():
        raise ValueError(f"Shape of a new partitioned variable ({name}) must be fully "
                         f"defined, but instead was {shape}.")
    if len(shape.as_list()) < 1:
        raise ValueError(f"A partitioned variable must have rank at least 1; {name} has "
                         f"shape {shape}.")
    parts = partitioner(shape=shape, dtype=dtype)
    if not isinstance(parts, (list, tuple)):
        raise ValueError(f"Partitioner for {name} must return a list of ints, got {parts!r}.")
    parts = [int(p) for p in parts]
    if len(parts) != shape.ndims:
        raise ValueError(f"Partitioner returned {parts} for {name}, which does not match "
                         f"the variable's rank (shape {shape}).")
    if any(p < 1 for p in parts):
        raise ValueError(f"Partitioner returned zero partitions for some axes of {name}: "
                         f"{parts}.")
    if sum(p > 1 for p in parts) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: {name} has shape "
                         f"{shape}, partitioning {parts}.")
    dim, n = _slice_axis(parts)
    if n > cast(int, shape.as_list()[dim]):  # fully defined: checked above
        raise ValueError(f"Partitioner asked for {n} shards of {name} along axis {dim}, "
                         f"which has only {shape.as_list()[dim]} rows; use fewer shards.")
    return parts


# ---- PartitionedVariable -------------------------------------------------------------
class PartitionedVariable:
    """A variable stored as shards along one axis; iterate it to get the shards.

    It converts to a Tensor by concatenating its shards (on the reader's
    device); `embedding_lookup` instead reads each shard where it lives.

    Example:
        >>> emb = tf.get_variable("emb", [10, 4], partitioner=tf.fixed_size_partitioner(2))
        >>> len(emb), emb.get_shape().as_list()
        (2, [10, 4])
        >>> full = tf.convert_to_tensor(emb)   # concat of emb/part_0, emb/part_1
    """

    def __init__(self, name: str, shape: Any, dtype: Any, variable_list: Sequence[Any],
                 partitions: Sequence[int]) -> None:
        if not variable_list:
            raise ValueError(f"PartitionedVariable {name} needs at least one shard.")
        for v in variable_list:
            if getattr(v, "_save_slice_info", None) is None:
                raise ValueError(f"Shard {v.name} of PartitionedVariable {name} has no "
                                 "_save_slice_info; create shards with tf.get_variable.")
        self._name = name
        self._shape = as_shape(shape)
        self._dtype = _dt.as_dtype(dtype).base_dtype
        self._variable_list = sorted(variable_list, key=lambda v: v._save_slice_info.var_offset)
        self._partitions = list(partitions)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._variable_list)

    def __len__(self) -> int:
        axes = self._partition_axes()
        return self._partitions[axes[0]]

    def _partition_axes(self) -> list[int]:
        axes = [i for i, p in enumerate(self._partitions) if p > 1]
        return axes or [0]

    def _get_variable_list(self) -> list[Any]:
        return list(self._variable_list)

    def get_variable_list(self) -> list[Any]:
        """The shards, in offset order."""
        return list(self._variable_list)

    def _get_partitions(self) -> list[int]:
        return list(self._partitions)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def graph(self) -> Any:
        return self._variable_list[0].graph

    def get_shape(self) -> TensorShape:
        """The full (unpartitioned) shape."""
        return self._shape

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def _concat(self) -> Tensor:
        g = self.graph
        with g.as_default():
            if len(self._variable_list) == 1:
                with g.name_scope(None):
                    return core_ops.identity(self._variable_list[0], name=self._name)
            with g.name_scope(self._name + "/ConcatPartitions/"):
                full = array_ops.concat([v.value() for v in self._variable_list],
                                        self._partition_axes()[0])
            with g.name_scope(None):
                return core_ops.identity(full, name=self._name)

    def as_tensor(self) -> Tensor:
        """The full value: the shards concatenated along the partition axis (like a
        variable's read, outside any control dependencies, as TF 1.x)."""
        with self.graph.control_dependencies(None):
            return self._concat()

    def assign(self, value: Any, use_locking: bool = False, name: str | None = None,
               read_value: bool = True) -> Any:
        """Assigns the slice of `value` that belongs to each shard; returns the ops (or
        their new values when read_value) as a list, one per shard."""
        g = self.graph
        with g.as_default(), g.name_scope(name or self._name + "/Assign"):
            value = convert_to_tensor(value, dtype=self._dtype)
            outs = []
            for v in self._variable_list:
                info = v._save_slice_info
                part = array_ops.slice(value, info.var_offset, info.var_shape)
                outs.append(v.assign(part, use_locking=use_locking, read_value=read_value))
            return outs

    def __repr__(self) -> str:
        return (f"<PartitionedVariable '{self._name}' shape={self._shape} "
                f"partitions={self._partitions} dtype={self._dtype.name}>")


def _to_tensor(v: PartitionedVariable, dtype: Any = None, name: str | None = None,
               as_ref: bool = False) -> Tensor:
    if as_ref:
        raise NotImplementedError(f"PartitionedVariable {v.name} cannot be used as a "
                                  "reference; update its shards (iterate it) instead.")
    if dtype is not None and not _dt.as_dtype(dtype).is_compatible_with(v.dtype):
        raise ValueError(f"Incompatible type conversion requested to type "
                         f"'{_dt.as_dtype(dtype).name}' for PartitionedVariable {v.name} of "
                         f"type '{v.dtype.name}'.")
    return v._concat()


register_tensor_conversion_function(PartitionedVariable, _to_tensor)
# tf.gather(partitioned_variable, ids): each shard's rows gathered where the shard lives.
index_ops.register_row_gather(PartitionedVariable, gather_partitioned)


# ---- get_variable(..., partitioner=) --------------------------------------------------
# The variable store belongs to variable_scope.py; the partitioned variables of
# each store are kept here, by store, so that file stays untouched.
_PARTITIONED: "weakref.WeakKeyDictionary[Any, dict[str, PartitionedVariable]]" = \
    weakref.WeakKeyDictionary()


def get_partitioned_variable(store: Any, name: str, shape: Any, dtype: Any,
                             initializer: Any, regularizer: Any, trainable: bool,
                             collections: Any, reuse: Any, validate_shape: bool,
                             partitioner: Partitioner, use_resource: Any = None,
                             constraint: Any = None,
                             caching_device: Any = None) -> PartitionedVariable:
    """Gets or creates the PartitionedVariable `name` in `store` (a `_VariableStore`).

    Called by `VariableScope.get_variable` when a partitioner is set; each shard
    goes through `store.get_variable` as "name/part_i", so reuse checks, regularizers
    and collections work per shard exactly as for a plain variable.

    Raises:
        ValueError: reuse errors (exists / does not exist / different shape,
            dtype or partitions), a partitioner result that is not a valid
            one-axis split, or a name already used by an unpartitioned variable.
    """
    if not callable(partitioner):
        raise ValueError(f"Partitioner must be callable, but received {partitioner!r}.")
    dtype = _dt.as_dtype(dtype).base_dtype
    shape = as_shape(shape) if shape is not None else TensorShape(None)
    init_value = None
    if initializer is not None and not callable(initializer):
        # A value or Tensor: its shape (and a Tensor's dtype) define the variable.
        init_value = initializer if isinstance(initializer, Tensor) else \
            convert_to_tensor(initializer, dtype=dtype)
        dtype = init_value.dtype.base_dtype
        shape = shape.merge_with(init_value.shape)
    if name in store.vars:
        raise ValueError(f"A partitioner was provided for {name}, but an unpartitioned "
                         "variable of that name exists. Was it created without a "
                         "partitioner?")
    known = _PARTITIONED.setdefault(store, {})
    partitions = _call_partitioner(partitioner, name, shape, dtype)
    found = known.get(name)
    if found is not None:
        return _reuse(found, name, shape, dtype, partitions, reuse)
    if reuse is True:
        raise ValueError(f"PartitionedVariable {name} does not exist, or was not created "
                         "with tf.get_variable(). Did you mean to set reuse=False or "
                         "reuse=tf.AUTO_REUSE in VarScope?")
    dim, num = _slice_axis(partitions)
    _check_existing_shards(store, name, num)
    full = shape.as_list()
    parts = []
    for i, (offset, part_shape) in enumerate(_iter_slices(full, num, dim)):
        info = _PartitionInfo(full, offset)
        part_name = f"{name}/part_{i}"
        if init_value is not None:
            g = init_value.graph
            with g.as_default(), g.name_scope(part_name + "/PartitionedInitializer/"):
                part_init: Any = array_ops.slice(init_value, offset, part_shape)
            part_shape_arg = None
        else:
            part_init = _with_partition_info(initializer, info)
            part_shape_arg = part_shape
        var = store.get_variable(part_name, part_shape_arg, dtype, part_init, regularizer,
                                 trainable, collections, reuse, validate_shape,
                                 use_resource, constraint, caching_device)
        var._save_slice_info = SaveSliceInfo(name, full, offset, part_shape)
        parts.append(var)
    pv = PartitionedVariable(name, shape, dtype, parts, partitions)
    known[name] = pv
    return pv


def find_partitioned(store: Any, name: str) -> PartitionedVariable | None:
    """The PartitionedVariable `name` that get_variable made in `store`, if any."""
    return _PARTITIONED.get(store, {}).get(name)


def _reuse(found: PartitionedVariable, name: str, shape: TensorShape, dtype: _dt.DType,
           partitions: list[int], reuse: Any) -> PartitionedVariable:
    if not reuse:
        raise ValueError(f"Partitioned variable with name {name} already exists. Did you "
                         "mean to set reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
    if not shape.is_compatible_with(found.get_shape()):
        raise ValueError(f"Trying to reuse partitioned variable {name}, but specified shape "
                         f"{shape} and found shape {found.get_shape()}.")
    if not dtype.is_compatible_with(found.dtype):
        raise ValueError(f"Trying to reuse partitioned variable {name}, but specified dtype "
                         f"{dtype.name} and found dtype {found.dtype.name}.")
    if partitions != found._get_partitions():
        raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                         f"partitions {partitions} and found partitions "
                         f"{found._get_partitions()}.")
    return found


def _check_existing_shards(store: Any, name: str, num: int) -> None:
    # Shards made by an earlier, different partitioning would silently mix layouts.
    if f"{name}/part_0" not in store.vars:
        return
    if f"{name}/part_{num - 1}" not in store.vars or f"{name}/part_{num}" in store.vars:
        raise ValueError(f"Partitioner returned {num} shards for {name}, but shards of a "
                         f"different partitioning ({name}/part_0, ...) already exist.")


def _with_partition_info(initializer: Any, info: _PartitionInfo) -> Any:
    """The initializer, called with this shard's partition_info (None stays None)."""
    if initializer is None:
        return None
    if isinstance(initializer, type):  # a class such as tf.zeros_initializer
        initializer = initializer()

    def init(shape: Any, dtype: Any = None, partition_info: Any = None) -> Any:
        return initializer(shape, dtype=dtype, partition_info=info)
    return init
