"""Plain gradient descent: `var -= learning_rate * grad`.

Example:
    >>> train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.train.optimizer import Optimizer
from tensorweave.ops.training.training_ops import apply_op


class GradientDescentOptimizer(Optimizer):
    """Updates each variable with one ApplyGradientDescent op on its device.

    Args:
        learning_rate: a float, a scalar Tensor, or a callable returning one.
        use_locking: serialize updates on the variable's lock.
        name: name scope of the update ops.

    Example:
        >>> opt = tf.train.GradientDescentOptimizer(learning_rate=0.1)
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref or resource

    def __init__(self, learning_rate: Any, use_locking: bool = False,
                 name: str = "GradientDescent") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        return apply_op("ApplyGradientDescent", var, [self._lr_t, grad], self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        # Only the gradient's rows change; duplicate indices are summed by the kernel.
        return apply_op("SparseApplyGradientDescent", var,
                        [self._lr_t, grad.values, grad.indices], self._use_locking)
