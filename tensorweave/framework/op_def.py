"""The op registry: one stanza per op (definition, shape, kernel, gradient).

Example:
    >>> add = define_op("MyAdd", inputs=("x", "y"))
    >>> @add.shape
    ... def _(x, y):
    ...     return x.dtype, broadcast_shapes(x.shape, y.shape)
    >>> @add.kernel("CPU")
    ... def _(x, y):
    ...     return np.add(x, y)
    >>> @add.gradient
    ... def _(op, grad):
    ...     return [grad, grad]

Input names ending in `*` take a list of tensors; names starting with `&` take
a reference (a variable's storage) rather than a value.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

REQUIRED = object()  # marks an attr that has no default

PLAIN, CONTEXT, ASYNC = "plain", "context", "async"


@dataclass(frozen=True)
class InputSpec:
    name: str
    is_list: bool
    is_ref: bool


@dataclass
class KernelReg:
    fn: Callable[..., Any]
    kind: str  # PLAIN: fn(*inputs, **attrs); CONTEXT: fn(ctx, step, *inputs, **attrs);
    # ASYNC: fn(ctx, step, done, *inputs, **attrs), calling done(outputs_or_exception) once.


class OpDef:
    """An op's stanza: inputs, attrs, shape function, kernels and gradient."""

    def __init__(self, name: str, inputs: tuple[str, ...], attrs: dict[str, Any],
                 stateful: bool, where: str, module: str | None = None) -> None:
        self.name = name
        self.inputs = tuple(_parse_input(i) for i in inputs)
        self.attrs = dict(attrs)
        self.stateful = stateful
        self.where = where  # file:line of the define_op call
        # The module whose import defined the op (through a definer such as
        # define_apply too): tools/check_ops_modules.py holds ops/ to defining ops.
        self.module = module
        self.shape_fn: Callable[..., Any] | None = None
        self.kernels: dict[str, KernelReg] = {}
        self.grad_fn: Callable[..., Any] | None = None
        self.not_differentiable = False
        self.borrows_refs = False

    @property
    def list_inputs(self) -> list[str]:
        return [i.name for i in self.inputs if i.is_list]

    def list_attr(self, input_name: str) -> str:
        """The attr holding the length of list input `input_name` (TF's "N")."""
        lists = self.list_inputs
        return "N" if len(lists) == 1 else f"N_{input_name}"

    def shape(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.shape_fn = fn
        return fn

    def kernel(self, device_type: str = "CPU", kind: str = PLAIN) -> Callable[..., Any]:
        if kind not in (PLAIN, CONTEXT, ASYNC):
            raise ValueError(f"Kernel kind for op {self.name} must be plain, context or async; "
                             f"got {kind!r}")

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            if device_type in self.kernels:
                raise ValueError(f"Op {self.name} already has a {device_type} kernel")
            self.kernels[device_type] = KernelReg(fn, kind)
            return fn
        return register

    def gradient(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if self.not_differentiable:
            raise ValueError(f"Op {self.name} is marked not differentiable; cannot add a gradient")
        self.grad_fn = fn
        return fn

    def no_gradient(self) -> "OpDef":
        """Marks the op as not differentiable: gradients stop here (None)."""
        if self.grad_fn is not None:
            raise ValueError(f"Op {self.name} already has a gradient")
        self.not_differentiable = True
        return self

    def borrow_refs(self) -> "OpDef":
        """Marks the kernel as reading a variable passed to a value input at once and
        keeping no alias of it (it copies what it returns, like GatherV2, or reads only
        the shape): the executor then passes the live buffer, not a snapshot copy, so
        gathering a few rows of a large variable does not copy the variable."""
        self.borrows_refs = True
        return self

    def __repr__(self) -> str:
        return f"<OpDef {self.name} from {self.where}>"


def _parse_input(spec: str) -> InputSpec:
    is_ref = spec.startswith("&")
    name = spec.lstrip("&")
    is_list = name.endswith("*")
    return InputSpec(name.rstrip("*"), is_list, is_ref)


_REGISTRY: dict[str, OpDef] = {}


def define_op(name: str, inputs: tuple[str, ...] = (), attrs: dict[str, Any] | None = None,
              stateful: bool = False) -> OpDef:
    """Registers a new op type and returns its stanza for decorating.

    Args:
        name: the op type, unique across the registry.
        inputs: input names; `x*` is a list input, `&x` a reference input.
        attrs: attr names and their defaults (`REQUIRED` for none).
        stateful: True if the op must never be cached, deduplicated or folded.

    Raises:
        ValueError: if an op of that name is already registered (names where).
    """
    if name in _REGISTRY:
        raise ValueError(f"Op {name!r} is already registered (first defined at "
                         f"{_REGISTRY[name].where}); op names must be unique.")
    frame = sys._getframe(1)  # cheap, unlike inspect.stack(): import time matters
    top: Any = frame
    while top is not None and top.f_code.co_name != "<module>":
        top = top.f_back
    op = OpDef(name, tuple(inputs), attrs or {}, stateful,
               f"{frame.f_code.co_filename}:{frame.f_lineno}",
               top.f_globals.get("__name__") if top is not None else None)
    _REGISTRY[name] = op
    return op


# Called with an op name not registered yet: a layer above that defines ops in modules
# imported only when first used (tf.feature_column's) imports them (tensorweave.ops).
_MISSING_HOOKS: list[Callable[[str], None]] = []


def on_missing_op(hook: Callable[[str], None]) -> None:
    """Registers `hook(op_name)`, called before `get_op_def` gives up on a name."""
    _MISSING_HOOKS.append(hook)


def get_op_def(name: str) -> OpDef:
    """Looks up a registered op (asking the `on_missing_op` hooks to load it first).

    Raises:
        KeyError: naming the op, if no such op is registered.
    """
    if name not in _REGISTRY:
        for hook in _MISSING_HOOKS:
            hook(name)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"No op named {name!r} is registered in tensorweave. Define it with "
                       "tensorweave.framework.op_def.define_op, or check the spelling.") from None


def registered_ops() -> dict[str, OpDef]:
    return dict(_REGISTRY)


# Gradients of functional control flow (If, While) differentiate their bodies with
# `tf.gradients`, which lives in autodiff (a higher layer). autodiff registers it here;
# gradient functions only run under `tf.gradients`, so it is always registered by then.
_symbolic_gradients: Callable[..., Any] | None = None


def register_symbolic_gradients(fn: Callable[..., Any]) -> None:
    """Installs `fn(ys, xs, grad_ys=None) -> list` (done by `tensorweave.autodiff`)."""
    global _symbolic_gradients
    _symbolic_gradients = fn


def symbolic_gradients(ys: Any, xs: Any, grad_ys: Any = None) -> list[Any]:
    """`tf.gradients(ys, xs, grad_ys)` for gradient functions that differentiate a body.

    Raises:
        RuntimeError: if tensorweave.autodiff was never imported.
    """
    if _symbolic_gradients is None:
        raise RuntimeError("No gradients implementation is registered: import "
                           "tensorweave.autodiff.gradients (import tensorweave does).")
    return _symbolic_gradients(ys, xs, grad_ys=grad_ys)
