"""Proximal optimizers (FOBOS, Duchi & Singer): a gradient or Adagrad step, then the
l1/l2 proximal map, which sets small weights exactly to zero.

Example:
    >>> opt = tf.train.ProximalAdagradOptimizer(0.1, l1_regularization_strength=0.001)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.training import ps_training_ops as _ops  # noqa: F401 - registers
from tensorweave.ops.training.training_ops import apply_op
from tensorweave.train.optimizer import Optimizer


class ProximalGradientDescentOptimizer(Optimizer):
    """`var = prox(var - lr * grad)` with soft-threshold lr*l1 and scale 1 / (1 + lr*l2).

    Example:
        >>> opt = tf.train.ProximalGradientDescentOptimizer(
        ...     0.5, l1_regularization_strength=0.01)
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref or resource

    def __init__(self, learning_rate: Any, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._l1_t = self._hyper(self._l1, "l1_regularization_strength")
        self._l2_t = self._hyper(self._l2, "l2_regularization_strength")

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        return apply_op("ApplyProximalGradientDescent", var,
                        [self._lr_t, self._l1_t, self._l2_t, grad], self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        return apply_op("SparseApplyProximalGradientDescent", var,
                        [self._lr_t, self._l1_t, self._l2_t, grad.values, grad.indices],
                        self._use_locking)


class ProximalAdagradOptimizer(Optimizer):
    """Adagrad's step (slot "accumulator", "<var>/ProximalAdagrad"), then the proximal map
    with step lr / sqrt(accum).

    Raises:
        ValueError: a non-positive initial_accumulator_value.

    Example:
        >>> opt = tf.train.ProximalAdagradOptimizer(0.1, l2_regularization_strength=0.01)
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref or resource

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "ProximalAdagrad") -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator",
                                self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._l1_t = self._hyper(self._l1, "l1_regularization_strength")
        self._l2_t = self._hyper(self._l2, "l2_regularization_strength")

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        return apply_op("ApplyProximalAdagrad", var,
                        [self._slot_ref(var, "accumulator"), self._lr_t, self._l1_t,
                         self._l2_t, grad], self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        return apply_op("SparseApplyProximalAdagrad", var,
                        [self._slot_ref(var, "accumulator"), self._lr_t, self._l1_t,
                         self._l2_t, grad.values, grad.indices], self._use_locking)
