"""IdentityN (`tf.identity_n`): several tensors passed through as one op.

TF 1.x builds custom gradients as an IdentityN whose `_gradient_op_type` attr
names a gradient registered with `tf.RegisterGradient`; we keep that graph shape
(so exported graphs read the same). `tf.gradients` uses the named gradient
(autodiff/gradient_registry.py); without the attr the gradient passes straight
through, as TF's does.

Example:
    >>> a, b = tf.identity_n([x, y])
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GRADIENT_OP_TYPE_ATTR
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor

__all__ = ["identity_n"]

identity_n_op = define_op("IdentityN", inputs=("input*",))


@identity_n_op.shape
def _(inputs: list[Tensor]) -> Any:
    if not inputs:
        raise ValueError("identity_n needs at least one tensor (got an empty list).")
    return [(t.dtype.base_dtype, t.shape) for t in inputs]


@identity_n_op.kernel("CPU")
def _(inputs: list[Any]) -> Any:
    return inputs[0] if len(inputs) == 1 else list(inputs)  # one output: the bare value


@identity_n_op.gradient
def _(op: Operation, *grads: Any) -> Any:
    return list(grads)


def identity_n(input: Any, name: str | None = None,
               gradient_op_type: str | None = None) -> list[Tensor]:
    """`tf.identity_n`: the tensors of `input`, unchanged, from one op.

    Args:
        input: a list of tensors (or values convertible to tensors).
        name: the op name.
        gradient_op_type: a gradient registered with `tf.RegisterGradient` to use
            instead of passing gradients through.

    Raises:
        ValueError: an empty list.

    Example:
        >>> x2, y2 = tf.identity_n([x, y])
    """
    tensors = [convert_to_tensor(t) for t in input]
    attrs = {GRADIENT_OP_TYPE_ATTR: gradient_op_type} if gradient_op_type else {}
    return create_op("IdentityN", [tensors], attrs,
                     name=name or "IdentityN").outputs
