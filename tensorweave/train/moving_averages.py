"""`tf.train.ExponentialMovingAverage`: shadow variables that track averages of variables.

Each shadow lives with its variable (colocated: under replica_device_setter it sits on
the same ps task), and its update op runs there too, so only the decay crosses tasks.

Example:
    >>> ema = tf.train.ExponentialMovingAverage(0.999, num_updates=step)
    >>> with tf.control_dependencies([train_op]):
    ...     train_op = ema.apply(tf.trainable_variables())
    >>> # At evaluation: restore the averages into the model's variables.
    >>> saver = tf.train.Saver(ema.variables_to_restore())
"""
from __future__ import annotations

from typing import Any, Sequence

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.math import math_ops
from tensorweave.ops.array import zeros
from tensorweave.ops.control_flow import group
from tensorweave.train.slot_creator import create_slot, create_zeros_slot
from tensorweave.state.init_ops import zeros_initializer
from tensorweave.state.variable_scope import (get_variable, get_variable_scope,
                                                  variable_scope)
from tensorweave.state.variables import (
    Variable, global_variables, moving_average_variables, trainable_variables)

_FLOATS = (_dt.float16, _dt.float32, _dt.float64)


def _key(var: Any) -> Any:
    # A Variable is identified by its VariableV2 op (wrappers may differ); a Tensor by itself.
    return var.op if isinstance(var, Variable) else var


def _zero_debiased_delta(shadow: Variable, value: Tensor, one_minus_decay: Tensor) -> Tensor:
    """The delta that makes `shadow` the bias-corrected average of the values seen.

    A zero-started average after t updates is biased toward 0 by the factor
    (1 - decay**t); a "biased" twin and a step count next to the shadow undo it. As
    TF 1.x, they are get_variable'd in the variable scope named after the shadow
    ("<scope>/<shadow>/biased", then "biased_1", ... unless the scope reuses).
    """
    g = shadow.graph
    dtype = shadow.dtype.base_dtype
    with variable_scope(shadow.op.name), g.colocate_with(shadow.op):
        with g.control_dependencies(None):
            biased_init = zeros(shadow.get_shape().as_list(), dtype)
        biased = get_variable(_unique_in_scope("biased"), initializer=biased_init,
                              trainable=False)
        local_step = get_variable(_unique_in_scope("local_step"), shape=[], dtype=dtype,
                                  initializer=zeros_initializer(), trainable=False)
    with g.colocate_with(shadow.op):
        m = math_ops  # explicit ops: Tensor operators are installed at run time
        update_biased = biased.assign_sub(m.multiply(m.subtract(biased, value),
                                                     one_minus_decay))
        update_step = local_step.assign_add(1.0)
        with g.control_dependencies([update_biased, update_step]):
            decay = m.subtract(1.0, one_minus_decay)
            correction = m.subtract(1.0, m.pow(decay, local_step.read_value()))
            return m.subtract(shadow, m.divide(biased.read_value(), correction))


def _unique_in_scope(name: str) -> str:
    """`name`, or `name_1`, `name_2`... if the current variable scope has it already."""
    scope = get_variable_scope()
    if scope.reuse:
        return name
    taken = {v.op.name for v in scope.global_variables()}
    full = f"{scope.name}/{name}" if scope.name else name
    if full not in taken:
        return name
    i = 1
    while f"{full}_{i}" in taken:
        i += 1
    return f"{name}_{i}"


def assign_moving_average(variable: Variable, value: Any, decay: Any,
                          zero_debias: bool = True, name: str | None = None) -> Tensor:
    """variable <- decay * variable + (1 - decay) * value, run where `variable` lives.

    With `zero_debias` the result is corrected for starting at zero (Adam's trick).

    Example:
        >>> update = assign_moving_average(avg, batch_mean, 0.99, zero_debias=False)
    """
    g = variable.graph
    with g.name_scope(name or "AssignMovingAvg"), g.colocate_with(variable.op):
        one_minus_decay = math_ops.subtract(1.0, convert_to_tensor(decay, name="decay"))
        if one_minus_decay.dtype.base_dtype != variable.dtype.base_dtype:
            one_minus_decay = math_ops.cast(one_minus_decay, variable.dtype.base_dtype)
        value = convert_to_tensor(value, dtype=variable.dtype.base_dtype)
        if zero_debias:
            delta = _zero_debiased_delta(variable, value, one_minus_decay)
        else:
            delta = math_ops.multiply(math_ops.subtract(variable, value), one_minus_decay)
        return variable.assign_sub(delta)


class ExponentialMovingAverage:
    """Keeps exponential moving averages of variables (or tensors) in shadow variables.

    Args:
        decay: the decay (e.g. 0.999); each update does
            shadow = decay * shadow + (1 - decay) * value.
        num_updates: optional count (usually the global step); the decay used is then
            min(decay, (1 + num_updates) / (10 + num_updates)), so early averages move fast.
        zero_debias: correct the averages of Tensors (which start at 0) for that start.
        name: suffix of the shadow variables' names and scope of the update ops.

    Example:
        >>> ema = tf.train.ExponentialMovingAverage(0.99)
        >>> update = ema.apply([w, b])
        >>> ema.average(w)          # the shadow Variable "w/ExponentialMovingAverage"
    """

    def __init__(self, decay: Any, num_updates: Any = None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage") -> None:
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict[Any, Variable] = {}

    @property
    def name(self) -> str:
        return self._name

    def _make_shadow(self, var: Any) -> Variable:
        # A slot of `var` (train/slot_creator.py), as TF 1.x: "<var>/<name>", made unique,
        # prefixed by an enclosing variable scope, outside control dependencies.
        g = var.graph
        with g.as_default(), g.control_dependencies(None):
            if isinstance(var, Variable):
                # Starts at the variable's value, on the variable's device (its ps task).
                shadow = create_slot(var, var.initialized_value(), self._name,
                                     colocate_with_primary=True)
                g.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
                return shadow
            # A Tensor's average starts at zero; it lives with the tensor only when that
            # is a variable's storage, else where the current device scope puts it.
            return create_zeros_slot(var, self._name, colocate_with_primary=(
                var.op.type in ("Variable", "VariableV2", "VarHandleOp")))

    def apply(self, var_list: Sequence[Any] | None = None) -> Operation:
        """Creates shadows for new entries of `var_list` and returns one op updating all.

        `var_list` defaults to the trainable variables. Calling apply again with the
        same variables reuses their shadows.

        Raises:
            TypeError: if an entry is not float16/32/64 (naming it).

        Example:
            >>> maintain_averages = ema.apply([w, b])
        """
        var_list = trainable_variables() if var_list is None else list(var_list)
        for var in var_list:
            if var.dtype.base_dtype not in _FLOATS:
                raise TypeError("The variables must be half, float, or double: "
                                f"{var.name} is {var.dtype.base_dtype.name}.")
        debiased = set()
        for var in var_list:
            if _key(var) not in self._averages:
                # Creating and initialising a shadow must not wait for the caller's
                # control dependencies (usually the training step).
                with var.graph.control_dependencies(None):
                    self._averages[_key(var)] = self._make_shadow(var)
                if self._zero_debias and not isinstance(var, Variable):
                    debiased.add(_key(var))
        g = get_default_graph()
        with g.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                n = math_ops.cast(self._num_updates, _dt.float32, name="num_updates")
                decay = math_ops.minimum(math_ops.cast(decay, _dt.float32),
                                         (1.0 + n) / (10.0 + n))
            updates = [assign_moving_average(self._averages[_key(v)], v, decay,
                                             zero_debias=_key(v) in debiased)
                       for v in var_list]
            return group(*updates, name=scope.rstrip("/").rsplit("/", 1)[-1])

    def average(self, var: Any) -> Variable | None:
        """The shadow Variable of `var`, or None if `apply` has not covered it."""
        return self._averages.get(_key(var))

    def average_name(self, var: Any) -> str:
        """The name the shadow of `var` has (or will get from `apply` in this scope).

        Example:
            >>> ema.average_name(w)
            'w/ExponentialMovingAverage'
        """
        if _key(var) in self._averages:
            return self._averages[_key(var)].op.name
        return var.graph.unique_name(f"{var.op.name}/{self._name}", mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables: Sequence[Any] | None = None
                             ) -> dict[str, Any]:
        """{checkpoint name: variable} restoring each average into its variable.

        Variables in `moving_avg_variables` (default: trainable variables plus the
        MOVING_AVERAGE_VARIABLES collection) map from their shadow's name; every other
        global variable maps from its own name, so a Saver built on this restores a
        whole model with the averaged weights.

        Example:
            >>> tf.train.Saver(ema.variables_to_restore()).restore(sess, path)
        """
        if moving_avg_variables is None:
            moving_avg_variables = trainable_variables() + moving_average_variables()
        averaged = {_key(v): v for v in moving_avg_variables}
        name_map: dict[str, Any] = {self.average_name(v): v for v in averaged.values()}
        averaged_names = {v.name for v in averaged.values()}
        for v in global_variables():
            if v.name not in averaged_names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map


__all__ = ["ExponentialMovingAverage", "assign_moving_average"]
