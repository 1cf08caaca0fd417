"""The math op family: the public entry point (`tf.add`, `tf.reduce_sum`, `tf.matmul`...).

Element-wise ops live in `cwise_ops`, reductions/argmax/matmul in
`reduce_ops`; this module re-exports them, defines AddN, BroadcastTo,
Where, UnsortedSegmentSum, the clipping helpers, densifying IndexedSlices, and
installs the Tensor operators (+ - * / // % ** @, comparisons, & | ^ ~).

Example:
    >>> x = tf.placeholder(tf.float32, [None, 3])
    >>> loss = tf.reduce_mean(tf.square(x @ tf.ones([3, 1]) - 1.0))
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import (
    constant_value, contains_tensor, convert_to_tensor, register_tensor_conversion_function)
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.math import cwise_ops as _cw
from tensorweave.ops.math.bcast_ops import (  # noqa: F401 - re-exported API
    broadcast_dynamic_shape, broadcast_gradient_args, broadcast_static_shape)
from tensorweave.ops.math.binary_ops import (  # noqa: F401 - re-exported API
    add, divide, equal, floordiv, floormod, greater, greater_equal, less, less_equal,
    logical_and, logical_or, logical_xor, maximum, minimum, mod, multiply, not_equal,
    pow, squared_difference, subtract, truediv)
from tensorweave.ops.math.cwise_ops import (  # noqa: F401 - re-exported API
    binary_inputs, broadcast_to_like, cast, select, sum_to_shape, to_double, to_float,
    to_int32, to_int64)
from tensorweave.ops.math.unary_ops import (  # noqa: F401 - re-exported API
    abs, ceil, conj, exp, floor, log, log1p, logical_not, negative, reciprocal, round,
    rsqrt, sigmoid, sign, sqrt, square, tanh)
from tensorweave.ops.math.reduce_ops import (  # noqa: F401 - re-exported API
    argmax, argmin, matmul, reduce_all, reduce_any, reduce_max, reduce_mean, reduce_min,
    reduce_prod, reduce_sum)


def _identity(t: Any, name: str | None = None) -> Tensor:
    # tf.identity by op name: its stanza is in ops.array, which builds on this family.
    return create_tensor("Identity", [convert_to_tensor(t, as_ref=True)], name=name)

# ---- AddN ----------------------------------------------------------------------------
add_n_op = define_op("AddN", inputs=("inputs*",))


@add_n_op.shape
def _(inputs: list[Tensor]) -> Any:
    if not inputs:
        raise ValueError("AddN needs at least one input.")
    shape = TensorShape(None)
    for t in inputs:
        _cw.check_same_dtype("AddN", inputs[0], t)
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"AddN needs inputs of one shape, but {inputs[0].name} has shape "
                             f"{inputs[0].shape} and {t.name} has shape {t.shape}.")
        shape = shape.merge_with(t.shape)
    _cw.check_dtype("AddN", inputs[0], _cw._is_numeric)
    return inputs[0].dtype.base_dtype, shape


def _dims(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"  # TF's TensorShape.DebugString


@add_n_op.kernel("CPU")
def _(inputs: list[Any]) -> Any:
    # As TF: AddN does not broadcast; every input has the first one's shape.
    first = np.shape(inputs[0])
    for i, v in enumerate(inputs[1:], 1):
        if np.shape(v) != first:
            raise errors.InvalidArgumentError(
                None, None, f"Inputs to operation AddN of type AddN must have the same size "
                f"and shape.  Input 0: {_dims(first)} != input {i}: {_dims(np.shape(v))} "
                "(add tensors of one shape, or use tf.add to broadcast).")
    out = np.add(inputs[0], inputs[1]) if len(inputs) > 1 else inputs[0]
    for v in inputs[2:]:
        out = np.add(out, v)
    return out


@add_n_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [grad] * len(op.inputs)


def add_n(inputs: Any, name: str | None = None) -> Tensor:
    """`tf.add_n`: the element-wise sum of a list of same-shape tensors.

    Example:
        >>> tf.add_n([tf.ones([2]), tf.ones([2]), tf.ones([2])])   # [3.0, 3.0]
    """
    if isinstance(inputs, (Tensor, IndexedSlices)) or not inputs:
        raise ValueError(f"add_n expects a non-empty list of tensors, got {inputs!r}.")
    tensors = [convert_to_tensor(t) for t in inputs]
    if len(tensors) == 1:
        if name:
            return _identity(tensors[0], name=name)
        return tensors[0]
    return create_tensor("AddN", [tensors], name=name)


# ---- BroadcastTo ---------------------------------------------------------------------
broadcast_to_op = define_op("BroadcastTo", inputs=("input", "shape"))


@broadcast_to_op.shape
def _(x: Tensor, shape: Tensor) -> Any:
    value = constant_value(shape)
    if value is None:
        n = dimension_value(shape.shape[0]) if shape.shape.ndims == 1 else None
        return x.dtype.base_dtype, TensorShape(None if n is None else [None] * n)
    target = TensorShape([int(d) for d in np.ravel(value)])
    src = x.shape
    if src.ndims is not None:
        if src.ndims > len(target.as_list()):
            raise ValueError(f"BroadcastTo cannot lower the rank: {x.name} has shape {src} "
                             f"and the target shape is {target}.")
        for d, t in zip(reversed(src.as_list()), reversed(target.as_list())):
            if d is not None and d != 1 and d != t:
                raise ValueError(f"BroadcastTo: {x.name} with shape {src} cannot broadcast to "
                                 f"shape {target} (dimension {d} vs {t}).")
    return x.dtype.base_dtype, target


@broadcast_to_op.kernel("CPU")
def _(x: Any, shape: Any) -> Any:
    return np.broadcast_to(x, tuple(int(d) for d in shape))


@broadcast_to_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [sum_to_shape(grad, op.inputs[0]), None]


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.broadcast_to`: repeats `input` along dims of size 1 (NumPy rules) to `shape`.

    Example:
        >>> tf.broadcast_to([1, 2, 3], [2, 3])   # [[1, 2, 3], [1, 2, 3]]
    """
    x = convert_to_tensor(input)
    if contains_tensor(shape):  # e.g. [n, 3] with n a tensor: packed, as TF does
        shape = convert_to_tensor(shape, name="shape")
    elif not isinstance(shape, Tensor):
        shape = convert_to_tensor(np.asarray(shape, dtype=np.int32))
    return create_tensor("BroadcastTo", [x, shape], name=name)


# ---- Where (indices of true elements) -------------------------------------------------
where_op = define_op("Where", inputs=("input",))


@where_op.shape
def _(x: Tensor) -> Any:
    return _dt.int64, TensorShape([None, x.shape.ndims])


@where_op.kernel("CPU")
def _(x: Any) -> Any:
    return np.argwhere(x).astype(np.int64)


where_op.no_gradient()


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """`tf.where` (TF1): `Select(condition, x, y)`, or with only `condition` the int64
    coordinates [num_true, rank] of its true elements.

    TF1 semantics: `condition` has the shape of x/y, or is a vector over their
    first dimension (picking whole rows); x and y do not broadcast.

    Example:
        >>> tf.where([True, False], [1, 2], [10, 20])   # [1, 20]
        >>> tf.where([[True, False], [False, True]])   # [[0, 0], [1, 1]]
    """
    if x is None and y is None:
        return create_tensor("Where", [convert_to_tensor(condition)], name=name)
    if x is None or y is None:
        raise ValueError("tf.where: x and y must both be given or both be None "
                         f"(got x={x!r}, y={y!r}).")
    return select(condition, x, y, name=name)


# ---- UnsortedSegmentSum --------------------------------------------------------------
segment_sum_op = define_op("UnsortedSegmentSum", inputs=("data", "segment_ids", "num_segments"))


def _segment_shape(op_type: str, data: Tensor, ids: Tensor, num: Tensor) -> TensorShape:
    if ids.dtype.base_dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{op_type}: segment_ids {ids.name} must be int32 or int64, got "
                        f"{ids.dtype.base_dtype.name} (data {data.name}).")
    if data.shape.ndims is None or ids.shape.ndims is None:
        return TensorShape(None)
    lead = data.shape[:ids.shape.ndims]
    if not lead.is_compatible_with(ids.shape):
        raise ValueError(f"{op_type}: segment_ids shape {ids.shape} ({ids.name}) must be a "
                         f"prefix of data shape {data.shape} ({data.name}).")
    n = constant_value(num)
    return TensorShape([None if n is None else int(n)]).concatenate(
        data.shape[ids.shape.ndims:])


@segment_sum_op.shape
def _(data: Tensor, ids: Tensor, num: Tensor) -> Any:
    return data.dtype.base_dtype, _segment_shape("UnsortedSegmentSum", data, ids, num)


@segment_sum_op.kernel("CPU")
def _(data: Any, ids: Any, num: Any) -> Any:
    n = int(num)
    ids = np.asarray(ids)
    data = np.asarray(data)
    out = np.zeros((n,) + data.shape[ids.ndim:], dtype=data.dtype)
    if ids.size and ids.max() >= n:
        raise errors.InvalidArgumentError(
            None, None, f"segment_ids contains {int(ids.max())}, which is not less than "
            f"num_segments = {n}; raise num_segments or fix the ids.")
    keep = ids >= 0  # negative ids are dropped, as TF does
    if not keep.all():
        data, ids = data[keep], ids[keep]
    np.add.at(out, ids, data)
    return out


@segment_sum_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    _, ids, num = op.inputs
    return [create_tensor("UnsortedSegmentSumGrad", [grad, ids, num]), None, None]


# grad[ids] with rows of negative (dropped) ids set to zero: the data gradient.
segment_grad_op = define_op("UnsortedSegmentSumGrad",
                            inputs=("grad", "segment_ids", "num_segments"))


@segment_grad_op.shape
def _(grad: Tensor, ids: Tensor, num: Tensor) -> Any:
    tail = grad.shape[1:] if grad.shape.ndims is not None else TensorShape(None)
    return grad.dtype.base_dtype, ids.shape.concatenate(tail)


@segment_grad_op.kernel("CPU")
def _(grad: Any, ids: Any, num: Any) -> Any:
    ids = np.asarray(ids)
    out = np.asarray(grad)[np.maximum(ids, 0)]
    if (ids < 0).any():
        out[ids < 0] = 0
    return out


@segment_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    _, ids, num = op.inputs
    return [create_tensor("UnsortedSegmentSum", [grad, ids, num]), None, None]


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    """`tf.unsorted_segment_sum`: out[i] = sum of data[j] with segment_ids[j] == i.

    Negative ids are dropped; ids >= num_segments fail at run time.

    Example:
        >>> tf.unsorted_segment_sum([1.0, 2.0, 3.0], [0, 1, 0], 2)   # [4.0, 2.0]
    """
    data = convert_to_tensor(data)
    ids = convert_to_tensor(segment_ids)
    num = convert_to_tensor(num_segments)
    return create_tensor("UnsortedSegmentSum", [data, ids, num], name=name)


def _indexed_slices_to_dense(slices: IndexedSlices, dtype: Any = None, name: str | None = None,
                             as_ref: bool = False) -> Tensor:
    """Densifies IndexedSlices: rows summed into a zero tensor of `dense_shape`.

    Registered as IndexedSlices' tensor conversion, so `tf.convert_to_tensor(slices)`
    (and any op taking one) works.
    """
    if slices.dense_shape is None:
        raise ValueError(f"Cannot convert IndexedSlices {slices.name} to a Tensor: it has no "
                         "dense_shape. Build it with IndexedSlices(values, indices, shape).")
    value = constant_value(slices.dense_shape)
    if value is not None:
        rows = convert_to_tensor(np.int32(np.ravel(value)[0]))
    else:
        rows = slices.dense_shape[0]  # dynamic: Tensor.__getitem__ from ops.array.slice_ops
    return create_tensor("UnsortedSegmentSum", [slices.values, slices.indices, rows],
                   name=name or "IndexedSlicesToDense")


register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_dense)


def reduce_logsumexp(input_tensor: Any, axis: Any = None, keepdims: bool | None = None,
                     name: str | None = None, reduction_indices: Any = None,
                     keep_dims: bool | None = None) -> Tensor:
    """`tf.reduce_logsumexp`: log(sum(exp(x))) over `axis`, computed without overflow.

    Example:
        >>> tf.reduce_logsumexp([1000.0, 1000.0])   # 1000.6931
    """
    if axis is None:
        axis = reduction_indices
    keep = bool(keepdims if keepdims is not None else keep_dims or False)
    x = convert_to_tensor(input_tensor)
    # Shifting by the max keeps exp() finite; the shift's gradient cancels exactly.
    m_keep = reduce_max(x, axis=axis, keepdims=True)
    total = reduce_sum(exp(subtract(x, m_keep)), axis=axis, keepdims=keep)
    m = m_keep if keep else reduce_max(x, axis=axis, keepdims=False)
    return add(log(total), m, name=name)


# ---- Tensor operators ----------------------------------------------------------------
# As TF 1.x: `x + y` opens the name scope "add" (the operator's name, not the op type),
# converts a plain operand inside it as "y" (or "x" when reflected) with the tensor's
# dtype, and names the op after the scope, so users find "add:0", "mul_1:0", "add/y".
def _operator(fn: Callable[..., Any], op_name: str) -> Any:
    def binary_op_wrapper(x: Tensor, y: Any) -> Tensor:
        with name_scope(None, op_name, [x, y]) as name:
            if not _cw._is_symbolic(y):
                y = convert_to_tensor(y, dtype=x.dtype.base_dtype, name="y")
            return fn(x, y, name=name)
    binary_op_wrapper.__name__ = f"__{op_name}__"
    return binary_op_wrapper


def _reflected(fn: Callable[..., Any], op_name: str) -> Any:
    def r_binary_op_wrapper(y: Tensor, x: Any) -> Tensor:
        with name_scope(None, op_name, [x, y]) as name:
            if not _cw._is_symbolic(x):
                x = convert_to_tensor(x, dtype=y.dtype.base_dtype, name="x")
            return fn(x, y, name=name)
    r_binary_op_wrapper.__name__ = f"__r{op_name}__"
    return r_binary_op_wrapper


def _install_operators() -> None:
    binary: dict[str, Callable[..., Any]] = {
        "add": add, "sub": subtract, "mul": multiply, "truediv": truediv,
        "floordiv": floordiv, "mod": mod, "pow": pow, "matmul": matmul,
        "and": logical_and, "or": logical_or, "xor": logical_xor}
    for op_name, fn in binary.items():
        Tensor._override_operator(f"__{op_name}__", _operator(fn, op_name))
        Tensor._override_operator(f"__r{op_name}__", _reflected(fn, op_name))
    # == and != are deliberately not overridden: TF1 tensors compare by identity.
    for op_name, fn in {"lt": less, "le": less_equal, "gt": greater,
                        "ge": greater_equal}.items():
        Tensor._override_operator(f"__{op_name}__", fn)
    Tensor._override_operator("__neg__", negative)
    Tensor._override_operator("__abs__", abs)
    Tensor._override_operator("__invert__", logical_not)


_install_operators()
