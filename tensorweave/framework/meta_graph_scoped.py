"""Meta graphs of one name scope: TF's export/import/copy_scoped_meta_graph.

`export_scoped_meta_graph(export_scope="hidden1")` keeps the nodes under
"hidden1/" with the scope stripped from their names; an input from outside the
scope becomes "$unbound_inputs_<name>" (listed in the "unbound_inputs"
collection), which `import_scoped_meta_graph` must be given through
`input_map`. `clear_extraneous_savers` leaves out the nodes of every Saver but
the one whose SaverDef is exported (as TF finds them: the scopes of save and
restore ops).

Example:
    >>> mg, var_list = export_scoped_meta_graph(export_scope="hidden1")
    >>> new_vars = import_scoped_meta_graph(mg, import_scope="copy")
    >>> sorted(new_vars)
    ['biases:0', 'weights:0']
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable

from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.meta_graph import (
    UNBOUND_INPUT_PREFIX, create_meta_graph_def, import_meta_graph_def,
    read_meta_graph_file, should_include_node, strip_name_scope, write_meta_graph)
from tensorweave.framework.proto import graph_pb2, meta_graph_pb2

# Ops that make a Saver's save and restore (TF's, and ours: SaveShard & co.).
SAVE_AND_RESTORE_OPS = ("SaveV2", "Save", "SaveSlice", "Restore", "RestoreV2", "RestoreSlice",
                        "SaveShard", "SaveShardDelta", "MergeCheckpoint", "RestoreShard")


def _scope_of(name: str) -> str:
    return name.rsplit("/", 1)[0] if "/" in name else ""


def _op_name(tensor_name: str) -> str:
    return tensor_name.lstrip("^").split(":")[0]


def extraneous_saver_nodes(graph_def: Any, saver_def: Any) -> set[str]:
    """Names of the nodes of Savers other than `saver_def`'s (TF's rule: their scopes).

    A Saver's scope is the scope of its save/restore ops; every node under a
    saver scope other than `saver_def`'s is extraneous.
    """
    keep: set[str] = set()
    if saver_def is not None:
        keep = {_scope_of(_op_name(saver_def.save_tensor_name)) + "/",
                _scope_of(_op_name(saver_def.restore_op_name)) + "/"}
    saver_nodes = {n.name for n in graph_def.node if n.op in SAVE_AND_RESTORE_OPS}
    scopes = {_scope_of(n) + "/" for n in saver_nodes if _scope_of(n) not in saver_nodes}
    others = scopes - keep
    return {n.name for n in graph_def.node if any(n.name.startswith(s) for s in others)}


def _scoped_node(node: Any, export_scope: str | None, unbound: list[str],
                 clear_devices: bool) -> Any:
    out = graph_pb2.NodeDef()
    out.CopyFrom(node)
    for i, inp in enumerate(node.input):
        if export_scope and not inp.lstrip("^").startswith(export_scope):
            out.input[i] = re.sub(r"([\^]|^)(.*)", lambda m: m.group(1) + UNBOUND_INPUT_PREFIX +
                                  m.group(2), inp, count=1)
            unbound.append(out.input[i])
        else:
            out.input[i] = strip_name_scope(inp, export_scope)
    out.name = strip_name_scope(node.name, export_scope)
    if "_class" in node.attr:
        locs = [s for s in node.attr["_class"].list.s
                if not export_scope or s.decode().split("@", 1)[-1].startswith(export_scope)]
        del out.attr["_class"].list.s[:]
        out.attr["_class"].list.s.extend(strip_name_scope(s.decode(), export_scope).encode()
                                         for s in locs)
    if node.op in ("Enter", "RefEnter") and "frame_name" in node.attr:
        frame = node.attr["frame_name"].s.decode()
        if not export_scope or frame.startswith(export_scope):
            out.attr["frame_name"].s = strip_name_scope(frame, export_scope).encode()
    if clear_devices:
        out.device = ""
    return out


def export_scoped_meta_graph(filename: str | None = None, graph_def: Any = None,
                             graph: Any = None, export_scope: str | None = None,
                             as_text: bool = False,
                             unbound_inputs_col_name: str | None = "unbound_inputs",
                             clear_devices: bool = False, saver_def: Any = None,
                             clear_extraneous_savers: bool = False,
                             strip_default_attrs: bool = False, save_debug_info: bool = False,
                             **kwargs: Any) -> tuple[Any, dict[str, Any]]:
    """The MetaGraphDef of the nodes under `export_scope`, and its variables (TF's).

    Args:
        filename: where to write it (binary, or text with `as_text`).
        graph_def: the GraphDef to start from (default the graph's, with shapes).
        graph: the Graph (default the default graph).
        export_scope: the name scope to export, stripped from every name; inputs
            from outside it become "$unbound_inputs_<name>".
        unbound_inputs_col_name: the collection listing those inputs (refilled in
            `graph`), or None.
        clear_devices: leave device placements out.
        saver_def: the SaverDef to record.
        clear_extraneous_savers: leave out other Savers' nodes and SaverDefs.
        strip_default_attrs: leave out attrs that hold their op's default value.
        **kwargs: `meta_info_def`, `collection_list` (see `create_meta_graph_def`).

    Returns:
        (the MetaGraphDef, {variable name without the scope: Variable}).

    Example:
        >>> mg, var_list = export_scoped_meta_graph(export_scope="hidden1")
        >>> saver = tf.train.Saver(var_list)
    """
    unknown = sorted(set(kwargs) - {"meta_info_def", "collection_list"})
    if unknown:
        raise TypeError(f"export_scoped_meta_graph() got unexpected keyword arguments {unknown}")
    del save_debug_info   # no debug info file is written (no stack traces are recorded)
    graph = graph if graph is not None else get_default_graph()
    exclude: set[str] | None = None
    if export_scope or clear_extraneous_savers or clear_devices:
        src = graph_def if graph_def is not None else graph.as_graph_def(add_shapes=True)
        if clear_extraneous_savers:
            exclude = extraneous_saver_nodes(src, saver_def)
        new = graph_pb2.GraphDef()
        new.versions.CopyFrom(src.versions)
        new.library.CopyFrom(src.library)
        unbound: list[str] = []
        for node in src.node:
            if should_include_node(node.name, export_scope, exclude):
                new.node.add().CopyFrom(_scoped_node(node, export_scope, unbound, clear_devices))
        graph_def = new
        if unbound_inputs_col_name:
            col = graph.get_collection_ref(unbound_inputs_col_name)
            del col[:]
            col.extend(unbound)
    var_list = {strip_name_scope(v.name, export_scope): v
                for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=export_scope)
                if should_include_node(v, export_scope, exclude)}
    mg = create_meta_graph_def(graph_def=graph_def, graph=graph, export_scope=export_scope,
                               exclude_nodes=exclude,
                               clear_extraneous_savers=clear_extraneous_savers,
                               saver_def=saver_def, strip_default_attrs=strip_default_attrs,
                               **kwargs)
    if filename:
        write_meta_graph(mg, filename, as_text)
    return mg, var_list


def _read(meta_graph_or_file: Any) -> Any:
    if isinstance(meta_graph_or_file, meta_graph_pb2.MetaGraphDef):
        return meta_graph_or_file
    if hasattr(meta_graph_or_file, "SerializeToString"):   # e.g. TensorFlow's own class
        return meta_graph_pb2.MetaGraphDef.FromString(meta_graph_or_file.SerializeToString())
    return read_meta_graph_file(os.fspath(meta_graph_or_file))


def import_scoped_meta_graph_with_return_elements(
        meta_graph_or_file: Any, clear_devices: bool = False, graph: Any = None,
        import_scope: str | None = None, input_map: dict[str, Any] | None = None,
        unbound_inputs_col_name: str | None = "unbound_inputs",
        restore_collections_predicate: Callable[[str], bool] = lambda key: True,
        return_elements: list[str] | None = None, *, stand_ins: bool = False
        ) -> tuple[dict[str, Any], Any]:
    """Imports a (scoped) meta graph into `graph` under `import_scope` (TF's).

    Args:
        meta_graph_or_file: a MetaGraphDef or the path of one.
        clear_devices: drop the saved device placements.
        graph: the destination (default the default graph).
        import_scope: the name scope to import under (made unique); default the
            current name scope.
        input_map: tensors for inputs of the graph, including every
            "$unbound_inputs_<name>" a scoped export left.
        unbound_inputs_col_name: the collection naming the unbound inputs.
        restore_collections_predicate: which collections to refill.
        return_elements: names of ops/tensors of the imported graph to return.
        stand_ins: (tensorweave) replace or drop nodes of ops tensorweave lacks.

    Returns:
        ({variable name without the scope: Variable}, the return elements or None).

    Raises:
        ValueError: if an unbound input is not given in `input_map` (named).

    Example:
        >>> var_list, _ = import_scoped_meta_graph_with_return_elements(
        ...     "/tmp/hidden1.meta", import_scope="new", input_map={"$unbound_inputs_x": x})
    """
    mg = _read(meta_graph_or_file)
    graph = graph if graph is not None else get_default_graph()
    if unbound_inputs_col_name and unbound_inputs_col_name in mg.collection_def:
        col = mg.collection_def[unbound_inputs_col_name]
        kind = col.WhichOneof("kind")
        names = [v.decode() if isinstance(v, bytes) else v for v in getattr(col, kind).value] \
            if kind else []
        if names and (not input_map or sorted(names) != sorted(input_map)):
            missing = [n for n in names if not input_map or n not in input_map]
            raise ValueError(f"Graph contains unbound inputs: {','.join(missing)}. Must "
                             "provide these inputs through input_map.")
    scope, returned = import_meta_graph_def(
        mg, graph, import_scope=import_scope, input_map=input_map, clear_devices=clear_devices,
        stand_ins=stand_ins, restore_collections_predicate=restore_collections_predicate,
        return_elements=return_elements)
    var_list = {strip_name_scope(v.name, scope): v
                for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope or None)}
    return var_list, returned


def import_scoped_meta_graph(meta_graph_or_file: Any, clear_devices: bool = False,
                             graph: Any = None, import_scope: str | None = None,
                             input_map: dict[str, Any] | None = None,
                             unbound_inputs_col_name: str | None = "unbound_inputs",
                             restore_collections_predicate: Callable[[str], bool] = (
                                 lambda key: True)) -> dict[str, Any]:
    """Imports a (scoped) meta graph; returns its variables by unscoped name (TF's).

    See `import_scoped_meta_graph_with_return_elements` for the arguments.

    Example:
        >>> var_list = import_scoped_meta_graph("/tmp/hidden1.meta", import_scope="new",
        ...                                     input_map={"$unbound_inputs_images": x})
    """
    return import_scoped_meta_graph_with_return_elements(
        meta_graph_or_file, clear_devices, graph, import_scope, input_map,
        unbound_inputs_col_name, restore_collections_predicate)[0]


def copy_scoped_meta_graph(from_scope: str, to_scope: str, from_graph: Any = None,
                           to_graph: Any = None) -> dict[str, Any]:
    """Copies the nodes under `from_scope` to `to_scope` (in the same or another graph).

    Returns:
        The copied variables by unscoped name.

    Raises:
        ValueError: if both scopes and graphs are the same.

    Example:
        >>> var_list = copy_scoped_meta_graph("hidden1", "hidden2")
    """
    from_graph = from_graph if from_graph is not None else get_default_graph()
    to_graph = to_graph if to_graph is not None else get_default_graph()
    if from_graph is to_graph and from_scope == to_scope:
        raise ValueError(f"'from_scope' and 'to_scope' need to be different when performing "
                         f"copy in the same graph (both are {from_scope!r}).")
    mg, _ = export_scoped_meta_graph(export_scope=from_scope, graph=from_graph)
    return import_scoped_meta_graph(mg, graph=to_graph, import_scope=to_scope)


__all__ = ["copy_scoped_meta_graph", "export_scoped_meta_graph", "extraneous_saver_nodes",
           "import_scoped_meta_graph", "import_scoped_meta_graph_with_return_elements"]
