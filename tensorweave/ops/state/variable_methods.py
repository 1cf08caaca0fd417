"""A variable's sparse update methods beyond scatter_add/sub/update, as TF 1.x's
Variable has them: `v.scatter_mul(tf.IndexedSlices(...))`, `scatter_div`,
`scatter_max`, `scatter_min`, `batch_scatter_update`, and `v.scatter_nd_update(
indices, updates)`, `scatter_nd_add`, `scatter_nd_sub`.

Example:
    >>> v.scatter_max(tf.IndexedSlices(tf.constant([5.0]), tf.constant([0])))
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.tensor import Tensor
from tensorweave.ops.state import scatter_nd_ops, scatter_ops


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


__all__ = ["install_update_methods"]
