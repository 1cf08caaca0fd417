"""A Variable as a VariableDef proto and back (meta graphs' variable collections).

The VariableDef names the variable's ops, as TF 1.x writes them: "w:0",
"w/Assign", "w/read:0", "w/initial_value:0", trainable, and for a slice of a
partitioned variable its SaveSliceInfoDef. Reading one back wraps the ops
already imported into the graph (nothing is created).

Example:
    >>> proto = variable_to_proto(w)
    >>> proto.variable_name
    'w:0'
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.proto import meta_graph_pb2
from tensorweave.state.partitioned_variables import SaveSliceInfo
from tensorweave.state.variable_policies import VariableAggregation, VariableSynchronization


def _scoped(name: str, scope: str | None, strip: bool) -> str:
    if not scope:
        return name
    if strip:
        return name[len(scope) + 1:] if name.startswith(scope + "/") else name
    return f"{scope}/{name}"


def variable_to_proto(var: Any, export_scope: str | None = None) -> Any:
    """The VariableDef of `var`, or None if it lies outside `export_scope`."""
    if export_scope and not var.name.startswith(export_scope + "/"):
        return None
    p = meta_graph_pb2.VariableDef(
        variable_name=_scoped(var.name, export_scope, True),
        initializer_name=_scoped(var.initializer.name, export_scope, True),
        snapshot_name=_scoped(var.value().name, export_scope, True),
        trainable=bool(var.trainable), is_resource=bool(getattr(var, "_is_resource", False)),
        synchronization=var.synchronization.value, aggregation=var.aggregation.value)
    if var.initial_value is not None:
        p.initial_value_name = _scoped(var.initial_value.name, export_scope, True)
    info = getattr(var, "_save_slice_info", None)
    if info is not None:
        p.save_slice_info_def.full_name = _scoped(info.full_name, export_scope, True)
        p.save_slice_info_def.full_shape.extend(int(d) for d in info.full_shape)
        p.save_slice_info_def.var_offset.extend(int(d) for d in info.var_offset)
        p.save_slice_info_def.var_shape.extend(int(d) for d in info.var_shape)
    return p


def variable_from_proto(cls: Any, proto: Any, import_scope: str | None = None,
                        graph: Any = None) -> Any:
    """A `cls` (tf.Variable) object over the imported ops `proto` names.

    A resource variable's VariableDef (TF 1.15 Keras) names ops the importer has
    turned into their reference-variable equivalents, so it reads the same way.

    Raises:
        KeyError/ValueError: if the graph lacks one of the named ops.
    """
    var = cls.__new__(cls)
    fill_from_proto(var, proto, import_scope, graph)
    return var


def fill_from_proto(var: Any, proto: Any, import_scope: str | None = None,
                    graph: Any = None) -> None:
    """Points the (new, empty) variable object `var` at the ops `proto` names."""
    g = graph or get_default_graph()
    var._variable = g.as_graph_element(_scoped(proto.variable_name, import_scope, False))
    var._initializer_op = g.as_graph_element(_scoped(proto.initializer_name, import_scope,
                                                     False))
    var._snapshot = g.as_graph_element(_scoped(proto.snapshot_name, import_scope, False))
    # A legacy VariableDef (no initial_value_name) has no initial value: TF 1.x's too.
    var._initial_value = g.as_graph_element(_scoped(proto.initial_value_name, import_scope,
                                                    False)) \
        if proto.initial_value_name else None
    var._trainable = bool(proto.trainable)
    var._synchronization = VariableSynchronization(proto.synchronization)
    var._aggregation = VariableAggregation(proto.aggregation)
    var._constraint = None
    if proto.HasField("save_slice_info_def"):
        s = proto.save_slice_info_def
        var._save_slice_info = SaveSliceInfo(_scoped(s.full_name, import_scope, False),
                                              list(s.full_shape), list(s.var_offset),
                                              list(s.var_shape))
