"""`tf.saved_model.main_op`: the op a loader runs after restoring (TF 1.x).

Example:
    >>> builder.add_meta_graph_and_variables(sess, ["serve"],
    ...                                      main_op=tf.saved_model.main_op.main_op())
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Operation
from tensorweave.ops.control_flow.assert_ops import group
from tensorweave.state.variable_initializers import (global_variables_initializer,
                                                         local_variables_initializer)


def main_op() -> Operation:
    """Initializes global and local variables (tensorweave has no lookup tables to init)."""
    return group(global_variables_initializer(), local_variables_initializer(),
                 name="main_op")


def main_op_with_restore(restore_op_name: Any) -> Operation:
    """`main_op()`, then the restore op named `restore_op_name` (an op or its name)."""
    init = main_op()
    g = get_default_graph()
    restore = g.as_graph_element(restore_op_name) if isinstance(restore_op_name, str) \
        else restore_op_name
    with g.control_dependencies([init]):
        return group(restore, name="main_op_with_restore")


__all__ = ["main_op", "main_op_with_restore"]
