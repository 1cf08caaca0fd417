"""The ops every graph needs: Const, Placeholder(WithDefault), Identity, NoOp.

It also holds the helpers every op family uses for int arguments and static shapes
(`_int_tensor`, `kernel_int`, `shape_from_tensor`, `_fold_if_known`, constant
folding for shape inference).

Example:
    >>> x = tf.placeholder(tf.float32, shape=[None, 3], name="x")
    >>> y = tf.identity(x)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import (
    constant, constant_value, contains_tensor, convert_to_tensor, register_constant_folder)
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import (
    TensorShape, as_shape, dimension_value, known_values, plain_dims, unknown_shape)
from tensorweave.ops.op_author import REQUIRED, create_op, create_tensor, define_op
from tensorweave.runtime.inline import CONST, FORWARD, NOTHING, inline_kernel

# ---- shared helpers of the family (formerly array_util.py) ----
_FOLD_LIMIT = 1 << 16  # never materialize big constants just to infer shapes


def _int_tensor(value: Any, name: str = "Const") -> Tensor:
    """An int32 (or int64, if given so) tensor; lists holding tensors are stacked."""
    if isinstance(value, Tensor):
        if not value.dtype.base_dtype.is_integer:
            raise TypeError(f"Expected an int32/int64 tensor for a shape or index, got "
                            f"{value.name} of dtype {value.dtype.name}; cast it first.")
        return convert_to_tensor(value)
    if contains_tensor(value):
        # Packed by convert_to_tensor (TF's auto-packing and its dtype rules), then checked.
        return _int_tensor(convert_to_tensor(value, name="packed" if name == "Const" else name))
    value = known_values(value)  # Dimensions and TensorShapes give their sizes
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" and arr.size:
        raise TypeError(f"Expected integers for a shape or index, got {value!r}.")
    # int64 when asked for (an int64 array) or when a size needs it (TF's int64 shapes).
    wide = arr.size > 0 and (int(arr.max()) > 2**31 - 1 or int(arr.min()) < -2**31)
    if wide and (int(arr.max()) > 2**63 - 1 or int(arr.min()) < -2**63):
        raise ValueError(f"{value!r} holds a value past int64: TensorFlow shapes and indices "
                         "are signed 64-bit (a dimension is at most 2**63 - 1).")
    dtype = _dt.int64 if wide or (arr.dtype == np.int64 and isinstance(value, np.ndarray)) \
        else _dt.int32
    return constant(arr.astype(dtype.as_numpy_dtype), dtype=dtype, name=name)


def _const_int(t: Tensor) -> int | None:
    v = constant_value(t)
    return None if v is None else int(np.asarray(v).reshape(()))


def kernel_int(value: Any) -> int:
    """A kernel's scalar (or one-element) integer input as an int: `int()` of a 0-d
    value directly (np.asarray(v).reshape(()) cost three times as much, on ops that
    run by the dozen a step)."""
    if getattr(value, "ndim", 0) == 0:
        return int(value)
    return int(np.asarray(value).reshape(()))


def _normalize_axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{what}: axis {axis} is out of range for a tensor of rank {rank}; "
                         f"it must be in [{-rank}, {rank}).")
    return axis % rank if rank else axis


def shape_from_tensor(t: Tensor) -> TensorShape:
    """The (partially) known value of a 1-D shape tensor, as a TensorShape.

    Sees through Const, Shape, Pack (per element), ConcatV2 and Fill so that
    `tf.reshape(x, tf.stack([tf.shape(x)[0], 4]))` keeps the 4.
    """
    v = constant_value(t)
    if v is not None:
        dims = [int(d) for d in np.asarray(v).reshape(-1)]
        bad = [d for d in dims if d < -1]
        if bad:  # -1 is "unknown"; TensorShape names a size past int64
            raise ValueError(f"Invalid value in tensor used for shape: {bad[0]} (in {dims} "
                             f"from {t.name}); sizes are >= 0, or -1 for unknown.")
        return TensorShape(dims)
    op = t.op
    if op.type == "Shape":
        return op.inputs[0].shape
    if op.type == "Pack":
        return TensorShape([_partial_scalar(x) for x in op.inputs])
    if op.type == "ConcatV2":
        out = TensorShape([])
        for part in op.inputs[:-1]:
            out = out.concatenate(shape_from_tensor(part))
        return out
    n = dimension_value(t.shape[0]) if t.shape.ndims == 1 else None
    return unknown_shape(n)


def _partial_scalar(t: Tensor) -> int | None:
    v = constant_value(t)
    if v is not None:
        d = int(np.asarray(v).reshape(()))
        return None if d < 0 else d
    # tf.shape(x)[i] with x's dim i known
    if t.op.type == "StridedSlice" and t.op.inputs[0].op.type == "Shape" \
            and t.op.get_attr("shrink_axis_mask") == 1:
        begin = constant_value(t.op.inputs[1])
        src = t.op.inputs[0].op.inputs[0].shape
        if begin is not None and src.ndims is not None and -src.ndims <= begin[0] < src.ndims:
            return dimension_value(src[int(begin[0])])
    return None


def _fold_if_known(op_type: str) -> None:
    """Const-like ops: fold when every input has a constant value (and the result is small)."""
    def fold(op: Operation, index: int) -> np.ndarray | None:
        n = op.outputs[index].shape.num_elements()
        if n is None or n > _FOLD_LIMIT:
            return None
        vals: list[Any] = []
        for spec, t in _grouped_inputs(op):
            if spec:
                vs = [constant_value(x) for x in t]
                if any(v is None for v in vs):
                    return None
                vals.append(vs)
            else:
                v = constant_value(t)
                if v is None:
                    return None
                vals.append(v)
        attrs = {k: op.get_attr(k) for k in op.op_def.attrs}
        try:
            out = op.op_def.kernels["CPU"].fn(*vals, **attrs)
        except Exception:  # noqa: BLE001 - an invalid value is reported at run time instead
            return None
        return out[index] if isinstance(out, (list, tuple)) else out
    register_constant_folder(op_type, fold)


def _grouped_inputs(op: Operation) -> list[tuple[bool, Any]]:
    flat = list(op.inputs)
    out: list[tuple[bool, Any]] = []
    for spec in op.op_def.inputs:
        if spec.is_list:
            n = op.get_attr(op.op_def.list_attr(spec.name))
            out.append((True, flat[:n]))
            flat = flat[n:]
        else:
            out.append((False, flat.pop(0)))
    return out

# ---- Const -----------------------------------------------------------------------
const_op = define_op("Const", attrs={"value": REQUIRED, "dtype": REQUIRED})


@const_op.shape
def _(*, value: np.ndarray, dtype: _dt.DType) -> Any:
    value.flags.writeable = False  # a fetched constant is copied, never aliased
    return dtype, TensorShape(value.shape)


@const_op.kernel("CPU")
@inline_kernel(CONST)  # compiled plans write it as an expression
def _(*, value: np.ndarray, dtype: _dt.DType) -> np.ndarray:
    return value


const_op.no_gradient()
register_constant_folder("Const", lambda op, i: op.get_attr("value"))

# ---- Placeholder -----------------------------------------------------------------
placeholder_op = define_op("Placeholder", attrs={"dtype": REQUIRED, "shape": None})


@placeholder_op.shape
def _(*, dtype: _dt.DType, shape: Any) -> Any:
    return dtype, as_shape(shape)


@placeholder_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, dtype: _dt.DType, shape: Any) -> Any:
    raise errors.InvalidArgumentError(
        None, ctx.op, f"You must feed a value for placeholder tensor '{ctx.name}' with dtype "
        f"{dtype.name}" + (f" and shape {as_shape(shape)}" if shape is not None else "") +
        " (pass it in feed_dict).")


placeholder_op.no_gradient()


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """`tf.placeholder`: a value that must be fed at run time.

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 784])
    """
    dt = _dt.as_dtype(dtype)
    shp = None if shape is None else plain_dims(shape)
    return create_tensor("Placeholder", [], {"dtype": dt, "shape": shp},
                         name=name or "Placeholder")


with_default_op = define_op("PlaceholderWithDefault", inputs=("input",),
                            attrs={"shape": None})


@with_default_op.shape
def _(inp: Tensor, *, shape: Any) -> Any:
    return inp.dtype, as_shape(shape) if shape is not None else inp.shape


@with_default_op.kernel("CPU")
@inline_kernel(FORWARD)  # compiled plans write it as an expression
def _(inp: Any, *, shape: Any) -> Any:
    return inp


with_default_op.no_gradient()


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """`tf.placeholder_with_default`: `input` unless fed."""
    t = convert_to_tensor(input)
    return create_tensor(
        "PlaceholderWithDefault", [t], {"shape": plain_dims(shape)},
        name=name or "PlaceholderWithDefault")


# ---- Identity --------------------------------------------------------------------
identity_op = define_op("Identity", inputs=("input",))


@identity_op.shape
def _(inp: Tensor) -> Any:
    return inp.dtype.base_dtype, inp.shape


@identity_op.kernel("CPU")
@inline_kernel(FORWARD)  # compiled plans write it as an expression
def _(inp: Any) -> Any:
    return inp


@identity_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [grad]


def identity(input: Any, name: str | None = None) -> Tensor:
    """`tf.identity`: the same value (a snapshot when `input` is a variable)."""
    if isinstance(input, (list, tuple, int, float, bool, str, bytes, np.ndarray, np.generic)):
        # A plain value is "Identity/input" inside the op's scope, as TF names it.
        with name_scope(name, "Identity", [input]) as scope:
            return create_tensor(
                "Identity", [convert_to_tensor(input, name="input")], name=scope)
    t = convert_to_tensor(input, as_ref=True)
    return create_tensor("Identity", [t], name=name or "Identity")


# ---- NoOp ------------------------------------------------------------------------
no_op_def = define_op("NoOp")


@no_op_def.shape
def _() -> list:
    return []


@no_op_def.kernel("CPU")
@inline_kernel(NOTHING)  # compiled plans write it as an expression
def _() -> None:
    return None


no_op_def.no_gradient()


def no_op(name: str | None = None) -> Operation:
    """`tf.no_op`: does nothing; useful as a target carrying control dependencies."""
    return create_op("NoOp", [], name=name or "NoOp")
