"""TF 1.x's `ResourceVariable`: what `tf.Variable(..., use_resource=True)`,
`tf.get_variable(..., use_resource=True)` and `tf.variable_scope(..., use_resource=True)`
make, and `tf.enable_resource_variables()` makes the default.

A user sees TF's resource-variable semantics: `dtype` is the value's dtype (`float32`,
never `float32_ref`), `.handle` names the variable's storage, reads are consistent
(a read inside `tf.control_dependencies` is a fresh read ordered after them, so
`assign_add`s chained by control dependencies never lose an update), `sparse_read`
gathers rows, the gradient of a gather is an `IndexedSlices`, and optimizers update
it through their `_resource_apply_*` hooks. Its storage is the same per-device
variable resource a ref `tf.Variable` uses, so Savers, device setters, partitioning
and the ps runtime treat both alike; in a GraphDef its op is a `VariableV2`.

Example:
    >>> v = tf.Variable([1.0, 2.0], use_resource=True, name="v")
    >>> v.dtype, type(v).__name__
    (tf.float32, 'ResourceVariable')
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array import index_ops
from tensorweave.ops.array.gather_nd_ops import gather_nd
from tensorweave.state import variable_meta as _meta
from tensorweave.state.variables import Variable


class ResourceVariable(Variable):
    """A variable with TF 1.x resource-variable semantics (see the module docstring).

    Args:
        initial_value: a Tensor or value convertible to one, or a callable returning
            one (its ops are then colocated with the variable).
        trainable: also add it to TRAINABLE_VARIABLES (default True).
        collections: graph collections to add it to (default GLOBAL_VARIABLES).
        validate_shape: if False, the variable may later take other shapes.
        caching_device: where `value()` (the cached read) lives; default: with the
            variable.
        name: the variable's name (made unique); default "Variable".
        dtype: converts the initial value to this dtype.
        variable_def: a VariableDef naming existing ops to wrap (nothing is created).
        import_scope: the name scope `variable_def`'s names are relative to.
        constraint: a projection applied by optimizers after each dense update.
        shape: the static shape (default: the initial value's).

    Raises:
        ValueError: no initial value (and no variable_def), or a `shape` the initial
            value does not have.

    Example:
        >>> v = tf.Variable(0.0, use_resource=True)
        >>> with tf.control_dependencies([v.assign_add(1.0)]):
        ...     w = v.assign_add(1.0)   # sees the first update
    """

    _is_resource = True

    def __init__(self, initial_value: Any = None, trainable: Any = None,
                 collections: Any = None, validate_shape: bool = True,
                 caching_device: Any = None, name: str | None = None, dtype: Any = None,
                 variable_def: Any = None, import_scope: str | None = None,
                 constraint: Any = None, distribute_strategy: Any = None,
                 synchronization: Any = None, aggregation: Any = None,
                 shape: Any = None) -> None:
        super().__init__(initial_value, trainable=trainable, collections=collections,
                         validate_shape=validate_shape, caching_device=caching_device,
                         name=name, variable_def=variable_def, dtype=dtype,
                         import_scope=import_scope, constraint=constraint,
                         synchronization=synchronization, aggregation=aggregation,
                         shape=shape)

    @property
    def dtype(self) -> _dt.DType:
        """The value's dtype (`tf.float32`), as TF's resource variables report it."""
        return self._variable.dtype.base_dtype

    @property
    def handle(self) -> Tensor:
        """The tensor naming this variable's storage (what update ops take)."""
        return self._variable

    def sparse_read(self, indices: Any, name: str | None = None) -> Tensor:
        """The rows `indices` of the current value; its gradient is an IndexedSlices.

        Example:
            >>> rows = emb.sparse_read([0, 3])
        """
        return index_ops.gather(self, indices, name=name)

    def gather_nd(self, indices: Any, name: str | None = None) -> Tensor:
        """`tf.gather_nd` of the current value.

        Example:
            >>> v.gather_nd([[0, 1], [1, 0]])
        """
        return gather_nd(self.value(), indices, name=name)

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"


class RefVariable(Variable):
    """TF 1.x's reference variable: `RefVariable(...)` makes one whatever the default,
    and `isinstance(v, RefVariable)` holds for every variable that is not a resource
    variable (a plain `tf.Variable` included), as in TF 1.x.

    Example:
        >>> isinstance(tf.Variable(1.0), RefVariable)
        True
    """

    _REF_KIND = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("use_resource", None)
        super().__init__(*args, **kwargs)


def is_resource_variable(var: Any) -> bool:
    """Whether `var` is a resource variable (`tf.Variable(..., use_resource=True)`).

    Example:
        >>> is_resource_variable(tf.Variable(1.0, use_resource=True))
        True
    """
    return bool(getattr(var, "_is_resource", False))


def enable_resource_variables() -> None:
    """`tf.Variable` and `tf.get_variable` make ResourceVariables from now on (TF 1.x).

    Example:
        >>> tf.enable_resource_variables()
    """
    _meta.set_resource_variables_default(True)


def disable_resource_variables() -> None:
    """`tf.Variable` and `tf.get_variable` make ref variables again (the TF 1.x default)."""
    _meta.set_resource_variables_default(False)


def resource_variables_enabled() -> bool:
    """Whether `tf.Variable` makes ResourceVariables by default."""
    return _meta.resource_variables_default()


_meta.register_resource_variable_class(ResourceVariable)

__all__ = ["ResourceVariable", "RefVariable", "is_resource_variable", "enable_resource_variables",
           "disable_resource_variables", "resource_variables_enabled"]
