"""The layers inside a `MonitoredSession`, outermost first:

    RecoverableSession  re-creates the session after AbortedError/UnavailableError
    CoordinatedSession  stops with the coordinator of the queue-runner threads
    HookedSession       calls hooks' before_run/after_run and merges their fetches
    tf.Session          the raw session

Each layer is a `WrappedSession`: `run`, `should_stop` and `close` pass inwards.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensorweave.framework import errors
from tensorweave.framework.device import tasks_named
from tensorweave.framework.proto.config_pb2 import RunMetadata, RunOptions
from tensorweave.train import training_util
from tensorweave.train.hook_utils import log
from tensorweave.train.session_deadline import MAX_RECOVERIES_IN_A_ROW, ClusterWait
from tensorweave.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)

# A task of the cluster was restarted or is unreachable: the session must be re-created.
PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)


class WrappedSession:
    """Passes `run` to an inner session; `should_stop` asks every layer."""

    def __init__(self, sess: Any) -> None:
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(sess, WrappedSession)

    @property
    def graph(self) -> Any:
        return self._sess.graph

    @property
    def sess_str(self) -> str:
        return self._sess.sess_str

    def _check_stop(self) -> bool:
        """This layer's own stop condition (none by default)."""
        return False

    def should_stop(self) -> bool:
        if self._check_stop():
            return True
        if self._sess is not None:
            return self._wrapped_is_stoppable and self._sess.should_stop()
        return True

    def close(self) -> None:
        if self._sess is not None:
            try:
                self._sess.close()
            except PREEMPTION_ERRORS as e:
                log.warning("Ignoring %s while closing the session: %s", type(e).__name__, e)
            finally:
                self._sess = None

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self._sess.run(*args, **kwargs)

    def raw_session(self) -> Any:
        """The innermost `tf.Session`."""
        sess = self._sess
        while isinstance(sess, WrappedSession):
            sess = sess._sess
        return sess


class HookedSession(WrappedSession):
    """Calls the hooks around each `run` and adds the fetches and feeds they ask for."""

    def __init__(self, sess: Any, hooks: list[SessionRunHook]) -> None:
        super().__init__(sess)
        self._hooks = hooks
        self._should_stop = False

    def _check_stop(self) -> bool:
        return self._should_stop

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested: "
                               "MonitoredSession.run() after should_stop() became True; check "
                               "should_stop() before each step.")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._sess)
        all_fetches: dict[Any, Any] = {"caller": fetches}
        options = options if options is not None else RunOptions()
        feeds = self._call_before_run(context, all_fetches, feed_dict, options)
        run_metadata = run_metadata if run_metadata is not None else RunMetadata()
        outputs = self._sess.run(all_fetches, feed_dict=feeds, options=options,
                                 run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(context, SessionRunValues(results=outputs.get(hook),
                                                     options=options,
                                                     run_metadata=run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return outputs["caller"]

    def _call_before_run(self, context: SessionRunContext, all_fetches: dict,
                         user_feeds: Any, options: Any) -> Any:
        hook_feeds: dict[Any, Any] = {}
        for hook in self._hooks:
            request = hook.before_run(context)
            if request is None:
                continue
            if request.fetches is not None:
                all_fetches[hook] = request.fetches
            if request.feed_dict:
                _check_disjoint(hook_feeds, request.feed_dict,
                                f"Same tensor is fed by two hooks. (One is {hook!r}.)")
                hook_feeds.update(request.feed_dict)
            if request.options:
                _merge_run_options(options, request.options)
        if not hook_feeds:
            return user_feeds
        if not user_feeds:
            return hook_feeds
        _check_disjoint(user_feeds, hook_feeds, "Same tensor is fed by a SessionRunHook and "
                        "user. (The caller of run() and a hook's before_run() both feed it.)")
        merged = dict(hook_feeds)
        merged.update(user_feeds)
        return merged


def _check_disjoint(a: dict, b: dict, what: str) -> None:
    names = {getattr(k, "name", k) for k in a} & {getattr(k, "name", k) for k in b}
    if names:
        raise RuntimeError(f"{what} Conflict(s): {sorted(map(str, names))}. Feed each tensor "
                           "once.")


def _merge_run_options(options: Any, incoming: Any) -> None:
    # As TF 1.x: numbers take the larger value (the most detailed trace, the longest
    # timeout), flags are OR-ed, so no hook loses what it asked for.
    options.trace_level = max(options.trace_level, incoming.trace_level)
    options.timeout_in_ms = max(options.timeout_in_ms, incoming.timeout_in_ms)
    options.inter_op_thread_pool = max(options.inter_op_thread_pool,
                                       incoming.inter_op_thread_pool)
    options.output_partition_graphs |= incoming.output_partition_graphs
    options.report_tensor_allocations_upon_oom |= incoming.report_tensor_allocations_upon_oom
    # Debug watches add up, in the order the caller and then the hooks asked for them.
    options.debug_options.debug_tensor_watch_opts.extend(
        incoming.debug_options.debug_tensor_watch_opts)
    options.debug_options.reset_disk_byte_usage |= incoming.debug_options.reset_disk_byte_usage


def _error_text(error: BaseException) -> str:
    # TF's error classes take (node_def, op, message) and allow message=None (test
    # doubles raise AbortedError("...", None, None)); str() of such an error fails.
    message = getattr(error, "message", None)
    if isinstance(message, str):
        return message
    try:
        return str(error)
    except TypeError:
        return ""


class CoordinatedSession(WrappedSession):
    """Stops when the coordinator does; on close, stops and joins the threads."""

    def __init__(self, sess: Any, coord: Any, stop_grace_period_secs: float = 120) -> None:
        super().__init__(sess)
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def _check_stop(self) -> bool:
        # An exception recorded by a queue-runner thread surfaces here, in the main thread.
        self._coord.raise_requested_exception()
        return self._coord.should_stop()

    def close(self) -> None:
        self._coord.request_stop()
        try:
            # A thread blocked inside a step (e.g. the sync-replicas queue runner waiting
            # in take_grad) never sees the stop request; TF 1.x waited the whole grace
            # period for it. Give threads a moment, then closing the session cancels
            # their steps, and only then wait the grace period.
            self._coord.join(stop_grace_period_secs=min(1.0, self._stop_grace_period_secs),
                             ignore_live_threads=True)
        finally:
            try:
                super().close()
            except Exception:  # noqa: BLE001 - join() already reported the useful error
                pass
            self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs,
                             ignore_live_threads=True)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._sess.run(*args, **kwargs)
        except PREEMPTION_ERRORS:
            raise
        except Exception:
            # A thread's preemption error may be the root cause: prefer raising it, so the
            # recoverable layer re-creates the session.
            try:
                self._coord.raise_requested_exception()
            except PREEMPTION_ERRORS:
                raise
            except Exception:  # noqa: BLE001 - re-raise the step's own error below
                pass
            raise


class RecoverableSession(WrappedSession):
    """Re-creates the session (via `sess_creator`) after a preemption error and retries.

    A re-created chief session restores the latest checkpoint; a worker waits for the
    model to be ready again. Beyond TF 1.x, which retried forever at INFO, session
    creation retries with a capped back-off until the session deadline
    (`session_deadline.session_deadline_secs`, about a minute) and then raises
    `UnavailableError` naming the missing tasks; a step is retried on at most
    `MAX_RECOVERIES_IN_A_ROW` fresh sessions in a row; and every recovery says at
    WARNING what it does (restarting the session, what it restored, the step it
    resumes at).
    """

    def __init__(self, sess_creator: Any) -> None:
        self._sess_creator = sess_creator
        self._recoveries = 0  # session re-creations since the last successful step
        super().__init__(self._create_session())
        self._wrapped_is_stoppable = True

    def _create_session(self, recovering: bool = False) -> Any:
        wait = ClusterWait(getattr(self._sess_creator, "session_target", ""),
                           getattr(self._sess_creator, "session_config", None),
                           "to re-create the session" if recovering else "to create a session")
        while True:
            try:
                sess = self._sess_creator.create_session()
            except PREEMPTION_ERRORS as e:
                wait.retry_or_raise(e)
                continue
            if recovering:
                self._say_resumed(sess)
            return sess

    def _say_resumed(self, sess: Any) -> None:
        describe = getattr(self._sess_creator, "describe_last_session", None)
        origin = (describe() if describe else None) or "the session is ready"
        step = "unknown"
        graph = getattr(sess, "graph", None)  # any session-like object a creator returns
        global_step = training_util.get_global_step(graph) if graph is not None else None
        if global_step is not None:
            raw = sess.raw_session() if hasattr(sess, "raw_session") else sess
            try:
                step = str(raw.run(global_step))
            except Exception as e:  # noqa: BLE001 - only for the log line
                step = f"unknown ({type(e).__name__})"
        log.warning("Session re-created on %s: %s; resuming at global step %s.",
                    getattr(self._sess_creator, "session_target", "") or "the target",
                    origin, step)

    def _recover(self, error: BaseException, where: str) -> None:
        """Closes the broken session so the next run re-creates it, or gives up when
        fresh sessions keep failing."""
        self._recoveries += 1
        text = _error_text(error)
        lost = ", ".join(tasks_named(text)) or "a task"
        if self._recoveries > MAX_RECOVERIES_IN_A_ROW:
            raise type(error)(None, None, f"Gave up after {MAX_RECOVERIES_IN_A_ROW} session "
                              f"re-creations in a row, each failing {where} with "
                              f"{type(error).__name__}: {text}") from error
        log.warning("%s %s (lost %s?): restarting the session (recovery %d of at most %d in "
                    "a row): %s", type(error).__name__, where, lost, self._recoveries,
                    MAX_RECOVERIES_IN_A_ROW, (text.strip().splitlines() or [""])[0])
        self.close()
        self._sess = None

    def _check_stop(self) -> bool:
        try:
            return self._sess._check_stop() if self._sess else True
        except PREEMPTION_ERRORS as e:
            self._recover(e, "while checking should_stop")
            self._sess = self._create_session(recovering=True)
            return False
        except Exception:  # noqa: BLE001 - should_stop() answers True rather than raising
            return True

    def should_stop(self) -> bool:
        if self._check_stop():
            return True
        return self._sess.should_stop() if self._sess is not None else True

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session(recovering=True)
                result = self._sess.run(fetches, feed_dict=feed_dict, options=options,
                                        run_metadata=run_metadata)
            except PREEMPTION_ERRORS as e:
                self._recover(e, "during a step")
                continue
            self._recoveries = 0
            return result

    def run_step_fn(self, step_fn: Callable[[Any], Any],
                    make_context: Callable[[Callable[..., Any]], Any]) -> Any:
        """Calls `step_fn(make_context(run_with_hooks))`; on preemption re-creates the
        session and calls the whole `step_fn` again.

        `run_with_hooks` is the inner session's run, so a preemption error inside
        `step_fn` reaches this loop instead of being retried step by step.
        """
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session(recovering=True)
                result = step_fn(make_context(self._sess.run))
            except PREEMPTION_ERRORS as e:
                self._recover(e, "in step_fn")
                continue
            self._recoveries = 0
            return result


__all__ = [
    "PREEMPTION_ERRORS",
    "CoordinatedSession",
    "HookedSession",
    "RecoverableSession",
    "WrappedSession",
]
