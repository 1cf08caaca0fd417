"""GraphDef writing: `Graph.as_graph_def`, `Operation.node_def` (values to AttrValues).

The protos are wire-compatible with TensorFlow's (same field numbers), so a
GraphDef written here parses as a `tensorflow.GraphDef`. Function bodies of
If/While ops (FuncGraphs) become FunctionDefs in `graph_def.library`.

Example:
    >>> gd = graph_to_graph_def(tf.get_default_graph(), add_shapes=True)
    >>> gd.versions.producer
    134
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph_protos import (SITE_ATTR, _is_shape_key, _is_shapes_key,
                                                _shape_proto, tensor_proto_of)
from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.framework.func_graph import FuncGraph


# TF 1.15's GRAPH_DEF_VERSION: consumers compare against it to reject graphs that
# use newer semantics than they implement.
GRAPH_DEF_VERSION = 134
GRAPH_DEF_VERSION_MIN_CONSUMER = 0


def _fill_attr(attr: Any, value: Any, key: str, functions: dict[str, Any]) -> bool:
    """Writes `value` into AttrValue `attr`; False if the value has no proto form."""
    if value is None:
        if _is_shape_key(key):
            attr.shape.unknown_rank = True
        else:
            attr.SetInParent()  # an AttrValue with no field set stands for None
        return True
    if isinstance(value, (bool, np.bool_)):
        attr.b = bool(value)
    elif isinstance(value, (int, np.integer)):
        attr.i = int(value)
    elif isinstance(value, (float, np.floating)):
        attr.f = float(value)
    elif isinstance(value, str):
        attr.s = value.encode("utf-8")
    elif isinstance(value, bytes):
        attr.s = value
    elif isinstance(value, _dt.DType):
        attr.type = value.as_datatype_enum
    elif isinstance(value, TensorShape):
        _shape_proto(value, attr.shape)
    elif isinstance(value, np.ndarray):
        attr.tensor.CopyFrom(tensor_proto_of(value))
    elif isinstance(value, FuncGraph):
        _add_function(value, functions)
        attr.func.name = value.name
    elif isinstance(value, (list, tuple)):
        return _fill_list_attr(attr, list(value), key, functions)
    else:
        return False
    return True


def _fill_list_attr(attr: Any, values: list[Any], key: str, functions: dict[str, Any]) -> bool:
    if _is_shape_key(key) and all(v is None or isinstance(v, (int, np.integer))
                                  for v in values):
        _shape_proto(values, attr.shape)  # one shape given as a list of dims
        return True
    lst = attr.list
    attr.list.SetInParent()
    if not values:
        return True
    if _is_shapes_key(key) and all(v is None or isinstance(v, (list, tuple, TensorShape))
                                   for v in values):
        for v in values:
            _shape_proto(v, lst.shape.add())
        return True
    first = values[0]
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        lst.b.extend(bool(v) for v in values)
    elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        lst.i.extend(int(v) for v in values)
    elif all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
        lst.f.extend(float(v) for v in values)
    elif all(isinstance(v, (str, bytes)) for v in values):
        lst.s.extend(v.encode("utf-8") if isinstance(v, str) else v for v in values)
    elif all(isinstance(v, _dt.DType) for v in values):
        lst.type.extend(v.as_datatype_enum for v in values)
    elif all(isinstance(v, TensorShape) for v in values):
        for v in values:
            _shape_proto(v, lst.shape.add())
    elif all(isinstance(v, np.ndarray) for v in values):
        for v in values:
            lst.tensor.add().CopyFrom(tensor_proto_of(v))
    elif all(isinstance(v, FuncGraph) for v in values):
        for v in values:
            _add_function(v, functions)
            lst.func.add(name=v.name)
    else:
        del first
        return False
    return True


def _input_name(t: Tensor) -> str:
    return t.op.name if t.value_index == 0 else f"{t.op.name}:{t.value_index}"


def _fill_node(node: Any, op: Operation, functions: dict[str, Any], add_shapes: bool,
               input_name: Any = _input_name, add_sites: bool = False) -> None:
    node.name = op.name
    node.op = op.type
    if op.device:
        node.device = op.device
    node.input.extend(input_name(t) for t in op._inputs)
    node.input.extend(f"^{c.name}" for c in op._control_inputs)
    for key, value in op._attrs.items():
        if not _fill_attr(node.attr[key], value, key, functions):
            del node.attr[key]
            _warn_once(op, key, value)
    if add_sites:
        node.attr[SITE_ATTR].s = op.traceback.encode()
    if add_shapes and op._outputs:
        shapes = node.attr["_output_shapes"].list
        for t in op._outputs:
            _shape_proto(t.shape, shapes.shape.add())


_warned: set[tuple[str, str]] = set()


def _warn_once(op: Operation, key: str, value: Any) -> None:
    if (op.type, key) not in _warned:
        _warned.add((op.type, key))
        print(f"tensorweave: attr {key!r} of op {op.name!r} ({op.type}) holds a "
              f"{type(value).__name__}, which has no GraphDef form; it is left out.",
              file=sys.stderr)


def node_def_of(op: Operation) -> Any:
    """The NodeDef of one op (inputs as "name", "name:1", "^ctrl").

    Example:
        >>> tf.identity(x, name="y").op.node_def.input
        ['x']
    """
    node = graph_pb2.NodeDef()
    _fill_node(node, op, {}, add_shapes=False)
    return node


def graph_to_graph_def(graph: Any, add_shapes: bool = False, add_sites: bool = False) -> Any:
    """The GraphDef of `graph`: nodes in creation order, function bodies in the library.

    Args:
        graph: a Graph.
        add_shapes: also record each node's output shapes in `_output_shapes`.
        add_sites: also record where each op was created (`_tw_site`), for a graph
            sent to another task, whose errors should name the user's line.

    Example:
        >>> gd = graph_to_graph_def(tf.get_default_graph(), add_shapes=True)
        >>> gd.versions.producer
        134
    """
    gd = graph_pb2.GraphDef()
    gd.versions.producer = GRAPH_DEF_VERSION
    gd.versions.min_consumer = GRAPH_DEF_VERSION_MIN_CONSUMER
    functions: dict[str, Any] = {}
    for op in graph.get_operations():
        _fill_node(gd.node.add(), op, functions, add_shapes, add_sites=add_sites)
    for name in sorted(functions):
        gd.library.function.add().CopyFrom(functions[name])
    return gd


def _add_function(fg: Any, functions: dict[str, Any]) -> None:
    """Adds `fg` (and the functions it calls) to `functions` as FunctionDefs."""
    if fg.name in functions:
        return
    fdef = graph_pb2.FunctionDef()
    functions[fg.name] = fdef  # placed first: a recursive reference stops here
    fdef.signature.name = fg.name
    arg_names: dict[Tensor, str] = {}
    for t in fg.inputs:
        arg = fdef.signature.input_arg.add(name=t.op.name, type=t.dtype.base_dtype
                                           .as_datatype_enum)
        arg_names[t] = arg.name
    stateful = False

    def fn_input(t: Tensor) -> str:
        # FunctionDef inputs: an argument by name; a node's output as "node:output:i".
        if t in arg_names:
            return arg_names[t]
        return f"{t.op.name}:output:{t.value_index}"

    input_ops = {t.op for t in fg.inputs}
    for op in fg.get_operations():
        if op in input_ops:
            continue
        stateful = stateful or op.op_def.stateful
        _fill_node(fdef.node_def.add(), op, functions, add_shapes=False, input_name=fn_input)
    for i, t in enumerate(fg.outputs):
        name = f"output_{i}"
        fdef.signature.output_arg.add(name=name, type=t.dtype.base_dtype.as_datatype_enum)
        fdef.ret[name] = fn_input(t)
    fdef.signature.is_stateful = stateful
    # Argument shapes let an importer re-infer the body's shapes as precisely.
    shapes = fdef.attr["_input_shapes"].list
    for t in fg.inputs:
        _shape_proto(t.shape, shapes.shape.add())
