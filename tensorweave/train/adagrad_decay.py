"""DeepRec's AdagradDecayOptimizer: Adagrad whose accumulators are discounted per period.

Adagrad's accumulator only grows, so after months of incremental training new data
barely moves the model. AdagradDecay multiplies the accumulator by
`accumulator_decay_rate` once every `accumulator_decay_step` global steps (a period of
samples, not every step: samples of one period weigh the same), never below its
starting value `initial_accumulator_value`. Each variable counts the decays it took
(slot "accumulator_decay_power"; per row for sparse updates, so a row not seen for
several periods catches up one decay per update). The math is in
`ops/training/deeprec_training_ops.py` (DeepRec's docs/docs_en/AdagradDecay-Optimizer.md,
tensorflow/python/training/adagrad_decay.py and its kernels).

Example:
    >>> step = tf.train.get_or_create_global_step()
    >>> opt = tf.train.AdagradDecayOptimizer(0.1, global_step=step)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array import core_ops
from tensorweave.ops.array.fill_ops import zeros
from tensorweave.ops.array.shape_ops import shape as shape_of
from tensorweave.ops.math.math_ops import cast
from tensorweave.ops.training import deeprec_training_ops as _ops  # noqa: F401 - registers
from tensorweave.ops.training.training_ops import apply_op
from tensorweave.state import init_ops
from tensorweave.state.variables import Variable
from tensorweave.train.optimizer import Optimizer

__all__ = ["AdagradDecayOptimizer"]


class AdagradDecayOptimizer(Optimizer):
    """Adagrad with accumulator decay (DeepRec's `tf.train.AdagradDecayOptimizer`).

    At an update whose global step (its value when the step started, plus one) has
    `global_step // accumulator_decay_step` above the decays taken so far:
    `accum = max(accum * accumulator_decay_rate, initial_accumulator_value)`, one decay
    more; then `accum += g^2` and `var -= learning_rate * g / sqrt(accum)`.

    Slots: "accumulator" ("<var>/AdagradDecay", starting at initial_accumulator_value)
    and "accumulator_decay_power" ("<var>/AdagradDecay_1", zeros of the global step's
    dtype shaped like the variable, as DeepRec makes it; an EmbeddingVariable's is a
    table over its ids, one count per id).

    Args:
        learning_rate: a float, a Tensor or a callable returning one.
        global_step: the global step variable (or an integer Tensor), read at each update.
        initial_accumulator_value: the accumulators' start and floor; must be positive.
        accumulator_decay_step: global steps per decay period; must be positive.
        accumulator_decay_rate: the discount of each period, in (0, 1).
        use_locking: serialize each update on its variable's lock.
        name: name scope of the update ops and suffix of the slots.

    Raises:
        ValueError: global_step missing, or a hyperparameter out of its range (naming it).
        TypeError: a global_step that is not an integer variable or tensor.

    Example:
        >>> step = tf.train.get_or_create_global_step()
        >>> opt = tf.train.AdagradDecayOptimizer(0.1, step, accumulator_decay_step=1000)
        >>> train_op = opt.minimize(loss, global_step=step)
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref, resource or embedding

    def __init__(self, learning_rate: Any, global_step: Any,
                 initial_accumulator_value: float = 0.1,
                 accumulator_decay_step: int = 100000, accumulator_decay_rate: float = 0.9,
                 use_locking: bool = False, name: str = "AdagradDecay") -> None:
        _check_global_step(global_step)
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"AdagradDecayOptimizer: initial_accumulator_value must be "
                             f"positive, got {initial_accumulator_value}")
        if accumulator_decay_step <= 0:
            raise ValueError(f"AdagradDecayOptimizer: accumulator_decay_step must be a "
                             f"positive number of global steps, got {accumulator_decay_step}")
        if not 0.0 < accumulator_decay_rate < 1.0:
            raise ValueError(f"AdagradDecayOptimizer: accumulator_decay_rate must be in "
                             f"(0.0, 1.0), got {accumulator_decay_rate}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._global_step = global_step
        self._initial_accumulator_value = initial_accumulator_value
        self._accumulator_decay_step = accumulator_decay_step
        self._accumulator_decay_rate = accumulator_decay_rate

    def _create_slots(self, var_list: list[Any]) -> None:
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator",
                                self._name)
            self._decay_power_slot(v)

    def _decay_power_slot(self, var: Any) -> None:
        """Zeros of the global step's dtype shaped like `var` (at run time if its static
        shape is partial); a table over an EmbeddingVariable's ids, of its dtype."""
        if hasattr(var, "_embedding_slot"):
            self._constant_slot(var, 0.0, "accumulator_decay_power", self._name)
            return
        dtype = self._global_step.dtype.base_dtype
        shape = var.get_shape()
        if shape.is_fully_defined():
            init: Any = init_ops.zeros_initializer(dtype=dtype)
        else:
            def init() -> Tensor:
                source = var.initialized_value() if isinstance(var, Variable) else var
                return zeros(shape_of(source), dtype=dtype)
        self._get_or_make_slot_with_initializer(var, init, shape, dtype,
                                                "accumulator_decay_power", self._name)

    def _prepare(self) -> None:
        step = convert_to_tensor(self._global_step)
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._decay_step_t = cast(convert_to_tensor(self._accumulator_decay_step,
                                                    name="accumulator_decay_step"),
                                  step.dtype.base_dtype)
        self._decay_rate_t = self._hyper(self._accumulator_decay_rate,
                                         "accumulator_decay_rate")
        self._baseline_t = self._hyper(self._initial_accumulator_value,
                                       "accumulator_baseline")
        # Read once per step where the training op is built (a worker), not once per
        # variable on the ps holding the step; "+ 1": the step this update belongs to.
        self._step_t = core_ops.identity(step) + 1

    def _inputs(self, var: Any) -> list[Any]:
        return [self._slot_ref(var, "accumulator"),
                self._slot_ref(var, "accumulator_decay_power"), self._lr_t,
                self._decay_step_t, self._decay_rate_t, self._baseline_t, self._step_t]

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        return apply_op("ApplyAdagradDecay", var, self._inputs(var) + [grad],
                        self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        # An EmbeddingVariable keeps each id's count in its own row (rows follow ids).
        return apply_op("SparseApplyAdagradDecay", var,
                        self._inputs(var) + [grad.values, grad.indices], self._use_locking,
                        row_counters=hasattr(var, "_embedding_slot"))


def _check_global_step(global_step: Any) -> None:
    if global_step is None:
        raise ValueError("AdagradDecayOptimizer needs global_step, the global step variable "
                         "its decay periods count (e.g. global_step="
                         "tf.train.get_or_create_global_step()); got None.")
    dtype = getattr(global_step, "dtype", None)
    if dtype is None or not _dt.as_dtype(dtype).base_dtype.is_integer:
        raise TypeError(f"AdagradDecayOptimizer: global_step must be an integer variable or "
                        f"tensor (tf.train.get_or_create_global_step()), got {global_step!r}")
