"""Adam (Kingma & Ba), with TF1's bias correction folded into the step size.

Example:
    >>> train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.convert import constant
from tensorweave.ops.math.math_ops import cast
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.state import state_ops
from tensorweave.train.optimizer import Optimizer
from tensorweave.ops.training.training_ops import apply_op


class AdamOptimizer(Optimizer):
    """Adam with slots "m" ("<var>/Adam") and "v" ("<var>/Adam_1").

    `beta1_power` and `beta2_power` are non-slot variables colocated with the
    first variable (by name) and updated once per step, after all updates.

    Example:
        >>> opt = tf.train.AdamOptimizer(learning_rate=0.001, beta1=0.9, beta2=0.999)
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref or resource

    def __init__(self, learning_rate: Any = 0.001, beta1: Any = 0.9, beta2: Any = 0.999,
                 epsilon: Any = 1e-8, use_locking: bool = False, name: str = "Adam") -> None:
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _get_beta_accumulators(self, graph: Any = None) -> tuple[Any, Any]:
        g = graph or get_default_graph()
        return (self._get_non_slot_variable("beta1_power", g),
                self._get_non_slot_variable("beta2_power", g))

    def _create_slots(self, var_list: list[Any]) -> None:
        first = min(var_list, key=lambda v: v.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first)
        self._create_non_slot_variable(self._beta2, "beta2_power", first)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name + "_1")

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "learning_rate")
        self._beta1_t = self._hyper(self._beta1, "beta1")
        self._beta2_t = self._hyper(self._beta2, "beta2")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _inputs(self, var: Any) -> list[Any]:
        b1p, b2p = self._get_beta_accumulators(var.graph)
        return [self._slot_ref(var, "m"), self._slot_ref(var, "v"),
                b1p.value(), b2p.value(), self._lr_t, self._beta1_t, self._beta2_t,
                self._epsilon_t]

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        return apply_op("ApplyAdam", var, self._inputs(var) + [grad], self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        # TF1 semantics: m and v decay on every row; the gradient adds to its rows.
        return apply_op("SparseApplyAdam", var,
                        self._inputs(var) + [grad.values, grad.indices], self._use_locking)

    def _finish(self, update_ops: list[Any], name_scope: str) -> Operation:
        g = get_default_graph()
        b1p, b2p = self._get_beta_accumulators(g)
        with g.control_dependencies(update_ops), g.colocate_with(b1p.op):
            new = []
            for acc, beta in ((b1p, self._beta1), (b2p, self._beta2)):
                # A Python beta in the power's own dtype (exact in float64); a Tensor
                # beta (TF accepts one) cast to it.
                beta = self._call_if_callable(beta)
                beta_t = beta if isinstance(beta, Tensor) else \
                    constant(beta, dtype=acc.dtype.base_dtype)
                if beta_t.dtype.base_dtype != acc.dtype.base_dtype:
                    beta_t = cast(beta_t, acc.dtype.base_dtype)
                new.append(state_ops.assign(acc, acc.value() * beta_t,
                                            use_locking=self._use_locking).op)
        return self._group(list(update_ops) + new, name_scope)
