"""Initializing variables: `tf.global_variables_initializer`, `variables_initializer`,
`report_uninitialized_variables` (readiness checks), `assert_variables_initialized`.

Example:
    >>> sess.run(tf.global_variables_initializer())
    >>> sess.run(tf.report_uninitialized_variables())
    array([], dtype=object)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.array import core_ops
from tensorweave.ops.state import state_ops
from tensorweave.state.variables import global_variables, local_variables


def variables_initializer(var_list: Any, name: str = "init") -> Operation:
    """An op running the initializers of `var_list` (a NoOp when empty).

    Example:
        >>> sess.run(tf.variables_initializer([v, w]))
    """
    g = get_default_graph()
    inits = [v.initializer for v in var_list]
    if inits:
        g = inits[0].graph
    with g.as_default(), g.control_dependencies(inits):
        return core_ops.no_op(name=name)


def global_variables_initializer() -> Operation:
    """`tf.global_variables_initializer()`: initializes every global variable.

    Example:
        >>> sess.run(tf.global_variables_initializer())
    """
    return variables_initializer(global_variables())


initialize_all_variables = global_variables_initializer


def local_variables_initializer() -> Operation:
    """Initializes every variable in LOCAL_VARIABLES."""
    return variables_initializer(local_variables(), name="init")


initialize_local_variables = local_variables_initializer


def tables_initializer(name: str = "init_all_tables") -> Operation:
    """`tf.tables_initializer()`: one op running every op in the TABLE_INITIALIZERS
    collection (a NoOp when there is none), as TF1 trainers run beside
    `global_variables_initializer()`; MonitoredTrainingSession's Scaffold runs it itself.

    Example:
        >>> sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
    """
    g = get_default_graph()
    with g.control_dependencies(g.get_collection(GraphKeys.TABLE_INITIALIZERS)):
        return core_ops.no_op(name=name)


def is_variable_initialized(variable: Any) -> Tensor:
    """A bool scalar tensor: has `variable` been initialized (in the running session)?

    Example:
        >>> sess.run(tf.is_variable_initialized(v))
    """
    return state_ops.is_variable_initialized(variable)


def report_uninitialized_variables(var_list: Any = None,
                                   name: str = "report_uninitialized_variables") -> Tensor:
    """A 1-D string tensor naming the variables not yet initialized.

    Each check runs where its variable lives; only the names come back.

    Example:
        >>> sess.run(tf.report_uninitialized_variables())
        array([b'v'], dtype=object)
    """
    if var_list is None:
        var_list = global_variables() + local_variables()
    var_list = list(var_list)
    g = var_list[0].graph if var_list else get_default_graph()
    with g.as_default(), g.name_scope(name):
        flags = [state_ops.is_variable_initialized(v) for v in var_list]
        return g.create_op("ReportUninitialized", [flags],
                           {"names": [v.op.name for v in var_list]},
                           name="names").outputs[0]


def assert_variables_initialized(var_list: Any = None) -> Tensor | None:
    """A tensor that fails with FailedPreconditionError ("Attempting to use uninitialized
    value ...") while any of `var_list` (default: all global and local variables) is
    uninitialized, else evaluates to their ranks (one scalar, or a vector); None when
    there are no variables, as TF 1.x.

    Example:
        >>> sess.run(tf.assert_variables_initialized())
    """
    if var_list is None:
        var_list = global_variables() + local_variables()
    var_list = list(var_list)
    if not var_list:
        return None
    g = var_list[0].graph
    ranks = []
    with g.as_default(), g.name_scope("assert_variables_initialized"):
        for v in var_list:
            with g.colocate_with(v.op):
                # Reading the value raises for an uninitialized variable, naming it.
                read = core_ops.identity(v)
                ranks.append(g.create_op("Rank", [read], name="Rank").outputs[0])
        return ranks[0] if len(ranks) == 1 else array_ops.stack(ranks)


__all__ = ["variables_initializer", "global_variables_initializer", "local_variables_initializer",
           "report_uninitialized_variables", "is_variable_initialized",
           "assert_variables_initialized", "initialize_all_variables",
           "initialize_local_variables"]
