"""The default graph and its module-level scopes: `tf.get_default_graph`,
`tf.reset_default_graph`, `tf.name_scope`, `tf.device`, `tf.colocate_with`,
`tf.control_dependencies`, the collection functions, and `GraphKeys`.

The Graph class itself lives in `tensorweave.framework.graph` (which re-exports
these names); it is imported lazily here, because Graph.as_default uses the
per-thread default-graph stack defined in this module.

Example:
    >>> with tf.name_scope("layer"):
    ...     c = tf.constant(1.0, name="c")
    >>> c.name
    'layer/c:0'
"""
from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, Iterator

from tensorweave.framework.tensor import Operation, Tensor

if TYPE_CHECKING:
    from tensorweave.framework.graph import Graph


class GraphKeys:
    """Standard collection names."""

    GLOBAL_VARIABLES = "variables"
    METRIC_VARIABLES = "metric_variables"
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    VARIABLES = GLOBAL_VARIABLES


_thread_state = threading.local()
_global_default_graph: Graph | None = None


def _default_stack() -> list[Graph]:
    stack = getattr(_thread_state, "graphs", None)
    if stack is None:
        stack = _thread_state.graphs = []
    return stack


def get_default_graph() -> Graph:
    """The innermost `as_default` graph of this thread, else the global graph."""
    global _global_default_graph
    stack = _default_stack()
    if stack:
        return stack[-1]
    if _global_default_graph is None:
        from tensorweave.framework.graph import Graph
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph() -> None:
    """Replaces the global default graph with a new empty one.

    Raises:
        AssertionError: when called inside a `with g.as_default():` block.
    """
    global _global_default_graph
    if _default_stack():
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. "
                             "Leave every `with g.as_default():` block first.")
    from tensorweave.framework.graph import Graph
    _global_default_graph = Graph()


# Default-graph convenience wrappers (tf.name_scope etc.)
@contextlib.contextmanager
def name_scope(name: str | None, default_name: str | None = None,
               values: Any = None) -> Iterator[str]:
    """`tf.name_scope(name)`: a name scope on the default graph (of `values` if given)."""
    g = _graph_of(values) if values else get_default_graph()
    n = name if name is not None else default_name
    with g.as_default(), g.name_scope(n) as scope:
        yield scope


def _graph_of(values: Any) -> Graph:
    # While a function body (a loop body, a cond branch) is built, its graph is the
    # graph, whatever graph the values come from: outer tensors are captured (TF's
    # _get_graph_from_inputs does the same).
    if get_default_graph().building_function:
        return get_default_graph()
    for v in values:
        v = getattr(v, "_as_graph_element", lambda: v)()  # noqa: B023 - called now
        if isinstance(v, (Tensor, Operation)):
            return v.graph
    return get_default_graph()


def device(device_name_or_function: Any) -> Any:
    """`tf.device(...)`: a device scope on the default graph."""
    return get_default_graph().device(device_name_or_function)


def container(container_name: str) -> Any:
    """`tf.container(name)`: stateful ops created inside live in that resource container."""
    return get_default_graph().container(container_name)


def colocate_with(op: Any, ignore_existing: bool = False) -> Any:
    return get_default_graph().colocate_with(op, ignore_existing)


def control_dependencies(control_inputs: Any) -> Any:
    return get_default_graph().control_dependencies(control_inputs)


def add_to_collection(name: str, value: Any) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names: Any, value: Any) -> None:
    get_default_graph().add_to_collections(names, value)


def get_collection(key: str, scope: str | None = None) -> list[Any]:
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list[Any]:
    return get_default_graph().get_collection_ref(key)

