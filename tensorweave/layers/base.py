"""`tf.layers.Layer`: a Keras layer whose variables live in a variable scope (TF1).

The first call opens `variable_scope(name, default_name=<snake class name>)`, so a
layer's weights are `get_variable`s named `dense/kernel`, `dense_1/kernel`, ... or
`outer/dense/kernel` inside an outer scope; `reuse=True` / `tf.AUTO_REUSE` (on
the layer or the enclosing scope) shares them. Later calls re-enter the same scope.
Regularization losses go to REGULARIZATION_LOSSES and updates (batch
normalization's moving averages) to UPDATE_OPS, as TF 1.x's tf.layers do.

Example:
    >>> with tf.variable_scope("net", reuse=tf.AUTO_REUSE):
    ...     h = tf.layers.dense(x, 10, name="fc")        # net/fc/kernel:0
    ...     h2 = tf.layers.dense(x2, 10, name="fc")      # the same variables
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph import Graph, GraphKeys, get_default_graph
from tensorweave.keras.engine import base_layer
from tensorweave.keras.engine.base_layer import to_snake_case
from tensorweave.keras.engine.node import flatten
from tensorweave.state.variable_scope import VariableScope, get_variable, variable_scope
from tensorweave.state.variables import Variable


class Layer(base_layer.Layer):
    """Base class of the tf.layers classes (Dense, Conv2D, ... in `tf.layers`).

    Args:
        trainable: whether its variables go to TRAINABLE_VARIABLES.
        name: the variable scope's name (default: unique from the class name).
        dtype: the variables' dtype.
    """

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        self._reuse = kwargs.pop("_reuse", None)
        scope = kwargs.pop("_scope", None)
        super().__init__(trainable=trainable, name=name, dtype=dtype, **kwargs)
        self._scope_name: Any = scope if scope is not None else name
        self._scope: VariableScope | None = None

    def _init_set_name(self, name: Any) -> None:
        if isinstance(name, VariableScope):  # tf.layers.dense(x, 2, name=scope)
            name = name.name.split("/")[-1]
        self._base_name = name or to_snake_case(type(self).__name__)
        self._name = self._base_name  # the scope, made unique on first call, may differ

    @property
    def scope_name(self) -> str:
        """The full variable-scope name (known after the first call)."""
        if self._scope is None:
            raise ValueError(f"No name available for layer scope because the layer "
                             f"{self._name!r} has not been used yet. The scope name is "
                             "determined the first time the layer instance is called.")
        return str(self._scope.name)

    def _uses_learning_phase(self) -> bool:
        return False  # tf.layers default training=False; the Keras phase is not consulted

    @contextlib.contextmanager
    def _call_scope(self, g: Graph) -> Iterator[None]:
        if self._scope is None:
            with variable_scope(self._scope_name, default_name=self._base_name,
                                reuse=self._reuse) as scope:
                self._scope = scope
                self._name = scope.name.split("/")[-1]
                yield
            return
        with variable_scope(self._scope, reuse=True, auxiliary_name_scope=False):
            with g.name_scope(self._scope.original_name_scope or None):
                yield

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Calls the layer; its new updates are also added to UPDATE_OPS."""
        before = len(self._updates)
        outputs = super().__call__(inputs, *args, **kwargs)
        g = flatten(outputs)[0].graph
        collection = g.get_collection_ref(GraphKeys.UPDATE_OPS)
        for update in self._updates[before:]:
            if update not in collection:
                collection.append(update)
        return outputs

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Adds losses to `losses` and, as TF1's tf.layers do, to REGULARIZATION_LOSSES."""
        new = flatten(losses)
        super().add_loss(new, inputs)
        g = get_default_graph()
        for loss in new:
            g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)

    def _make_variable(self, name: str, shape: list[int], dtype: _dt.DType, init: Any,
                       trainable: bool, regularizer: Any) -> Variable:
        """A `get_variable` in the layer's scope (shared when the scope reuses)."""
        g = get_default_graph()
        reg_before = len(g.get_collection(GraphKeys.REGULARIZATION_LOSSES))
        var = get_variable(name, shape, dtype=dtype, initializer=init, regularizer=regularizer,
                           trainable=trainable and self.trainable)
        self._losses.extend(g.get_collection(GraphKeys.REGULARIZATION_LOSSES)[reg_before:])
        return var
