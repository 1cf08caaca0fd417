"""How a compiled plan line calls a kernel, and the kernels it writes as expressions.

The compiled plans (the straight-line plan, the blocks of the dataflow plan) run one
generated Python line per node. Two costs of that line are avoidable:

- the call itself, for kernels that only hand back a value they already hold: a
  `Const` kernel returns its attr's array, `Identity` its input, `NoOp` nothing. A
  kernel marked with `inline_kernel` is written as that expression instead (a wide &
  deep worker step has ~390 Consts: ~120 ns a call each through its `partial`, ~10 as
  an assignment). Only the registered function itself is inlined: a kernel replaced
  or wrapped after registration (a profiler's timer) is called as usual.
- the attrs: `functools.partial(fn, **attrs)` copies its keyword dict on every call
  (~130 ns for a two-input kernel with two attrs); the line passes them as keyword
  arguments of the call instead (~45 ns), bound to names of the plan's namespace.

Example (ops/array/core_ops.py):
    >>> @const_op.kernel("CPU")
    ... @inline_kernel(CONST)
    ... def _(*, value, dtype):
    ...     return value
"""
from __future__ import annotations

import keyword
from typing import Any, Callable

from tensorweave.framework.op_def import ASYNC, CONTEXT

CONST = "const"      # returns its `value` attr, always the same array
FORWARD = "forward"  # returns its first (only) input unchanged
NOTHING = "nothing"  # no outputs, no effect

_INLINE: dict[Callable[..., Any], str] = {}


def inline_kernel(how: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Marks a kernel function as one a compiled plan may write as an expression."""
    if how not in (CONST, FORWARD, NOTHING):
        raise ValueError(f"inline_kernel: how must be const, forward or nothing; got {how!r}")

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        _INLINE[fn] = how
        return fn
    return mark


def inline_how(fn: Callable[..., Any], kind: str, attrs: dict[str, Any], n_args: int
               ) -> str | None:
    """How node's kernel `fn` is inlined, or None when it is called."""
    how = _INLINE.get(fn)
    if how is None or kind in (CONTEXT, ASYNC):
        return None
    if how == CONST and "value" not in attrs or how == FORWARD and n_args != 1:
        return None
    return how


def call_expr(i: int, fn: Callable[..., Any], kind: str, attrs: dict[str, Any],
              ctx: Any, args: list[str], ns: dict[str, Any]) -> str:
    """Node `i`'s kernel call, for a plan line; the names it uses go into `ns`.

    `args` are the input expressions (and, for async kernels, the completion
    callback's, first). A context or async kernel gets its context and `step` first.
    """
    ns[f"k{i}"] = fn
    lead = []
    if kind in (CONTEXT, ASYNC):
        ns[f"X{i}"] = ctx
        lead = [f"X{i}", "step"]
    kw, other = [], {}
    for j, (name, value) in enumerate(attrs.items()):
        if name.isidentifier() and not keyword.iskeyword(name):
            ns[f"A{i}_{j}"] = value
            kw.append(f"{name}=A{i}_{j}")
        else:  # not writable as a keyword argument: passed through a dict
            other[name] = value
    if other:
        ns[f"W{i}"] = other
        kw.append(f"**W{i}")
    return f"k{i}({', '.join(lead + args + kw)})"


def inline_expr(i: int, how: str, attrs: dict[str, Any], args: list[str],
                ns: dict[str, Any]) -> str | None:
    """The expression standing for an inlined kernel's output (None: no line)."""
    if how == CONST:
        ns[f"C{i}"] = attrs["value"]
        return f"C{i}"
    if how == FORWARD:
        return args[0]
    return None
