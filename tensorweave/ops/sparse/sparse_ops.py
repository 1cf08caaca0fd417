"""The sparse op family's public entry: `tf.sparse_placeholder`, `tf.sparse_tensor_to_dense`,
`tf.sparse_reorder`, `tf.sparse_concat`, `tf.sparse_tensor_dense_matmul`, ...

Each function takes and returns `tf.SparseTensor`s (or SparseTensorValues) and
builds the stanzas of `conversion_ops`, `structure_ops`, `sparse_math_ops`.

Example:
    >>> sp = tf.sparse_placeholder(tf.float32, shape=[None, 100])
    >>> logits = tf.sparse_tensor_dense_matmul(sp, w)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, dimension_value
from tensorweave.ops.array import array_ops, core_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.sparse import conversion_ops as _conversion  # noqa: F401 - registers
from tensorweave.ops.sparse import sparse_math_ops as _math  # noqa: F401 - registers
from tensorweave.ops.sparse import structure_ops as _structure  # noqa: F401 - registers
from tensorweave.ops.sparse.segment_ops import (  # noqa: F401 - re-exported API
    segment_sum, sparse_segment_mean, sparse_segment_sqrt_n, sparse_segment_sum)
from tensorweave.ops.sparse.conversion_ops import create


def _sparse(x: Any, what: str) -> SparseTensor:
    if isinstance(x, SparseTensorValue):
        return SparseTensor.from_value(x)
    if not isinstance(x, SparseTensor):
        raise TypeError(f"{what} expects a tf.SparseTensor (or SparseTensorValue), got "
                        f"{type(x).__name__} {x!r:.80}")
    return x


def _with_hint(sp: SparseTensor, shape: TensorShape) -> SparseTensor:
    sp._shape_hint = shape
    return sp


def sparse_placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> SparseTensor:
    """`tf.sparse_placeholder`: a SparseTensor whose three parts must be fed.

    Feed it a `tf.SparseTensorValue(indices, values, dense_shape)` (or a 3-tuple).
    With a fully known `shape` the dense_shape is a constant; otherwise it is a
    placeholder of the shape's rank (any rank when `shape` is None).

    Example:
        >>> x = tf.sparse_placeholder(tf.float32, shape=[None, 3])
        >>> sess.run(tf.sparse_tensor_to_dense(x),
        ...          {x: tf.SparseTensorValue([[0, 1]], [2.0], [1, 3])})
    """
    dt = _dt.as_dtype(dtype)
    if isinstance(shape, Tensor):  # a dense_shape tensor given directly, as TF allows
        rank_t = dimension_value(shape.shape[0]) if shape.shape.ndims == 1 else None
        prefix_t = f"{name}/" if name else ""
        return SparseTensor(
            core_ops.placeholder(_dt.int64, [None, rank_t],
                                 name=prefix_t + "indices" if name else None),
            core_ops.placeholder(dt, [None], name=prefix_t + "values" if name else None),
            shape)
    static = None if shape is None else as_shape(shape)
    rank = None if static is None else static.ndims
    prefix = f"{name}/" if name else ""
    if static is not None and static.is_fully_defined():
        dense_shape: Tensor = convert_to_tensor(static.as_list(), dtype=_dt.int64,
                                                name=prefix + "shape" if name else "Const")
    else:
        dense_shape = core_ops.placeholder(_dt.int64, [rank],
                                           name=prefix + "shape" if name else "Placeholder")
    values = core_ops.placeholder(dt, [None], name=prefix + "values" if name else None)
    indices = core_ops.placeholder(_dt.int64, [None, rank],
                                   name=prefix + "indices" if name else None)
    sp = SparseTensor(indices, values, dense_shape)
    return _with_hint(sp, static) if static is not None else sp


def sparse_tensor_to_dense(sp_input: Any, default_value: Any = 0, validate_indices: bool = True,
                           name: str | None = None) -> Tensor:
    """`tf.sparse_tensor_to_dense` / `tf.sparse.to_dense`: the dense tensor; gaps hold
    `default_value`.

    Raises:
        tf.errors.InvalidArgumentError (at run time): indices out of bounds, or, with
            validate_indices, out of standard order or repeated.

    Example:
        >>> tf.sparse_tensor_to_dense(tf.SparseTensor([[1]], [7], [3]))   # [0, 7, 0]
    """
    sp = _sparse(sp_input, "sparse_tensor_to_dense")
    default = convert_to_tensor(default_value, dtype=sp.dtype.base_dtype, name="default_value")
    out = create("SparseToDense", [sp.indices, sp.dense_shape, sp.values, default],
                 {"validate_indices": bool(validate_indices)}, name or "SparseToDense")
    result = out.outputs[0]
    result.set_shape(sp.get_shape())
    return result


def sparse_to_dense(sparse_indices: Any, output_shape: Any, sparse_values: Any,
                    default_value: Any = 0, validate_indices: bool = True,
                    name: str | None = None) -> Tensor:
    """`tf.sparse_to_dense` (the older form taking the three parts separately).

    Example:
        >>> tf.sparse_to_dense([0, 2], [4], 1.0)   # [1, 0, 1, 0]
    """
    indices = convert_to_tensor(sparse_indices, name="sparse_indices")
    shape = convert_to_tensor(output_shape, dtype=indices.dtype.base_dtype, name="output_shape")
    values = convert_to_tensor(sparse_values, name="sparse_values")
    default = convert_to_tensor(default_value, dtype=values.dtype.base_dtype,
                                name="default_value")
    return create("SparseToDense", [indices, shape, values, default],
                  {"validate_indices": bool(validate_indices)}, name).outputs[0]


def sparse_reorder(sp_input: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse_reorder`: the same entries in standard (row-major) order.

    Example:
        >>> tf.sparse_reorder(tf.SparseTensor([[1, 0], [0, 1]], [1, 2], [2, 2]))
    """
    sp = _sparse(sp_input, "sparse_reorder")
    out = create("SparseReorder", [sp.indices, sp.values, sp.dense_shape], None,
                 name or "SparseReorder").outputs
    return _with_hint(SparseTensor(out[0], out[1], core_ops.identity(sp.dense_shape)),
                      sp.get_shape())


def sparse_reshape(sp_input: Any, shape: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse_reshape`: the entries re-indexed for a new dense shape (one dim may be -1).

    Raises:
        ValueError: a constant `shape` whose size differs from a known input size.

    Example:
        >>> tf.sparse_reshape(tf.SparseTensor([[0, 3]], [1], [2, 4]), [8])   # index [3]
    """
    sp = _sparse(sp_input, "sparse_reshape")
    new_shape = convert_to_tensor(shape, dtype=_dt.int64, name="shape")
    out = create("SparseReshape", [sp.indices, sp.dense_shape, new_shape], None,
                 name or "SparseReshape").outputs
    hint = None
    wanted, known = constant_value(new_shape), sp.get_shape()
    if wanted is not None:
        dims = [int(d) for d in wanted.reshape(-1)]
        total = known.num_elements() if known.ndims is not None else None
        rest = int(abs(np.prod([d for d in dims if d >= 0])))
        if total is not None and (rest == 0 or total % rest if -1 in dims
                                  else rest != total):
            raise ValueError(f"sparse_reshape: cannot reshape a SparseTensor of shape {known} "
                             f"({total} dense elements) to {dims}")
        if total is not None and dims.count(-1) == 1:  # infer it statically, as TF
            dims[dims.index(-1)] = total // rest
        hint = TensorShape([None if d < 0 else d for d in dims])
    result = SparseTensor(out[0], core_ops.identity(sp.values), out[1])
    return _with_hint(result, hint) if hint is not None else result


def sparse_retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """`tf.sparse_retain`: only the entries where the bool vector `to_retain` is True.

    Raises:
        ValueError: `to_retain` not a vector, or of another length than the values.

    Example:
        >>> tf.sparse_retain(sp, tf.not_equal(sp.values, 0))
    """
    sp = _sparse(sp_input, "sparse_retain")
    keep = convert_to_tensor(to_retain, dtype=_dt.bool, name="to_retain")
    if keep.shape.ndims not in (None, 1):
        raise ValueError(f"sparse_retain: to_retain must be a vector, got shape {keep.shape}")
    if not keep.shape.is_compatible_with(sp.values.shape):
        raise ValueError(f"sparse_retain: to_retain has {keep.shape[0]} entries but the "
                         f"SparseTensor has {sp.values.shape[0]} values")
    where = array_ops.reshape(math_ops.where(keep), [-1])
    result = SparseTensor(array_ops.gather(sp.indices, where),
                          array_ops.gather(sp.values, where),
                          core_ops.identity(sp.dense_shape))
    return _with_hint(result, sp.get_shape())


def sparse_fill_empty_rows(sp_input: Any, default_value: Any,
                           name: str | None = None) -> tuple[SparseTensor, Tensor]:
    """`tf.sparse_fill_empty_rows`: puts `default_value` at [row, 0, ...] of every empty row.

    Returns (the filled SparseTensor, a bool vector marking the rows that were empty).
    Each row's entries keep their order; rows come out in row order.

    Example:
        >>> filled, was_empty = tf.sparse_fill_empty_rows(sp_ids, 0)
    """
    sp = _sparse(sp_input, "sparse_fill_empty_rows")
    default = convert_to_tensor(default_value, dtype=sp.dtype.base_dtype, name="default_value")
    with name_scope(name, "SparseFillEmptyRows", [sp.values]):
        out = create("SparseFillEmptyRows", [sp.indices, sp.values, sp.dense_shape, default],
                     None, "SparseFillEmptyRows").outputs
        filled = SparseTensor(out[0], out[1], core_ops.identity(sp.dense_shape))
    return _with_hint(filled, sp.get_shape()), out[2]


def sparse_concat(axis: int, sp_inputs: list[Any], name: str | None = None,
                  expand_nonconcat_dim: bool = False, concat_dim: int | None = None
                  ) -> SparseTensor:
    """`tf.sparse_concat`: joins SparseTensors along `axis`; the result is in standard order.

    With `expand_nonconcat_dim`, the other dimensions grow to the largest input's.

    Raises:
        ValueError: fewer than two inputs.

    Example:
        >>> tf.sparse_concat(1, [sp_a, sp_b])   # shapes [2, 3] and [2, 4] -> [2, 7]
    """
    axis = concat_dim if concat_dim is not None else axis
    sps = [_sparse(s, "sparse_concat") for s in sp_inputs]
    if len(sps) < 2:
        raise ValueError(f"sparse_concat needs at least 2 SparseTensors, got {len(sps)}")
    shapes = [s.dense_shape for s in sps]
    if expand_nonconcat_dim:
        if axis < 0:
            rank = sps[0].get_shape().ndims
            if rank is None:
                raise ValueError(f"sparse_concat: a negative axis ({axis}) with "
                                 "expand_nonconcat_dim needs inputs of known rank.")
            axis += rank
        biggest = math_ops.reduce_max(array_ops.stack(shapes), axis=0)
        mask = array_ops.one_hot(axis, array_ops.size(biggest), on_value=True,
                                 off_value=False)
        shapes = [math_ops.where(mask, s, biggest) for s in shapes]
    out = create("SparseConcat", [[s.indices for s in sps], [s.values for s in sps], shapes],
                 {"concat_dim": int(axis)}, name or "SparseConcat").outputs
    return SparseTensor(out[0], out[1], out[2])


def sparse_slice(sp_input: Any, start: Any, size: Any, name: str | None = None) -> SparseTensor:
    """`tf.sparse_slice` / `tf.sparse.slice`: the entries in [start, start + size), re-based.

    Example:
        >>> tf.sparse_slice(sp, [0, 1], [2, 2])
    """
    sp = _sparse(sp_input, "sparse_slice")
    start_t = convert_to_tensor(start, dtype=_dt.int64, name="start")
    size_t = convert_to_tensor(size, dtype=_dt.int64, name="size")
    out = create("SparseSlice", [sp.indices, sp.values, sp.dense_shape, start_t, size_t],
                 None, name or "SparseSlice").outputs
    return SparseTensor(out[0], out[1], out[2])


def sparse_tensor_dense_matmul(sp_a: Any, b: Any, adjoint_a: bool = False,
                               adjoint_b: bool = False, name: str | None = None) -> Tensor:
    """`tf.sparse_tensor_dense_matmul`: op(sp_a) @ op(b) for a rank-2 SparseTensor sp_a.

    Differentiable w.r.t. sp_a's values and b (the wide part of wide & deep).

    Example:
        >>> tf.sparse_tensor_dense_matmul(sp_x, w, adjoint_b=True)
    """
    sp = _sparse(sp_a, "sparse_tensor_dense_matmul")
    b_t = convert_to_tensor(b, dtype=sp.dtype.base_dtype, name="b")
    with name_scope(name, "SparseTensorDenseMatMul", [sp.indices, sp.values, b_t]):
        return create("SparseTensorDenseMatMul", [sp.indices, sp.values, sp.dense_shape, b_t],
                      {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)}
                      ).outputs[0]


def sparse_add(a: Any, b: Any, threshold: Any = None, thresh: Any = None) -> Any:
    """`tf.sparse_add`: sparse + sparse -> SparseTensor; sparse + dense -> dense Tensor.

    Entries present in both operands whose sum has magnitude below `threshold` (TF's
    deprecated name: `thresh`; default 0) are dropped (sparse + sparse only).

    Raises:
        TypeError: neither operand is sparse.

    Example:
        >>> tf.sparse_add(sp_a, sp_b)
    """
    thresh = threshold if threshold is not None else thresh if thresh is not None else 0
    a_sp, b_sp = isinstance(a, (SparseTensor, SparseTensorValue)), \
        isinstance(b, (SparseTensor, SparseTensorValue))
    if not a_sp and not b_sp:
        raise TypeError("sparse_add: at least one operand must be a tf.SparseTensor; use "
                        "tf.add for two dense tensors.")
    if a_sp and b_sp:
        sa, sb = _sparse(a, "sparse_add"), _sparse(b, "sparse_add")
        t = convert_to_tensor(thresh, dtype=sa.dtype.base_dtype, name="thresh")
        out = create("SparseAdd", [sa.indices, sa.values, sa.dense_shape, sb.indices,
                                   sb.values, sb.dense_shape, t], None, "SparseAdd").outputs
        return _with_hint(SparseTensor(out[0], out[1], out[2]), sa.get_shape())
    sp, dense = (_sparse(a, "sparse_add"), b) if a_sp else (_sparse(b, "sparse_add"), a)
    dense_t = convert_to_tensor(dense, dtype=sp.dtype.base_dtype, name="b")
    return create("SparseTensorDenseAdd", [sp.indices, sp.values, sp.dense_shape, dense_t],
                  None, "SparseTensorDenseAdd").outputs[0]


def sparse_reduce_sum(sp_input: Any, axis: Any = None, keepdims: bool | None = None,
                      reduction_axes: Any = None, keep_dims: bool | None = None,
                      name: str | None = None) -> Tensor:
    """`tf.sparse_reduce_sum` / `tf.sparse.reduce_sum`: the dense sum over `axis` (all
    axes when None); missing entries count as zero.

    Example:
        >>> tf.sparse_reduce_sum(tf.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [2, 3]), 1)
    """
    sp = _sparse(sp_input, "sparse_reduce_sum")
    axes = reduction_axes if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    axes_t = convert_to_tensor([] if axes is None else axes, dtype=_dt.int32,
                               name="reduction_axes")
    return create("SparseReduceSum", [sp.indices, sp.values, sp.dense_shape, axes_t],
                  {"keep_dims": keep}, name or "SparseReduceSum").outputs[0]


def sparse_to_indicator(sp_input: Any, vocab_size: Any, name: str | None = None) -> Tensor:
    """`tf.sparse_to_indicator`: bool [..., vocab_size], True at each row's ids.

    The last dimension of `sp_input` indexes ids within a row; its values are the ids.

    Example:
        >>> tf.sparse_to_indicator(sp_ids, 1000)   # sp_ids [batch, k] -> [batch, 1000]
    """
    sp = _sparse(sp_input, "sparse_to_indicator")
    with name_scope(name, "SparseToIndicator", [sp.indices]):
        ids = math_ops.cast(sp.values, _dt.int64)
        leading = array_ops.slice(sp.indices, [0, 0],
                                  [-1, array_ops.shape(sp.indices)[1] - 1])
        new_indices = array_ops.concat([leading, array_ops.expand_dims(ids, 1)], 1)
        shape = array_ops.concat([array_ops.slice(sp.dense_shape, [0], array_ops.expand_dims(
            array_ops.size(sp.dense_shape) - 1, 0)), convert_to_tensor([vocab_size],
                                                                       dtype=_dt.int64)], 0)
        ones = array_ops.ones_like(ids, dtype=_dt.bool)
        ordered = sparse_reorder(SparseTensor(new_indices, ones, shape))
        return sparse_tensor_to_dense(ordered, default_value=False, validate_indices=False)
