"""Custom getters (`tf.variable_scope(custom_getter=...)`, `tf.get_variable(custom_getter=
...)`): a function that makes or changes each variable `get_variable` is asked for.

As TF 1.x, the getter is called as `custom_getter(getter=..., name=<full name>,
shape=..., dtype=..., initializer=..., ...)` (plus `constraint` when it takes it),
where `getter(name, ...)` does what get_variable would have done; a nested scope's
getter runs first and its `getter` goes through the enclosing scope's.

Example:
    >>> def fp16(getter, name, *args, **kwargs):
    ...     return tf.cast(getter(name, *args, **kwargs), tf.float16)
    >>> with tf.variable_scope("m", custom_getter=fp16):
    ...     w = tf.get_variable("w", [2])          # a float16 read of m/w
"""
from __future__ import annotations

import functools
import inspect
from typing import Any

from tensorweave.state.variable_policies import resolve

# What the getter handed to a custom getter passes on to get_variable.
_GETTER_KWARGS = frozenset({"reuse", "partitioner", "validate_shape", "use_resource",
                            "constraint", "caching_device", "synchronization",
                            "aggregation"})


def call_custom_getter(scope: Any, g: Any, custom_getter: Any, full: str, shape: Any,
                       dtype: Any, initializer: Any, regularizer: Any, trainable: Any,
                       collections: Any, kwargs: dict[str, Any]) -> Any:
    """TF 1.x: `custom_getter(getter=..., name=<full name>, shape=..., ...)`, where
    `getter` makes or reuses the variable as get_variable would have."""
    def true_getter(name: str, shape: Any = None, dtype: Any = None,
                    initializer: Any = None, regularizer: Any = None,
                    trainable: Any = True, collections: Any = None,
                    **rest: Any) -> Any:
        rest = {k: v for k, v in rest.items() if k in _GETTER_KWARGS}
        with g.as_default(), g.control_dependencies(None):
            return scope._get_variable(g, name, shape, dtype, initializer, regularizer,
                                       True if trainable is None else trainable,
                                       collections, **rest)
    # TF settles these before the getter sees them.
    sync, aggregation, trainable = resolve(kwargs.get("synchronization"),
                                           kwargs.get("aggregation"), trainable, full)
    args = {"getter": true_getter, "name": full, "shape": shape,
            "dtype": dtype if dtype is not None else scope.dtype,
            "initializer": initializer if initializer is not None else scope.initializer,
            "regularizer": regularizer if regularizer is not None else scope.regularizer,
            "reuse": scope.reuse if kwargs.get("reuse") is None else kwargs["reuse"],
            "trainable": trainable,
            "collections": collections,
            "caching_device": scope._caching_device_for(kwargs),
            "partitioner": kwargs.get("partitioner") or scope.partitioner,
            "validate_shape": kwargs.get("validate_shape", True),
            "use_resource": scope._use_resource_for(kwargs),
            "synchronization": sync, "aggregation": aggregation}
    # Getters written before `constraint` existed do not take it (as TF decides).
    params = inspect.signature(custom_getter).parameters
    if "constraint" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
        args["constraint"] = scope._constraint_for(kwargs)
    # Variable names ignore name scopes, and so do the ops a getter adds (TF 1.x).
    with g.as_default(), g.name_scope(None):
        return custom_getter(**args)


def wrap_custom_getter(inner: Any, outer: Any) -> Any:
    """A scope's custom getter composed with its parent's, as TF 1.x: the inner one is
    called first, and its `getter` goes through the outer one."""
    if inner is None:
        return outer
    if not callable(inner):
        raise ValueError(f"Passed a custom_getter which is not callable: {inner!r}")
    if outer is None:
        return inner

    def wrapped(getter: Any, *args: Any, **kwargs: Any) -> Any:
        return inner(functools.partial(outer, getter), *args, **kwargs)
    return wrapped


__all__ = ["call_custom_getter", "wrap_custom_getter"]
