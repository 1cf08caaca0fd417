"""Slot variables: per-variable optimizer state ("<var>/Momentum", "<var>/Adam_1").

A slot is a non-trainable variable shaped like its primary (a variable or a
tensor), made with `tf.get_variable` in the variable scope named
"<primary op name>/<name>" (made unique when taken, "<...>/<name>_1"), so an
enclosing variable scope prefixes it, as in TF 1.x. It is colocated with its
primary (same ps task), is a ResourceVariable when the primary is one, and a
slot of a partitioned variable's part is that part's slice of the full slot
("emb/Adagrad", as the checkpoint names it). A primary whose shape is only
known at run time gets a slot of the same run-time shape.

Example:
    >>> from tensorweave.train import slot_creator
    >>> m = slot_creator.create_zeros_slot(w, "Momentum")   # "w/Momentum"
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.ops.array.fill_ops import zeros
from tensorweave.ops.array.shape_ops import shape as _shape_of
from tensorweave.state import init_ops
from tensorweave.state import variable_scope as _vs
from tensorweave.state.partitioned_variables import SaveSliceInfo
from tensorweave.state.resource_variables import is_resource_variable
from tensorweave.state.variables import Variable


def _primary_op(primary: Any) -> Any:
    op = getattr(primary, "op", None)
    if op is None:
        raise TypeError(f"A slot's primary must be a Variable or a Tensor, got {primary!r}.")
    return op


def _create_slot_var(primary: Any, val: Any, validate_shape: bool, shape: Any,
                     dtype: Any) -> Variable:
    scope = _vs.get_variable_scope()
    # A slot is never partitioned itself: a part's slot is that part's slice (below).
    partitioner = scope.partitioner
    scope.set_partitioner(None)
    try:
        if is_resource_variable(primary):
            use_resource: Any = True
        elif isinstance(primary, Variable):
            use_resource = False
        else:
            use_resource = None
        slot = scope.get_variable("", shape=shape if callable(val) else None, dtype=dtype,
                                  initializer=val, trainable=False,
                                  use_resource=use_resource, validate_shape=validate_shape)
    finally:
        scope.set_partitioner(partitioner)
    info = getattr(primary, "_save_slice_info", None)
    rank = slot.get_shape().ndims
    # As TF: a scalar slot of a part (AdamAsync's beta powers) is no slice of anything,
    # saved under its own name; a slot of lower rank slices the leading dimensions.
    if isinstance(primary, Variable) and info is not None and rank != 0:
        # "emb/part_0/Adagrad" is the slice of "emb/Adagrad" that part_0 is of "emb".
        prefix = primary.op.name + "/"
        real_name = slot.op.name[len(prefix):] if slot.op.name.startswith(prefix) \
            else slot.op.name.rsplit("/", 1)[-1]
        n = len(info.full_shape) if rank is None else rank
        slot._save_slice_info = SaveSliceInfo(f"{info.full_name}/{real_name}",
                                              list(info.full_shape)[:n],
                                              list(info.var_offset)[:n],
                                              list(info.var_shape)[:n])
    return slot


def _in_slot_scope(primary: Any, name: str, colocate_with_primary: bool, val: Any,
                   validate_shape: bool, shape: Any, dtype: Any) -> Variable:
    op = _primary_op(primary)
    g = op.graph
    with g.as_default(), _vs.variable_scope(None, default_name=f"{op.name}/{name}"):
        if colocate_with_primary:
            with g.colocate_with(op):
                return _create_slot_var(primary, val, validate_shape, shape, dtype)
        return _create_slot_var(primary, val, validate_shape, shape, dtype)


def create_slot(primary: Any, val: Any, name: str,
                colocate_with_primary: bool = True) -> Variable:
    """A slot of `primary` whose initial value is the tensor `val` (and its dtype).

    Args:
        primary: the Variable or Tensor the slot belongs to.
        val: the slot's initial value (a Tensor); an unknown shape makes a slot
            whose shape is only known at run time.
        name: the slot's name under the primary ("<primary>/<name>").
        colocate_with_primary: place the slot on the primary's device.

    Returns:
        The slot Variable.

    Example:
        >>> slot = create_slot(v, v.initialized_value(), name="slot")  # "v/slot"
    """
    val = convert_to_tensor(val)
    validate_shape = val.get_shape().is_fully_defined()
    return _in_slot_scope(primary, name, colocate_with_primary, val, validate_shape,
                          None, None)


def create_slot_with_initializer(primary: Any, initializer: Any, shape: Any, dtype: Any,
                                 name: str, colocate_with_primary: bool = True) -> Variable:
    """A slot of `primary` made by `initializer(shape, dtype)`.

    Args:
        primary: the Variable or Tensor the slot belongs to.
        initializer: an initializer (`tf.zeros_initializer()`), or, for a shape not
            fully defined, a callable of no arguments returning the initial value.
        shape: the slot's shape (a TensorShape or list).
        dtype: the slot's dtype.
        name: the slot's name under the primary.
        colocate_with_primary: place the slot on the primary's device.

    Returns:
        The slot Variable.

    Example:
        >>> acc = create_slot_with_initializer(
        ...     w, tf.constant_initializer(0.1), w.get_shape(), tf.float32, "Adagrad")
    """
    shape = as_shape(shape)
    return _in_slot_scope(primary, name, colocate_with_primary, initializer,
                          shape.is_fully_defined(), shape, _dt.as_dtype(dtype).base_dtype)


def create_zeros_slot(primary: Any, name: str, dtype: Any = None,
                      colocate_with_primary: bool = True) -> Variable:
    """A slot of zeros shaped like `primary` (at run time, if its shape is not static).

    Args:
        primary: the Variable or Tensor the slot belongs to.
        name: the slot's name under the primary.
        dtype: the slot's dtype (default: the primary's).
        colocate_with_primary: place the slot on the primary's device.

    Returns:
        The slot Variable.

    Example:
        >>> m = create_zeros_slot(w, "Momentum")
    """
    g = _primary_op(primary).graph
    dtype = _dt.as_dtype(dtype if dtype is not None else primary.dtype).base_dtype
    slot_shape: TensorShape = primary.get_shape()
    if slot_shape.is_fully_defined():
        return create_slot_with_initializer(primary, init_ops.zeros_initializer(),
                                            slot_shape, dtype, name,
                                            colocate_with_primary=colocate_with_primary)
    with g.as_default():
        # The value, not the variable: its initializer may run before the primary's.
        source = primary.initialized_value() if isinstance(primary, Variable) else primary
        val = zeros(_shape_of(source), dtype=dtype)
    return create_slot(primary, val, name, colocate_with_primary=colocate_with_primary)


__all__ = ["create_slot", "create_slot_with_initializer", "create_zeros_slot"]
