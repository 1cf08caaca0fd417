"""GraphDef export and import: `Graph.as_graph_def`, `tf.import_graph_def`, `write_graph`.

The protos are wire-compatible with TensorFlow's (same field numbers), so a
GraphDef written here parses as a `tensorflow.GraphDef`. Function bodies of
If/While ops (FuncGraphs) become FunctionDefs in `graph_def.library`.

The code lives in `graph_def_writer` (GraphDef/NodeDef/FunctionDef writing),
`graph_export` (write_graph), `graph_import` (import_graph_def) and `graph_protos` (shapes,
TensorProtos and AttrValues); this module re-exports their public names.

Example:
    >>> with tf.Graph().as_default() as g:
    ...     x = tf.placeholder(tf.float32, [None], name="x")
    ...     y = tf.identity(x, name="y")
    >>> gd = g.as_graph_def()
    >>> with tf.Graph().as_default() as g2:
    ...     (y2,) = tf.import_graph_def(gd, return_elements=["y:0"], name="")
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.framework.graph_def_writer import (
    GRAPH_DEF_VERSION as GRAPH_DEF_VERSION,
    GRAPH_DEF_VERSION_MIN_CONSUMER as GRAPH_DEF_VERSION_MIN_CONSUMER,
    graph_to_graph_def as graph_to_graph_def, node_def_of as node_def_of)
from tensorweave.framework.graph_export import write_graph as write_graph
from tensorweave.framework.graph_import import import_graph_def as import_graph_def
from tensorweave.framework.graph_protos import (
    tensor_proto_of as tensor_proto_of, tensor_value_of as tensor_value_of)
