"""Initial values that read other variables, made safe to run before those are set.

TF 1.x rewrites a variable's initializer so that each variable its initial value
reads is taken as `initialized_value()`: the current value once initialized, else
that variable's own initial value. `tf.Variable(v * 2)` can then be initialized in
any order (or by a local init op before the globals), and the `initial_value`
property keeps the expression as written. Only ops between the variable reads and
the initial value are copied (random ops elsewhere are not drawn twice).

Example:
    >>> v = tf.Variable(1, name="v")
    >>> w = tf.Variable(v * 3, name="w")   # w.initializer works before v's
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.graph import GraphKeys
from tensorweave.framework.tensor import Operation, Tensor

# Ops that already read a variable safely, or only its state.
_SAFE = frozenset({"IsVariableInitialized", "InitializedValueOr", "VarIsInitializedOp"})
_VARIABLE_OPS = frozenset({"VariableV2", "Variable"})


def guard_initial_value(init: Tensor, initialized_value_of: Callable[[Operation], Any],
                        name: str) -> Tensor:
    """`init` with every variable read replaced by that variable's initialized value.

    Args:
        init: the initial value as written.
        initialized_value_of: a variable op -> a Tensor that is its value or, before
            initialization, its initial value (None for an op that is no known variable).
        name: the new variable's name, for the copies' names.

    Returns:
        `init` itself when it reads no variable, else a copy of the ops in between.
    """
    g = init.graph
    done: dict[int, Any] = {}

    def safe(t: Tensor) -> Tensor:
        op = t.op
        if id(op) not in done:
            done[id(op)] = _safe_op(op)
        new = done[id(op)]
        if new is op:
            return t
        return new.outputs[t.value_index] if isinstance(new, Operation) else new

    def _safe_op(op: Operation) -> Any:
        if op.type in _SAFE:
            return op
        if op.type in _VARIABLE_OPS:
            replacement = initialized_value_of(op)
            return op if replacement is None else replacement
        new_inputs = [safe(t) for t in op.inputs]
        if all(a is b for a, b in zip(new_inputs, op.inputs)):
            return op
        with g.name_scope(None), g.control_dependencies(None):
            # Declared attrs only: the rest (list lengths, "_class") follow the inputs.
            attrs = {k: v for k, v in op._attrs.items() if k in op.op_def.attrs}
            copy = g.create_op(op.type, _grouped(op, new_inputs), attrs,
                               name=f"{op.name}_{name}")
        if op.control_inputs:
            copy._add_control_inputs(list(op.control_inputs))
        return copy

    return safe(init)


def initialized_value_lookup(g: Any) -> Callable[[Operation], Any]:
    """For guard_initial_value: a variable op of `g` -> its Variable's initialized_value()
    (found in the global and local variable collections), or None."""
    def lookup(var_op: Operation) -> Any:
        for v in g.get_collection(GraphKeys.GLOBAL_VARIABLES) + \
                g.get_collection(GraphKeys.LOCAL_VARIABLES):
            if getattr(v, "op", None) is var_op and \
                    getattr(v, "initial_value", None) is not None:
                return v.initialized_value()
        return None
    return lookup


def _grouped(op: Operation, flat: list[Tensor]) -> list[Any]:
    """The flat inputs regrouped as create_op takes them (lists for list inputs)."""
    out: list[Any] = []
    i = 0
    for spec in op.op_def.inputs:
        if spec.is_list:
            size = op._attrs.get(op.op_def.list_attr(spec.name), 1)
            n = size if isinstance(size, int) else len(size)
            out.append(flat[i:i + n])
            i += n
        else:
            out.append(flat[i])
            i += 1
    return out


__all__ = ["guard_initial_value", "initialized_value_lookup"]
