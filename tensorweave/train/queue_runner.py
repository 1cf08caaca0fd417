"""`tf.train.QueueRunner`: threads that keep running enqueue ops into a queue.

Each enqueue op gets a thread that runs it in a loop. When an enqueue fails
because its input is exhausted (OutOfRangeError) or the queue was closed
(CancelledError), the thread ends quietly; the last thread of a session to end
closes the queue so that consumers see OutOfRangeError once it drains. Any
other error is reported to the Coordinator (which re-raises it in `join`).

Example:
    >>> qr = tf.train.QueueRunner(queue, [enqueue_op] * 4)
    >>> tf.train.add_queue_runner(qr)
    >>> coord = tf.train.Coordinator()
    >>> threads = tf.train.start_queue_runners(sess, coord=coord)
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Sequence

from tensorweave.framework import errors
from tensorweave.framework import meta_graph as _meta_graph
from tensorweave.framework.graph import GraphKeys, add_to_collection, get_default_graph
from tensorweave.framework.proto import meta_graph_pb2
from tensorweave.train.coordinator import Coordinator
from tensorweave.client.session import Session, get_default_session

log = logging.getLogger("tensorweave.queue_runner")


class QueueRunner:
    """Holds a queue, the enqueue ops that feed it, and the ops that close it.

    Args:
        queue: the queue (a QueueBase).
        enqueue_ops: enqueue ops; one thread runs each.
        close_op: op run when all threads end (default `queue.close()`).
        cancel_op: op run on a coordinator stop (default
            `queue.close(cancel_pending_enqueues=True)`), so threads blocked on a
            full queue wake up.
        queue_closed_exception_types: errors meaning "input done / queue closed"
            (default OutOfRangeError and CancelledError).

    Raises:
        ValueError: if enqueue_ops is empty or queue is None.
    """

    def __init__(self, queue: Any = None, enqueue_ops: Sequence[Any] | None = None,
                 close_op: Any = None, cancel_op: Any = None,
                 queue_closed_exception_types: Sequence[type] | None = None) -> None:
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner needs a queue and at least one enqueue op; got "
                             f"queue={queue!r}, enqueue_ops={enqueue_ops!r}.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else \
            queue.close(cancel_pending_enqueues=True)
        self._queue_closed_exception_types: tuple[type[BaseException], ...] = tuple(
            queue_closed_exception_types or (errors.OutOfRangeError, errors.CancelledError))
        self._ignored_exception_types: tuple[type[BaseException], ...] = ()
        self._lock = threading.Lock()
        self._runs_per_session: dict[Any, int] = {}
        self._exceptions_raised: list[BaseException] = []

    def ignore_exception_types(self, types: tuple[type[BaseException], ...]) -> None:
        """Errors after which a thread runs its enqueue op again (DeepRec's tf.staged)."""
        self._ignored_exception_types = tuple(types)

    @property
    def queue(self) -> Any:
        return self._queue

    @property
    def enqueue_ops(self) -> list[Any]:
        return list(self._enqueue_ops)

    @property
    def close_op(self) -> Any:
        return self._close_op

    @property
    def cancel_op(self) -> Any:
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple[type, ...]:
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self) -> list[BaseException]:
        """Errors raised by threads started without a coordinator."""
        return list(self._exceptions_raised)

    @property
    def name(self) -> str:
        return self._queue.name

    def to_proto(self, export_scope: str | None = None) -> Any:
        """This QueueRunner as a QueueRunnerDef (names relative to `export_scope`).

        Returns None if the queue lies outside `export_scope` (as TF).

        Example:
            >>> tf.train.QueueRunner.from_proto(qr.to_proto()).queue.name
            'input_queue'
        """
        if export_scope is not None and not self.name.startswith(export_scope):
            return None
        strip = _meta_graph.strip_name_scope
        return meta_graph_pb2.QueueRunnerDef(
            queue_name=strip(self.name, export_scope),
            enqueue_op_name=[strip(op.name, export_scope) for op in self._enqueue_ops],
            close_op_name=strip(self._close_op.name, export_scope),
            cancel_op_name=strip(self._cancel_op.name, export_scope),
            queue_closed_exception_types=[t._fixed_code
                                          for t in self._queue_closed_exception_types
                                          if hasattr(t, "_fixed_code")])

    @staticmethod
    def from_proto(queue_runner_def: Any, import_scope: str | None = None) -> QueueRunner:
        """A QueueRunner over the (already imported) ops a QueueRunnerDef names.

        The queue is its op then (a QueueRunner needs only its name), as in TF.
        A QueueRunnerDef without exception types (written before TF had the
        field) means OutOfRangeError only, as TF reads it.

        Raises:
            KeyError/ValueError: if a named op is not in the default graph.
        """
        g = get_default_graph()

        def get(name: str) -> Any:
            return g.as_graph_element(_meta_graph.prepend_name_scope(name, import_scope))
        codes = list(queue_runner_def.queue_closed_exception_types)
        types = tuple(errors.exception_type_from_error_code(c) for c in codes) or \
            (errors.OutOfRangeError,)
        return QueueRunner(get(queue_runner_def.queue_name),
                           [get(n) for n in queue_runner_def.enqueue_op_name],
                           get(queue_runner_def.close_op_name),
                           get(queue_runner_def.cancel_op_name), types)

    def _run(self, sess: Any, enqueue_op: Any, coord: Coordinator | None) -> None:
        decremented = False
        try:
            enqueue = sess.make_callable(enqueue_op)
            while not (coord is not None and coord.should_stop()):
                try:
                    enqueue()
                except self._ignored_exception_types as e:
                    log.debug("QueueRunner %s: skipped a failed run: %s", self.name, e)
                except self._queue_closed_exception_types:
                    # Input exhausted or queue closed: the last thread closes the queue.
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        last = self._runs_per_session[sess] == 0
                    if last:
                        try:
                            sess.run(self._close_op)
                        except Exception as e:  # noqa: BLE001 - session may be closing
                            log.debug("Ignored exception closing queue %s: %s", self.name, e)
                    return
        except Exception as e:  # noqa: BLE001 - reported to the coordinator
            if coord is not None:
                coord.request_stop(e)
            else:
                log.error("Exception in QueueRunner for %s: %s", self.name, e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess: Any, coord: Coordinator) -> None:
        coord.wait_for_stop()
        try:
            sess.run(self._cancel_op)
        except Exception as e:  # noqa: BLE001 - the session may already be closed
            log.debug("Ignored exception cancelling queue %s: %s", self.name, e)

    def create_threads(self, sess: Any, coord: Coordinator | None = None,
                       daemon: bool = False, start: bool = False) -> list[threading.Thread]:
        """Creates (and optionally starts) one thread per enqueue op for `sess`.

        With a coordinator, one more thread closes the queue when a stop is
        requested, and all threads are registered with it. If threads of this
        runner are still running in `sess`, no new ones are made.

        Returns:
            The threads.
        """
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []  # already running in this session
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name=f"QueueRunnerThread-{self.name}-{getattr(op, 'name', op)}")
                   for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, coord),
                                            daemon=daemon,
                                            name=f"QueueRunnerThread-{self.name}-close_on_stop"))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads

    def __repr__(self) -> str:
        return f"<QueueRunner {self.name} with {len(self._enqueue_ops)} enqueue ops>"


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """Adds `qr` to a graph collection (default QUEUE_RUNNERS) of the default graph."""
    add_to_collection(collection, qr)


def start_queue_runners(sess: Any = None, coord: Coordinator | None = None,
                        daemon: bool = True, start: bool = True,
                        collection: str = GraphKeys.QUEUE_RUNNERS) -> list[threading.Thread]:
    """Starts the threads of every QueueRunner in `collection` of the session's graph.

    Args:
        sess: the session (default: the default session).
        coord: optional Coordinator to stop and join the threads.
        daemon: make the threads daemons.
        start: start the threads (else only create them).
        collection: the graph collection holding the runners.

    Returns:
        All the threads.

    Raises:
        ValueError: if there is no session.
        TypeError: if `sess` is not a Session (a MonitoredSession gets [] back: it
            started its queue runners already).

    Example:
        >>> threads = tf.train.start_queue_runners(sess, coord)
    """
    if sess is None:
        sess = get_default_session()
        if sess is None:
            raise ValueError("start_queue_runners needs a session: pass sess=, or call it "
                             "inside `with sess:` / `with sess.as_default():`.")
    if not isinstance(sess, Session):
        if type(sess).__name__ in ("MonitoredSession", "SingularMonitoredSession"):
            return []  # it started the graph's queue runners itself when it was made
        raise TypeError(f"sess must be a `tf.Session` object, got {type(sess).__name__}: "
                        f"{sess!r}.")
    graph = getattr(sess, "graph", None) or get_default_graph()
    threads: list[threading.Thread] = []
    for qr in graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


# Meta graphs store the QUEUE_RUNNERS collection as QueueRunnerDefs (as TF 1.x does).
_meta_graph.register_proto_function(
    GraphKeys.QUEUE_RUNNERS, meta_graph_pb2.QueueRunnerDef,
    lambda qr, export_scope=None: qr.to_proto(export_scope)
    if isinstance(qr, QueueRunner) else None,
    QueueRunner.from_proto)
