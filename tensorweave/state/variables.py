"""`tf.Variable` and the variable collections and initializers.

A Variable is three ops: the VariableV2 op holding the storage (in its
device's ResourceMgr), an Assign "initializer" and an Identity "read" snapshot;
the latter two are colocated with the variable, so they run on its ps task.

Example:
    >>> w = tf.Variable(tf.zeros([2, 3]), name="w")
    >>> with tf.Session() as sess:
    ...     sess.run(tf.global_variables_initializer())
    ...     sess.run(w).shape
    (2, 3)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import (convert_to_tensor,
                                           register_tensor_conversion_function)
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.tensor import default_session
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.ops.array import core_ops, index_ops
from tensorweave.ops.nn.embedding_ops import gather_rows
from tensorweave.ops.state import scatter_ops, state_ops
from tensorweave.state import variable_policies as _policies
from tensorweave.state.initial_value_guard import (guard_initial_value,
                                                       initialized_value_lookup)
from tensorweave.state.variable_methods import (current_read, install_operators,
                                                    install_update_methods)
from tensorweave.ops.data_flow.count_ops import count_up_to as _count_up_to
from tensorweave.state import variable_def as _variable_def
from tensorweave.framework import meta_graph as _meta_graph
from tensorweave.framework.proto import meta_graph_pb2 as _mg_pb2


# `tf.Variable(..., use_resource=True)` -> ResourceVariable: see variable_meta.py.
from tensorweave.state.variable_meta import (  # noqa: E402
    VariableMeta as _VariableMeta, resource_variable_class)



def _variable_shape(var_name: str, init: Tensor, validate_shape: bool, expected_shape: Any,
                    static_shape: Any) -> TensorShape:
    """The VariableV2's shape: `static_shape` if given, else the initial value's (unknown
    without `validate_shape`); ValueError naming the variable when they disagree."""
    if expected_shape is not None and not init.shape.is_compatible_with(
            as_shape(expected_shape)):
        raise ValueError(f"Variable {var_name}: initial value shape {init.shape} is not "
                         f"compatible with expected_shape {as_shape(expected_shape)}")
    if static_shape is None:
        return init.shape if validate_shape else TensorShape(None)
    static_shape = as_shape(static_shape)
    if not static_shape.is_compatible_with(init.shape):
        raise ValueError(f"Variable {var_name}: initial value shape {init.shape} is "
                         f"not compatible with shape {static_shape}")
    return static_shape


def _collections(collections: Any, trainable: bool) -> list[str]:
    """The collections a variable joins: GLOBAL_VARIABLES by default, and
    TRAINABLE_VARIABLES too when it is trainable."""
    if collections is None:
        collections = [GraphKeys.GLOBAL_VARIABLES]
    collections = [collections] if isinstance(collections, str) else list(collections)
    if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
        collections.append(GraphKeys.TRAINABLE_VARIABLES)
    return collections

class Variable(metaclass=_VariableMeta):
    """A mutable tensor whose value persists across `Session.run` calls.

    `tf.Variable` is TF 1.x's VariableV1: with `use_resource=True` (or after
    `tf.enable_resource_variables()`) it makes a `ResourceVariable`.

    Args:
        initial_value: a Tensor or value convertible to one, or a callable
            returning one (its ops are then colocated with the variable).
        trainable: also add the variable to TRAINABLE_VARIABLES (default: True, or
            False with synchronization ON_READ).
        collections: graph collections to add it to (default GLOBAL_VARIABLES).
        validate_shape: if False, the variable may later take other shapes.
        caching_device: where `value()`, the read other ops use, lives (TF 1.x: e.g.
            the worker, one copy per step); default: with the variable.
        name: the variable's name (made unique); default "Variable".
        variable_def: a VariableDef naming existing ops: wraps them (nothing is
            created), as `Variable.from_proto` does.
        dtype: converts the initial value to this dtype.
        expected_shape: a shape the initial value must be compatible with.
        use_resource: True makes a `ResourceVariable` instead (TF 1.x's VariableV1).
        shape: the variable's static shape (default: the initial value's); with
            `validate_shape=False` it may be partly unknown.

    Raises:
        ValueError: if `initial_value` is None or incompatible with expected_shape
            or `shape`.

    Example:
        >>> v = tf.Variable([1.0, 2.0], name="v")
        >>> v.name
        'v:0'
    """

    __array_priority__ = 100
    _V1_ENTRY = True  # calls of tf.Variable itself may make a ResourceVariable

    def __init__(self, initial_value: Any = None, trainable: Any = None,
                 collections: Any = None, validate_shape: bool = True,
                 caching_device: Any = None, name: str | None = None,
                 variable_def: Any = None, dtype: Any = None,
                 expected_shape: Any = None, import_scope: str | None = None,
                 constraint: Any = None, use_resource: Any = None,
                 synchronization: Any = None, aggregation: Any = None,
                 shape: Any = None) -> None:
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError(f"variable_def and initial_value are mutually exclusive "
                                 f"(variable {variable_def.variable_name!r}).")
            _variable_def.fill_from_proto(self, variable_def, import_scope)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified to create a Variable (name "
                             f"{name!r}).")
        if constraint is not None and not callable(constraint):
            raise ValueError(f"The `constraint` argument of variable {name!r} must be a "
                             f"callable, got {constraint!r}.")
        g = _graph_for(initial_value, name)
        # As TF 1.x's init_scope: a variable made inside control_dependencies does not
        # take those dependencies onto its op, initializer or read.
        with g.as_default(), g.control_dependencies(None):
            self._synchronization, self._aggregation, trainable = _policies.resolve(
                synchronization, aggregation, trainable, name)
            self._build(g, initial_value, trainable,
                        collections, validate_shape, name, dtype, expected_shape, shape,
                        caching_device)
        self._constraint = constraint

    def _build(self, g: Any, initial_value: Any, trainable: bool, collections: Any,
               validate_shape: bool, name: str | None, dtype: Any,
               expected_shape: Any, static_shape: Any = None,
               caching_device: Any = None) -> None:
        # Reserve the name without claiming it, build everything under "<name>/",
        # then create the VariableV2 op with exactly that name at the root scope.
        # A name ending in "/" is a scope's name, taken as is (TF: `tf.variable_scope`'s
        # own variable, e.g. a slot "w/Momentum" made in the scope "w/Momentum").
        exact = name is not None and name.endswith("/")
        var_name = name[:-1] if name is not None and exact else \
            g.unique_name(name or "Variable", mark_as_used=False)
        from_fn = callable(initial_value)
        first_new = len(g.get_operations())
        with g.name_scope(var_name + "/"):
            if from_fn:
                with g.name_scope("Initializer"):
                    init = convert_to_tensor(initial_value(), dtype=dtype,
                                             name="initial_value")
            else:
                init = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
        if init.dtype.is_ref_dtype:
            init = core_ops.identity(init)
        shape = _variable_shape(var_name, init, validate_shape, expected_shape, static_shape)
        with g.name_scope(None):
            self._variable = state_ops.variable_op_v2(
                shape, init.dtype.base_dtype, name=var_name + "/" if exact else var_name)
        vop = self._variable.op
        if from_fn:
            # TF1: an initializer built from a function lives with its variable.
            prefix = var_name + "/Initializer/"
            for op in g.get_operations()[first_new:]:
                if op.name.startswith(prefix):
                    op._set_attr("_class", list(vop.colocation_groups()))
                    op._set_device(vop.device)
        self._initial_value = init
        with g.name_scope(vop.name + "/"), g.colocate_with(vop):
            # TF 1.x: variables the initial value reads count as their initialized_value.
            safe_init = guard_initial_value(init, initialized_value_lookup(g), vop.name)
            self._initializer_op = state_ops.assign(
                self._variable, safe_init, validate_shape=validate_shape, name="Assign").op
            if caching_device is None:
                self._snapshot = g.create_op("Identity", [self._variable],
                                             name="read").outputs[0]
        if caching_device is not None:
            # TF 1.x: the cached read lives on `caching_device` (e.g. the worker), so
            # the ops that use the variable there read one copy per step.
            with g.name_scope(vop.name + "/"), g.device(caching_device):
                self._snapshot = g.create_op("Identity", [self._variable],
                                             name="read").outputs[0]
        self._trainable = bool(trainable)
        g.add_to_collections(_collections(collections, trainable), self)

    # ---- properties --------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def op(self) -> Operation:
        return self._variable.op

    @property
    def graph(self) -> Any:
        return self._variable.graph

    @property
    def device(self) -> str:
        return self._variable.device

    @property
    def dtype(self) -> _dt.DType:
        """The ref dtype of the storage (e.g. float32_ref), as in TF1."""
        return self._variable.dtype

    @property
    def shape(self) -> TensorShape:
        return self._variable.shape

    def get_shape(self) -> TensorShape:
        return self._variable.shape

    def set_shape(self, shape: Any) -> None:
        """Narrows the static shape (of the storage and its read), as TF 1.x's."""
        self._variable.set_shape(shape)
        self._snapshot.set_shape(shape)

    @property
    def initializer(self) -> Operation:
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def synchronization(self) -> Any:
        """The tf.VariableSynchronization the variable was made with."""
        return self._synchronization

    @property
    def aggregation(self) -> Any:
        """The tf.VariableAggregation the variable was made with."""
        return self._aggregation

    @property
    def constraint(self) -> Any:
        return self._constraint

    def value(self) -> Tensor:
        """The "read" snapshot tensor (what the variable converts to)."""
        return self._snapshot

    def read_value(self) -> Tensor:
        """A fresh Identity read of the current value, colocated with the variable."""
        g = self.graph
        with g.name_scope(self.op.name + "/"), g.colocate_with(self.op):
            return g.create_op("Identity", [self._variable], name="Read").outputs[0]

    def _ref(self) -> Tensor:
        return self._variable

    def _as_graph_element(self) -> Tensor:
        return self._variable

    def initialized_value(self) -> Tensor:
        """The current value if initialized, else the initial value (never re-assigns).

        Use it for initial values that depend on other variables.

        Example:
            >>> w2 = tf.Variable(w.initialized_value() * 2.0)
        """
        if self._initial_value is None:
            raise ValueError(f"Variable {self.name} has no initial value (it was read from "
                             "a VariableDef without initial_value_name), so it has no "
                             "initialized_value(); read it after running its initializer.")
        g = self.graph
        with g.name_scope(self.op.name + "/"), g.colocate_with(self.op):
            return g.create_op("InitializedValueOr", [self._variable, self._initial_value],
                               name="initialized_value").outputs[0]

    # ---- updates -----------------------------------------------------------------
    def assign(self, value: Any, use_locking: bool = False, name: str | None = None,
               read_value: bool = True) -> Any:
        t = state_ops.assign(self._variable, value, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_add(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        t = state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_sub(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        t = state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def count_up_to(self, limit: int) -> Tensor:
        """Increments this integer variable; its old value, or OutOfRangeError at `limit`."""
        return _count_up_to(self._variable, limit)

    def scatter_add(self, sparse_delta: Any, use_locking: bool = False,
                    name: str | None = None) -> Tensor:
        return scatter_ops.scatter_add(self._variable, sparse_delta.indices,
                                     sparse_delta.values, use_locking, name)

    def scatter_sub(self, sparse_delta: Any, use_locking: bool = False,
                    name: str | None = None) -> Tensor:
        return scatter_ops.scatter_sub(self._variable, sparse_delta.indices,
                                     sparse_delta.values, use_locking, name)

    def scatter_update(self, sparse_delta: Any, use_locking: bool = False,
                       name: str | None = None) -> Tensor:
        return scatter_ops.scatter_update(self._variable, sparse_delta.indices,
                                        sparse_delta.values, use_locking, name)

    # ---- session helpers ---------------------------------------------------------
    def eval(self, session: Any = None) -> Any:
        """The variable's current value in `session` (default: the default session)."""
        return self._variable.eval(session=session)

    def load(self, value: Any, session: Any = None) -> None:
        """Stores `value` by running the initializer with its initial value fed.

        Example:
            >>> v.load([3.0, 4.0], sess)
        """
        session = session or default_session()
        if session is None:
            raise ValueError(f"Cannot load a value into {self.name}: no session given and "
                             "no default session is registered.")
        session.run(self._initializer_op, {self._initializer_op.inputs[1]: value})

    # ---- behave like the read tensor ---------------------------------------------
    def __iter__(self) -> Any:
        raise TypeError(f"'Variable' object is not iterable ({self.name}).")

    def __bool__(self) -> bool:
        raise TypeError(f"Using a tf.Variable ({self.name}) as a Python bool is not allowed.")

    def __repr__(self) -> str:
        # TF 1.x shows a ref variable's dtype as such ("float32_ref").
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    def to_proto(self, export_scope: str | None = None) -> Any:
        """This variable's VariableDef (the names of its ops), as meta graphs store it."""
        return _variable_def.variable_to_proto(self, export_scope)

    @staticmethod
    def from_proto(variable_def: Any, import_scope: str | None = None) -> Variable:
        """The Variable over already imported ops named by `variable_def` (a
        ResourceVariable when the VariableDef says `is_resource`)."""
        cls = (resource_variable_class() if variable_def.is_resource else None) or Variable
        return _variable_def.variable_from_proto(cls, variable_def, import_scope)


install_operators(Variable)        # + - * ... and v[...] (with .assign), on its value
install_update_methods(Variable)   # scatter_mul/div/max/min, scatter_nd_*, batch_scatter_update


def _to_tensor(v: Variable, dtype: Any = None, name: str | None = None,
               as_ref: bool = False) -> Tensor:
    if dtype is not None and not _dt.as_dtype(dtype).is_compatible_with(v.dtype):
        raise ValueError(f"Incompatible type conversion requested to type "
                         f"'{_dt.as_dtype(dtype).name}' for variable of type "
                         f"'{v.dtype.name}' ({v.name})")
    return v._ref() if as_ref else current_read(v)


register_tensor_conversion_function(Variable, _to_tensor)
# tf.gather(variable, ids) on axis 0 gathers from the variable's buffer (no snapshot).
index_ops.register_row_gather(Variable, gather_rows)
VariableV1 = Variable


def _graph_for(initial_value: Any, name: str | None = None) -> Any:
    """The graph the variable goes in: its initial value's, or (as TF's init_scope) the
    model graph around any loop or cond body being built."""
    if isinstance(initial_value, (Tensor, Variable)):
        g = initial_value.graph
        if getattr(g, "outer_graph", None) is not None:
            raise ValueError(
                f"Initializer for variable {name or 'Variable'} is from inside a control-flow "
                "construct, such as a loop or conditional. When creating a variable inside "
                "a loop or conditional, use a lambda as the initializer.")
        return g
    g = get_default_graph()
    while getattr(g, "outer_graph", None) is not None:
        g = g.outer_graph
    return g


# The collection getters live in variable_collections.py; TF's module has them here.
from tensorweave.state.variable_collections import (  # noqa: E402
    all_variables, global_variables, local_variables, model_variables,
    moving_average_variables, trainable_variables)


__all__ = ["Variable", "global_variables", "trainable_variables", "local_variables",
           "model_variables", "moving_average_variables", "all_variables"]


# Meta graphs store the variable collections as VariableDefs (TF 1.x's proto functions).
for _key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES,
             GraphKeys.LOCAL_VARIABLES, GraphKeys.MODEL_VARIABLES,
             GraphKeys.MOVING_AVERAGE_VARIABLES, GraphKeys.METRIC_VARIABLES,
             GraphKeys.GLOBAL_STEP):
    _meta_graph.register_proto_function(
        _key, _mg_pb2.VariableDef,
        lambda v, export_scope=None: v.to_proto(export_scope) if isinstance(v, Variable)
        else None, Variable.from_proto)
