"""Adadelta (Zeiler 2012): steps scaled by the ratio of running RMS of updates and
gradients.

Example:
    >>> opt = tf.train.AdadeltaOptimizer(learning_rate=1.0, rho=0.95, epsilon=1e-6)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.training import ps_training_ops as _ops  # noqa: F401 - registers
from tensorweave.ops.training.training_ops import apply_op
from tensorweave.train.optimizer import Optimizer


class AdadeltaOptimizer(Optimizer):
    """Adadelta with zero slots "accum" ("<var>/Adadelta") and "accum_update"
    ("<var>/Adadelta_1").

    Example:
        >>> train_op = tf.train.AdadeltaOptimizer(1.0).minimize(loss)
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref or resource

    def __init__(self, learning_rate: Any = 0.001, rho: Any = 0.95, epsilon: Any = 1e-8,
                 use_locking: bool = False, name: str = "Adadelta") -> None:
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "lr")
        self._rho_t = self._hyper(self._rho, "rho")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _update_inputs(self, var: Any) -> list[Any]:
        return [self._slot_ref(var, "accum"), self._slot_ref(var, "accum_update"),
                self._lr_t, self._rho_t, self._epsilon_t]

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        return apply_op("ApplyAdadelta", var, self._update_inputs(var) + [grad], self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        return apply_op("SparseApplyAdadelta", var,
                        self._update_inputs(var) + [grad.values, grad.indices], self._use_locking)
