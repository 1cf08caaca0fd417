"""GraphDef import: `tf.import_graph_def`.

Ops are created through Graph.create_op, so shapes are inferred again; the
FunctionDefs of `graph_def.library` become FuncGraphs for If/While attrs.

Example:
    >>> with tf.Graph().as_default() as g2:
    ...     (y2,) = tf.import_graph_def(gd, return_elements=["y:0"], name="")
"""
from __future__ import annotations

from typing import Any, Sequence

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph_protos import SITE_ATTR, _parse_attr, _parse_shape
from tensorweave.framework.op_def import get_op_def
from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.func_graph import FuncGraph
from tensorweave.framework.convert import convert_to_tensor


def _split_input(name: str) -> tuple[str, int, bool]:
    """("op", index, is_control) of a NodeDef input string."""
    if name.startswith("^"):
        return name[1:], -1, True
    op_name, sep, idx = name.rpartition(":")
    if sep and idx.isdigit():
        return op_name, int(idx), False
    return name, 0, False


def _map_existing_inputs(graph_def: Any, names: set[str], graph: Any,
                         imap: dict[str, Any]) -> None:
    for node in graph_def.node:
        for inp in node.input:
            src, idx, is_ctrl = _split_input(inp)
            op = graph._ops_by_name.get(src) if src not in names else None
            if op is not None:
                imap["^" + src if is_ctrl else f"{src}:{idx}"] = op if is_ctrl else op.outputs[idx]


def _split_fn_input(name: str) -> tuple[str, int, bool]:
    """Like _split_input for FunctionDef inputs ("arg", "node:output:1", "^node")."""
    if name.startswith("^"):
        return name[1:], -1, True
    parts = name.split(":")
    if len(parts) == 3:
        return parts[0], int(parts[2]), False
    if len(parts) == 2 and parts[1].isdigit():
        return parts[0], int(parts[1]), False
    return name, 0, False


def _topo_nodes(nodes: Sequence[Any], split: Any, what: str) -> list[Any]:
    """NodeDefs ordered so every node follows its (data and control) inputs."""
    by_name = {n.name: n for n in nodes}
    order: list[Any] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done
    for root in nodes:
        if state.get(root.name) == 2:
            continue
        stack = [(root, iter(root.input))]
        state[root.name] = 1
        while stack:
            node, it = stack[-1]
            advanced = False
            for inp in it:
                src = split(inp)[0]
                if src not in by_name:
                    continue
                st = state.get(src)
                if st == 1:
                    raise ValueError(f"{what} has a cycle through node {src!r} (input of "
                                     f"{node.name!r}); imported graphs must be acyclic")
                if st is None:
                    state[src] = 1
                    stack.append((by_name[src], iter(by_name[src].input)))
                    advanced = True
                    break
            if not advanced:
                stack.pop()
                state[node.name] = 2
                order.append(node)
    return order


class _Importer:
    """Creates the ops of NodeDefs in a graph through Graph.create_op."""

    def __init__(self, graph: Any, library: Any, prefix: str) -> None:
        self.graph = graph
        self.fdefs = {f.signature.name: f for f in library.function} if library else {}
        self.funcs: dict[str, Any] = {}
        self.prefix = prefix

    def function(self, name: str) -> Any:
        """The FuncGraph for library function `name` (built on first use)."""
        fg = self.funcs.get(name)
        if fg is not None:
            return fg
        fdef = self.fdefs.get(name)
        if fdef is None:
            existing = getattr(self.graph, "_functions", {}).get(name)
            if existing is not None:
                return existing
            raise ValueError(f"GraphDef references function {name!r}, which is not in its "
                             "library")
        fg = FuncGraph(name, self.graph)
        self.funcs[name] = fg
        with fg.as_default():
            produced: dict[str, Any] = {}
            shapes: list[Any] = [None] * len(fdef.signature.input_arg)
            if "_input_shapes" in fdef.attr:
                shapes = [_parse_shape(s) for s in fdef.attr["_input_shapes"].list.shape]
            for arg, shape in zip(fdef.signature.input_arg, shapes):
                ph = fg.create_op("Placeholder", [], {"dtype": _dt.as_dtype(arg.type),
                                                      "shape": shape}, name=arg.name)
                produced[arg.name] = ph
                fg.inputs.append(ph.outputs[0])
            nodes = _topo_nodes(list(fdef.node_def), _split_fn_input, f"function {name!r}")
            for node in nodes:
                produced[node.name] = self._make_op(fg, node, produced, _split_fn_input, {},
                                                    f"function {name!r}")
            for out in fdef.signature.output_arg:
                ref = fdef.ret[out.name]
                src, idx, _ = _split_fn_input(ref)
                fg.outputs.append(produced[src].outputs[idx])
        fg.structured_outputs = list(fg.outputs)
        return fg

    def _make_op(self, graph: Any, node: Any, produced: dict[str, Operation], split: Any,
                 input_map: dict[str, Any], where: str) -> Operation:
        try:
            op_def = get_op_def(node.op)
        except KeyError:
            raise ValueError(f"Node {node.name!r} in {where} has op type {node.op!r}, which is "
                             "not registered in tensorweave (it may come from a TensorFlow op "
                             "that tensorweave does not implement).") from None
        attrs = {k: _parse_attr(v, k, self.function) for k, v in node.attr.items()
                 if k not in ("_output_shapes", SITE_ATTR)}
        if "_class" in attrs and self.prefix:
            attrs["_class"] = [_prefix_loc(c, self.prefix) for c in attrs["_class"]]
        data: list[Any] = []
        ctrl: list[Operation] = []
        for inp in node.input:
            src, idx, is_ctrl = split(inp)
            if is_ctrl:
                mapped = input_map.get("^" + src)
                if mapped is None:
                    mapped = self._lookup(produced, src, node, where)
                ctrl.append(mapped)
                continue
            key = f"{src}:{idx}"
            mapped = input_map.get(key)
            if mapped is None:
                producer = self._lookup(produced, src, node, where)
                if idx >= len(producer.outputs):
                    raise ValueError(f"Node {node.name!r} in {where} reads output {idx} of "
                                     f"{src!r}, which has {len(producer.outputs)} outputs")
                mapped = producer.outputs[idx]
            data.append(mapped)
        grouped = _group(op_def, data, attrs, node)
        for spec in op_def.inputs:
            if spec.is_list:
                attrs.pop(op_def.list_attr(spec.name), None)
        try:
            op = graph.create_op(node.op, grouped, attrs, name=node.name)
        except (TypeError, ValueError) as e:
            raise type(e)(f"Cannot import node {node.name!r} ({node.op}) in {where}: "
                          f"{e}") from None
        if SITE_ATTR in node.attr:  # made on another task: keep the user's line
            op._traceback = node.attr[SITE_ATTR].s.decode(errors="replace")
        if node.device:
            op._set_device(node.device)
        for c in ctrl:
            op._add_control_input(c)
        return op

    @staticmethod
    def _lookup(produced: dict[str, Operation], src: str, node: Any, where: str) -> Operation:
        op = produced.get(src)
        if op is None:
            raise ValueError(f"Node {node.name!r} in {where} has input {src!r}, which is not "
                             "a node of the GraphDef (and not mapped by input_map)")
        return op


def _prefix_loc(c: Any, prefix: str) -> bytes:
    c = c if isinstance(c, bytes) else str(c).encode()
    if c.startswith(b"loc:@"):
        return b"loc:@" + prefix.encode() + b"/" + c[5:]
    return c


def _group(op_def: Any, data: list[Any], attrs: dict[str, Any], node: Any) -> list[Any]:
    """Flat node inputs regrouped per the op's input specs (list lengths from N attrs)."""
    lists = [s for s in op_def.inputs if s.is_list]
    fixed = len(op_def.inputs) - len(lists)
    grouped: list[Any] = []
    pos = 0
    for spec in op_def.inputs:
        if spec.is_list:
            n = attrs.get(op_def.list_attr(spec.name))
            if n is None:
                if len(lists) != 1:
                    raise ValueError(f"Node {node.name!r} ({node.op}) lacks attr "
                                     f"{op_def.list_attr(spec.name)!r} giving the length of "
                                     f"list input {spec.name!r}")
                n = len(data) - fixed
            grouped.append(data[pos:pos + int(n)])
            pos += int(n)
        else:
            if pos >= len(data):
                raise ValueError(f"Node {node.name!r} ({node.op}) has {len(data)} inputs; op "
                                 f"{node.op} needs input {spec.name!r}")
            grouped.append(data[pos])
            pos += 1
    if pos != len(data):
        raise ValueError(f"Node {node.name!r} ({node.op}) has {len(data)} inputs but op "
                         f"{node.op} takes {pos}")
    return grouped


def _as_graph_def(graph_def: Any) -> Any:
    """Our GraphDef proto from bytes, ours, or another package's (e.g. tensorflow's)
    GraphDef with the same schema."""
    if isinstance(graph_def, (bytes, bytearray)):
        return graph_pb2.GraphDef.FromString(bytes(graph_def))
    if isinstance(graph_def, graph_pb2.GraphDef):
        return graph_def
    if hasattr(graph_def, "SerializeToString"):
        return graph_pb2.GraphDef.FromString(graph_def.SerializeToString())
    raise TypeError(f"graph_def must be a GraphDef proto, got {graph_def!r}")


def _checked_input_map(input_map: dict[str, Any], graph_def: Any, names: set[str]
                       ) -> dict[str, Any]:
    """`input_map` keyed "src:idx" (tensors) or "^src" (ops), each key checked to name
    something of `graph_def`."""
    # As TF: an input_map key may also name an input no node produces (e.g. the
    # "$unbound_inputs_x" of a scoped meta graph), as long as some node reads it.
    read = {_split_input(i)[0] for n in graph_def.node for i in n.input}
    imap: dict[str, Any] = {}
    for key, value in input_map.items():
        if not isinstance(key, str):
            raise TypeError(f"input_map keys must be strings, got {key!r}")
        if key.startswith("^"):
            src = key[1:]
            imap[key] = value.op if isinstance(value, Tensor) else value
        else:
            src, idx, _ = _split_input(key)
            imap[f"{src}:{idx}"] = convert_to_tensor(value)
        if src not in names and src not in read:
            raise ValueError(f"Attempted to map inputs that were not found in graph_def: "
                             f"[{key}]")
    return imap


def import_graph_def(graph_def: Any, input_map: dict[str, Any] | None = None,
                     return_elements: Sequence[str] | None = None, name: str | None = None,
                     op_dict: Any = None, producer_op_list: Any = None, *,
                     resolve_existing: bool = False) -> list[Any] | None:
    """`tf.import_graph_def`: adds the nodes of `graph_def` to the default graph.

    Ops are created through Graph.create_op, so shapes are inferred again.

    Args:
        graph_def: a GraphDef proto (or its serialized bytes).
        input_map: maps input names in `graph_def` ("x:0", "x" for "x:0", "^x")
            to Tensors/Operations of the default graph, replacing those inputs.
        return_elements: names of ops ("x") or tensors ("x:0") to return.
        name: prefix of the imported names (default "import"; "" for none).
        op_dict, producer_op_list: accepted for compatibility; unused.
        resolve_existing: inputs naming ops that are not in `graph_def` but
            already in the default graph refer to those ops (how a master
            extends a session's graph with only the newly added nodes).

    Returns:
        The Operations/Tensors named in `return_elements`, in order, or None.

    Raises:
        ValueError: an unknown op type (naming the node and op), an input_map
            key not in `graph_def`, a return element that does not exist, or a
            node name already taken in the destination graph.

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 2])
        >>> (y,) = tf.import_graph_def(gd, input_map={"input:0": x},
        ...                            return_elements=["output:0"])
    """
    graph_def = _as_graph_def(graph_def)
    graph = get_default_graph()
    names = {n.name for n in graph_def.node}
    imap = _checked_input_map(input_map or {}, graph_def, names)
    if resolve_existing:
        _map_existing_inputs(graph_def, names, graph, imap)
    if return_elements is not None:
        for r in return_elements:
            if _split_input(r)[0] not in names:
                raise ValueError(f"Requested return_element {r!r} not found in graph_def.")
    default_name = "import" if name is None else name
    scope_cm = graph.name_scope(default_name) if default_name else _root_scope(graph)
    with graph.as_default(), scope_cm as scope:
        prefix = scope[:-1] if scope else ""
        taken = [n for n in names if (f"{prefix}/{n}" if prefix else n) in graph._ops_by_name]
        if taken:
            raise ValueError(f"Cannot import graph_def: node names {sorted(taken)[:5]} already "
                             f"exist in the graph under prefix {prefix!r}; pass another name=")
        importer = _Importer(graph, graph_def.library, prefix)
        produced: dict[str, Operation] = {}
        for node in _topo_nodes(list(graph_def.node), _split_input, "graph_def"):
            op = importer._make_op(graph, node, produced, _split_input, imap, "graph_def")
            expected = f"{prefix}/{node.name}" if prefix else node.name
            if op.name != expected:
                raise ValueError(f"Imported node {node.name!r} would be named {op.name!r}, not "
                                 f"{expected!r}: the name is taken in the destination graph")
            produced[node.name] = op
    if return_elements is None:
        return None
    out: list[Any] = []
    for r in return_elements:
        src, idx, _ = _split_input(r)
        op = produced[src]
        out.append(op.outputs[idx] if ":" in r else op)
    return out


class _root_scope:
    """A name scope at the root (name=""): imported names are used as they are."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph

    def __enter__(self) -> str:
        self.cm = self.graph.name_scope(None)
        self.cm.__enter__()
        return ""

    def __exit__(self, *a: Any) -> None:
        self.cm.__exit__(*a)
