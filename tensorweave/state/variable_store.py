"""The store of variables `tf.get_variable` made in one graph, by full name.

It creates a variable the first time a name is asked for and, when the scope
reuses, returns it later (checking shape and dtype), as TF 1.x's
`_VariableStore`. `variable_scope.py` keeps one per graph.

Example:
    >>> store = VariableStore()
    >>> w = store.get_variable("w", [2], tf.float32, None, None, True, None, False, True)
"""
from __future__ import annotations

import inspect
import threading
from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph import GraphKeys
from tensorweave.framework.tensor_shape import as_shape
from tensorweave.state import init_ops
from tensorweave.state.variables import Variable


class VariableStore:
    """The variables `get_variable` created in one graph, by full name."""

    def __init__(self) -> None:
        self.vars: dict[str, Variable] = {}
        self.scope_counts: dict[str, int] = {}
        self.lock = threading.RLock()

    def get_variable(self, name: str, shape: Any, dtype: Any, initializer: Any,
                     regularizer: Any, trainable: bool, collections: Any, reuse: Any,
                     validate_shape: bool, use_resource: Any = None,
                     constraint: Any = None, caching_device: Any = None,
                     synchronization: Any = None, aggregation: Any = None) -> Variable:
        dtype = _dt.as_dtype(dtype).base_dtype
        shape = as_shape(shape) if shape is not None else None
        # "<scope>/" is the scope's own variable, named exactly "<scope>" (see Variable).
        op_name, name = name, name.rstrip("/")
        with self.lock:
            found = self.vars.get(name)
            if found is not None:
                if not reuse:
                    raise ValueError(
                        f"Variable {name} already exists, disallowed. Did you mean to set "
                        f"reuse=True or reuse=tf.AUTO_REUSE in VarScope? Originally defined "
                        f"at:\n\n  {found.op.traceback}")
                if shape is not None and not shape.is_compatible_with(found.get_shape()):
                    raise ValueError(f"Trying to share variable {name}, but specified shape "
                                     f"{shape} and found shape {found.get_shape()}.")
                if not dtype.is_compatible_with(found.dtype):
                    raise ValueError(f"Trying to share variable {name}, but specified dtype "
                                     f"{dtype.name} and found dtype "
                                     f"{found.dtype.base_dtype.name}.")
                return found
            if reuse is True:
                raise ValueError(f"Variable {name} does not exist, or was not created with "
                                 "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE "
                                 "in VarScope?")
            var = self._create(op_name, shape, dtype, initializer, trainable, collections,
                               validate_shape, use_resource, constraint, caching_device,
                               synchronization, aggregation)
            self.vars[name] = var
        if regularizer is not None:
            g = var.graph
            with g.colocate_with(var.op), g.name_scope(var.op.name + "/Regularizer/"):
                loss = regularizer(var)
            if loss is not None:
                g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return var

    @staticmethod
    def _create(name: str, shape: Any, dtype: _dt.DType, initializer: Any, trainable: bool,
                collections: Any, validate_shape: bool, use_resource: Any = None,
                constraint: Any = None, caching_device: Any = None,
                synchronization: Any = None, aggregation: Any = None) -> Variable:
        common = dict(trainable=trainable, collections=collections, name=name,
                      validate_shape=validate_shape, use_resource=use_resource,
                      constraint=constraint, caching_device=caching_device,
                      synchronization=synchronization, aggregation=aggregation)
        if initializer is not None and not callable(initializer):
            # A Tensor or value fixes the shape (and dtype) itself, as in TF1.
            if shape is not None:
                raise ValueError(f"If initializer is a constant, do not specify shape "
                                 f"(variable {name}, shape {shape}).")
            return Variable(initializer, **common)
        if initializer is not None and (shape is None or not shape.is_fully_defined()) \
                and _takes_no_arguments(initializer):
            # TF1: a callable with no required arguments is the initial value itself,
            # so a variable of a shape only known at run time can be made from it.
            return Variable(initializer, **common)
        if initializer is None:
            if dtype.is_floating:
                initializer = init_ops.glorot_uniform_initializer()
            elif dtype.is_integer or dtype.is_bool or dtype == _dt.string:
                initializer = init_ops.zeros_initializer()
            else:
                raise ValueError(f"An initializer for variable {name} of {dtype.name} is "
                                 "required")
        if shape is None or not shape.is_fully_defined():
            # TF's two messages: ours names the variable and says what to give.
            raise ValueError(f"Shape of a new variable ({name}) must be fully defined, but "
                             f"instead was {shape}. The initializer passed is not valid. It "
                             "should be a callable with no arguments and the shape should "
                             "not be provided or an instance of `tf.keras.initializers.*' "
                             "and `shape` should be fully defined.")
        dims = shape.as_list()

        def init_val() -> Any:
            if isinstance(initializer, type):  # a class such as tf.zeros_initializer
                return initializer(dtype=dtype)(dims, dtype=dtype)
            return initializer(dims, dtype=dtype, partition_info=None)
        return Variable(init_val, dtype=dtype, **common)


def _takes_no_arguments(fn: Any) -> bool:
    if isinstance(fn, type):
        return False
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in params)


__all__ = ["VariableStore"]
