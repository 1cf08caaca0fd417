"""`tf.make_template`: a function whose `get_variable` calls share variables across calls.

The first call creates the variables in the template's variable scope; every later
call re-enters that scope with reuse, so e.g. a generator applied to two inputs
uses one set of weights. A later call that creates a *trainable* variable
(`tf.Variable` where `tf.get_variable` was meant) is an error naming it, as in
TF 1.x, since its weights would silently not be shared.

Example:
    >>> def dense(x, units):
    ...     w = tf.get_variable("w", [x.shape[1], units])
    ...     return tf.matmul(x, w)
    >>> layer = tf.make_template("dense", dense, units=8)
    >>> a, b = layer(x1), layer(x2)   # one "dense/w"
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from tensorweave.framework.graph_defaults import GraphKeys, get_collection
from tensorweave.state.variable_scope import VariableScope, variable_scope


class Template:
    """The callable `make_template` returns (see the module docstring)."""

    def __init__(self, name: str, func: Callable[..., Any], create_scope_now: bool = False,
                 unique_name: str | None = None, custom_getter: Any = None) -> None:
        if not name and not unique_name:
            raise ValueError("make_template needs a name (its variable scope's name).")
        self._name = name
        self._func = func
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._scope: VariableScope | None = None
        self._variables_created = False
        if create_scope_now:
            with variable_scope(unique_name, name, custom_getter=custom_getter) as vs:
                self._scope = vs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._scope is None:
            with variable_scope(self._unique_name, self._name,
                                custom_getter=self._custom_getter) as vs:
                self._scope = vs
                return self._call(args, kwargs)
        with variable_scope(self._scope, reuse=True if self._variables_created else None):
            return self._call(args, kwargs)

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        before = len(get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            made = get_collection(GraphKeys.TRAINABLE_VARIABLES)[before:]
            if made:
                raise ValueError(
                    f"Trainable variable created when calling template {self._name!r} "
                    f"after the first time, perhaps you used tf.Variable when you meant "
                    f"tf.get_variable: {[v.name for v in made]}")
        self._variables_created = True
        return result

    @property
    def name(self) -> str:
        return self._name

    @property
    def func(self) -> Callable[..., Any]:
        return self._func

    @property
    def variable_scope(self) -> VariableScope | None:
        return self._scope

    @property
    def variable_scope_name(self) -> str:
        return self._scope.name if self._scope is not None else ""

    def _scoped(self, key: str) -> list[Any]:
        if self._scope is None:
            return []
        return get_collection(key, scope=self._scope.name + "/")

    @property
    def trainable_variables(self) -> list[Any]:
        return self._scoped(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def global_variables(self) -> list[Any]:
        return self._scoped(GraphKeys.GLOBAL_VARIABLES)

    variables = global_variables

    @property
    def local_variables(self) -> list[Any]:
        return self._scoped(GraphKeys.LOCAL_VARIABLES)


def make_template(name_: str, func_: Callable[..., Any], create_scope_now_: bool = False,
                  unique_name_: str | None = None, custom_getter_: Any = None,
                  **kwargs: Any) -> Template:
    """`func_` (with `kwargs` bound) as a Template sharing its variables across calls.

    Example:
        >>> encoder = tf.make_template("encoder", encode_fn, hidden=128)
        >>> z1, z2 = encoder(x1), encoder(x2)
    """
    func = functools.partial(func_, **kwargs) if kwargs else func_
    return Template(name_, func, create_scope_now_, unique_name_, custom_getter_)
