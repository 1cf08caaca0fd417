"""Sparse <-> dense and re-indexing stanzas: SparseToDense, SparseReorder, SparseReshape.

Their public wrappers follow them (`tf.sparse_tensor_to_dense`, `tf.sparse_reorder`,
`tf.sparse_reshape`), with `tf.sparse_placeholder`, `tf.sparse_to_dense`,
`tf.sparse_retain` and `tf.sparse_to_indicator`.

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
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, dimension_value
from tensorweave.ops import array as array_ops
from tensorweave.ops.array import core_ops
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


# ---- public wrappers (tf.sparse_placeholder, tf.sparse_tensor_to_dense, ...) ----------
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
