"""MetaGraphDef: a graph with its collections, SaverDef and signatures (TF's schema).

Collections are written as TF 1.x writes them: variables as VariableDef bytes
(through the proto functions registered for their collection, see
`register_proto_function`), ops and tensors as a node list of names ("train_op",
"x:0"), strings as bytes, ints as int64s, floats as floats, `Any` protos as an
any_list. A collection holding anything else is left out with a warning, as TF
does. Importing creates the nodes, then refills the collections. Name scopes
(export_scope / import_scope) are stripped and prepended as TF does.

With `tf_compatible=True` the GraphDef is made importable by real TensorFlow
(`tf_graph_compat.to_tensorflow`, ops TF lacks pruned).

Example:
    >>> mg = create_meta_graph_def(graph=graph, saver_def=saver.as_saver_def())
    >>> scope, _ = import_meta_graph_def(mg, tf.Graph(), import_scope="copy")
"""
from __future__ import annotations

import logging
import os
import re
from typing import Any, Callable

from google.protobuf import any_pb2, message, text_format

from tensorweave.base.files import atomic_write
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.graph_import import import_graph_def
from tensorweave.framework.op_list import stripped_op_list_for_graph
from tensorweave.framework.graph_def_writer import _fill_attr
from tensorweave.framework.op_def import REQUIRED, registered_ops
from tensorweave.framework.proto import graph_pb2, meta_graph_pb2, saver_pb2
from tensorweave.framework.versions import GIT_VERSION, VERSION
from tensorweave.framework.tf_op_signatures import SIGNATURES
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework import tf_graph_compat, tf_graph_import_compat

_log = logging.getLogger("tensorweave.framework.meta_graph")

# TF 1.15's version string: real TF's loaders read meta_info_def.tensorflow_version.
TENSORFLOW_VERSION = VERSION
SAVERS = "savers"   # GraphKeys.SAVERS (the graph module is not imported for one name)

_proto_fns: dict[str, tuple[Any, Callable[..., Any], Callable[..., Any]]] = {}
_warned: set[tuple[str, str]] = set()


def register_proto_function(collection_name: str, proto_type: Any = None,
                            to_proto: Callable[..., Any] | None = None,
                            from_proto: Callable[..., Any] | None = None) -> None:
    """How the objects of a collection become protos and back (TF's ops.register_proto_function).

    Args:
        collection_name: e.g. "variables".
        proto_type: the message class (e.g. VariableDef).
        to_proto: fn(obj, export_scope=None) -> proto (or None to skip obj).
        from_proto: fn(proto, import_scope=None) -> obj.
    """
    if to_proto is None or from_proto is None:
        raise ValueError(f"register_proto_function({collection_name!r}) needs to_proto and "
                         "from_proto")
    _proto_fns[collection_name] = (proto_type, to_proto, from_proto)


def strip_name_scope(name: str, export_scope: str | None) -> str:
    """`name` without the leading `export_scope/` (also after "^" and "loc:@"), as TF's.

    Example:
        >>> strip_name_scope("^hidden1/w", "hidden1")
        '^w'
    """
    if not export_scope:
        return name
    scope = export_scope[:-1] if export_scope.endswith("/") else export_scope
    return re.sub(r"([\^]|loc:@|^)" + re.escape(scope) + r"[\/]+(.*)", r"\1\2", name, count=1)


def prepend_name_scope(name: str, import_scope: str | None) -> str:
    """`import_scope/name` (after a leading "^" or "loc:@"), as TF's.

    Example:
        >>> prepend_name_scope("loc:@w", "new")
        'loc:@new/w'
    """
    if not import_scope:
        return name
    scope = import_scope[:-1] if import_scope.endswith("/") else import_scope
    return re.sub(r"([\^]|loc:@|^)(.*)", lambda m: f"{m.group(1)}{scope}/{m.group(2)}", name,
                  count=1)


def _node_name(x: Any) -> str | None:
    if isinstance(x, (Tensor, Operation)):
        return x.name
    elem = getattr(x, "_as_graph_element", None)
    return elem().name if callable(elem) else None


def should_include_node(node: Any, export_scope: str | None, exclude_nodes: Any) -> bool:
    """Whether a node (or its name) belongs in an export of `export_scope` (as TF's)."""
    name: Any = node if isinstance(node, str) else getattr(node, "name", None)
    if not isinstance(name, str):
        return True   # an object without a node name: kept, as TF does
    if exclude_nodes and name in exclude_nodes:
        return False
    return name.startswith(UNBOUND_INPUT_PREFIX) or not export_scope or \
        name.startswith(export_scope)


UNBOUND_INPUT_PREFIX = "$unbound_inputs_"


def add_collection_def(meta_graph_def: Any, key: str, graph: Any = None,
                       export_scope: str | None = None, exclude_nodes: Any = None,
                       override_contents: list[Any] | None = None) -> None:
    """Adds collection `key` of `graph` to `meta_graph_def` (TF's meta_graph.add_collection_def).

    Values become what TF writes: protos (through `register_proto_function`),
    node names (scope stripped), bytes, int64s, floats or `Any`s. A collection
    whose items have no such form, or are of mixed kinds, is left out with a
    warning, as TF does.
    """
    if not isinstance(key, str) and not isinstance(key, bytes):
        _log.warning("Only collections with string type keys will be serialized. This key "
                     "has %s", type(key))
        return
    key = key.decode() if isinstance(key, bytes) else key
    graph = graph if graph is not None else get_default_graph()
    values = override_contents if override_contents is not None else [
        v for v in graph.get_collection(key)
        if should_include_node(v, export_scope, exclude_nodes)]
    _add_collection(meta_graph_def, key, values, None, export_scope)


def _add_collection(mg: Any, key: str, values: list[Any], keep: set[str] | None,
                    export_scope: str | None = None) -> None:
    if not values:
        return
    col = meta_graph_pb2.CollectionDef()
    if key in _proto_fns:
        _ptype, to_proto, _ = _proto_fns[key]
        # Already protos (clear_extraneous_savers' SaverDef) are written as they are.
        protos = [p for p in (v if isinstance(v, _ptype) else to_proto(v, export_scope=export_scope)
                              for v in values) if p is not None]
        if keep is not None:   # a SaverDef whose nodes were pruned goes too
            protos = [p for p in protos if not getattr(p, "restore_op_name", "") or
                      p.restore_op_name in keep]
        if not protos:
            return
        col.bytes_list.value.extend(p.SerializeToString() for p in protos)
    elif all(isinstance(v, (Tensor, Operation)) for v in values):
        col.node_list.value.extend(strip_name_scope(v.name, export_scope) for v in values
                                   if keep is None or v.name.split(":")[0] in keep)
    elif all(isinstance(v, (str, bytes)) for v in values):
        col.bytes_list.value.extend(v.encode() if isinstance(v, str) else v for v in values)
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        col.int64_list.value.extend(values)
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        if not all(isinstance(v, float) for v in values):
            _warn_collection(key, "a mix of int and float")
            return
        col.float_list.value.extend(values)
    elif all(isinstance(v, any_pb2.Any) for v in values):
        col.any_list.value.extend(values)
    elif all(isinstance(getattr(v, "name", None), str) for v in values):
        # As TF: anything else with a graph name (a Variable outside the variable
        # collections, ...) is listed by name, and reads back as that graph element.
        col.node_list.value.extend(strip_name_scope(v.name, export_scope) for v in values
                                   if keep is None or v.name.split(":")[0] in keep)
    else:
        _warn_collection(key, ", ".join(sorted({type(v).__name__ for v in values})))
        return
    mg.collection_def[key].CopyFrom(col)


def _warn_collection(key: str, kinds: str) -> None:
    if (key, kinds) not in _warned:   # once: a Saver exports at every checkpoint
        _warned.add((key, kinds))
        _log.warning("Collection %r holds %s objects, which have no MetaGraphDef form; "
                     "it is left out of exported meta graphs.", key, kinds)


def create_meta_graph_def(meta_info_def: Any = None, graph_def: Any = None,
                          saver_def: Any = None, collection_list: list[str] | None = None,
                          graph: Any = None, export_scope: str | None = None,
                          exclude_nodes: Any = None, clear_extraneous_savers: bool = False,
                          strip_default_attrs: bool = False, *, clear_devices: bool = False,
                          tf_compatible: bool = False, keep_nodes: set[str] | None = None
                          ) -> Any:
    """The MetaGraphDef of `graph` (TF's meta_graph.create_meta_graph_def).

    Args:
        meta_info_def: a MetaInfoDef to start from (versions are filled in).
        graph_def: the GraphDef to record (default `graph.as_graph_def(add_shapes=True)`).
        saver_def: a SaverDef to record (names of its filename/save/restore nodes).
        collection_list: collections to export (default all).
        graph: the Graph (default the default graph).
        export_scope: only collection items under this name scope, names stripped of it.
        exclude_nodes: nodes or node names left out of every collection.
        clear_extraneous_savers: the SAVERS collection holds only `saver_def`.
        strip_default_attrs: leave out attrs that hold their op's default value.
        clear_devices: (tensorweave) leave device placements out.
        tf_compatible: (tensorweave) make the GraphDef importable by real TensorFlow,
            pruning nodes of ops it lacks (and their dependents); `keep_nodes` must survive.

    Returns:
        A `MetaGraphDef` proto; `meta_info_def.stripped_op_list` lists the OpDefs
        of the ops it uses.

    Raises:
        TypeError: if an argument is not of its proto type.
        ValueError: if `tf_compatible` and a kept node needs an op TF lacks.

    Example:
        >>> mg = create_meta_graph_def(saver_def=saver.saver_def)
        >>> mg.meta_info_def.tensorflow_version
        '1.15.0'
    """
    for arg, want, what in ((meta_info_def, meta_graph_pb2.MetaGraphDef.MetaInfoDef,
                             "meta_info_def"), (graph_def, graph_pb2.GraphDef, "graph_def"),
                            (saver_def, saver_pb2.SaverDef, "saver_def")):
        if arg is not None and not isinstance(arg, want):
            raise TypeError(f"{what} must be of type {want.__name__}, not "
                            f"{type(arg).__name__}")
    graph = graph if graph is not None else get_default_graph()
    mg = meta_graph_pb2.MetaGraphDef()
    if meta_info_def is not None:
        mg.meta_info_def.CopyFrom(meta_info_def)
    mg.meta_info_def.tensorflow_version = TENSORFLOW_VERSION
    mg.meta_info_def.tensorflow_git_version = GIT_VERSION
    gd = graph_def if graph_def is not None else graph.as_graph_def(add_shapes=True)
    kept: set[str] | None = None
    if tf_compatible:
        gd, dropped = tf_graph_compat.to_tensorflow(graph, gd, prune_unknown=True,
                                                    keep=keep_nodes)
        if dropped:
            _log.info("Left out of the TensorFlow-format graph (ops TF lacks, and what "
                      "depends on them): %s", dropped)
        kept = {n.name for n in gd.node}
    if clear_devices:
        gd = graph_pb2.GraphDef.FromString(gd.SerializeToString())
        for n in gd.node:
            n.device = ""
    mg.graph_def.CopyFrom(gd)
    if not mg.meta_info_def.stripped_op_list.op:
        mg.meta_info_def.stripped_op_list.CopyFrom(stripped_op_list_for_graph(mg.graph_def))
    if strip_default_attrs:
        _strip_default_attrs(mg.graph_def, tf_compatible)
        mg.meta_info_def.stripped_default_attrs = True
    if saver_def is not None:
        mg.saver_def.CopyFrom(saver_def)
    keys = collection_list if collection_list is not None else graph.get_all_collection_keys()
    for key in keys:
        if clear_extraneous_savers and key == SAVERS:
            if saver_def is not None:
                _add_collection(mg, key, [saver_def], kept)
            continue
        if not isinstance(key, (str, bytes)):
            continue
        values = [v for v in graph.get_collection(key)
                  if should_include_node(v, export_scope, exclude_nodes) and
                  (kept is None or (_node_name(v) or "").split(":")[0] in kept
                   or _node_name(v) is None)]
        _add_collection(mg, key.decode() if isinstance(key, bytes) else key, values, kept,
                        export_scope)
    return mg


def _strip_default_attrs(gd: Any, tf_compatible: bool) -> None:
    """Removes attrs holding their op's default value (importers fill defaults back in).

    Only attrs whose default both we and (for TF-format graphs) TensorFlow define.
    """
    ops = registered_ops()
    for node in gd.node:
        op_def = ops.get(node.op)
        if op_def is None:
            continue
        tf_attrs = SIGNATURES.get(node.op, (None, None, {}))[2]
        for key in list(node.attr):
            default = op_def.attrs.get(key, REQUIRED)
            if default is REQUIRED or (tf_compatible and not tf_attrs.get(key, ("", False))[1]):
                continue
            want = graph_pb2.AttrValue()
            if _fill_attr(want, default, key, {}) and want == node.attr[key]:
                del node.attr[key]


def import_meta_graph_def(meta_graph_def: Any, graph: Any, import_scope: str | None = None,
                          input_map: dict[str, Any] | None = None,
                          clear_devices: bool = False, stand_ins: bool = False,
                          restore_collections_predicate: Callable[[str], bool] | None = None,
                          return_elements: list[str] | None = None) -> tuple[str, Any]:
    """Adds the graph of `meta_graph_def` to `graph` and refills its collections.

    Names are prefixed as TF does: by `import_scope` (made unique, under the
    current name scope), or with none given by the current name scope itself.
    TF-written graphs are accepted (their TF-only attrs are dropped first, resource
    variables read as reference variables). With `stand_ins`, nodes of ops we lack
    are dropped or replaced by placeholders (see `tf_graph_compat.from_tensorflow`).

    Returns:
        (the name scope the nodes were imported under, "" for none; the imported
        `return_elements` or None).

    Raises:
        ValueError: if a node's op is not registered here (naming node and op).
    """
    gd = tf_graph_import_compat.from_tensorflow(meta_graph_def.graph_def, stand_ins=stand_ins)
    if clear_devices:
        for n in gd.node:
            n.device = ""
    scope = graph.unique_name(import_scope or "", mark_as_used=False)
    with graph.as_default():
        returned = import_graph_def(gd, input_map=input_map, return_elements=return_elements,
                                    name=import_scope or (scope if scope else ""))
    scope = scope.rstrip("/")
    prefix = f"{scope}/" if scope else ""
    made: dict[bytes, Any] = {}   # one object per variable across its collections
    for key in sorted(meta_graph_def.collection_def):
        if restore_collections_predicate is not None and \
                not restore_collections_predicate(key):
            continue
        try:
            with graph.as_default():   # from_proto functions look names up there
                _restore_collection(graph, key, meta_graph_def.collection_def[key], prefix,
                                    scope or None, made)
        except (KeyError, ValueError) as e:
            if not stand_ins:
                raise
            # A node it names was left out (an op we lack): serving does not need it.
            _log.warning("Collection %r is not restored: %s", key, e)
    return scope, returned


def _restore_collection(graph: Any, key: str, col: Any, prefix: str,
                        import_scope: str | None, made: dict[bytes, Any]) -> None:
    kind = col.WhichOneof("kind")
    if kind == "node_list":
        for name in col.node_list.value:
            graph.add_to_collection(key, graph.as_graph_element(prepend_name_scope(name, prefix)))
    elif kind == "bytes_list":
        if key in _proto_fns:
            ptype, _, from_proto = _proto_fns[key]
            for raw in col.bytes_list.value:
                if raw not in made:
                    made[raw] = from_proto(ptype.FromString(raw), import_scope=import_scope)
                graph.add_to_collection(key, made[raw])
        else:
            for raw in col.bytes_list.value:
                graph.add_to_collection(key, raw)
    elif kind == "int64_list":
        for v in col.int64_list.value:
            graph.add_to_collection(key, int(v))
    elif kind == "float_list":
        for v in col.float_list.value:
            graph.add_to_collection(key, float(v))
    elif kind == "any_list":
        for v in col.any_list.value:
            graph.add_to_collection(key, v)
    else:
        _log.warning("Collection %r of the meta graph is of kind %s, which is not read; "
                     "it is left empty.", key, kind)


def write_meta_graph(meta_graph_def: Any, filename: str, as_text: bool = False) -> str:
    """Writes a MetaGraphDef to `filename` (binary, or text format if `as_text`)."""
    # Atomic (temporary name, fsync, rename): a failed write leaves no partial .meta.
    atomic_write(filename, text_format.MessageToString(meta_graph_def) if as_text
                 else meta_graph_def.SerializeToString(), make_dirs=True)
    return filename


def read_meta_graph_file(filename: str) -> Any:
    """The MetaGraphDef in `filename` (binary or text format).

    Raises:
        IOError: if the file does not exist, or holds neither form of a MetaGraphDef
            ("Cannot parse file", as TF).

    Example:
        >>> read_meta_graph_file("/tmp/train/model.ckpt-100.meta").saver_def.restore_op_name
    """
    if not os.path.exists(filename):
        raise OSError(f"File {filename} does not exist.")
    with open(filename, "rb") as f:
        raw = f.read()
    mg = meta_graph_pb2.MetaGraphDef()
    try:
        mg.ParseFromString(raw)
        return mg
    except message.DecodeError:
        pass
    try:
        text_format.Merge(raw.decode("utf-8"), mg)
    except (UnicodeDecodeError, text_format.ParseError) as e:
        raise OSError(f"Cannot parse file {filename}: {e}. It holds neither form (binary or "
                      "text) of a MetaGraphDef.") from None
    return mg


__all__ = ["add_collection_def", "create_meta_graph_def", "import_meta_graph_def",
           "prepend_name_scope", "read_meta_graph_file", "register_proto_function",
           "strip_name_scope", "write_meta_graph"]
