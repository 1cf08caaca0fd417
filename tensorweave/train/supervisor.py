"""`tf.train.Supervisor`: the TF 1.x session helper that predates MonitoredSession.

The chief initializes or restores the model and runs background services (a
checkpoint every `save_model_secs`, summaries and the step rate every
`save_summaries_secs`); other workers wait for the model to be ready, polling every
50-250 ms rather than TF 1.x's 30 s. Queue runners start with the session. The
chief restores the newest checkpoint of `logdir` that verifies, moving damaged ones
aside (see `SessionManager`).

Example:
    >>> sv = tf.train.Supervisor(is_chief=is_chief, logdir=train_dir, init_op=init_op,
    ...                          recovery_wait_secs=1, global_step=global_step)
    >>> sess = sv.prepare_or_wait_for_session(server.target)
    >>> while not sv.should_stop():
    ...     sess.run(train_op)
    >>> sv.stop()
"""
from __future__ import annotations

import logging

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.ops import control_flow as control_flow_ops
from tensorweave.state import variable_initializers as var_init
from tensorweave.train import training_util
from tensorweave.train.coordinator import Coordinator, LooperThread
from tensorweave.train.hook_utils import (
    add_graph_events,
    add_session_log,
    log,
    merge_all_summaries,
)
from tensorweave.train.session_manager import SessionManager
from tensorweave.train.supervisor_services import (
    CheckpointThread, StepCounterThread, SummaryThread, default_saver, first_in_collection,
    new_summary_writer, notify_at_exit)
from tensorweave.train.sync_replicas_optimizer import (
    END_OF_TRAINING_OPS, REPLICA_DONE_OPS, SYNC_OPTIMIZERS, serve_secs)
from tensorweave.framework.graph_io import write_graph

_VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")


class Supervisor:
    """Creates ready sessions and runs checkpoint/summary services (TF 1.x API).

    Args:
        graph: the graph (default: the default graph). It is finalized.
        ready_op: names what is uninitialized (default: report_uninitialized_variables);
            None skips the check.
        ready_for_local_init_op: checked before local_init_op (default: the
            collection's, else None).
        is_chief: the chief initializes, restores and saves; others wait.
        init_op: (default: global_variables_initializer); None for no init op.
        init_feed_dict: feeds for init_op.
        local_init_op: (default: local variables and tables initializers).
        logdir: checkpoints and summaries go here (chief only); None disables them.
        summary_op: (default: tf.summary.merge_all()).
        saver: (default: the SAVERS collection's, else a new Saver if there are
            variables); None disables checkpoints.
        global_step: (default: the GLOBAL_STEP collection's or "global_step:0").
        save_summaries_secs: seconds between summaries (0/None: never).
        save_model_secs: seconds between checkpoints (0/None: never).
        recovery_wait_secs: seconds between checks for a checkpoint to appear.
        stop_grace_secs: how long stop() waits for threads.
        checkpoint_basename: checkpoint prefix inside logdir.
        session_manager: use this SessionManager instead of building one.
        summary_writer: (default: a FileWriter on logdir); None for no summaries.
        init_fn: `init_fn(sess)` called after init_op.
        local_init_run_options: RunOptions for local_init_op.

    Raises:
        ValueError: for a non-chief whose graph has a variable with no device.

    Example:
        >>> sv = tf.train.Supervisor(logdir="/tmp/mydir")
        >>> with sv.managed_session(server.target) as sess:
        ...     while not sv.should_stop():
        ...         sess.run(train_op)
    """

    USE_DEFAULT = 0  # TF's marker value; compared by identity

    def __init__(self, graph: Any = None, ready_op: Any = USE_DEFAULT,
                 ready_for_local_init_op: Any = USE_DEFAULT, is_chief: bool = True,
                 init_op: Any = USE_DEFAULT, init_feed_dict: Any = None,
                 local_init_op: Any = USE_DEFAULT, logdir: str | None = None,
                 summary_op: Any = USE_DEFAULT, saver: Any = USE_DEFAULT,
                 global_step: Any = USE_DEFAULT, save_summaries_secs: float = 120,
                 save_model_secs: float = 600, recovery_wait_secs: float = 30,
                 stop_grace_secs: float = 120, checkpoint_basename: str = "model.ckpt",
                 session_manager: SessionManager | None = None,
                 summary_writer: Any = USE_DEFAULT,
                 init_fn: Callable[[Any], None] | None = None,
                 local_init_run_options: Any = None) -> None:
        self._graph = graph if graph is not None else get_default_graph()
        with self._graph.as_default():
            self._init_default_ops(ready_op, ready_for_local_init_op, init_op,
                                   local_init_op, summary_op, saver, global_step)
        self._init_feed_dict = init_feed_dict
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        # Only the chief writes checkpoints and events.
        self._logdir: str | None = None
        self._save_summaries_secs: float | None = None
        self._save_model_secs: float | None = None
        self._save_path: str | None = None
        self._summary_writer: Any = None
        self._graph_added_to_summary = False
        if is_chief:
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if logdir:
                self._save_path = os.path.join(logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                self._summary_writer = new_summary_writer(logdir) if logdir else None
            else:
                self._summary_writer = summary_writer
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=self._graph,
            recovery_wait_secs=recovery_wait_secs,
            local_init_run_options=local_init_run_options)
        self._verify_setup()
        self._graph.finalize()

    def _init_default_ops(self, ready_op: Any, ready_for_local_init_op: Any, init_op: Any,
                          local_init_op: Any, summary_op: Any, saver: Any,
                          global_step: Any) -> None:
        g, default = self._graph, Supervisor.USE_DEFAULT

        def pick(arg: Any, key: str, make: Callable[[], Any] | None) -> Any:
            if arg is not default:
                return arg
            found = first_in_collection(g, key)
            if found is None and make is not None:
                found = make()
                if found is not None:
                    g.add_to_collection(key, found)
            return found
        self._ready_op = pick(ready_op, GraphKeys.READY_OP,
                              var_init.report_uninitialized_variables)
        # None by default, as in TF, for compatibility with older graphs.
        self._ready_for_local_init_op = pick(ready_for_local_init_op,
                                             GraphKeys.READY_FOR_LOCAL_INIT_OP, None)
        self._init_op = pick(init_op, GraphKeys.INIT_OP, var_init.global_variables_initializer)
        self._local_init_op = pick(local_init_op, GraphKeys.LOCAL_INIT_OP, lambda: (
            control_flow_ops.group(var_init.local_variables_initializer(),
                                   var_init.tables_initializer())))
        self._summary_op = pick(summary_op, GraphKeys.SUMMARY_OP, merge_all_summaries)
        self._saver = pick(saver, GraphKeys.SAVERS, default_saver)
        self._global_step = pick(global_step, GraphKeys.GLOBAL_STEP, self._default_global_step)

    def _default_global_step(self) -> Any:
        try:
            gs = self._graph.get_tensor_by_name("global_step:0")
        except (KeyError, ValueError):
            return None
        if gs.dtype.base_dtype not in (_dt.int32, _dt.int64):
            log.warning("Found 'global_step' of type %s, not an integer; ignoring it.",
                        gs.dtype.name)
            return None
        return gs

    def _verify_setup(self) -> None:
        # Between-graph replication needs every variable pinned (e.g. by
        # tf.train.replica_device_setter) so that all workers share the ps copies.
        if self._is_chief:
            return
        for op in self._graph.get_operations():
            if op.type in _VARIABLE_OPS and not op.device:
                raise ValueError(f"When using replicas, all Variables must have their device "
                                 f"set: variable {op.name!r} has none. Build the model "
                                 "under tf.device(tf.train.replica_device_setter(...)).")

    # ---- properties ------------------------------------------------------------------
    is_chief = property(lambda self: self._is_chief)
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    # ---- sessions --------------------------------------------------------------------
    def prepare_or_wait_for_session(self, master: str = "", config: Any = None,
                                    wait_for_checkpoint: bool = False,
                                    max_wait_secs: float = 7200,
                                    start_standard_services: bool = True) -> Any:
        """A ready session: the chief restores or initializes, others wait for readiness.

        Raises:
            tf.errors.DeadlineExceededError: (non-chief) not ready within max_wait_secs.

        Example:
            >>> sess = sv.prepare_or_wait_for_session(server.target)
        """
        self._coord.clear_stop()  # a re-prepared session must let the services run again
        if self._summary_writer is not None and hasattr(self._summary_writer, "reopen"):
            self._summary_writer.reopen()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
                config=config, init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                self.start_standard_services(sess)
            self._master_for_job_end: str | None = master
            self._sess_for_job_end = sess
            notify_at_exit(self)
        else:
            sess = self._session_manager.wait_for_session(master, config=config,
                                                          max_wait_secs=max_wait_secs)
            self._sess_for_job_end = sess
            notify_at_exit(self)
        if start_standard_services:
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(self, master: str = "", config: Any = None,
                        start_standard_services: bool = True,
                        close_summary_writer: bool = True) -> Iterator[Any]:
        """A context manager: a ready session, stopped and closed on exit.

        An exception in the block stops the services and is re-raised by `stop()`
        (OutOfRangeError counts as a clean stop and is swallowed).

        Example:
            >>> with sv.managed_session(server.target) as sess:
            ...     while not sv.should_stop():
            ...         sess.run(train_op)
        """
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - handed to the coordinator, re-raised by stop
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    try:
                        sess.close()  # also unblocks threads stuck in enqueue/dequeue
                    except Exception:  # noqa: BLE001 - closing must not mask the real error
                        pass

    def start_standard_services(self, sess: Any) -> list[LooperThread]:
        """Starts the chief's checkpoint, summary and step-rate threads.

        Raises:
            RuntimeError: on a non-chief.
        """
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services "
                               "(is_chief=True), because only chief supervisors can write "
                               "events.")
        if not self._logdir:
            log.warning("Standard services need a logdir passed to the Supervisor.")
            return []
        if self._global_step is not None and self._summary_writer is not None:
            # TensorBoard uses START (with a step) to drop events of an earlier run.
            add_session_log(self._summary_writer, "START",
                            training_util.global_step(sess, self._global_step))
        threads: list[LooperThread] = []
        if self._save_summaries_secs and self._summary_writer is not None:
            if self._summary_op is not None:
                threads.append(SummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(StepCounterThread(self, sess))
        if self._saver is not None and self._save_model_secs:
            threads.append(CheckpointThread(self, sess))
        for t in threads:
            t.start()
        return threads

    def start_queue_runners(self, sess: Any, queue_runners: list[Any] | None = None
                            ) -> list[Any]:
        """Starts the graph's queue runners (daemon threads) under this coordinator."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads: list[Any] = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        # A sync chief's queue runner: also name the replicas a stalled step waits for.
        for opt in self._graph.get_collection(SYNC_OPTIMIZERS):
            if any(qr is opt._chief_queue_runner for qr in queue_runners):
                threads.append(opt.replica_watch(may_give_up=False).start(
                    sess, self._coord, poll_global_step=True))
        return threads

    def loop(self, timer_interval_secs: float, target: Callable[..., Any], args: Any = None,
             kwargs: Any = None) -> LooperThread:
        """Starts a thread calling `target(*args, **kwargs)` every `timer_interval_secs`
        until the supervisor stops."""
        return LooperThread.loop(self._coord, timer_interval_secs, target, args, kwargs)

    def stop(self, threads: list[Any] | None = None, close_summary_writer: bool = True,
             ignore_live_threads: bool = False) -> None:
        """Stops the services and queue runners and waits for them (stop_grace_secs).

        Raises:
            The first exception reported to the coordinator by a thread or
            `request_stop(ex)`; RuntimeError for threads that did not stop in time.
        """
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
            self._notify_job_done()  # only reached when no thread reported an error
        finally:
            # Closed last: a service thread may have been writing to it.
            if close_summary_writer and self._summary_writer is not None:
                add_session_log(self._summary_writer, "STOP")
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex: Any = None) -> None:
        if ex is not None and not isinstance(ex, errors.OutOfRangeError):
            self._failed = True
        self._coord.request_stop(ex=ex)

    def _notify_job_done(self) -> None:
        """The chief's normal end: tell the ps tasks (beyond TF 1.x; see distributed.job)."""
        if getattr(self, "_failed", False):
            return
        self._run_end_of_training_ops(chief=False)  # this replica is done: others go on
        master = getattr(self, "_master_for_job_end", None)
        if self._is_chief and master:
            self._master_for_job_end = None
            self._run_end_of_training_ops(chief=True)
            from tensorweave.distributed.job import notify_job_done
            notify_job_done(master)

    def _run_end_of_training_ops(self, chief: bool) -> None:
        # SyncReplicasOptimizer's: every replica tells the accumulators it is done, and
        # the chief closes the token queue, releasing workers that would otherwise wait
        # forever for a token the finished chief never sends.
        sess = getattr(self, "_sess_for_job_end", None)
        key = END_OF_TRAINING_OPS if chief else REPLICA_DONE_OPS
        ops = self._graph.get_collection(key)
        if key == REPLICA_DONE_OPS:
            self._graph.clear_collection(key)  # once per replica
        if sess is None or not ops:
            return
        try:
            if chief:  # serve the replicas still training before closing their token queue
                for opt in self._graph.get_collection(SYNC_OPTIMIZERS):
                    opt.wait_for_other_replicas(sess, serve_secs())
            sess.run(ops)
        except (errors.OpError, RuntimeError) as e:  # a closed session or a gone ps
            logging.getLogger("tensorweave.supervisor").info("end-of-training ops: %s", e)

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def stop_on_exception(self) -> Any:
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def summary_computed(self, sess: Any, summary: Any, global_step: Any = None) -> None:
        """Writes a summary computed by the caller (at the current global step)."""
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer: give the "
                               "Supervisor a logdir (chief only) or summary_writer=.")
        if global_step is None and self._global_step is not None:
            global_step = training_util.global_step(sess, self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    def _write_graph(self) -> None:
        if not self._is_chief:
            return
        if self._logdir:
            os.makedirs(self._logdir, exist_ok=True)
            write_graph(self._graph, self._logdir, "graph.pbtxt")
        if self._summary_writer is not None and not self._graph_added_to_summary:
            # The graph is finalized, so its MetaGraphDef now is what TF exported when
            # the Supervisor was built.
            add_graph_events(self._summary_writer, self._graph, self._saver)
            self._graph_added_to_summary = True


__all__ = ["Supervisor"]
