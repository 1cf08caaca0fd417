"""Momentum: `accum = momentum * accum + grad; var -= lr * accum` (or Nesterov).

Example:
    >>> opt = tf.train.MomentumOptimizer(0.01, momentum=0.9, use_nesterov=True)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.train.optimizer import Optimizer
from tensorweave.ops.training.training_ops import apply_op


class MomentumOptimizer(Optimizer):
    """Momentum SGD; its "momentum" slot "<var>/Momentum" lives with each variable.

    Args:
        learning_rate: float, scalar Tensor or callable.
        momentum: float, scalar Tensor or callable.
        use_nesterov: use Nesterov momentum.

    Example:
        >>> opt = tf.train.MomentumOptimizer(learning_rate=0.1, momentum=0.9)
        >>> opt.get_slot(w, "momentum")
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref or resource

    def __init__(self, learning_rate: Any, momentum: Any, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = bool(use_nesterov)

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._momentum_t = self._hyper(self._momentum, "momentum")

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        accum = self._slot_ref(var, "momentum")
        return apply_op("ApplyMomentum", var,
                        [accum, self._lr_t, grad, self._momentum_t],
                        self._use_locking, use_nesterov=self._use_nesterov)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        accum = self._slot_ref(var, "momentum")
        return apply_op("SparseApplyMomentum", var,
                        [accum, self._lr_t, grad.values, grad.indices,
                         self._momentum_t], self._use_locking,
                        use_nesterov=self._use_nesterov)
