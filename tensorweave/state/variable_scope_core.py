"""`tf.VariableScope` and the per-graph variable-scope state: each graph's store of
variables made by `get_variable` (by full name) and, per thread, the stack of open
variable scopes. `variable_scope.py` opens scopes and holds `tf.get_variable`.

Example:
    >>> tf.get_variable_scope().name
    ''
"""
from __future__ import annotations

import enum
import threading
import weakref
from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.state import partitioned_variables
from tensorweave.state.variable_store import VariableStore as _VariableStore
from tensorweave.state.custom_getters import call_custom_getter


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


class VariableScope:
    """A variable scope's settings: name, reuse, and defaults for `get_variable`.

    Example:
        >>> with tf.variable_scope("foo") as scope:
        ...     scope.reuse_variables()
    """

    def __init__(self, reuse: Any, name: str = "", initializer: Any = None,
                 regularizer: Any = None, caching_device: Any = None,
                 partitioner: Any = None, custom_getter: Any = None,
                 name_scope: str = "", dtype: Any = _dt.float32,
                 use_resource: Any = None, constraint: Any = None) -> None:
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner  # get_variable delegates to partitioned_variables
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = _dt.as_dtype(dtype)
        self._constraint = constraint
        self._use_resource = use_resource

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    dtype = property(lambda self: self._dtype)
    constraint = property(lambda self: self._constraint)
    use_resource = property(lambda self: self._use_resource)

    def reuse_variables(self) -> None:
        """From now on, `get_variable` in this scope returns existing variables."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        self._initializer = initializer

    def set_regularizer(self, regularizer: Any) -> None:
        self._regularizer = regularizer

    def set_dtype(self, dtype: Any) -> None:
        self._dtype = _dt.as_dtype(dtype)

    def set_partitioner(self, partitioner: Any) -> None:
        self._partitioner = partitioner

    def set_caching_device(self, caching_device: Any) -> None:
        self._caching_device = caching_device

    def set_custom_getter(self, custom_getter: Any) -> None:
        self._custom_getter = custom_getter

    def set_use_resource(self, use_resource: Any) -> None:
        """Whether `get_variable` here makes ResourceVariables (None: the default)."""
        self._use_resource = use_resource

    def get_variable(self, name: str, shape: Any = None, dtype: Any = None,
                     initializer: Any = None, regularizer: Any = None,
                     trainable: Any = None, collections: Any = None, **kwargs: Any) -> Any:
        """`get_variable` with this scope's defaults, named "<scope>/<name>".

        An empty `name` names the scope's own variable ("<scope>"), as TF's slot
        creator uses it.
        """
        if not name and not self._name:
            raise ValueError("get_variable needs a name outside any variable scope, got "
                             f"{name!r}.")
        # "<scope>/": the scope's own variable, named exactly "<scope>" (see Variable).
        full = f"{self._name}/{name}" if self._name and name else (name or self._name + "/")
        # Inside a function body (while_loop, cond, scan, map_fn) the variable is made in
        # the model's graph, outside every body (as TF does), and the body captures it:
        # made in the body it would be re-created, and re-initialized, on every call.
        if dtype is not None and initializer is not None and not callable(initializer):
            init_dtype = convert_to_tensor(initializer).dtype.base_dtype
            if init_dtype != _dt.as_dtype(dtype).base_dtype:
                raise ValueError(f"Initializer type '{init_dtype.name}' and explicit dtype "
                                 f"'{_dt.as_dtype(dtype).name}' don't match (variable "
                                 f"{full}).")
        g = _root(get_default_graph())
        custom_getter = kwargs.pop("custom_getter", None) or self._custom_getter
        if custom_getter is not None and not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: "
                             f"{custom_getter!r}")
        if custom_getter is not None:
            return call_custom_getter(self, g, custom_getter, full, shape, dtype,
                                      initializer, regularizer, trainable, collections,
                                      kwargs)
        with g.as_default(), g.control_dependencies(None):
            return self._get_variable(g, full, shape, dtype, initializer, regularizer,
                                      trainable, collections, **kwargs)

    def get_collection(self, name: str) -> list[Any]:
        """The graph collection `name`, filtered to this scope ("<scope>/...")."""
        return get_default_graph().get_collection(name, self._name + "/" if self._name
                                                  else "")

    def global_variables(self) -> list[Any]:
        """The global variables made in this scope."""
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def trainable_variables(self) -> list[Any]:
        """The trainable variables made in this scope."""
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def local_variables(self) -> list[Any]:
        """The local variables made in this scope."""
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

    def _get_variable(self, g: Any, full: str, shape: Any, dtype: Any, initializer: Any,
                      regularizer: Any, trainable: bool, collections: Any,
                      **kwargs: Any) -> Any:
        reuse = self._reuse
        if kwargs.get("reuse") is not None:
            reuse = kwargs["reuse"]
        partitioner = kwargs.get("partitioner") or self._partitioner
        is_scalar = isinstance(shape, (list, tuple)) and not shape
        if partitioner is not None and not is_scalar:
            # Hook (partitioned variables): "name/part_i" shards live in
            # partitioned_variables.py, which keeps this store for the shards.
            with g.name_scope(None):
                return partitioned_variables.get_partitioned_variable(
                    _store(g), full.rstrip("/"), shape, dtype if dtype is not None else self._dtype,
                    initializer if initializer is not None else self._initializer,
                    regularizer if regularizer is not None else self._regularizer,
                    trainable, collections, reuse, kwargs.get("validate_shape", True),
                    partitioner, self._use_resource_for(kwargs),
                    self._constraint_for(kwargs), self._caching_device_for(kwargs))
        found = partitioned_variables.find_partitioned(_store(g), full)
        if found is not None:
            if reuse is True:   # TF: reusing needs no partitioner
                return found
            raise ValueError(f"No partitioner was provided, but a partitioned version of "
                             f"the variable was found: {full}/part_0. Perhaps a variable "
                             "of the same name was already created with partitioning?")
        with g.name_scope(None):  # variable names ignore the current name scope
            return _store(g).get_variable(
                full, shape, dtype if dtype is not None else self._dtype,
                initializer if initializer is not None else self._initializer,
                regularizer if regularizer is not None else self._regularizer,
                trainable, collections, reuse,
                kwargs.get("validate_shape", True), self._use_resource_for(kwargs),
                self._constraint_for(kwargs), self._caching_device_for(kwargs),
                kwargs.get("synchronization"), kwargs.get("aggregation"))

    def _use_resource_for(self, kwargs: dict[str, Any]) -> Any:
        given = kwargs.get("use_resource")
        return self._use_resource if given is None else given

    def _caching_device_for(self, kwargs: dict[str, Any]) -> Any:
        given = kwargs.get("caching_device")
        return self._caching_device if given is None else given

    def _constraint_for(self, kwargs: dict[str, Any]) -> Any:
        given = kwargs.get("constraint")
        return self._constraint if given is None else given


_STATE: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()
_STATE_LOCK = threading.Lock()


def _root(g: Any) -> Any:
    """The graph a function body (FuncGraph) is nested in, outermost; else `g`."""
    while getattr(g, "outer_graph", None) is not None:
        g = g.outer_graph
    return g


def _graph_state(g: Any) -> Any:
    """(variable store, thread-local scope stack) of `g`; a function body shares its
    model graph's, so variable scopes opened around a loop apply inside it."""
    g = _root(g)
    with _STATE_LOCK:
        st = _STATE.get(g)
        if st is None:
            st = _STATE[g] = (_VariableStore(), threading.local())
        return st


def _store(g: Any) -> _VariableStore:
    return _graph_state(g)[0]


def _scope_stack(g: Any) -> list[VariableScope]:
    local = _graph_state(g)[1]
    stack = getattr(local, "stack", None)
    if stack is None:
        stack = local.stack = [VariableScope(False)]
    return stack


def get_variable_scope() -> VariableScope:
    """The innermost open variable scope of the default graph (this thread).

    Example:
        >>> tf.get_variable_scope().name
        ''
    """
    return _scope_stack(get_default_graph())[-1]


__all__ = ["AUTO_REUSE", "VariableScope", "get_variable_scope"]
