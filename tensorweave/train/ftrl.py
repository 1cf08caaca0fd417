"""FTRL-proximal (McMahan et al., "Ad Click Prediction"), the wide part's optimizer.

Example:
    >>> opt = tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.training import ps_training_ops as _ops  # noqa: F401 - registers
from tensorweave.ops.training.training_ops import apply_op
from tensorweave.train.optimizer import Optimizer


def _check(value: Any, ok: bool, what: str, need: str) -> None:
    if not ok:
        raise ValueError(f"{what} {value} needs to be {need}.")


class FtrlOptimizer(Optimizer):
    """FTRL with slots "accum" ("<var>/Ftrl") and "linear" ("<var>/Ftrl_1").

    With `l2_shrinkage_regularization_strength` > 0 the updates use ApplyFtrlV2
    (the shrinkage joins the gradient fed to `linear`), otherwise ApplyFtrl: TF1's
    kernels, dense and sparse (rows of the IndexedSlices only).

    Args:
        learning_rate: float or scalar Tensor.
        learning_rate_power: <= 0; -0.5 is the usual FTRL schedule.
        initial_accumulator_value: >= 0, the accumulators' start.
        l1_regularization_strength: >= 0.
        l2_regularization_strength: >= 0.
        use_locking: lock the variable during the update.
        name: op name prefix and slot suffix.
        accum_name: slot op name of "accum" (default `name`).
        linear_name: slot op name of "linear" (default `name`).
        l2_shrinkage_regularization_strength: >= 0, an l2 on the weights that
            shrinks them rather than stabilizing the step.
        beta: if set, adds beta / (2 * learning_rate) to the l2 strength (TF 1.15+).

    Raises:
        ValueError: a hyperparameter out of its range (naming it).

    Example:
        >>> train_op = tf.train.FtrlOptimizer(0.05, l1_regularization_strength=1e-3) \\
        ...     .minimize(loss)
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref or resource

    def __init__(self, learning_rate: Any, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "Ftrl", accum_name: str | None = None,
                 linear_name: str | None = None,
                 l2_shrinkage_regularization_strength: float = 0.0,
                 beta: float | None = None) -> None:
        super().__init__(use_locking, name)
        _check(initial_accumulator_value, initial_accumulator_value >= 0.0,
               "initial_accumulator_value", "positive or zero")
        _check(learning_rate_power, learning_rate_power <= 0.0, "learning_rate_power",
               "less than or equal to 0.0")
        _check(l1_regularization_strength, l1_regularization_strength >= 0.0,
               "l1_regularization_strength", "positive or zero")
        _check(l2_regularization_strength, l2_regularization_strength >= 0.0,
               "l2_regularization_strength", "positive or zero")
        _check(l2_shrinkage_regularization_strength,
               l2_shrinkage_regularization_strength >= 0.0,
               "l2_shrinkage_regularization_strength", "positive or zero")
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name = accum_name
        self._linear_name = linear_name

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accum",
                                self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._l1_t = self._hyper(self._l1, "l1_regularization_strength")
        # TF 1.15's beta folds into l2 as beta / (2 * lr).
        l2 = self._hyper(self._l2, "l2_regularization_strength")
        self._l2_t = l2 + self._beta / (2.0 * self._lr_t) if self._beta else l2
        self._shrink_t = self._hyper(self._l2_shrinkage, "l2_shrinkage_regularization_strength")
        self._power_t = self._hyper(self._learning_rate_power, "learning_rate_power")

    def _hypers(self) -> list[Any]:
        head = [self._lr_t, self._l1_t, self._l2_t]
        return head + ([self._shrink_t] if self._l2_shrinkage > 0 else []) + [self._power_t]

    def _op(self, sparse: bool) -> str:
        base = "ApplyFtrlV2" if self._l2_shrinkage > 0 else "ApplyFtrl"
        return "Sparse" + base if sparse else base

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        slots = [self._slot_ref(var, "accum"), self._slot_ref(var, "linear")]
        return apply_op(self._op(False), var, slots + [grad] + self._hypers(),
                        self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        slots = [self._slot_ref(var, "accum"), self._slot_ref(var, "linear")]
        return apply_op(self._op(True), var,
                        slots + [grad.values, grad.indices] + self._hypers(),
                        self._use_locking)
