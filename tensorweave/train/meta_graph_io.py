"""`tf.train.export_meta_graph` and `tf.train.import_meta_graph`.

Example:
    >>> tf.train.export_meta_graph("/tmp/model.meta")
    >>> with tf.Graph().as_default():
    ...     saver = tf.train.import_meta_graph("/tmp/model.meta")
    ...     with tf.Session() as sess:
    ...         saver.restore(sess, "/tmp/model.ckpt")
"""
from __future__ import annotations

import logging
from typing import Any

from tensorweave.framework import meta_graph_scoped as _scoped
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.train.saver import Saver

_log = logging.getLogger("tensorweave.train.meta_graph_io")


def export_meta_graph(filename: str | None = None, meta_info_def: Any = None,
                      graph_def: Any = None, saver_def: Any = None,
                      collection_list: Any = None, as_text: bool = False, graph: Any = None,
                      export_scope: str | None = None, clear_devices: bool = False,
                      clear_extraneous_savers: bool = False,
                      strip_default_attrs: bool = False, save_debug_info: bool = False,
                      **kwargs: Any) -> Any:
    """Returns (and writes, given `filename`) the MetaGraphDef of a graph (TF's).

    Args:
        filename: where to write it (binary, or text with `as_text`).
        meta_info_def: a MetaInfoDef to start from.
        graph_def: the GraphDef to record (default the graph's, with shapes).
        saver_def: a SaverDef to record (none by default, as TF).
        collection_list: names of the collections to export (default all).
        graph: the graph (default the default graph).
        export_scope: export only the nodes under this name scope, names stripped.
        clear_devices: leave device placements out.
        clear_extraneous_savers: leave out Savers' nodes and SaverDefs other than
            `saver_def`'s.
        strip_default_attrs: leave out attrs that hold their op's default value.

    Example:
        >>> mg = tf.train.export_meta_graph("model.meta")
        >>> sorted(mg.collection_def)
        ['trainable_variables', 'variables']
    """
    if kwargs:
        raise TypeError(f"export_meta_graph() got unexpected keyword arguments "
                        f"{sorted(kwargs)}")
    mg, _ = _scoped.export_scoped_meta_graph(
        filename=filename, meta_info_def=meta_info_def, graph_def=graph_def,
        saver_def=saver_def, collection_list=collection_list, as_text=as_text, graph=graph,
        export_scope=export_scope, clear_devices=clear_devices,
        clear_extraneous_savers=clear_extraneous_savers,
        strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)
    return mg


def import_meta_graph(meta_graph_or_file: Any, clear_devices: bool = False,
                      import_scope: str | None = None, *, stand_in_unknown_ops: bool = False,
                      **kwargs: Any) -> Saver | None:
    """Recreates a saved graph in the default graph; returns a Saver for its checkpoints.

    Reads our MetaGraphDefs and those real TensorFlow wrote (for the ops we have).
    Collections come back: variables (as tf.Variable objects), train_op, the
    global step, summaries, update ops, savers, queue runners, string/int/float
    collections.

    Args:
        meta_graph_or_file: a MetaGraphDef or the path of a `.meta` file.
        clear_devices: drop the saved device placements.
        import_scope: prefix for the imported names (made unique); default the
            current name scope.
        graph: (keyword) the graph to import into (default the default graph).
        input_map: (keyword) maps saved tensor names to tensors of this graph.
        restore_collections_predicate: (keyword) fn(collection name) -> bool,
            which collections to refill (default all).
        return_elements: (keyword) names checked to exist after the import.
        stand_in_unknown_ops: (tensorweave) drop nodes of ops tensorweave lacks, or
            replace them by placeholders, instead of failing (the SavedModel
            loader uses it: such nodes typically compute initial values).

    Returns:
        A Saver built from the meta graph's SaverDef; without one, a Saver of the
        variables under `import_scope` if there are any; else None (as TF).

    Raises:
        OSError: if the file does not exist or cannot be parsed.
        ValueError: if the graph uses an op tensorweave does not have (named).

    Example:
        >>> saver = tf.train.import_meta_graph("model.ckpt-100.meta")
        >>> saver.restore(sess, "model.ckpt-100")
        >>> train_op = tf.get_collection("train_op")[0]
    """
    known = {"graph", "input_map", "restore_collections_predicate", "return_elements"}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise TypeError(f"import_meta_graph() got unexpected keyword arguments {unknown}; it "
                        f"takes {sorted(known)} besides its named parameters.")
    mg = _scoped._read(meta_graph_or_file)
    g = kwargs.get("graph") or get_default_graph()
    predicate = kwargs.get("restore_collections_predicate") or (lambda key: True)
    with g.as_default():
        imported, _ = _scoped.import_scoped_meta_graph_with_return_elements(
            mg, clear_devices=clear_devices, graph=g, import_scope=import_scope,
            input_map=kwargs.get("input_map"), restore_collections_predicate=predicate,
            return_elements=kwargs.get("return_elements"), stand_ins=stand_in_unknown_ops)
        return _saver_for(mg, import_scope, imported, g)


def _saver_for(mg: Any, import_scope: str | None, imported: dict[str, Any],
               g: Any) -> Saver | None:
    # As TF's _create_saver_from_imported_meta_graph: the SaverDef's names live under
    # the scope the variables were actually imported to.
    if mg.HasField("saver_def") and mg.saver_def.restore_op_name:
        scope = import_scope
        if imported:
            key, var = next(iter(imported.items()))
            scope = var.name[:-len(key)]
        return Saver(saver_def=mg.saver_def, name=scope or None)
    if g.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=import_scope) or \
            g.get_collection(GraphKeys.SAVEABLE_OBJECTS, scope=import_scope):
        return Saver()
    _log.info("Saver not created because there are no variables in the graph to restore")
    return None


__all__ = ["export_meta_graph", "import_meta_graph"]
