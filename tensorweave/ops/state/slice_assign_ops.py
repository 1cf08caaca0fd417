"""Assignment to a slice of a variable: `v[1:3].assign(x)`, `v[:, 0].assign(y)` (TF 1.x's
StridedSliceAssign, its stanza and wrapper).

The slice is any `v[...]` index a tensor takes (ints, slices with steps, `...`,
`tf.newaxis`, scalar int tensors); the value must have exactly the slice's shape, as
TF's kernel requires (no broadcasting).

Example:
    >>> v = tf.Variable(tf.zeros([3, 2]))
    >>> sess.run(v[1:].assign([[1.0, 2.0], [3.0, 4.0]]))   # the whole new value of v
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_colocated, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.slice_ops import _MASKS, _np_index
from tensorweave.ops.state.state_ops import _check_ref, _maybe_lock, _ref_of
from tensorweave.runtime.resource_mgr import VariableResource
from tensorweave.runtime.update_gate import gated_update

strided_slice_assign_op = define_op(
    "StridedSliceAssign", inputs=("&ref", "begin", "end", "strides", "value"),
    attrs={**{k: 0 for k in _MASKS}, "use_locking": False}, stateful=True)


@strided_slice_assign_op.shape
def _(ref: Tensor, begin: Tensor, end: Tensor, strides: Tensor, value: Tensor,
      **attrs: Any) -> Any:
    _check_ref(ref, "StridedSliceAssign")
    if value.dtype.base_dtype != ref.dtype.base_dtype:
        raise TypeError(f"StridedSliceAssign: value {value.name} has dtype "
                        f"{value.dtype.base_dtype.name}, but {ref.name} is "
                        f"{ref.dtype.base_dtype.name}")
    return ref.dtype, ref.shape


@strided_slice_assign_op.kernel("CPU")
def _(ref: VariableResource, begin: Any, end: Any, strides: Any, value: Any,
      **attrs: Any) -> Any:
    masks = {k: attrs[k] for k in _MASKS}
    with gated_update(ref), _maybe_lock(ref, attrs["use_locking"]):
        cur = ref.read()
        idx = _np_index(cur.ndim, begin, end, strides, masks)
        try:
            target_shape = np.shape(cur[idx])
        except IndexError as e:
            raise errors.InvalidArgumentError(
                None, None, f"StridedSliceAssign: index {idx} is invalid for variable "
                f"{ref.name} of shape {list(cur.shape)}: {e}") from None
        value = np.asarray(value, dtype=cur.dtype)
        if value.shape != target_shape:
            raise errors.UnimplementedError(
                None, None, f"sliced l-value shape {list(target_shape)} does not match "
                f"r-value shape {list(value.shape)}. Automatic broadcasting not yet "
                f"implemented. (variable {ref.name}, index {idx})")
        cur[idx] = value
    return ref


strided_slice_assign_op.no_gradient()


def strided_slice_assign(ref: Any, begin: Any, end: Any, strides: Any, value: Any,
                         name: str | None = None, begin_mask: int = 0, end_mask: int = 0,
                         ellipsis_mask: int = 0, new_axis_mask: int = 0,
                         shrink_axis_mask: int = 0, use_locking: bool = False) -> Tensor:
    """Assigns `value` to the strided slice of the variable `ref`; returns `ref`'s new
    value (its reference). `v[...].assign(value)` calls this.

    Example:
        >>> strided_slice_assign(v, [0], [1], [1], [[9.0, 9.0]])
    """
    r = _ref_of(ref)
    g = r.graph
    with g.as_default():
        ins = [convert_to_tensor(x, dtype=None) for x in (begin, end, strides)]
        val = convert_to_tensor(value, dtype=r.dtype.base_dtype)
    attrs = {"begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
             "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask,
             "use_locking": bool(use_locking)}
    return create_colocated("StridedSliceAssign", [r, *ins, val], attrs, name)


def attach_slice_assign(variable: Any, sliced: Tensor) -> Tensor:
    """Gives `sliced` (a StridedSlice of `variable`'s value) TF's `.assign(value, name)`."""
    op = sliced.op
    if op.type != "StridedSlice":
        return sliced
    masks = {k: int(op.get_attr(k)) for k in _MASKS}
    begin, end, strides = op.inputs[1], op.inputs[2], op.inputs[3]
    expected = sliced.shape

    def assign(value: Any, name: str | None = None) -> Tensor:
        val = convert_to_tensor(value, dtype=variable.dtype.base_dtype)
        if not val.shape.is_compatible_with(expected):
            raise ValueError(f"sliced l-value shape {expected} does not match r-value shape "
                             f"{val.shape} (assigning to a slice of {variable.name}). "
                             "Automatic broadcasting not yet implemented.")
        return strided_slice_assign(
            variable, begin, end, strides, val, name=name, begin_mask=masks["begin_mask"],
            end_mask=masks["end_mask"], ellipsis_mask=masks["ellipsis_mask"],
            new_axis_mask=masks["new_axis_mask"], shrink_axis_mask=masks["shrink_axis_mask"])
    sliced.assign = assign  # type: ignore[attr-defined]
    return sliced


__all__ = ["strided_slice_assign", "attach_slice_assign"]
