"""Reductions (Sum, Mean, Max, Min, Prod, Any, All) and ArgMax/ArgMin.

MatMul lives in `matmul_ops` (re-exported here). The public wrappers are
re-exported by `tensorweave.ops.math.math_ops`.

Example:
    >>> x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> tf.reduce_sum(x, axis=-1, keepdims=True)   # [[3.0], [7.0]]
"""


from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, contains_tensor, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.math.binary_ops import equal, multiply
from tensorweave.ops.math.cwise_ops import _is_bool, _is_numeric, cast, check_dtype
from tensorweave.ops.math.matmul_ops import matmul as matmul  # noqa: F401 - re-exported API


def _axes(axis: Any, ndim: int | None = None) -> tuple[int, ...]:
    axes = tuple(int(a) for a in np.ravel(axis))
    if ndim is not None:
        axes = tuple(a + ndim if a < 0 else a for a in axes)
    return axes


# ---- all-axes helper (axis=None on a tensor of unknown rank) -------------------------
all_axes_op = define_op("ReductionAllAxes", inputs=("input",))


@all_axes_op.shape
def _(x: Tensor) -> Any:
    return _dt.int32, TensorShape([x.shape.ndims])


@all_axes_op.kernel("CPU")
def _(x: Any) -> Any:
    return np.arange(np.ndim(x), dtype=np.int32)


all_axes_op.no_gradient()


def _reduction_axis(x: Tensor, axis: Any) -> Tensor:
    if axis is None:
        if x.shape.ndims is not None:
            # TF's all-axes constant is a plain "Const" beside the reduction op.
            return convert_to_tensor(np.arange(x.shape.ndims, dtype=np.int32), name="Const")
        return create_tensor("ReductionAllAxes", [x])
    if isinstance(axis, Tensor) or contains_tensor(axis) or not isinstance(
            axis, (int, np.integer, list, tuple, np.ndarray)):
        return convert_to_tensor(axis, name="reduction_indices")
    return convert_to_tensor(np.asarray(axis, dtype=np.int32), name="reduction_indices")


def _reduced_shape(op_type: str, x: Tensor, axis: Tensor, keep_dims: bool) -> TensorShape:
    """Static output shape; ValueError naming the input when an axis is out of range."""
    if axis.dtype.base_dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{op_type} of {x.name} needs an int32/int64 axis, but {axis.name} "
                        f"has dtype {axis.dtype.base_dtype.name}.")
    rank = x.shape.ndims
    value = constant_value(axis)
    if rank is None:
        return TensorShape(None)
    if value is None:
        if keep_dims:
            return TensorShape([None] * rank)
        if axis.shape.is_fully_defined() and axis.shape.num_elements() == 0:
            return x.shape
        return TensorShape(None)
    raw = [int(a) for a in np.ravel(value)]
    bad = [a for a in raw if not -rank <= a < rank]
    if bad:
        raise ValueError(f"Invalid reduction dimension {bad[0]} for {op_type} of {x.name} "
                         f"with {rank} dimensions (shape {x.shape}); axis must be in "
                         f"[{-rank}, {rank}).")
    axes = {a % rank for a in raw}
    dims = x.shape.as_list()
    if keep_dims:
        return TensorShape([1 if i in axes else d for i, d in enumerate(dims)])
    return TensorShape([d for i, d in enumerate(dims) if i not in axes])


def _np_sum(x: Any, axes: tuple[int, ...], keep: bool) -> Any:
    if x.dtype == np.float16:  # accumulate half in float32 for accuracy, as TF does
        return np.sum(x, axis=axes, dtype=np.float32, keepdims=keep).astype(np.float16)
    return np.sum(x, axis=axes, dtype=x.dtype, keepdims=keep)


def _np_mean(x: Any, axes: tuple[int, ...], keep: bool) -> Any:
    if x.dtype == np.float16:
        return np.mean(x, axis=axes, dtype=np.float32, keepdims=keep).astype(np.float16)
    # dtype=x.dtype keeps integer means integral (truncated), like TF.
    return np.mean(x, axis=axes, dtype=x.dtype, keepdims=keep)


def _np_max(x: Any, axes: tuple[int, ...], keep: bool) -> Any:
    return np.max(x, axis=axes, keepdims=keep)


def _np_min(x: Any, axes: tuple[int, ...], keep: bool) -> Any:
    return np.min(x, axis=axes, keepdims=keep)


def _np_prod(x: Any, axes: tuple[int, ...], keep: bool) -> Any:
    return np.prod(x, axis=axes, dtype=x.dtype, keepdims=keep)


def _np_any(x: Any, axes: tuple[int, ...], keep: bool) -> Any:
    return np.any(x, axis=axes, keepdims=keep)


def _np_all(x: Any, axes: tuple[int, ...], keep: bool) -> Any:
    return np.all(x, axis=axes, keepdims=keep)


def _define_reduction(op_type: str, np_fn: Callable[..., Any],
                      allowed: Callable[[_dt.DType], bool]) -> Any:
    op = define_op(op_type, inputs=("input", "reduction_indices"), attrs={"keep_dims": False})

    @op.shape
    def _(x: Tensor, axis: Tensor, *, keep_dims: bool) -> Any:
        check_dtype(op_type, x, allowed)
        return x.dtype.base_dtype, _reduced_shape(op_type, x, axis, keep_dims)

    @op.kernel("CPU")
    def _(x: Any, axis: Any, *, keep_dims: bool) -> Any:
        return np_fn(np.asarray(x), _axes(axis), keep_dims)

    return op


sum_op = _define_reduction("Sum", _np_sum, _is_numeric)
mean_op = _define_reduction("Mean", _np_mean, _is_numeric)
max_op = _define_reduction("Max", _np_max, _is_numeric)
min_op = _define_reduction("Min", _np_min, _is_numeric)
prod_op = _define_reduction("Prod", _np_prod, _is_numeric)
_define_reduction("Any", _np_any, _is_bool).no_gradient()
_define_reduction("All", _np_all, _is_bool).no_gradient()

# Broadcasts a reduction's output (or its gradient) back over the input's shape,
# divided by the number of reduced elements when mean=True.
reduce_grad_op = define_op("ReduceGradBroadcast", inputs=("grad", "like", "reduction_indices"),
                           attrs={"keep_dims": False, "mean": False})


@reduce_grad_op.shape
def _(grad: Tensor, like: Tensor, axis: Tensor, *, keep_dims: bool, mean: bool) -> Any:
    return grad.dtype.base_dtype, like.shape


@reduce_grad_op.kernel("CPU")
def _(grad: Any, like: Any, axis: Any, *, keep_dims: bool, mean: bool) -> Any:
    shape = np.shape(like)
    axes = _axes(axis, len(shape))
    grad = np.asarray(grad)
    if not keep_dims:
        grad = np.expand_dims(grad, axes)
    if mean:
        count = int(np.prod([shape[a] for a in set(axes)]))
        grad = (grad / max(count, 1)).astype(grad.dtype, copy=False)
    return np.broadcast_to(grad, shape)


@reduce_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    axis = op.inputs[2]
    kind = "Mean" if op.get_attr("mean") else "Sum"
    return [create_tensor(kind, [grad, axis], {"keep_dims": op.get_attr("keep_dims")}), None, None]


def _grad_broadcast(grad: Tensor, op: Operation, mean: bool = False) -> Tensor:
    x, axis = op.inputs
    return create_tensor("ReduceGradBroadcast", [grad, x, axis],
                   {"keep_dims": op.get_attr("keep_dims"), "mean": mean})


@sum_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [_grad_broadcast(grad, op), None]


@mean_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [_grad_broadcast(grad, op, mean=True), None]


def _max_min_grad(op: Operation, grad: Tensor) -> list[Any]:
    # Ties share the gradient equally (as TF): grad * [x == y] / count(x == y).
    x, axis = op.inputs
    y_b = _grad_broadcast(op.outputs[0], op)
    ind = cast(equal(x, y_b), grad.dtype)
    count = create_tensor("Sum", [ind, axis], {"keep_dims": op.get_attr("keep_dims")})
    share = create_tensor("RealDiv", [ind, _grad_broadcast(count, op)])
    return [multiply(share, _grad_broadcast(grad, op)), None]


max_op.gradient(_max_min_grad)
min_op.gradient(_max_min_grad)

# d prod / d x_i = product of all other reduced elements (exact even with zeros).
prod_grad_op = define_op("ProdGrad", inputs=("input", "reduction_indices"))


@prod_grad_op.shape
def _(x: Tensor, axis: Tensor) -> Any:
    return x.dtype.base_dtype, x.shape


@prod_grad_op.kernel("CPU")
def _(x: Any, axis: Any) -> Any:
    x = np.asarray(x)
    axes = sorted(set(_axes(axis, x.ndim)))
    k = len(axes)
    moved = np.moveaxis(x, axes, list(range(x.ndim - k, x.ndim)))
    flat = moved.reshape(moved.shape[:x.ndim - k] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), dtype=x.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1, dtype=x.dtype)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1, dtype=x.dtype)[..., ::-1]
    return np.moveaxis((left * right).reshape(moved.shape), list(range(x.ndim - k, x.ndim)),
                       axes)


@prod_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    raise LookupError("Second derivatives of reduce_prod are not implemented in tensorweave "
                      f"(op {op.name}); differentiate reduce_prod only once.")


@prod_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, axis = op.inputs
    return [multiply(create_tensor("ProdGrad", [x, axis]), _grad_broadcast(grad, op)), None]


def _reduce(op_type: str, input_tensor: Any, axis: Any, keepdims: Any, name: str | None,
            reduction_indices: Any, keep_dims: Any) -> Tensor:
    if axis is not None and reduction_indices is not None:
        raise ValueError(f"reduce ({op_type}): pass axis or reduction_indices, not both "
                         f"(got axis={axis!r}, reduction_indices={reduction_indices!r}).")
    if keepdims is not None and keep_dims is not None and bool(keepdims) != bool(keep_dims):
        raise ValueError(f"reduce ({op_type}): keepdims={keepdims!r} conflicts with the "
                         f"deprecated keep_dims={keep_dims!r}; pass only keepdims.")
    axis = reduction_indices if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims or False)
    dtype = _dt.bool if op_type in ("Any", "All") else None
    if axis is None:
        x = convert_to_tensor(input_tensor, dtype=dtype)
        return create_tensor(op_type, [x, _reduction_axis(x, None)], {"keep_dims": keep}, name=name)
    # As TF's op wrappers: a given axis is converted inside the op's own scope
    # ("Mean/reduction_indices"), as is a plain input ("Sum/input").
    with name_scope(name, op_type, [input_tensor, axis]) as scope:
        x = convert_to_tensor(input_tensor, dtype=dtype, name="input")
        return create_tensor(op_type, [x, _reduction_axis(x, axis)], {"keep_dims": keep},
                       name=scope)


def reduce_sum(input_tensor: Any, axis: Any = None, keepdims: bool | None = None,
               name: str | None = None, reduction_indices: Any = None,
               keep_dims: bool | None = None) -> Tensor:
    """`tf.reduce_sum`: the sum over `axis` (None: all axes; ints may be negative).

    Example:
        >>> tf.reduce_sum([[1, 2], [3, 4]], axis=0)   # [4, 6]
    """
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: bool | None = None,
                name: str | None = None, reduction_indices: Any = None,
                keep_dims: bool | None = None) -> Tensor:
    """`tf.reduce_mean`: the mean over `axis`; integer inputs give truncated integer means.

    Example:
        >>> tf.reduce_mean([[1.0, 2.0], [3.0, 4.0]])   # 2.5
    """
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor: Any, axis: Any = None, keepdims: bool | None = None,
               name: str | None = None, reduction_indices: Any = None,
               keep_dims: bool | None = None) -> Tensor:
    """`tf.reduce_max`: the maximum over `axis`."""
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor: Any, axis: Any = None, keepdims: bool | None = None,
               name: str | None = None, reduction_indices: Any = None,
               keep_dims: bool | None = None) -> Tensor:
    """`tf.reduce_min`: the minimum over `axis`."""
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor: Any, axis: Any = None, keepdims: bool | None = None,
                name: str | None = None, reduction_indices: Any = None,
                keep_dims: bool | None = None) -> Tensor:
    """`tf.reduce_prod`: the product over `axis`."""
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_any(input_tensor: Any, axis: Any = None, keepdims: bool | None = None,
               name: str | None = None, reduction_indices: Any = None,
               keep_dims: bool | None = None) -> Tensor:
    """`tf.reduce_any`: logical OR over `axis` (bool input)."""
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor: Any, axis: Any = None, keepdims: bool | None = None,
               name: str | None = None, reduction_indices: Any = None,
               keep_dims: bool | None = None) -> Tensor:
    """`tf.reduce_all`: logical AND over `axis` (bool input)."""
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


# ---- ArgMax / ArgMin -----------------------------------------------------------------
def _define_arg(op_type: str, np_fn: Callable[..., Any]) -> Any:
    op = define_op(op_type, inputs=("input", "dimension"), attrs={"output_type": _dt.int64})

    @op.shape
    def _(x: Tensor, dim: Tensor, *, output_type: _dt.DType) -> Any:
        check_dtype(op_type, x, _is_numeric)
        if output_type not in (_dt.int32, _dt.int64):
            raise TypeError(f"{op_type} output_type must be int32 or int64, got "
                            f"{output_type.name} (input {x.name}).")
        return output_type, _reduced_shape(op_type, x, dim, False)

    @op.kernel("CPU")
    def _(x: Any, dim: Any, *, output_type: _dt.DType) -> Any:
        x = np.asarray(x)
        if x.size == 0:
            raise errors.InvalidArgumentError(None, None, f"{op_type} of an empty tensor "
                                              f"(shape {x.shape}) has no answer.")
        return np.asarray(np_fn(x, axis=int(dim))).astype(output_type.as_numpy_dtype)

    op.no_gradient()
    return op


_define_arg("ArgMax", np.argmax)
_define_arg("ArgMin", np.argmin)


def _arg(op_type: str, input: Any, axis: Any, name: str | None, dimension: Any,
         output_type: Any) -> Tensor:
    if axis is not None and dimension is not None:
        raise ValueError(f"{op_type}: pass axis or dimension, not both.")
    axis = dimension if axis is None else axis
    axis = 0 if axis is None else axis
    attrs = {"output_type": _dt.as_dtype(output_type)}
    if isinstance(input, Tensor) and isinstance(axis, Tensor):
        return create_tensor(op_type, [input, axis], attrs, name=name)
    # TF's op-wrapper scope: plain arguments become "ArgMax/input", "ArgMax/dimension".
    with name_scope(name, op_type, [input, axis]) as scope:
        x = convert_to_tensor(input, name="input")
        dim = axis if isinstance(axis, Tensor) else convert_to_tensor(np.int32(axis),
                                                                      name="dimension")
        return create_tensor(op_type, [x, dim], attrs, name=scope)


def argmax(input: Any, axis: Any = None, name: str | None = None,  # noqa: A002
           dimension: Any = None, output_type: Any = _dt.int64) -> Tensor:
    """`tf.argmax`: the index of the largest value along `axis` (default 0).

    Example:
        >>> tf.argmax([[1, 5], [7, 2]], axis=1)   # [1, 0] as int64
    """
    return _arg("ArgMax", input, axis, name, dimension, output_type)


def argmin(input: Any, axis: Any = None, name: str | None = None,  # noqa: A002
           dimension: Any = None, output_type: Any = _dt.int64) -> Tensor:
    """`tf.argmin`: the index of the smallest value along `axis` (default 0)."""
    return _arg("ArgMin", input, axis, name, dimension, output_type)
