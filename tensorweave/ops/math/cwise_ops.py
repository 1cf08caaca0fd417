"""Element-wise math ops: arithmetic, unary functions, comparisons, logic, Cast.

Binary ops broadcast like NumPy; their gradients reduce back to each input's
shape with `sum_to_shape`. The public wrappers are re-exported by
`tensorweave.ops.math.math_ops` (import them from there).

This module holds the shared helpers (operand conversion, dtype checks,
broadcasting helper ops), Cast and Select; the binary ops live in
`binary_ops` and the unary ones in `unary_ops`, which build on it.

Example:
    >>> x = tf.placeholder(tf.float32, [None, 3])
    >>> y = tf.add(x, [1.0, 2.0, 3.0])        # broadcast over the batch
    >>> z = tf.maximum(y, 0.0) * 2             # operators are installed too
"""


from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.ops.op_author import REQUIRED, create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, broadcast_shapes

# Values that are plain data (converted to the other operand's dtype); anything else
# (Tensor, Variable, IndexedSlices...) is symbolic and keeps its own dtype.
_PLAIN = (np.ndarray, np.generic, int, float, complex, bool, list, tuple, str, bytes)


def _is_symbolic(v: Any) -> bool:
    return isinstance(v, Tensor) or not isinstance(v, _PLAIN)


def binary_inputs(x: Any, y: Any) -> tuple[Tensor, Tensor]:
    """Converts two operands; a plain value takes the dtype of the symbolic one.

    This is what makes `x * 2` stay float32 for a float32 `x` (TF1 behaviour). A plain
    value becomes a Const named after its argument ("x", "y"), as TF's op wrappers name
    it, inside whatever name scope the caller opened.
    """
    if _is_symbolic(x):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y) if _is_symbolic(y) else \
            convert_to_tensor(y, dtype=x.dtype.base_dtype, name="y")
    elif _is_symbolic(y):
        y = convert_to_tensor(y)
        x = convert_to_tensor(x, dtype=y.dtype.base_dtype, name="x")
    else:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, preferred_dtype=x.dtype, name="y")
    return x, y


def create_unary(op_type: str, x: Any, name: str | None, arg: str = "x") -> Tensor:
    """Builds `op_type(x)` named as TF's generated wrappers name it: a plain `x` becomes
    the Const "<op>/<arg>" ("Abs/x") inside the op's scope, which names the op."""
    if isinstance(x, Tensor):
        return create_tensor(op_type, [x], name=name)
    with name_scope(name, op_type, [x]) as scope:
        return create_tensor(op_type, [convert_to_tensor(x, name=arg)], name=scope)


def create_binary(op_type: str, x: Any, y: Any, name: str | None,
                  default_name: str | None = None) -> Tensor:
    """Builds `op_type(x, y)` named as TF's op wrappers name it.

    TF opens the name scope `name or default_name` (the op type by default), converts
    plain operands inside it (so `tf.add(x, 1)` makes "Add/y") and gives the op the
    scope's name. Two tensors need no scope: the op takes the unique name directly.
    """
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        return create_tensor(op_type, [x, y], name=name or default_name or op_type)
    with name_scope(name, default_name or op_type, [x, y]) as scope:
        x, y = binary_inputs(x, y)
        return create_tensor(op_type, [x, y], name=scope)


# ---- dtype classes and build-time checks ---------------------------------------------
def _is_float(d: _dt.DType) -> bool:
    return d.is_floating or d.is_complex


def _is_real_float(d: _dt.DType) -> bool:
    # TF registers Erf, Lgamma, Digamma, Atan2, Rint, Softsign... for real floats only.
    return d.is_floating


def _is_numeric(d: _dt.DType) -> bool:
    return d.is_numeric and not d.is_bool


def _is_int(d: _dt.DType) -> bool:
    return d.is_integer


def _is_bool(d: _dt.DType) -> bool:
    return d.is_bool


def _any(d: _dt.DType) -> bool:
    return True


def _numeric_or_string(d: _dt.DType) -> bool:
    return _is_numeric(d) or d == _dt.string


def _numeric_or_bool(d: _dt.DType) -> bool:
    return _is_numeric(d) or d.is_bool


_KIND_WORDS: dict[Callable[[_dt.DType], bool], str] = {
    _is_float: "a floating-point", _is_real_float: "a real floating-point",
    _is_numeric: "a numeric", _is_int: "an integer",
    _is_bool: "a bool", _numeric_or_string: "a numeric or string",
    _numeric_or_bool: "a numeric or bool", _any: "any"}


def check_dtype(op_type: str, t: Tensor, allowed: Callable[[_dt.DType], bool]) -> None:
    """TypeError naming `t` when its dtype is not allowed for `op_type`."""
    if not allowed(t.dtype.base_dtype):
        raise TypeError(f"{op_type} requires {_KIND_WORDS.get(allowed, 'another')} dtype, but "
                        f"input {t.name} has dtype {t.dtype.base_dtype.name} (shape {t.shape}). "
                        "Use tf.cast to convert it.")


def check_same_dtype(op_type: str, x: Tensor, y: Tensor) -> None:
    """TypeError naming both operands when their dtypes differ."""
    if x.dtype.base_dtype != y.dtype.base_dtype:
        raise TypeError(f"{op_type} requires both inputs to have the same dtype, but {x.name} "
                        f"is {x.dtype.base_dtype.name} with shape {x.shape} and {y.name} is "
                        f"{y.dtype.base_dtype.name} with shape {y.shape}. Use tf.cast on one.")


def broadcast_shape(op_type: str, x: Tensor, y: Tensor) -> TensorShape:
    """The NumPy-broadcast static shape; ValueError naming both operands otherwise."""
    try:
        return broadcast_shapes(x.shape, y.shape)
    except ValueError:
        a, b = x.shape.as_list(), y.shape.as_list()
        n = max(len(a), len(b))
        ones: list[int | None] = [1] * n
        a, b = ones[:n - len(a)] + a, ones[:n - len(b)] + b
        bad = next((p, q) for p, q in zip(reversed(a), reversed(b))
                   if p is not None and q is not None and p != q and 1 not in (p, q))
        raise ValueError(f"Dimensions must be equal, but are {bad[0]} and {bad[1]} for "
                         f"{op_type} with input shapes {x.shape}, {y.shape} ({x.name} and "
                         f"{y.name}); they cannot broadcast. Reshape or expand_dims one "
                         "operand so trailing dimensions match or are 1.") from None


# ---- broadcasting helper ops (used by every broadcasting gradient) --------------------
sum_to_shape_op = define_op("SumToShape", inputs=("grad", "like"))


@sum_to_shape_op.shape
def _(grad: Tensor, like: Tensor) -> Any:
    return grad.dtype.base_dtype, like.shape


@sum_to_shape_op.kernel("CPU")
def _(grad: Any, like: Any) -> Any:
    shape = np.shape(like)
    gshape = np.shape(grad)
    if gshape == shape:
        return grad
    grad = np.asarray(grad)
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                      if d == 1 and gshape[i + lead] != 1)
    return np.sum(grad, axis=axes, dtype=grad.dtype).reshape(shape)


@sum_to_shape_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [broadcast_to_like(grad, op.inputs[0]), None]


broadcast_like_op = define_op("BroadcastToLike", inputs=("input", "like"))


@broadcast_like_op.shape
def _(x: Tensor, like: Tensor) -> Any:
    broadcast_shape("BroadcastToLike", x, like)
    return x.dtype.base_dtype, like.shape


@broadcast_like_op.kernel("CPU")
def _(x: Any, like: Any) -> Any:
    return np.broadcast_to(x, np.shape(like))


@broadcast_like_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [sum_to_shape(grad, op.inputs[0]), None]


def sum_to_shape(grad: Any, like: Any) -> Tensor:
    """Sums a broadcast gradient back to the (possibly dynamic) shape of `like`.

    Every gradient of a broadcasting op ends with this. No op is added when both
    static shapes are fully known and equal.

    Example:
        >>> g = tf.ones([4, 3]); b = tf.zeros([3])
        >>> sum_to_shape(g, b).shape.as_list()
        [3]
    """
    if isinstance(grad, IndexedSlices):
        grad = convert_to_tensor(grad)
    if grad.shape.is_fully_defined() and like.shape.is_fully_defined() and \
            grad.shape == like.shape:
        return grad
    return create_tensor("SumToShape", [grad, like])


def broadcast_to_like(x: Tensor, like: Tensor) -> Tensor:
    """Broadcasts `x` to the run-time shape of `like` (gradients, ones/zeros)."""
    if x.shape.is_fully_defined() and like.shape.is_fully_defined() and x.shape == like.shape:
        return x
    return create_tensor("BroadcastToLike", [x, like])


def _filled_like(value: float, like: Tensor) -> Tensor:
    # A constant broadcast to `like`'s run-time shape: zeros/ones without ops.array
    # (which builds on this family).
    return create_tensor("BroadcastToLike", [convert_to_tensor(value, dtype=like.dtype.base_dtype),
                                       like])


def zeros_like_internal(like: Tensor) -> Tensor:
    return _filled_like(0, like)


def ones_like_internal(like: Tensor) -> Tensor:
    return _filled_like(1, like)


# ---- Cast ----------------------------------------------------------------------------
cast_op = define_op("Cast", inputs=("x",), attrs={"SrcT": REQUIRED, "DstT": REQUIRED})


@cast_op.shape
def _(x: Tensor, *, SrcT: _dt.DType, DstT: _dt.DType) -> Any:  # noqa: N803 - TF attr names
    return DstT, x.shape


@cast_op.kernel("CPU")
def _(x: Any, *, SrcT: _dt.DType, DstT: _dt.DType) -> Any:  # noqa: N803
    return np.asarray(x).astype(DstT.as_numpy_dtype)


@cast_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    src, dst = op.get_attr("SrcT"), op.get_attr("DstT")
    if _is_float(src) and _is_float(dst):
        return [cast(grad, src)]
    return [None]  # integer/bool casts are not differentiable


def cast(x: Any, dtype: Any, name: str | None = None) -> Any:
    """`tf.cast`: converts `x` (Tensor or IndexedSlices) to `dtype`.

    Returns `x` itself when it already has that dtype (as TF1).

    Example:
        >>> tf.cast(tf.constant([1.7, -1.7]), tf.int32)   # [1, -1]
    """
    dst = _dt.as_dtype(dtype).base_dtype
    if isinstance(x, IndexedSlices):
        return IndexedSlices(cast(x.values, dst, name=name), x.indices, x.dense_shape)
    if isinstance(x, Tensor) and x.dtype.base_dtype == dst:
        return x
    with name_scope(name, "Cast", [x]) as scope:  # as TF: a plain x is "Cast/x"
        x = convert_to_tensor(x, name="x")
        if x.dtype.base_dtype == dst:
            return x
        return create_tensor("Cast", [x], {"SrcT": x.dtype.base_dtype, "DstT": dst}, name=scope)


def to_float(x: Any, name: str = "ToFloat") -> Any:
    """`tf.to_float`: cast to float32."""
    return cast(x, _dt.float32, name=name)


def to_double(x: Any, name: str = "ToDouble") -> Any:
    """`tf.to_double`: cast to float64."""
    return cast(x, _dt.float64, name=name)


def to_int32(x: Any, name: str = "ToInt32") -> Any:
    """`tf.to_int32`: cast to int32."""
    return cast(x, _dt.int32, name=name)


def to_int64(x: Any, name: str = "ToInt64") -> Any:
    """`tf.to_int64`: cast to int64."""
    return cast(x, _dt.int64, name=name)


# ---- Select / Where (defined here because gradients above use select) ----------------
select_op = define_op("Select", inputs=("condition", "t", "e"))


@select_op.shape
def _(cond: Tensor, t: Tensor, e: Tensor) -> Any:
    check_dtype("Select", cond, _is_bool)
    check_same_dtype("Select", t, e)
    if not t.shape.is_compatible_with(e.shape):
        raise ValueError(f"Select needs x and y of the same shape, but {t.name} has shape "
                         f"{t.shape} and {e.name} has shape {e.shape}.")
    shape = t.shape.merge_with(e.shape)
    if cond.shape.ndims == 1 and shape.ndims is not None and shape.ndims > 1:
        if not TensorShape(cond.shape[:1]).is_compatible_with(shape[:1]):
            raise ValueError(f"Select with a vector condition needs len(condition) == "
                             f"x.shape[0], but {cond.name} has shape {cond.shape} and "
                             f"{t.name} has shape {shape}.")
    elif not cond.shape.is_compatible_with(shape):
        raise ValueError(f"Select needs condition of the same shape as x and y (or a vector "
                         f"over the first dimension), but {cond.name} has shape {cond.shape} "
                         f"and {t.name} has shape {shape}.")
    return t.dtype.base_dtype, shape


@select_op.kernel("CPU")
def _(cond: Any, t: Any, e: Any) -> Any:
    t = np.asarray(t)
    if cond.ndim == 1 and t.ndim > 1:  # a vector condition picks whole rows (TF1 Select)
        cond = cond.reshape((-1,) + (1,) * (t.ndim - 1))
    elif np.shape(cond) != t.shape:  # TF1 Select does not broadcast
        raise ValueError(f"Select: condition shape {np.shape(cond)} does not match x/y "
                         f"shape {t.shape}")
    return np.where(cond, t, e)


@select_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    cond = op.inputs[0]
    zeros = zeros_like_internal(grad)
    return [None, create_tensor("Select", [cond, grad, zeros]),
            create_tensor("Select", [cond, zeros, grad])]


def select(condition: Any, x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.select` (TF1 `Select`): x where condition is true, else y."""
    x, y = binary_inputs(x, y)
    cond = convert_to_tensor(condition, dtype=_dt.bool)
    return create_tensor("Select", [cond, x, y], name=name)

