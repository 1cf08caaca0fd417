"""A variable's operators (`v + 1`, `v[0]`, `v[1:].assign(x)`, all on its current value)
and its sparse update methods beyond scatter_add/sub/update, as TF 1.x's Variable has
them: `v.scatter_mul(tf.IndexedSlices(...))`, `scatter_div`,
`scatter_max`, `scatter_min`, `batch_scatter_update`, and `v.scatter_nd_update(
indices, updates)`, `scatter_nd_add`, `scatter_nd_sub`.

Example:
    >>> v.scatter_max(tf.IndexedSlices(tf.constant([5.0]), tf.constant([0])))
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.state import scatter_nd_ops, scatter_ops
from tensorweave.ops.state.slice_assign_ops import attach_slice_assign

_OPERATORS = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
              "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
              "__abs__", "__invert__", "__and__", "__rand__", "__or__", "__ror__",
              "__xor__", "__rxor__", "__lt__", "__le__", "__gt__", "__ge__")


def current_read(v: Any) -> Tensor:
    """The value to use here: a fresh read inside control dependencies, else the snapshot.

    TF 1.x reads alias the variable's buffer, so `with tf.control_dependencies([update]):
    f(var)` sees the update; our reads copy, so such a read must be its own op, ordered
    after the dependencies (as TF 2's resource variables do).
    """
    g = get_default_graph()
    if g is v.graph and g._stack("control_stack"):
        return v.read_value()
    return v.value()


def _delegate(op_name: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any) -> Any:
        fn = getattr(Tensor, op_name, None)
        if fn is None:
            raise TypeError(f"Operator {op_name} is not available on tensors yet (is "
                            "tensorweave.ops.math.math_ops imported?)")
        return fn(current_read(self), *args)
    method.__name__ = op_name
    return method


def _getitem(self: Any, key: Any) -> Tensor:
    """`v[key]`: the slice of the value, with TF's `.assign(value)` onto that slice."""
    return attach_slice_assign(self, _delegate("__getitem__")(self, key))


def install_operators(cls: type) -> None:
    """Gives the variable class `cls` Python's operators, applied to its current value."""
    for op in _OPERATORS:
        setattr(cls, op, _delegate(op))
    setattr(cls, "__getitem__", _getitem)  # noqa: B010


def _sparse_update(fn: Callable[..., Tensor], locking: bool) -> Callable[..., Tensor]:
    def method(self: Any, sparse_delta: Any, use_locking: bool = locking,
               name: str | None = None) -> Tensor:
        return fn(self._variable, sparse_delta.indices, sparse_delta.values, use_locking,
                  name)
    method.__name__ = fn.__name__
    method.__doc__ = f"`{fn.__name__}` of this variable by an IndexedSlices `sparse_delta`."
    return method


def _nd_update(fn: Callable[..., Tensor], locking: bool) -> Callable[..., Tensor]:
    def method(self: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
        return fn(self._variable, indices, updates, locking, name)
    method.__name__ = fn.__name__
    method.__doc__ = f"`tf.{fn.__name__}` of this variable (N-d `indices`)."
    return method


def install_update_methods(cls: type) -> None:
    """Gives the variable class `cls` TF 1.x's other sparse update methods, with the
    `use_locking` defaults of TF 1.x's Variable methods."""
    for fn, locking in ((scatter_ops.scatter_mul, False), (scatter_ops.scatter_div, False),
                        (scatter_ops.scatter_max, False), (scatter_ops.scatter_min, False),
                        (scatter_nd_ops.batch_scatter_update, False)):
        setattr(cls, fn.__name__, _sparse_update(fn, locking))
    # TF 1.x's methods lock every N-d update (the functions default otherwise).
    for fn, locking in ((scatter_nd_ops.scatter_nd_update, True),
                        (scatter_nd_ops.scatter_nd_add, True),
                        (scatter_nd_ops.scatter_nd_sub, True)):
        setattr(cls, fn.__name__, _nd_update(fn, locking))


__all__ = ["current_read", "install_operators", "install_update_methods"]
