"""Graph and meta-graph export under TF's names: `write_graph` and TF's `meta_graph` API.

The GraphDef writer itself is `graph_def_writer` (`Graph.as_graph_def`,
`Operation.node_def`); MetaGraphDefs are built by `meta_graph` and, for name
scopes, `meta_graph_scoped`; op lists by `op_list`. This module gathers the
functions TF 1.x offers in `tensorflow.python.framework.meta_graph` (`create_meta_graph_def`,
`export_scoped_meta_graph`, `import_scoped_meta_graph`, `copy_scoped_meta_graph`,
`stripped_op_list_for_graph`, ...) and `tf.train.write_graph`.

Example:
    >>> mg, var_list = export_scoped_meta_graph(export_scope="hidden1")
    >>> path = write_graph(mg, "/tmp/model", "hidden1.pbtxt")
"""
from __future__ import annotations

import os
from typing import Any

from google.protobuf import text_format

from tensorweave.framework.graph_def_writer import (  # noqa: F401  (re-exported)
    GRAPH_DEF_VERSION as GRAPH_DEF_VERSION,
    GRAPH_DEF_VERSION_MIN_CONSUMER as GRAPH_DEF_VERSION_MIN_CONSUMER,
    graph_to_graph_def as graph_to_graph_def, node_def_of as node_def_of)
from tensorweave.framework.meta_graph import (  # noqa: F401  (TF's meta_graph names)
    add_collection_def as add_collection_def, create_meta_graph_def as create_meta_graph_def,
    prepend_name_scope as prepend_name_scope, read_meta_graph_file as read_meta_graph_file,
    strip_name_scope as strip_name_scope)
from tensorweave.framework.meta_graph_scoped import (  # noqa: F401  (TF's meta_graph names)
    copy_scoped_meta_graph as copy_scoped_meta_graph,
    export_scoped_meta_graph as export_scoped_meta_graph,
    import_scoped_meta_graph as import_scoped_meta_graph,
    import_scoped_meta_graph_with_return_elements as
    import_scoped_meta_graph_with_return_elements)
from tensorweave.framework.op_list import (  # noqa: F401  (TF's meta_graph names)
    ops_used_by_graph_def as ops_used_by_graph_def,
    stripped_op_list_for_graph as stripped_op_list_for_graph)


def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """`tf.train.write_graph`: writes a Graph's GraphDef, or any proto, to `logdir/name`.

    As TF, a proto that is not a Graph (a GraphDef, a MetaGraphDef, ...) is
    written as it is, in text format or (`as_text=False`) binary.

    Returns:
        The path written.

    Raises:
        TypeError: if `graph_or_graph_def` is neither a Graph nor a proto.

    Example:
        >>> path = tf.train.write_graph(sess.graph, "/tmp/model", "graph.pbtxt")
    """
    proto = graph_or_graph_def
    if hasattr(proto, "as_graph_def"):
        proto = proto.as_graph_def()
    if not hasattr(proto, "SerializeToString"):
        raise TypeError(f"write_graph expects a Graph or a proto (GraphDef, MetaGraphDef, "
                        f"...), got {type(proto).__name__}: {proto!r}")
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    if as_text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text_format.MessageToString(proto))
    else:
        with open(path, "wb") as f:
            f.write(proto.SerializeToString())
    return path
