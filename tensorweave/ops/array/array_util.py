"""Helpers shared by the array op files: int constants, static shapes
from (partially) constant tensors, and constant folding for shape inference.

Example:
    >>> shape_from_tensor(tf.constant([2, -1]))   # TensorShape([2, None])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import (constant, constant_value, contains_tensor,
                                           convert_to_tensor, register_constant_folder)
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import (
    TensorShape, dimension_value, known_values, unknown_shape)


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
