"""How `tf.Variable(...)` picks its class: TF 1.x's VariableV1 makes a
ResourceVariable when asked (`use_resource=True`) or when resource variables are
the default (`tf.enable_resource_variables()`).

ResourceVariable subclasses Variable, so it registers itself here
(`register_resource_variable_class`) instead of being imported by variables.py.

Example:
    >>> type(tf.Variable(1.0, use_resource=True)).__name__
    'ResourceVariable'
"""
from __future__ import annotations

import functools
import inspect
from typing import Any

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
        resource_cls = _RESOURCE["class"]
        if cls.__dict__.get("_V1_ENTRY") and resource_cls is not None:
            bound = _signature(cls).bind(None, *args, **kwargs)
            use_resource = bound.arguments.pop("use_resource", None)
            if use_resource is None:
                use_resource = _RESOURCE["default"]
            if use_resource:
                bound.arguments.pop("self")
                bound.arguments.pop("expected_shape", None)
                return resource_cls(**bound.arguments)
        return super().__call__(*args, **kwargs)

    def __instancecheck__(cls, obj: Any) -> bool:
        # TF 1.x's RefVariable: every variable that is not a resource variable (a plain
        # tf.Variable is one), though our ref variables are of the class tf.Variable.
        if cls.__dict__.get("_REF_KIND"):
            return isinstance(obj, cls.__mro__[1]) and not getattr(obj, "_is_resource", False)
        return super().__instancecheck__(obj)


__all__ = ["VariableMeta", "register_resource_variable_class", "resource_variable_class",
           "resource_variables_default", "set_resource_variables_default"]
