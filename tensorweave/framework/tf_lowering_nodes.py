"""The NodeDef builder the lowerings (`tf_lowering*.py`) write TF's ops with.

A lowering replaces one node of ours by several TF nodes: each is named
`<node>/<part>` and placed (device, colocation) as the node it replaces; the one
built with `part=None` keeps the node's name, so its readers are unchanged, and
takes over the node's control inputs. Attrs are written complete (TF's typed
form: a type, a list of types, an int, a bool, a string, a tensor), because the
nodes made here skip `tf_graph_compat`'s attr fixing.

Example:
    >>> b = NodeBuilder(node)
    >>> shape = b.add("shape", "Shape", [node.input[0]], T=DT_FLOAT, out_type=DT_INT32)
    >>> b.add(None, "Reshape", [x, shape], T=DT_FLOAT, Tshape=DT_INT32)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.proto import graph_pb2

# Attr names whose int value is a DataType enum (TF's type attrs the lowerings set).
_TYPE_ATTRS = frozenset({"T", "Tidx", "Tshape", "out_type", "SrcT", "DstT", "index_type",
                         "dtype", "key_dtype", "value_dtype", "Tin", "Tout", "Tkey", "Tval",
                         "internal_type", "Tindices", "Tparams", "Taxis", "Tnumsegments",
                         "out_idx", "Index", "Tperm", "Tdim", "Tkeys", "Tvalues"})


class TypeList(list[int]):
    """A list(type) attr value (DataType enums), told apart from a list of ints."""


def set_attr(attr: Any, key: str, v: Any) -> None:
    """Writes python value `v` into `attr[key]` in TF's typed form."""
    if isinstance(v, bool):
        attr[key].b = v
    elif isinstance(v, TypeList):
        attr[key].list.type[:] = list(v)
    elif isinstance(v, int):
        if key in _TYPE_ATTRS:
            attr[key].type = v
        else:
            attr[key].i = v
    elif isinstance(v, float):
        attr[key].f = v
    elif isinstance(v, (str, bytes)):
        attr[key].s = v.encode() if isinstance(v, str) else v
    elif isinstance(v, list):   # list(int)
        attr[key].list.i[:] = [int(x) for x in v]
    elif isinstance(v, graph_pb2.TensorProto):
        attr[key].tensor.CopyFrom(v)
    else:
        raise TypeError(f"Lowering attr {key}={v!r}: no TF attr form for "
                        f"{type(v).__name__}")


def tensor_proto(value: Any, dtype: int) -> Any:
    """A TensorProto of `value` (scalar or list) of DataType `dtype` (int32/64, bool,
    string)."""
    arr = np.asarray(value, dtype=object if dtype == graph_pb2.DT_STRING else None)
    t = graph_pb2.TensorProto(dtype=dtype)  # type: ignore[arg-type]
    for d in arr.shape:
        t.tensor_shape.dim.add(size=int(d))
    t.tensor_shape.SetInParent()
    flat = arr.reshape(-1).tolist()
    if dtype == graph_pb2.DT_STRING:
        t.string_val.extend(v if isinstance(v, bytes) else str(v).encode() for v in flat)
    elif dtype == graph_pb2.DT_INT64:
        t.int64_val.extend(int(v) for v in flat)
    elif dtype == graph_pb2.DT_INT32:
        t.int_val.extend(int(v) for v in flat)
    elif dtype == graph_pb2.DT_BOOL:
        t.bool_val.extend(bool(v) for v in flat)
    else:
        raise TypeError(f"tensor_proto: DataType {dtype} is not one the lowerings write")
    return t


class NodeBuilder:
    """Nodes named `<node>/<part>` on the node's device; the last keeps its name."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self.nodes: list[Any] = []
        self.ctrl = [i for i in node.input if i.startswith("^")]

    def add(self, part: str | None, op: str, inputs: list[str], **attrs: Any) -> str:
        """Adds a node of TF op `op`; returns its name (its output 0)."""
        like = self.node
        n = graph_pb2.NodeDef(name=like.name if part is None else f"{like.name}/{part}", op=op,
                              input=inputs + (self.ctrl if part is None else []),
                              device=like.device)
        if "_class" in like.attr:  # colocation, as the node it replaces
            n.attr["_class"].CopyFrom(like.attr["_class"])
        for key, v in attrs.items():
            if key == "N":
                n.attr[key].i = v
            else:
                set_attr(n.attr, key, v)
        self.nodes.append(n)
        return n.name

    def const(self, part: str, value: Any, dtype: int = graph_pb2.DT_INT32) -> str:
        """A Const of `value` (scalar or list; int32 by default)."""
        return self.add(part, "Const", [], dtype=dtype, value=tensor_proto(value, dtype))


__all__ = ["NodeBuilder", "TypeList", "set_attr", "tensor_proto"]
