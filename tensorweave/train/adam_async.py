"""DeepRec's AdamAsyncOptimizer: Adam for asynchronous training on parameter servers.

TF1's Adam keeps one `beta1_power`/`beta2_power` pair for the whole model, on one ps,
and advances it after every update of every variable: each step of each worker then
reaches that ps, and the powers race with the updates. AdamAsync gives every variable
its own pair (slots next to it) and advances it inside the variable's own update, so
a variable's step touches only its own task. A sparse update moves only the rows in
the gradient (their moments; the others keep theirs), and with `apply_sparse_rmsprop`
takes an RMSProp step on those rows instead. The math is in
`ops/training/deeprec_training_ops.py` (DeepRec's docs/docs_en/AdamAsync-Optimizer.md,
tensorflow/python/training/adam_async.py and its kernels).

Example:
    >>> opt = tf.train.AdamAsyncOptimizer(learning_rate=0.001)
    >>> train_op = opt.minimize(loss, global_step=tf.train.get_or_create_global_step())
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.shape_ops import expand_dims
from tensorweave.ops.math.math_ops import cast
from tensorweave.ops.training import deeprec_training_ops as _ops  # noqa: F401 - registers
from tensorweave.ops.training.training_ops import apply_op
from tensorweave.train.optimizer import Optimizer

__all__ = ["AdamAsyncOptimizer"]


class AdamAsyncOptimizer(Optimizer):
    """Adam with per-variable bias-correction powers (DeepRec's `tf.train.AdamAsyncOptimizer`).

    Slots of each variable: "m" ("<var>/AdamAsync"), "v" ("<var>/AdamAsync_1"),
    "beta1_power" ("<var>/AdamAsync_2") and "beta2_power" ("<var>/AdamAsync_3"); the
    powers start at beta1 and beta2 and are multiplied by them at each update of their
    variable. For an EmbeddingVariable, m and v are tables over its ids and the powers
    are one-element vectors (DeepRec's shapes, so checkpoints match).

    Args:
        learning_rate: a float, a Tensor or a callable returning one.
        beta1: decay of the first moment estimates.
        beta2: decay of the second moment estimates.
        epsilon: added to sqrt(v) in the denominator ("epsilon hat" of the Adam paper).
        use_locking: serialize each update on its variable's lock.
        apply_sparse_rmsprop: sparse gradients take an RMSProp step on their rows
            (`v = beta2*v + (1-beta2)*g^2`, `m = beta1*m + lr*g/sqrt(v+epsilon)`,
            `var -= m`) instead of Adam's; the powers are then left as they are.
        name: name scope of the update ops and suffix of the slots.

    Example:
        >>> opt = tf.train.AdamAsyncOptimizer(0.1)
        >>> train_op = opt.apply_gradients(opt.compute_gradients(loss))
        >>> opt.get_slot(var, "beta1_power")    # 0.9, then 0.81, ...
    """

    _UPDATE_OPS_TAKE_ANY_VARIABLE = True  # fused update ops: ref, resource or embedding

    def __init__(self, learning_rate: Any = 0.001, beta1: Any = 0.9, beta2: Any = 0.999,
                 epsilon: Any = 1e-8, use_locking: bool = False,
                 apply_sparse_rmsprop: bool = False, name: str = "AdamAsync") -> None:
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon
        self._apply_sparse_rmsprop = bool(apply_sparse_rmsprop)

    def _create_slots(self, var_list: list[Any]) -> None:
        # Slot order fixes the names: m, v, then the powers (as DeepRec makes them).
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)
            self._power_slot(v, "beta1_power", self._beta1)
            self._power_slot(v, "beta2_power", self._beta2)

    def _power_slot(self, var: Any, slot_name: str, beta: Any) -> None:
        """`var`'s slot `slot_name` starting at `beta` (in var's dtype): a scalar, or a
        one-element vector for an EmbeddingVariable (DeepRec's shape)."""
        if self.get_slot(var, slot_name) is not None:
            return
        g = var.graph
        with g.as_default(), g.control_dependencies(None), g.colocate_with(var.op):
            value = self._call_if_callable(beta)
            dtype = var.dtype.base_dtype
            if isinstance(value, Tensor):
                value = value if value.dtype.base_dtype == dtype else cast(value, dtype)
            else:
                value = convert_to_tensor(value, dtype=dtype)
            if hasattr(var, "_embedding_slot"):
                value = expand_dims(value, -1)
            op_name = self._name
            if hasattr(var, "_embedding_slot"):
                # Its m and v are named as graph ops, not variable scopes: take the next
                # free "<var>/AdamAsync_<i>" ourselves (DeepRec's names).
                with g.name_scope(None):
                    free = g.unique_name(f"{var.op.name}/{op_name}", mark_as_used=False)
                op_name = free[len(var.op.name) + 1:]
        self._get_or_make_slot(var, value, slot_name, op_name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "learning_rate")
        self._beta1_t = self._hyper(self._beta1, "beta1")
        self._beta2_t = self._hyper(self._beta2, "beta2")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _inputs(self, var: Any) -> list[Any]:
        return [self._slot_ref(var, "m"), self._slot_ref(var, "v"),
                self._slot_ref(var, "beta1_power"), self._slot_ref(var, "beta2_power"),
                self._lr_t, self._beta1_t, self._beta2_t, self._epsilon_t]

    def _apply_dense(self, grad: Tensor, var: Any) -> Tensor:
        return apply_op("ApplyAdamAsync", var, self._inputs(var) + [grad], self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Any) -> Tensor:
        # The kernel sums duplicate rows first and moves only the rows in `grad`.
        return apply_op("SparseApplyAdamAsync", var,
                        self._inputs(var) + [grad.values, grad.indices], self._use_locking,
                        apply_sparse_rmsprop=self._apply_sparse_rmsprop)
