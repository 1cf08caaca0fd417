"""DeepRec's pipeline stage: `tf.staged` prefetches a part of the graph on threads.

`tf.staged(features)` puts the tensors it is given into a FIFOQueue from background
threads and returns the dequeued tensors in the same structure, so the input pipeline
(reading, decoding, parsing) of step N+1 runs while step N trains. The threads start
when the session is made, by the hook `tf.make_prefetch_hook()` (a MonitoredSession
without it raises: the first step would wait forever, as DeepRec's documentation
warns). With a plain tf.Session, `tf.train.start_queue_runners(sess,
collection="prefetch_runners")` starts them.

End of input (OutOfRangeError, or the `closed_exception_types`) closes the queue, so the
training loop sees OutOfRangeError as from the unstaged input and stops; any other error
of a prefetch thread is raised by the next step (or the session's close), never lost.

Example:
    >>> features, labels = tf.staged(iterator.get_next(), capacity=2, num_threads=2)
    >>> with tf.train.MonitoredTrainingSession(hooks=[tf.make_prefetch_hook()]) as sess:
    ...     while not sess.should_stop():
    ...         sess.run(train_op)
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Sequence

from tensorweave.data_flow.data_flow_ops import FIFOQueue
from tensorweave.framework import errors
from tensorweave.framework.func_graph import flatten, pack_sequence_as
from tensorweave.framework.graph import add_to_collection, get_default_graph
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.train.coordinator import Coordinator
from tensorweave.train.queue_runner import QueueRunner
from tensorweave.train.session_run_hook import SessionRunHook

__all__ = ["PREFETCH_RUNNERS", "make_prefetch_hook", "staged"]

log = logging.getLogger("tensorweave.train.prefetch")

#: The graph collection holding the staged parts' runners (started by the hook).
PREFETCH_RUNNERS = "prefetch_runners"

_CLOSED = (errors.OutOfRangeError, errors.CancelledError)


def _components(leaves: list[Any]) -> tuple[list[Any], list[Any]]:
    """Dense tensors to queue, and per leaf how to rebuild it (a SparseTensor's 3 parts)."""
    flat: list[Any] = []
    kinds: list[Any] = []
    for leaf in leaves:
        if isinstance(leaf, SparseTensor):
            kinds.append(("sparse", len(flat)))
            flat += [leaf.indices, leaf.values, leaf.dense_shape]
        else:
            kinds.append(("dense", len(flat)))
            flat.append(leaf)
    return flat, kinds


def staged(features: Any, feed_list: Sequence[Any] | None = None, feed_generator: Any = None,
           capacity: int = 1, num_threads: int = 1, num_clients: int = 1,
           timeout_millis: int = 300000, closed_exception_types: Any = None,
           ignored_exception_types: Any = None, use_stage_subgraph_thread_pool: bool = False,
           stage_subgraph_thread_pool_id: int = 0, stage_subgraph_stream_id: int = 0,
           name: str | None = None) -> Any:
    """Prefetches `features` on `num_threads` threads, up to `capacity` results ahead.

    Args:
        features: a tensor, or a (nested) list, tuple or dict of tensors / SparseTensors.
        feed_list, feed_generator: DeepRec's feeding of the staged part from a Python
            generator; not supported (a clear error: use tf.data.Dataset.from_generator).
        capacity: results computed ahead of the step that takes them.
        num_threads: threads running the staged part concurrently.
        num_clients: DeepRec's count of consumers per result; only 1 is meaningful here.
        timeout_millis: accepted for DeepRec's signature (the queue's put waits as long
            as the step needs; stopping the session cancels it).
        closed_exception_types: errors that mean "input exhausted": the queue closes and
            steps see OutOfRangeError (default OutOfRangeError and CancelledError).
        ignored_exception_types: errors after which the thread just runs the part again.
        use_stage_subgraph_thread_pool, stage_subgraph_thread_pool_id,
            stage_subgraph_stream_id: DeepRec's thread-pool and GPU-stream placement of
            the part; scheduling only (our prefetch threads are the stage's pool).
        name: the name scope of the queue and its ops.

    Returns:
        `features`' structure, each tensor replaced by the prefetched one.

    Raises:
        ValueError: for a feed generator, num_clients != 1, or no tensors to stage.

    Example:
        >>> x, y = tf.staged([x, y], capacity=4, num_threads=2)
    """
    if feed_list or feed_generator is not None:
        raise ValueError("tf.staged(feed_list=/feed_generator=): feeding the staged part from "
                         "Python is not supported by tensorweave; build the input with "
                         "tf.data.Dataset.from_generator and stage its get_next() instead")
    if num_clients != 1:
        raise ValueError(f"tf.staged(num_clients={num_clients}): each prefetched result is "
                         "taken by one step; use num_clients=1")
    leaves = flatten(features)
    flat, kinds = _components(leaves)
    if not flat:
        raise ValueError(f"tf.staged: no tensors to stage in {features!r}")
    with name_scope(name, "prefetch", flat) as scope:
        queue = FIFOQueue(max(1, int(capacity)), [t.dtype.base_dtype for t in flat],
                          name="buffer")
        enqueue = queue.enqueue(flat)
        out = queue.dequeue(name=scope.rstrip("/") if scope else None)
    out = [out] if not isinstance(out, (list, tuple)) else list(out)
    for got, src in zip(out, flat):
        got.set_shape(src.shape)
    closed = tuple(closed_exception_types or _CLOSED)
    runner = QueueRunner(queue, [enqueue] * max(1, int(num_threads)),
                         queue.close(), queue.close(cancel_pending_enqueues=True), closed)
    runner.ignore_exception_types(tuple(ignored_exception_types or ()))
    add_to_collection(PREFETCH_RUNNERS, runner)
    rebuilt = [SparseTensor(*out[i:i + 3]) if kind == "sparse" else out[i]
               for kind, i in kinds]
    return pack_sequence_as(features, rebuilt)


class _PrefetchHook(SessionRunHook):
    """Starts the staged parts' threads on each new session; raises their errors."""

    starts_prefetch_runners = True   # MonitoredSession checks a staged graph has one

    def __init__(self, daemon: bool, start: bool) -> None:
        self._daemon, self._start = daemon, start
        self._coord: Coordinator | None = None
        self._threads: list[threading.Thread] = []

    def begin(self) -> None:
        self._runners = list(get_default_graph().get_collection(PREFETCH_RUNNERS))

    def after_create_session(self, session: Any, coord: Any) -> None:
        self._stop(raise_errors=False)   # a re-created session: the old threads are done
        self._coord = Coordinator()
        for runner in self._runners:
            self._threads += runner.create_threads(session, self._coord, self._daemon,
                                                   self._start)
        log.info("tf.staged: %d prefetch thread(s) started for %d staged part(s)",
                 sum(len(r.enqueue_ops) for r in self._runners), len(self._runners))

    def after_run(self, run_context: Any, run_values: Any) -> None:
        if self._coord is not None and self._coord.should_stop():
            self._coord.raise_requested_exception()

    def end(self, session: Any) -> None:
        self._stop(raise_errors=True)

    def _stop(self, raise_errors: bool) -> None:
        coord, threads = self._coord, self._threads
        self._coord, self._threads = None, []
        if coord is None:
            return
        coord.request_stop()
        try:
            coord.join(threads, stop_grace_period_secs=10)
        except Exception:
            if raise_errors:
                raise


def make_prefetch_hook(daemon: bool = True, start: bool = True) -> SessionRunHook:
    """The hook that runs every `tf.staged` part of the graph (DeepRec's API).

    Args:
        daemon: make the prefetch threads daemons.
        start: start them as the session is made.

    Returns:
        A SessionRunHook for MonitoredSession / MonitoredTrainingSession.

    Example:
        >>> hooks = [tf.make_prefetch_hook()]
    """
    return _PrefetchHook(daemon, start)
