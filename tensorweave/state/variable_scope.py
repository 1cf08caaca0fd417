"""`tf.variable_scope` and `tf.get_variable`: named, shareable variables.

Each graph keeps a store of variables created by `get_variable` (by full name)
and, per thread, the stack of open variable scopes (variable_scope_core.py).

Example:
    >>> with tf.variable_scope("layer1"):
    ...     w = tf.get_variable("w", [3, 4])
    >>> with tf.variable_scope("layer1", reuse=True):
    ...     w2 = tf.get_variable("w")
    >>> w is w2, w.name
    (True, 'layer1/w:0')
"""
from __future__ import annotations

import contextlib
from typing import Any, cast

from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.tensor_shape import as_shape
from tensorweave.state.variables import Variable
from tensorweave.state.variable_store import VariableStore as _VariableStore
from tensorweave.state.custom_getters import wrap_custom_getter
from tensorweave.state.variable_meta import variable_creator_scope
from tensorweave.state.variable_policies import (VariableAggregation,
                                                     VariableSynchronization)
from tensorweave.state.variable_scope_core import (
    AUTO_REUSE, VariableScope, _scope_stack, _store, get_variable_scope)


def _unique_scope_name(store: _VariableStore, parent: str, prefix: str) -> str:
    base = f"{parent}/{prefix}" if parent else prefix
    if store.scope_counts.get(base, 0) == 0:
        return prefix
    i = 1
    while store.scope_counts.get(f"{base}_{i}", 0) > 0:
        i += 1
    return f"{prefix}_{i}"


class variable_scope:  # noqa: N801 (TF's name for a context manager class)
    """Opens a variable scope (and a matching name scope); `as` gives the VariableScope.

    Args:
        name_or_scope: a name, or a VariableScope to re-enter (the root scope, named "",
            opens no name scope).
        default_name: used (made unique) when `name_or_scope` is None.
        reuse: None (inherit), True (only reuse), or tf.AUTO_REUSE (reuse or create).
            Once True in a scope, nested scopes reuse too.
        auxiliary_name_scope: False keeps the current name scope (must be a bool).

    Raises:
        TypeError: neither name given, or a non-bool auxiliary_name_scope.
        ValueError: reuse=True with only a default_name.
        RuntimeError: scopes exited in another order than entered.

    Example:
        >>> with tf.variable_scope("enc", reuse=tf.AUTO_REUSE):
        ...     w = tf.get_variable("w", [2])
    """

    def __init__(self, name_or_scope: Any = None, default_name: str | None = None,
                 values: Any = None, initializer: Any = None, regularizer: Any = None,
                 caching_device: Any = None, partitioner: Any = None,
                 custom_getter: Any = None, reuse: Any = None, dtype: Any = None,
                 use_resource: Any = None, constraint: Any = None,
                 auxiliary_name_scope: bool = True) -> None:
        if name_or_scope is None and default_name is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if name_or_scope is not None and not isinstance(name_or_scope,
                                                        (str, VariableScope)):
            raise TypeError(f"VariableScope: name_or_scope must be a string or "
                            f"VariableScope, got {name_or_scope!r}")
        if not isinstance(auxiliary_name_scope, bool):
            raise TypeError(f"The auxiliary_name_scope must be `True` or `False`, while get "
                            f"{auxiliary_name_scope!r}")
        self._name_or_scope, self._default_name = name_or_scope, default_name
        self._settings = dict(initializer=initializer, regularizer=regularizer,
                              caching_device=caching_device, partitioner=partitioner,
                              custom_getter=custom_getter, dtype=dtype,
                              use_resource=use_resource, constraint=constraint)
        self._reuse = None if reuse is False else reuse
        self._aux = auxiliary_name_scope
        self._graph = _graph_of(values)
        self._exits: contextlib.ExitStack | None = None
        self._scope: VariableScope | None = None
        self._saved_counts: dict[str, int] | None = None

    def __enter__(self) -> VariableScope:
        name_or_scope, reuse, g = self._name_or_scope, self._reuse, self._graph
        if name_or_scope is None and reuse is True:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        exits = contextlib.ExitStack()
        try:
            return self._enter(exits, name_or_scope, reuse, g)
        except BaseException:
            exits.close()  # a refused name must not leave the graph or a scope entered
            raise

    def _enter(self, exits: contextlib.ExitStack, name_or_scope: Any, reuse: Any,
               g: Any) -> VariableScope:
        exits.enter_context(g.as_default())
        stack, store = _scope_stack(g), _store(g)
        parent = stack[-1]
        if isinstance(name_or_scope, VariableScope):
            full, src = name_or_scope.name, name_or_scope
            ns_name = full.split("/")[-1]
            new_reuse = reuse if reuse else src.reuse
            # TF: re-entering a scope object keeps the default-name counters of its
            # subscopes as they were when it is left.
            self._saved_counts = dict(store.scope_counts)
        else:
            ns_name = name_or_scope if name_or_scope is not None else \
                _unique_scope_name(store, parent.name, cast(str, self._default_name))
            full = f"{parent.name}/{ns_name}" if parent.name else ns_name
            src = parent
            new_reuse = reuse or parent.reuse
        store.scope_counts[full] = store.scope_counts.get(full, 0) + 1
        current = g.get_name_scope()
        if not self._aux:
            ns = exits.enter_context(g.name_scope(current + "/" if current else None))
        elif ns_name:
            ns = exits.enter_context(g.name_scope(ns_name))
        else:   # the root variable scope: the name scope stays as it is (TF)
            ns = current + "/" if current else ""
        st = self._settings
        scope = VariableScope(
            new_reuse, full, _or(st["initializer"], src.initializer),
            _or(st["regularizer"], src.regularizer),
            _or(st["caching_device"], src.caching_device),
            _or(st["partitioner"], src.partitioner),
            wrap_custom_getter(st["custom_getter"], src.custom_getter),
            src.original_name_scope if isinstance(name_or_scope, VariableScope) else ns,
            _or(st["dtype"], src.dtype), _or(st["use_resource"], src.use_resource),
            _or(st["constraint"], src.constraint))
        stack.append(scope)
        self._exits, self._scope = exits, scope
        return scope

    def __exit__(self, *exc: Any) -> None:
        g = self._graph
        stack, store = _scope_stack(g), _store(g)
        if not stack or stack[-1] is not self._scope:
            raise RuntimeError(f"Improper nesting of variable_scope: leaving "
                               f"{self._scope.name if self._scope else None!r} while "
                               f"{stack[-1].name!r} is the innermost open scope.")
        stack.pop()
        assert self._scope is not None  # entered (it is the innermost scope)
        full = self._scope.name
        if self._saved_counts is not None:
            store.scope_counts = self._saved_counts
        else:   # TF: leaving a scope by name resets its subscopes' default-name counters
            for k in [k for k in store.scope_counts if k.startswith(full + "/")]:
                store.scope_counts[k] = 0
        cast(contextlib.ExitStack, self._exits).close()


def _or(given: Any, inherited: Any) -> Any:
    return inherited if given is None else given


def _graph_of(values: Any) -> Any:
    for v in values or ():
        v = getattr(v, "_as_graph_element", lambda v=v: v)()
        if hasattr(v, "graph"):
            return v.graph
    return get_default_graph()


def get_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                 regularizer: Any = None, trainable: Any = None, collections: Any = None,
                 caching_device: Any = None, partitioner: Any = None,
                 validate_shape: bool = True, use_resource: Any = None,
                 custom_getter: Any = None, constraint: Any = None,
                 synchronization: Any = None, aggregation: Any = None) -> Variable:
    """Gets an existing variable "<scope>/<name>" or creates a new one.

    A new floating-point variable defaults to glorot_uniform_initializer; an
    integer one to zeros. `initializer` may also be a Tensor or a value (then
    `shape` is taken from it).

    Raises:
        ValueError: the variable exists and the scope does not reuse ("already
            exists, disallowed"), or it does not exist and the scope has
            reuse=True ("does not exist"), or a shape/dtype mismatch on reuse.

    Example:
        >>> w = tf.get_variable("w", shape=[784, 10])
    """
    return get_variable_scope().get_variable(
        name, shape, dtype, initializer, regularizer, trainable, collections,
        validate_shape=validate_shape, partitioner=partitioner,  # hook: partitioned vars
        use_resource=use_resource, constraint=constraint, caching_device=caching_device,
        custom_getter=custom_getter, synchronization=synchronization,
        aggregation=aggregation)


def get_local_variable(name: str, shape: Any = None, dtype: Any = None,
                       initializer: Any = None, regularizer: Any = None,
                       trainable: bool = False, collections: Any = None,
                       caching_device: Any = None, partitioner: Any = None,
                       validate_shape: bool = True, use_resource: Any = None,
                       custom_getter: Any = None, constraint: Any = None) -> Variable:
    """`get_variable` of a local variable: never trainable, in LOCAL_VARIABLES (plus
    `collections`), so Savers skip it and `tf.local_variables_initializer()` sets it.

    Example:
        >>> count = tf.get_local_variable("count", [], tf.int64,
        ...                               initializer=tf.zeros_initializer())
    """
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape, dtype, initializer, regularizer, False, collections,
                        caching_device, partitioner, validate_shape, use_resource,
                        custom_getter, constraint)


def create_partitioned_variables(shape: Any, slicing: Any, initializer: Any,
                                 dtype: Any = None, trainable: bool = True,
                                 collections: Any = None, name: str | None = None,
                                 reuse: Any = None) -> list[Variable]:
    """TF 1.x's older way to a partitioned variable: the parts, as a list, of a variable
    of `shape` cut as `slicing` says (one entry per dimension; one of them > 1), named
    "<name>/part_<i>" in the variable scope `name` (default "PartitionedVariable",
    made unique).

    Raises:
        ValueError: `slicing` of another length than `shape`, or a rank-0 shape.

    Example:
        >>> parts = tf.create_partitioned_variables([100, 8], [4, 1],
        ...                                         tf.zeros_initializer(), name="emb")
    """
    dims = as_shape(shape).as_list() if shape is not None else None
    cuts = list(slicing)
    if dims is None or len(dims) != len(cuts):
        raise ValueError(f"The 'shape' and 'slicing' of a partitioned Variable must have the "
                         f"length: shape: {dims}, slicing: {cuts}")
    if not dims:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {dims}")
    with variable_scope(name, "PartitionedVariable", reuse=reuse):
        return list(get_variable("", shape=dims, dtype=dtype, initializer=initializer,
                                 trainable=trainable, collections=collections,
                                 partitioner=lambda **_: cuts))


def no_regularizer(_: Any) -> None:
    """Use as `regularizer=` to turn off a scope's default regularizer."""
    return None


# TF's variable_scope module also holds these.
__all__ = ["AUTO_REUSE", "VariableScope", "variable_scope", "get_variable", "get_local_variable",
           "get_variable_scope", "no_regularizer", "variable_creator_scope",
           "create_partitioned_variables",
           "VariableAggregation", "VariableSynchronization"]
