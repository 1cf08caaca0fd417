"""The op author's toolkit: define an op, and create ops in the default graph.

Every op family (`ops/<family>/*_ops.py`) builds on this one module: `define_op`
registers a stanza (definition, shape, kernels, gradient; see
`docs/op_authoring.md`), and the three creators add a node to the graph the way a
public wrapper or a gradient function needs it:

- `create_op`: the `Operation` (several outputs, or an op with none);
- `create_tensor`: its first output (the common single-output wrapper);
- `create_colocated`: its first output, placed with its first input's op (a
  variable update: it runs where the variable lives, on a ps task in distributed
  training).

A lower family that needs one op of a higher family creates it by name with these
(`create_tensor("Identity", [x])`) instead of importing the higher family.

Example:
    >>> double = define_op("Double", inputs=("x",))
    >>> @double.shape
    ... def _(x):
    ...     return x.dtype, x.shape
    >>> @double.kernel("CPU")
    ... def _(x):
    ...     return x * 2
    >>> double.no_gradient()
    >>> y = create_tensor("Double", [tf.constant([1.0, 2.0])])
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.op_def import ASYNC, CONTEXT, PLAIN, REQUIRED, OpDef, define_op
from tensorweave.framework.tensor import Operation, Tensor

__all__ = ["ASYNC", "CONTEXT", "PLAIN", "REQUIRED", "OpDef", "define_op", "create_op",
           "create_tensor", "create_colocated"]


def create_op(op_type: str, inputs: list[Any], attrs: dict[str, Any] | None = None,
              name: str | None = None) -> Operation:
    """Adds an `op_type` node to the default graph; returns the Operation.

    Args:
        op_type: a registered op (`define_op`).
        inputs: Tensors, a list of Tensors for a list input (`"values*"`).
        attrs: attr values; missing ones take the op's defaults.
        name: the node name (default: `op_type`), uniquified in the current scope.

    Example:
        >>> q, r = create_op("Qr", [a], {"full_matrices": False}).outputs
    """
    return get_default_graph().create_op(op_type, inputs, attrs or {}, name=name or op_type)


def create_tensor(op_type: str, inputs: list[Any], attrs: dict[str, Any] | None = None,
                  name: str | None = None) -> Tensor:
    """`create_op(...)`'s first output: the usual single-output wrapper's result.

    Example:
        >>> y = create_tensor("Identity", [x], name="copy")
    """
    return create_op(op_type, inputs, attrs, name).outputs[0]


def create_colocated(op_type: str, inputs: list[Any], attrs: dict[str, Any] | None = None,
                     name: str | None = None) -> Tensor:
    """Like `create_tensor`, placed with `inputs[0]`'s op and built in its graph.

    Variable updates (Assign, ScatterAdd, ...) use it: their first input is the
    variable's reference, so the update runs where the variable is stored.

    Example:
        >>> t = create_colocated("AssignAdd", [v._ref, delta], {"use_locking": False})
    """
    ref = inputs[0]
    g = ref.graph
    with g.colocate_with(ref.op):
        return g.create_op(op_type, inputs, attrs or {}, name=name or op_type).outputs[0]
