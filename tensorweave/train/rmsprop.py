"""RMSProp: scale each step by a running RMS of recent gradients (optionally centered).

Example:
    >>> opt = tf.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.9, centered=True)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.train.optimizer import Optimizer
from tensorweave.ops.training.training_ops import apply_op


class RMSPropOptimizer(Optimizer):
    """RMSProp with slots "rms" (starts at ones), "momentum" and, if centered, "mg".

    Update (TF1): ms = decay*ms + (1-decay)*g^2;
    mom = momentum*mom + lr*g/sqrt(ms + epsilon); var -= mom. Centered uses
    ms - mg^2 in place of ms, where mg is a running mean of g.

    Example:
        >>> opt = tf.train.RMSPropOptimizer(learning_rate=0.001)
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref or resource

    def __init__(self, learning_rate: Any, decay: Any = 0.9, momentum: Any = 0.0,
                 epsilon: Any = 1e-10, use_locking: bool = False, centered: bool = False,
                 name: str = "RMSProp") -> None:
        super().__init__(use_locking, name)
        self._lr, self._decay, self._momentum = learning_rate, decay, momentum
        self._epsilon, self._centered = epsilon, bool(centered)

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            self._constant_slot(v, 1.0, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "learning_rate")
        self._decay_t = self._hyper(self._decay, "decay")
        self._momentum_t = self._hyper(self._momentum, "momentum")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _slots_of(self, var: Any) -> list[Any]:
        slots = [self._slot_ref(var, "rms"), self._slot_ref(var, "momentum")]
        if self._centered:
            slots.insert(0, self._slot_ref(var, "mg"))
        return slots

    def _hypers(self) -> list[Tensor]:
        return [self._lr_t, self._decay_t, self._momentum_t, self._epsilon_t]

    def _op_type(self, sparse: bool) -> str:
        base = "ApplyCenteredRMSProp" if self._centered else "ApplyRMSProp"
        return ("Sparse" + base) if sparse else base

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        return apply_op(self._op_type(False), var,
                        self._slots_of(var) + self._hypers() + [grad], self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        return apply_op(self._op_type(True), var,
                        self._slots_of(var) + self._hypers() + [grad.values, grad.indices],
                        self._use_locking)
