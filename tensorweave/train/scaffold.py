"""`tf.train.Scaffold`: the init, ready and local-init ops, saver and summary op of a
monitored session, with defaults filled in from the graph's collections.

Example:
    >>> scaffold = tf.train.Scaffold(init_fn=lambda sess: sess.run(load_pretrained))
    >>> with tf.train.MonitoredTrainingSession(scaffold=scaffold) as sess: ...
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.ops import control_flow as control_flow_ops
from tensorweave.state import variable_initializers as var_init
from tensorweave.state import variables
from tensorweave.train.hook_utils import log, merge_all_summaries
from tensorweave.train.saver import Saver


def _get_or_default(arg_name: str, collection_key: str,
                    default_constructor: Callable[[], Any]) -> Any:
    """The single item of a collection, or a new default (then added to the collection)."""
    graph = get_default_graph()
    elements = graph.get_collection(collection_key)
    if elements:
        if len(elements) > 1:
            raise RuntimeError(f"More than one item in the collection {collection_key!r}; "
                               f"say which to use with tf.train.Scaffold({arg_name}=...).")
        return elements[0]
    op = default_constructor()
    if op is not None:
        graph.add_to_collection(collection_key, op)
    return op


def _default_saver(incremental: bool = False) -> Any:
    """The SAVERS collection's saver, or a new sharded Saver that allows no variables."""
    graph = get_default_graph()
    savers = graph.get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(f"More than one item in the collection {GraphKeys.SAVERS!r}; "
                               "pass the one to use as tf.train.Scaffold(saver=...).")
        return savers[0]
    saver = Saver(sharded=True, allow_empty=True, incremental_save_restore=incremental)
    graph.add_to_collection(GraphKeys.SAVERS, saver)
    return saver


class Scaffold:
    """Holds the ops a monitored session needs; `finalize()` fills in the defaults.

    Args:
        init_op: initializes the model (default: `tf.global_variables_initializer()`).
        init_feed_dict: feeds for init_op.
        init_fn: `init_fn(scaffold, session)` called after init_op, e.g. to load weights.
        ready_op: names what is not ready (default: `tf.report_uninitialized_variables()`).
        ready_for_local_init_op: what must be ready before local_init_op runs (default:
            the uninitialized global variables).
        local_init_op: run in every new session (default: local variables and tables).
        summary_op: (default: `tf.summary.merge_all()`).
        saver: (default: the SAVERS collection's, else a new sharded `tf.train.Saver`).
        copy_from_scaffold: take every argument not given here from this scaffold.
        local_init_feed_dict: feeds for local_init_op.
        incremental_save_restore: the default saver can also save incremental
            checkpoints (DeepRec's flag; see `Saver.incremental_save`).

    Example:
        >>> scaffold = tf.train.Scaffold(saver=tf.train.Saver(max_to_keep=3))
        >>> scaffold.finalize()  # the graph is now read-only
    """

    def __init__(self, init_op: Any = None, init_feed_dict: Any = None,
                 init_fn: Callable[..., Any] | None = None, ready_op: Any = None,
                 ready_for_local_init_op: Any = None, local_init_op: Any = None,
                 summary_op: Any = None, saver: Any = None,
                 copy_from_scaffold: Scaffold | None = None,
                 local_init_feed_dict: Any = None,
                 incremental_save_restore: bool = False) -> None:
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError(f"copy_from_scaffold is not a Scaffold instance: got "
                                f"{copy_from_scaffold!r}; pass a tf.train.Scaffold.")
            c = copy_from_scaffold

            def pick(mine: Any, theirs: Any) -> Any:
                return mine if mine is not None else theirs
            init_op, init_feed_dict = pick(init_op, c.init_op), pick(init_feed_dict,
                                                                     c.init_feed_dict)
            init_fn = pick(init_fn, c._user_init_fn)
            ready_op = pick(ready_op, c.ready_op)
            ready_for_local_init_op = pick(ready_for_local_init_op, c.ready_for_local_init_op)
            local_init_op = pick(local_init_op, c.local_init_op)
            local_init_feed_dict = pick(local_init_feed_dict, c.local_init_feed_dict)
            summary_op, saver = pick(summary_op, c.summary_op), pick(saver, c.saver)
        self._user_init_fn: Any = init_fn
        # TF calls init_fn(scaffold, session); sessions managers call it with the session.
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver
        self.incremental_save_restore = incremental_save_restore
        self._finalized = False

    def finalize(self) -> Scaffold:
        """Creates the missing ops and saver, then finalizes the default graph."""
        graph = get_default_graph()
        if self._finalized:
            graph.finalize()  # a re-created session: the ops exist, keep the graph read-only
            return self
        if self._init_op is None:
            self._init_op = _get_or_default(
                "init_op", GraphKeys.INIT_OP,
                lambda: control_flow_ops.group(var_init.global_variables_initializer()))
        if self._ready_op is None:
            self._ready_op = _get_or_default(
                "ready_op", GraphKeys.READY_OP, var_init.report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = _get_or_default(
                "ready_for_local_init_op", GraphKeys.READY_FOR_LOCAL_INIT_OP,
                lambda: var_init.report_uninitialized_variables(
                    variables.global_variables()))
        if self._local_init_op is None:
            self._local_init_op = _get_or_default(
                "local_init_op", GraphKeys.LOCAL_INIT_OP, Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = _get_or_default("summary_op", GraphKeys.SUMMARY_OP,
                                               merge_all_summaries)
        if self._saver is None:
            self._saver = _default_saver(self.incremental_save_restore)
        build = getattr(self._saver, "build", None)
        if callable(build):
            build()
        graph.finalize()
        self._finalized = True
        log.info("Graph was finalized.")
        return self

    @staticmethod
    def default_local_init_op() -> Any:
        """Initializes local variables and lookup tables."""
        return control_flow_ops.group(var_init.local_variables_initializer(),
                                      var_init.tables_initializer())

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str,
                       default_constructor: Callable[[], Any]) -> Any:
        """The single item of `collection_key`, or `default_constructor()` (then stored)."""
        return _get_or_default(arg_name, collection_key, default_constructor)

    @property
    def init_fn(self) -> Callable[[Any], Any] | None:
        return self._init_fn

    @property
    def init_op(self) -> Any:
        return self._init_op

    @property
    def ready_op(self) -> Any:
        return self._ready_op

    @property
    def ready_for_local_init_op(self) -> Any:
        return self._ready_for_local_init_op

    @property
    def local_init_op(self) -> Any:
        return self._local_init_op

    @property
    def local_init_feed_dict(self) -> Any:
        return self._local_init_feed_dict

    @property
    def summary_op(self) -> Any:
        return self._summary_op

    @property
    def saver(self) -> Any:
        return self._saver

    @property
    def init_feed_dict(self) -> Any:
        return self._init_feed_dict


__all__ = ["Scaffold"]
