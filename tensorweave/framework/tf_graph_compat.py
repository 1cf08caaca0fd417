"""GraphDefs real TensorFlow imports, and TF-written GraphDefs we import.

Our GraphDefs use TF's schema, op names and input order, but a NodeDef carries
only the attrs our ops have. TensorFlow also wants the attrs it derives from
input types (MatMul's "T", SaveV2's "dtypes", Pack's "N", ...) and rejects
attrs it does not know. `to_tensorflow` adds the first from the op's actual
input/output dtypes and drops ours that TF lacks when they hold their default
value (a non-default one has no TF meaning: an error names it).

Our own ops (dropout's mask, the gradients' broadcast helpers, the Saver's
checkpoint ops, crossed and vocabulary columns, ...) are first written as the TF
ops that compute the same (`tf_lowering.py`). Nodes still on an op TF lacks are
left out together with every node that depends on them, when the caller allows
it; an error names each such op type and its nodes when a kept node needs one.

The reverse, TF-written GraphDefs for our importer, is
`tf_graph_import_compat.from_tensorflow`. Signatures come from `tf_op_signatures.json`
(generated from TF's op registry).

Example:
    >>> gd, dropped = to_tensorflow(graph, graph.as_graph_def(), prune_unknown=True)
    >>> open("/tmp/m/graph.pb", "wb").write(gd.SerializeToString())
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.func_graph import FuncGraph
from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tf_lowering import (describe_ops, lower_for_tensorflow,
                                                lower_function_body)
from tensorweave.framework.tf_op_signatures import SIGNATURES



def _dtype_enum(t: Any) -> int:
    return int(t.dtype.base_dtype.as_datatype_enum)


def _set_arg_attrs(attr: Any, arg: tuple[Any, ...], tensors: list[Any], is_list: bool) -> None:
    _name, type_attr, number_attr, type_list_attr, _fixed, _ref = arg
    if type_attr and tensors:
        attr[type_attr].type = _dtype_enum(tensors[0])
    if number_attr and is_list:
        attr[number_attr].i = len(tensors)
    if type_list_attr:
        attr[type_list_attr].list.type[:] = [_dtype_enum(t) for t in tensors]


def _input_groups(op: Any) -> list[tuple[list[Any], bool]]:
    """The op's inputs grouped per its input specs: (tensors, is_list)."""
    groups, pos = [], 0
    for spec in op.op_def.inputs:
        n = int(op._attrs.get(op.op_def.list_attr(spec.name), 0)) if spec.is_list else 1
        groups.append((list(op._inputs[pos:pos + n]), spec.is_list))
        pos += n
    return groups


def _output_counts(args: tuple[Any, ...], node: Any) -> list[int]:
    """How many tensors each TF output arg of `node` holds (list args: from its attrs)."""
    counts = []
    for _name, _ta, number_attr, type_list_attr, _f, _r in args:
        if number_attr:
            counts.append(int(node.attr[number_attr].i))
        elif type_list_attr:
            counts.append(len(node.attr[type_list_attr].list.type))
        else:
            counts.append(1)
    return counts


def _output_groups(args: tuple[Any, ...], node: Any, outputs: list[Any]) -> list[list[Any]]:
    groups, pos = [], 0
    for n in _output_counts(args, node):
        groups.append(list(outputs[pos:pos + n]))
        pos += n
    return groups


def _fix_node(node: Any, op: Any) -> list[str]:
    """Makes one NodeDef TF-valid in place; returns problems (empty when fine)."""
    in_args, out_args, tf_attrs = SIGNATURES[node.op]
    groups = _input_groups(op)
    while len(groups) > len(in_args) and groups[-1][1] and not groups[-1][0]:
        groups.pop()   # an unused trailing list input of ours (While's max_iter)
    if len(groups) != len(in_args):
        return [f"{node.name} ({node.op}): {len(groups)} input groups, TF has {len(in_args)}"]
    for arg, (tensors, is_list) in zip(in_args, groups):
        _set_arg_attrs(node.attr, arg, tensors, is_list)
    for arg, tensors in zip(out_args, _output_groups(out_args, node, op.outputs)):
        if arg[1] and arg[1] not in node.attr:   # an output type not set by the inputs
            _set_arg_attrs(node.attr, arg, tensors, True)
        elif arg[3] and not node.attr[arg[3]].list.type:
            _set_arg_attrs(node.attr, arg, tensors, True)
    problems = []
    ours = op.op_def.attrs
    for key in list(node.attr):
        if key.startswith("_") or key in tf_attrs:
            continue
        default = ours.get(key, op._attrs.get(key))
        if key not in ours or _same(op._attrs.get(key), default):
            del node.attr[key]
        else:
            problems.append(f"{node.name} ({node.op}): attr {key}={op._attrs[key]!r} has no "
                            "TensorFlow equivalent")
    for key, (_kind, has_default) in tf_attrs.items():
        if not has_default and key not in node.attr:
            problems.append(f"{node.name} ({node.op}): TensorFlow needs attr {key!r}")
    return problems


def _func_graphs(graph: Any) -> dict[str, Any]:
    """Every function body (FuncGraph) the graph's ops reference, by name, transitively."""
    found: dict[str, Any] = {}
    stack = [graph]
    while stack:
        for op in stack.pop().get_operations():
            for value in op._attrs.values():
                for v in value if isinstance(value, (list, tuple)) else [value]:
                    if isinstance(v, FuncGraph) and v.name not in found:
                        found[v.name] = v
                        stack.append(v)
    return found


def _called(node: Any) -> list[str]:
    names = []
    for v in node.attr.values():
        if v.WhichOneof("value") == "func":
            names.append(v.func.name)
        elif v.WhichOneof("value") == "list":
            names += [f.name for f in v.list.func]
    return names


def _fix_functions(gd: Any, graph: Any) -> dict[str, list[str]]:
    """Fixes the function bodies' nodes in place; returns function name -> problems."""
    fgs = _func_graphs(graph)
    problems: dict[str, list[str]] = {}
    for fdef in gd.library.function:
        fg = fgs.get(fdef.signature.name)
        if fg is None:
            continue
        lowered = lower_function_body(fdef, fg)   # complete already
        for nd in fdef.node_def:
            if nd.name in lowered and nd.op in SIGNATURES:
                continue
            if nd.name in lowered:   # a TF op whose output names we do not know
                problems.setdefault(fdef.signature.name, []).append(
                    f"{nd.name} ({nd.op}, lowered) cannot be referenced inside a function "
                    "body by tensorweave")
            elif nd.op not in SIGNATURES:
                problems.setdefault(fdef.signature.name, []).append(
                    f"{nd.name} ({nd.op}) has no TensorFlow op")
            else:
                found = _fix_node(nd, fg.get_operation_by_name(nd.name))
                if found:
                    problems.setdefault(fdef.signature.name, []).extend(found)
    for fdef in gd.library.function:
        if fdef.signature.name not in problems:
            _tf_output_refs(fdef)
    for fdef in gd.library.function:   # a call of a broken function breaks its caller
        for nd in fdef.node_def:
            if any(f in problems for f in _called(nd)):
                problems.setdefault(fdef.signature.name, []).append(
                    f"{nd.name} calls a function TensorFlow cannot run")
    return problems


def _tf_output_refs(fdef: Any) -> None:
    """Rewrites our "node:output:<flat index>" references in a function body as TF's
    "node:<output arg name>:<index within that arg>"."""
    nodes = {n.name: n for n in fdef.node_def}

    def ref(r: str) -> str:
        parts = r.split(":")
        if r.startswith("^") or len(parts) != 3 or parts[1] != "output" or \
                parts[0] not in nodes:
            return r
        node = nodes[parts[0]]
        flat = int(parts[2])
        out_args = SIGNATURES[node.op][1]
        for arg, count in zip(out_args, _output_counts(out_args, node)):
            if flat < count:
                return f"{parts[0]}:{arg[0]}:{flat}"
            flat -= count
        return r

    for n in fdef.node_def:
        n.input[:] = [ref(i) for i in n.input]
    for key in list(fdef.ret):
        fdef.ret[key] = ref(fdef.ret[key])


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except ValueError:
        return False


def to_tensorflow(graph: Any, graph_def: Any, prune_unknown: bool = False,
                  keep: set[str] | None = None) -> tuple[Any, list[str]]:
    """A copy of `graph_def` (of `graph`) that real TensorFlow can import.

    Args:
        graph: the Graph the GraphDef was made from (for the ops' dtypes).
        graph_def: its GraphDef (e.g. `graph.as_graph_def()`).
        prune_unknown: leave out nodes whose op TF lacks and every node that
            depends on one; otherwise they stay as they are.
        keep: node names that must survive pruning.

    Returns:
        (the new GraphDef, names of the nodes left out).

    Raises:
        ValueError: naming the nodes, if a kept node depends on an op TF lacks, or
            an attr cannot be expressed in TF's terms.
    """
    out = graph_pb2.GraphDef()
    out.CopyFrom(graph_def)
    lowered = lower_for_tensorflow(out, graph)   # complete already
    unknown = {n.name for n in out.node if n.op not in SIGNATURES and n.name not in lowered}
    problems: dict[str, list[str]] = {}
    bad_functions = _fix_functions(out, graph)
    for node in out.node:
        if node.op in SIGNATURES and node.name not in lowered:
            found = _fix_node(node, graph.get_operation_by_name(node.name))
            found += [f"{node.name} ({node.op}) calls {f}: {bad_functions[f][0]}"
                      for f in _called(node) if f in bad_functions]
            if found:   # same op name as TF's, different interface (e.g. our While)
                problems[node.name] = found
    dropped: set[str] = set()
    if prune_unknown and (unknown or problems):
        # A kept placeholder_with_default (a fed signature input) whose default comes
        # from a dropped op becomes a plain Placeholder instead of being dropped.
        barrier = {n.name for n in out.node if n.op == "PlaceholderWithDefault"} & (keep or set())
        dropped, cut = _dependents(out, unknown | set(problems), barrier)
        for n in out.node:
            if n.name in cut:
                n.op = "Placeholder"
                n.input[:] = [i for i in n.input if i.startswith("^")]
        bad = sorted((keep or set()) & dropped)
        if bad:
            foreign: dict[str, list[str]] = {}
            for n in out.node:
                if n.name in unknown:
                    foreign.setdefault(n.op, []).append(n.name)
            why = describe_ops(foreign) + "".join(
                f"; {p}" for p in [p for ps in problems.values() for p in ps][:5])
            raise ValueError(f"Nodes {bad[:5]} depend on ops TensorFlow does not have, which "
                             f"tensorweave cannot write as TensorFlow ops: {why}. They cannot "
                             "be exported in TensorFlow's format.")
        kept = [n for n in out.node if n.name not in dropped]
        del out.node[:]
        out.node.extend(kept)
        for n in out.node:   # control inputs on dropped nodes go too
            n.input[:] = [i for i in n.input if i.lstrip("^").split(":")[0] not in dropped]
        _drop_uncalled_functions(out)
    elif problems:
        raise ValueError("Cannot write a GraphDef TensorFlow can import:\n  " +
                         "\n  ".join(p for ps in problems.values() for p in ps[:20]))
    return out, sorted(dropped)


def _drop_uncalled_functions(gd: Any) -> None:
    """Removes library functions no kept node calls (directly or through other
    functions): the bodies of pruned nodes, which may hold ops TF lacks."""
    bodies = {f.signature.name: f for f in gd.library.function}
    stack = [f for n in gd.node for f in _called(n)]
    called: set[str] = set()
    while stack:
        name = stack.pop()
        if name in called or name not in bodies:
            continue
        called.add(name)
        stack.extend(f for nd in bodies[name].node_def for f in _called(nd))
    if len(called) < len(bodies):
        kept = [f for f in gd.library.function if f.signature.name in called]
        del gd.library.function[:]
        gd.library.function.extend(kept)


def _dependents(gd: Any, roots: set[str], barrier: set[str]) -> tuple[set[str], set[str]]:
    """(`roots` and every node reading from one of them, the `barrier` nodes reached).

    Barrier nodes stop the spread: they are reported, not included.
    """
    readers: dict[str, list[str]] = {}
    for n in gd.node:
        for i in n.input:
            readers.setdefault(i.lstrip("^").split(":")[0], []).append(n.name)
    seen, stack, cut = set(roots), list(roots), set()
    while stack:
        for r in readers.get(stack.pop(), []):
            if r in barrier:
                cut.add(r)
            elif r not in seen:
                seen.add(r)
                stack.append(r)
    return seen, cut


__all__ = ["to_tensorflow"]
