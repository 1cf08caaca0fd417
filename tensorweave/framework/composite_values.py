"""Values that ride through `tf.cond` and `tf.while_loop` as one tensor each.

TF 1.x lets a `tf.TensorArray` be a loop variable or a cond branch's result: the If or
While op carries its flow (a variant tensor), and the body and the caller get a
TensorArray again. The control-flow ops (`ops/control_flow/`) sit below the TensorArray
class (`data_flow/tensor_array.py`), so they cannot name it; the class registers itself
here at import instead (docs/architecture.md: where a lower layer needs something from a
higher one, the higher one registers it). A value of an unregistered type is passed to
`convert_to_tensor` as any other.

Example:
    >>> register_composite_value(TensorArray, to_flow=lambda ta: ta.flow,
    ...                          from_flow=lambda ta, flow: ta._with_flow(flow))
    >>> to_flows([ta, x])                       # [ta.flow, x]
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from tensorweave.framework.func_graph import flatten, pack_sequence_as
from tensorweave.framework.tensor import Tensor


class _Composite(NamedTuple):
    to_flow: Callable[[Any], Tensor]
    from_flow: Callable[[Any, Tensor], Any]


_REGISTRY: dict[type, _Composite] = {}


def register_composite_value(cls: type, to_flow: Callable[[Any], Tensor],
                             from_flow: Callable[[Any, Tensor], Any]) -> None:
    """Makes instances of `cls` (and its subclasses) pass through cond and while_loop.

    Args:
        cls: the Python type, e.g. `TensorArray`.
        to_flow: `to_flow(value)`, the one tensor the op carries for `value`.
        from_flow: `from_flow(template, flow)`, a value like `template` (a value of
            `cls` given to or returned by the traced functions) on the op's `flow`.

    Raises:
        TypeError: if `cls` is not a type.

    Example:
        >>> register_composite_value(TensorArray, lambda ta: ta.flow,
        ...                          lambda ta, flow: ta._with_flow(flow))
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_composite_value needs a type, got {cls!r}")
    _REGISTRY[cls] = _Composite(to_flow, from_flow)  # a re-registration replaces


def _entry(x: Any) -> _Composite | None:
    for klass in type(x).__mro__:
        found = _REGISTRY.get(klass)
        if found is not None:
            return found
    return None


def is_composite_value(x: Any) -> bool:
    """Whether `x` is of a registered type (it rides through control flow as its flow)."""
    return _entry(x) is not None


def to_flows(structure: Any) -> Any:
    """`structure` with each registered value replaced by its flow.

    Example:
        >>> to_flows({"ta": ta, "i": i})            # {"ta": ta.flow, "i": i}
    """
    leaves = flatten(structure)
    entries = [_entry(x) for x in leaves]
    if all(e is None for e in entries):
        return structure  # untouched: no composite value in it
    return pack_sequence_as(structure, [x if e is None else e.to_flow(x)
                                        for x, e in zip(leaves, entries)])


def from_flows(template: Any, flat: list[Any]) -> list[Any]:
    """`flat` (leaves matching `flatten(template)`) with the flows at the template's
    registered values turned back into such values, sharing the template's settings.

    Example:
        >>> ta2, i2 = from_flows([ta, i], while_op.outputs)
    """
    out = []
    for t, x in zip(flatten(template), flat):
        e = _entry(t)
        out.append(e.from_flow(t, x) if e is not None and isinstance(x, Tensor) else x)
    return out
