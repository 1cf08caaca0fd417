"""Joining and splitting array ops: Pack (stack), Unpack (unstack), ConcatV2,
Split/SplitV.

Public functions are re-exported by the package, `tensorweave.ops.array`.

Example:
    >>> tf.concat([tf.zeros([2, 3]), tf.ones([2, 1])], axis=1).shape.as_list()
    [2, 4]
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import (
    Dimension, TensorShape, dimension_value, unknown_shape)
from tensorweave.ops.array.core_ops import (
    _const_int, _fold_if_known, _int_tensor, _normalize_axis, kernel_int)
from tensorweave.ops.array.shape_ops import shape
from tensorweave.ops.array.fill_ops import zeros_like
from tensorweave.ops.array.slice_ops import slice as _slice


def _convert_list(values: Any, what: str) -> list[Tensor]:
    if isinstance(values, Tensor) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{what} expects a list of tensors, got {values!r}")
    if not values:
        raise ValueError(f"{what} needs at least one tensor, got an empty list")
    first = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = first.dtype.base_dtype if first is not None else None
    out = [convert_to_tensor(v, dtype=dtype) for v in values]
    dtypes = {t.dtype.base_dtype for t in out}
    if len(dtypes) > 1:
        raise TypeError(f"{what}: all values must have the same dtype, got "
                        f"{[t.dtype.name for t in out]}")
    return out


def _dense_grads(op: Operation, grads: tuple[Any, ...]) -> list[Tensor]:
    """Output grads with None replaced by zeros (unused outputs)."""
    return [g if g is not None else zeros_like(o) for g, o in zip(grads, op.outputs)]


# ---- Pack / stack ------------------------------------------------------------------
pack_op = define_op("Pack", inputs=("values*",), attrs={"axis": 0})


@pack_op.shape
def _(values: list[Tensor], *, axis: int) -> Any:
    merged = TensorShape(None)
    for i, v in enumerate(values):
        if not merged.is_compatible_with(v.shape):
            raise ValueError(f"stack: shapes of all inputs must match, but values[0] has "
                             f"shape {values[0].shape} and values[{i}] has shape {v.shape}")
        merged = merged.merge_with(v.shape)
    if merged.ndims is None:
        return values[0].dtype.base_dtype, TensorShape(None)
    r = merged.ndims + 1
    a = _normalize_axis(axis, r, "stack")
    dims = merged.as_list()
    return values[0].dtype.base_dtype, TensorShape(dims[:a] + [len(values)] + dims[a:])


@pack_op.kernel("CPU")
def _(values: list[Any], *, axis: int, N: int = 0) -> Any:
    if axis == 0 and all(isinstance(v, (np.ndarray, np.generic)) and v.ndim == 0
                         and v.dtype.kind not in "OSU" for v in values):
        # Numeric scalars (shape parts): as np.stack types them, 8x faster. Not strings:
        # np.array would nest 0-d object arrays (or make fixed-width bytes).
        return np.array(values)
    return np.stack(values, axis=axis)


@pack_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


_fold_if_known("Pack")


def stack(values: Any, axis: int = 0, name: str = "stack") -> Tensor:
    """`tf.stack`: joins N rank-R tensors into one rank-(R+1) tensor along `axis`.

    Example:
        >>> tf.stack([tf.zeros([3]), tf.ones([3])], axis=1).shape.as_list()
        [3, 2]
    """
    vals = _convert_list(values, "stack")
    return create_op("Pack", [vals], {"axis": int(axis)}, name).outputs[0]


# ---- Unpack / unstack --------------------------------------------------------------
unpack_op = define_op("Unpack", inputs=("value",), attrs={"num": REQUIRED, "axis": 0})


@unpack_op.shape
def _(value: Tensor, *, num: int, axis: int) -> Any:
    s = value.shape
    if s.ndims is None:
        return [(value.dtype.base_dtype, TensorShape(None))] * num
    a = _normalize_axis(axis, s.ndims, "unstack")
    if dimension_value(s[a]) is not None and dimension_value(s[a]) != num:
        raise ValueError(f"unstack: num={num} does not match dimension {a} of shape {s}")
    dims = s.as_list()
    return [(value.dtype.base_dtype, TensorShape(dims[:a] + dims[a + 1:]))] * num


@unpack_op.kernel("CPU")
def _(value: Any, *, num: int, axis: int) -> Any:
    value = np.asarray(value)
    if value.shape[axis] != num:
        raise errors.InvalidArgumentError(None, None, f"unstack: input dimension {axis} is "
                                          f"{value.shape[axis]}, but num={num}")
    return [np.take(value, i, axis=axis) for i in range(num)]


@unpack_op.gradient
def _(op: Operation, *grads: Any) -> Any:
    return [stack(_dense_grads(op, grads), axis=op.get_attr("axis"))]


def unstack(value: Any, num: int | None = None, axis: int = 0,
            name: str = "unstack") -> list[Tensor]:
    """`tf.unstack`: splits `value` along `axis` into a list of rank-(R-1) tensors.

    Raises:
        ValueError: if `num` is None and the dimension at `axis` is not static.

    Example:
        >>> a, b = tf.unstack(tf.zeros([2, 3]))
    """
    t = convert_to_tensor(value)
    if num is None:
        s = t.shape
        if s.ndims is None:
            raise ValueError(f"Cannot infer num from shape {s} of {t.name}; pass num=")
        num = dimension_value(s[_normalize_axis(axis, s.ndims, "unstack")])
        if num is None:
            raise ValueError(f"Cannot infer num from shape {s} of {t.name} (dimension {axis} "
                             "is unknown); pass num=")
    return create_op("Unpack", [t], {"num": int(num), "axis": int(axis)}, name).outputs


# ---- ConcatV2 / concat -------------------------------------------------------------
concat_op = define_op("ConcatV2", inputs=("values*", "axis"))


@concat_op.shape
def _(values: list[Tensor], axis_t: Tensor, *, N: int = 0) -> Any:
    dtype = values[0].dtype.base_dtype
    ranks = {v.shape.ndims for v in values} - {None}
    if len(ranks) > 1:
        raise ValueError(f"concat: all inputs must have the same rank, got shapes "
                         f"{[str(v.shape) for v in values]}")
    if not ranks:
        return dtype, TensorShape(None)
    r = cast(int, ranks.pop())  # None was removed from ranks
    axis = _const_int(axis_t)
    if axis is None:
        return dtype, unknown_shape(r)
    a = _normalize_axis(axis, r, "concat")
    out: list[Any] = [None] * r
    total: int | None = 0
    for i, v in enumerate(values):
        if v.shape.ndims is None:
            total = None
            continue
        d = v.shape.as_list()
        for j in range(r):
            if j == a:
                continue
            if out[j] is not None and d[j] is not None and out[j] != d[j]:
                raise ValueError(f"concat: dimension {j} of the inputs must match (all but the "
                                 f"concat axis {a}), but values[{i}] has shape {v.shape} and "
                                 f"an earlier input has {out[j]}; shapes: "
                                 f"{[str(x.shape) for x in values]}")
            out[j] = out[j] if out[j] is not None else d[j]
        d_a = d[a]
        total = None if total is None or d_a is None else total + d_a
    out[a] = total
    return dtype, TensorShape(out)


@concat_op.kernel("CPU")
def _(values: list[Any], axis: Any, *, N: int = 0) -> Any:
    return np.concatenate(values, axis=kernel_int(axis))


concat_offset_op = define_op("ConcatOffset", inputs=("concat_dim", "shape*"))


@concat_offset_op.shape
def _(dim: Tensor, shapes: list[Tensor], *, N: int = 0) -> Any:
    return [(s.dtype, s.shape) for s in shapes]


@concat_offset_op.kernel("CPU")
def _(dim: Any, shapes: list[Any], *, N: int = 0) -> Any:
    a = int(np.asarray(dim).reshape(()))
    r = len(shapes[0])
    a = a % r if r else a
    out, pos = [], 0
    for s in shapes:
        off = np.zeros(r, dtype=np.asarray(s).dtype)
        off[a] = pos
        pos += int(s[a])
        out.append(off)
    return out


concat_offset_op.no_gradient()
_fold_if_known("ConcatOffset")


@concat_op.gradient
def _(op: Operation, grad: Any) -> Any:
    values, axis = op.inputs[:-1], op.inputs[-1]
    if len(values) == 1:
        return [grad, None]
    shapes = [shape(v) for v in values]
    offsets = create_op("ConcatOffset", [axis, shapes], None, "ConcatOffset").outputs
    return [_slice(grad, o, s) for o, s in zip(offsets, shapes)] + [None]


_fold_if_known("ConcatV2")


def concat(values: Any, axis: Any, name: str = "concat") -> Tensor:
    """`tf.concat`: joins tensors along an existing dimension `axis` (negative ok).

    Example:
        >>> tf.concat([[1, 2], [3]], 0)  # evaluates to [1, 2, 3]
    """
    with name_scope(name, "concat", [values, axis]) as scope:  # TF's "concat/axis"
        vals = _convert_list(values, "concat")
        return create_op("ConcatV2", [vals, _int_tensor(axis, name="axis")], None,
                       scope).outputs[0]


# ---- Split / SplitV ----------------------------------------------------------------
split_v_op = define_op("SplitV", inputs=("value", "size_splits", "axis"),
                       attrs={"num_split": REQUIRED})


@split_v_op.shape
def _(value: Tensor, sizes_t: Tensor, axis_t: Tensor, *, num_split: int) -> Any:
    dtype = value.dtype.base_dtype
    s = value.shape
    axis = _const_int(axis_t)
    sizes: Any = constant_value(sizes_t)
    if s.ndims is None or axis is None:
        return [(dtype, unknown_shape(s.ndims))] * num_split
    a = _normalize_axis(axis, s.ndims, "split")
    dims = s.as_list()
    if sizes is None:
        return [(dtype, TensorShape(dims[:a] + [None] + dims[a + 1:]))] * num_split
    sizes = [int(x) for x in np.asarray(sizes).reshape(-1)]
    if sum(x == -1 for x in sizes) > 1:
        raise ValueError(f"split: at most one of size_splits {sizes} may be -1")
    if dims[a] is not None:
        known = sum(x for x in sizes if x != -1)
        if (-1 in sizes and known > dims[a]) or (-1 not in sizes and known != dims[a]):
            raise ValueError(f"split: size_splits {sizes} do not add up to dimension {a} "
                             f"(size {dims[a]}) of the input shape {s}")
        sizes = [dims[a] - known if x == -1 else x for x in sizes]
    return [(dtype, TensorShape(dims[:a] + [None if x == -1 else x] + dims[a + 1:]))
            for x in sizes]


@split_v_op.kernel("CPU")
def _(value: Any, sizes: Any, axis: Any, *, num_split: int) -> Any:
    value = np.asarray(value)
    a = int(np.asarray(axis).reshape(()))
    sizes = [int(x) for x in np.asarray(sizes).reshape(-1)]
    n = value.shape[a]
    if -1 in sizes:
        sizes[sizes.index(-1)] = n - sum(x for x in sizes if x != -1)
    if sum(sizes) != n or any(x < 0 for x in sizes):
        raise errors.InvalidArgumentError(None, None, f"split: size_splits {sizes} must be "
                                          f">= 0 and add up to {n} (dimension {a} of input "
                                          f"shape {list(value.shape)})")
    return np.split(value, np.cumsum(sizes)[:-1], axis=a)


@split_v_op.gradient
def _(op: Operation, *grads: Any) -> Any:
    return [concat(_dense_grads(op, grads), op.inputs[2]), None, None]


split_op = define_op("Split", inputs=("split_dim", "value"), attrs={"num_split": REQUIRED})


@split_op.shape
def _(axis_t: Tensor, value: Tensor, *, num_split: int) -> Any:
    dtype = value.dtype.base_dtype
    s = value.shape
    axis = _const_int(axis_t)
    if s.ndims is None or axis is None:
        return [(dtype, unknown_shape(s.ndims))] * num_split
    a = _normalize_axis(axis, s.ndims, "split")
    dims = s.as_list()
    d_a = dims[a]
    if d_a is not None and d_a % num_split:
        raise ValueError(f"split: dimension {a} of shape {s} (size {dims[a]}) is not evenly "
                         f"divisible by num_split={num_split}")
    dims[a] = None if d_a is None else d_a // num_split
    return [(dtype, TensorShape(dims))] * num_split


@split_op.kernel("CPU")
def _(axis: Any, value: Any, *, num_split: int) -> Any:
    value = np.asarray(value)
    a = int(np.asarray(axis).reshape(()))
    if value.shape[a] % num_split:
        raise errors.InvalidArgumentError(None, None, f"split: dimension {a} of input shape "
                                          f"{list(value.shape)} is not divisible by "
                                          f"num_split={num_split}")
    return np.split(value, num_split, axis=a)


@split_op.gradient
def _(op: Operation, *grads: Any) -> Any:
    return [None, concat(_dense_grads(op, grads), op.inputs[0])]


def split(value: Any, num_or_size_splits: Any, axis: Any = 0, num: int | None = None,
          name: str = "split") -> list[Tensor]:
    """`tf.split`: splits `value` along `axis` into equal parts or parts of given sizes.

    Args:
        value: the tensor to split.
        num_or_size_splits: an int N (N equal parts) or a 1-D list/tensor of sizes
            (one may be -1, meaning "the rest").
        axis: the dimension to split (negative counts from the end).
        num: the number of outputs, needed when sizes is a tensor of unknown length.

    Example:
        >>> a, b = tf.split(tf.zeros([4, 6]), [2, -1], axis=1)
        >>> b.shape.as_list()
        [4, 4]
    """
    # TF's op-wrapper scope, inputs converted in the op's input order: Split's
    # split/split_dim then split/value; SplitV's split/value and /split_dim (its sizes
    # are converted first, beside the op, as a plain "Const").
    by_count = isinstance(num_or_size_splits, (int, np.integer, Dimension)) and not \
        isinstance(num_or_size_splits, bool)  # TF 1.x takes a Dimension (x.shape[1]) too
    sizes = None if by_count else _int_tensor(num_or_size_splits)
    with name_scope(name, "split", [value, num_or_size_splits, axis]) as scope:
        if sizes is None:
            n = int(num_or_size_splits)
            if n < 1:
                raise ValueError(f"split: num_or_size_splits must be >= 1, got {n}")
            axis_t = _int_tensor(axis, name="split_dim")
            t = convert_to_tensor(value, name="value")
            return create_op("Split", [axis_t, t], {"num_split": n}, scope).outputs
        t = convert_to_tensor(value, name="value")
        axis_t = _int_tensor(axis, name="split_dim")
        if num is None:
            num = dimension_value(sizes.shape[0]) if sizes.shape.ndims == 1 else None
            if num is None:
                raise ValueError(f"Cannot infer the number of splits from {sizes.name}; "
                                 "pass num=")
        return create_op("SplitV", [t, sizes, axis_t], {"num_split": int(num)}, scope).outputs


__all__ = ["stack", "unstack", "concat", "split"]
