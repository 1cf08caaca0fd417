"""Adagrad: `accum += grad**2; var -= lr * grad / sqrt(accum)`.

Example:
    >>> opt = tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.1)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.train.optimizer import Optimizer
from tensorweave.ops.training.training_ops import apply_op


class AdagradOptimizer(Optimizer):
    """Adagrad; the "accumulator" slot "<var>/Adagrad" starts at initial_accumulator_value.

    Raises:
        ValueError: a non-positive initial_accumulator_value.

    Example:
        >>> opt = tf.train.AdagradOptimizer(learning_rate=0.5)
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref or resource

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 use_locking: bool = False, name: str = "Adagrad") -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator",
                                self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        acc = self._slot_ref(var, "accumulator")
        return apply_op("ApplyAdagrad", var, [acc, self._lr_t, grad],
                        self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        acc = self._slot_ref(var, "accumulator")
        return apply_op("SparseApplyAdagrad", var,
                        [acc, self._lr_t, grad.values, grad.indices],
                        self._use_locking)
