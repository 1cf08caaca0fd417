"""How `tf.Variable(...)` is made: through the creators of `tf.variable_creator_scope`,
and as TF 1.x's VariableV1, a ResourceVariable when asked (`use_resource=True`) or
when resource variables are the default (`tf.enable_resource_variables()`).

ResourceVariable subclasses Variable, so it registers itself here
(`register_resource_variable_class`) instead of being imported by variables.py.

Example:
    >>> type(tf.Variable(1.0, use_resource=True)).__name__
    'ResourceVariable'
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import weakref
from typing import Any, Iterator, cast

from tensorweave.framework.graph import get_default_graph

_RESOURCE: dict[str, Any] = {"class": None, "default": False}


def register_resource_variable_class(cls: type) -> None:
    """Makes `cls` what `tf.Variable(..., use_resource=True)` constructs."""
    _RESOURCE["class"] = cls


def resource_variable_class() -> Any:
    """The registered ResourceVariable class (None before it is imported)."""
    return _RESOURCE["class"]


def set_resource_variables_default(enabled: bool) -> None:
    """Whether `tf.Variable`/`tf.get_variable` make resource variables by default."""
    _RESOURCE["default"] = bool(enabled)


def resource_variables_default() -> bool:
    return bool(_RESOURCE["default"])


@functools.lru_cache(maxsize=None)
def _signature(cls: type) -> inspect.Signature:
    return inspect.signature(cls.__init__)  # type: ignore[misc]


class VariableMeta(type):
    """The metaclass of `tf.Variable`: a call of the class that sets `_V1_ENTRY`
    (tf.Variable itself, not its subclasses) may construct a ResourceVariable."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if not cls.__dict__.get("_V1_ENTRY"):
            return super().__call__(*args, **kwargs)
        bound = _signature(cls).bind(None, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        arguments.pop("self")

        def default_creator(**kw: Any) -> Any:
            use_resource = kw.pop("use_resource", None)
            if use_resource is None:
                use_resource = _RESOURCE["default"]
            resource_cls = _RESOURCE["class"]
            if use_resource and resource_cls is not None:
                kw.pop("expected_shape", None)
                return resource_cls(**kw)
            return type.__call__(cls, **kw)

        # tf.variable_creator_scope: the innermost creator is called first; each gets
        # the next one (ending with the default) and every argument by keyword.
        creator: Any = default_creator
        for fn in _creator_stack():
            creator = functools.partial(fn, creator)
        return creator(**arguments)

    def __instancecheck__(cls, obj: Any) -> bool:
        # TF 1.x's RefVariable: every variable that is not a resource variable (a plain
        # tf.Variable is one), though our ref variables are of the class tf.Variable.
        if cls.__dict__.get("_REF_KIND"):
            return isinstance(obj, cls.__mro__[1]) and not getattr(obj, "_is_resource", False)
        return super().__instancecheck__(obj)


_CREATORS: "weakref.WeakKeyDictionary[Any, threading.local]" = weakref.WeakKeyDictionary()
_CREATORS_LOCK = threading.Lock()


def _creator_stack() -> list[Any]:
    g = get_default_graph()
    with _CREATORS_LOCK:
        local = _CREATORS.setdefault(g, threading.local())
    if not hasattr(local, "stack"):
        local.stack = []
    return cast(list, local.stack)


@contextlib.contextmanager
def variable_creator_scope(variable_creator: Any) -> Iterator[None]:
    """Routes every `tf.Variable(...)` (and so `tf.get_variable`) made in the default
    graph within the scope through `variable_creator(next_creator, **kwargs)`, which
    may change the arguments, wrap or replace the variable, and calls `next_creator`
    to go on (TF 1.x's `tf.variable_creator_scope`; inner scopes' creators run first).

    Example:
        >>> def on_cpu(next_creator, **kwargs):
        ...     with tf.device("/cpu:0"):
        ...         return next_creator(**kwargs)
        >>> with tf.variable_creator_scope(on_cpu):
        ...     v = tf.Variable(1.0)
    """
    stack = _creator_stack()
    stack.append(variable_creator)
    try:
        yield
    finally:
        if not stack or stack[-1] is not variable_creator:
            raise RuntimeError("Exiting variable_creator_scope without proper nesting.")
        stack.pop()


__all__ = ["VariableMeta", "variable_creator_scope", "register_resource_variable_class",
           "resource_variable_class", "resource_variables_default",
           "set_resource_variables_default"]
