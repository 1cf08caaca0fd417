"""`tf.train.MonitoredSession`, `SingularMonitoredSession`, `MonitoredTrainingSession`.

A monitored session finalizes the graph, creates (chief) or waits for (worker) a ready
session, starts the graph's queue runners, calls hooks around every step, re-creates
the session after a ps or worker was preempted (AbortedError, UnavailableError) and
treats `OutOfRangeError` leaving its `with` block as the normal end of input.

Example:
    >>> with tf.train.MonitoredTrainingSession(
    ...         master=server.target, is_chief=(task_index == 0),
    ...         checkpoint_dir="/tmp/train_logs",
    ...         hooks=[tf.train.StopAtStepHook(last_step=1000)]) as sess:
    ...     while not sess.should_stop():
    ...         sess.run(train_op)
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from tensorweave.framework import errors
from tensorweave.framework.graph import get_default_graph
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.session_creators import (
    ChiefSessionCreator, SessionCreator, WorkerSessionCreator, _CoordinatedSessionCreator)
from tensorweave.train.session_run_hook import SessionRunHook
from tensorweave.train.prefetch import PREFETCH_RUNNERS
from tensorweave.train.wrapped_sessions import RecoverableSession
from tensorweave.train import basic_session_run_hooks as hooks_mod


class StepContext:
    """What `run_step_fn` passes to `step_fn`: the raw session and `run_with_hooks`."""

    def __init__(self, session: Any, run_with_hooks_fn: Callable[..., Any]) -> None:
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self) -> Any:
        return self._session

    def run_with_hooks(self, *args: Any, **kwargs: Any) -> Any:
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self) -> None:
        """Leaves `step_fn` at once by raising `StopIteration`, as TF 1.x does.

        The monitored session's `with` block treats it as the normal end of training
        (it closes the session and swallows the exception).

        Raises:
            StopIteration: always.
        """
        raise StopIteration("step_fn has requested the iterations to stop.")


def _check_prefetch_hook(graph: Any, hooks: list[SessionRunHook]) -> None:
    # A tf.staged part whose threads nobody starts would leave the first step waiting
    # forever on its queue (DeepRec hangs there); say what is missing instead.
    staged = graph.get_collection(PREFETCH_RUNNERS)
    if staged and not any(getattr(h, "starts_prefetch_runners", False) for h in hooks):
        raise ValueError(
            f"The graph has {len(staged)} tf.staged part(s) ({staged[0].name}) but no hook "
            "starts them: add hooks=[tf.make_prefetch_hook()] to the MonitoredSession / "
            "MonitoredTrainingSession (the first step would otherwise wait forever)")


class _MonitoredSession:
    """Shared code of MonitoredSession and SingularMonitoredSession."""

    StepContext = StepContext  # TF 1.x spells it tf.train.MonitoredSession.StepContext

    def __init__(self, session_creator: SessionCreator | None,
                 hooks: list[SessionRunHook] | None, should_recover: bool,
                 stop_grace_period_secs: float = 120) -> None:
        self._graph_was_finalized = get_default_graph().finalized
        self._graph = get_default_graph()
        self._hooks = list(hooks or [])
        _check_prefetch_hook(self._graph, self._hooks)
        for hook in self._hooks:
            hook.begin()
        self._coordinated_creator = _CoordinatedSessionCreator(
            session_creator or ChiefSessionCreator(), self._hooks, stop_grace_period_secs)
        self._sess: Any = (RecoverableSession(self._coordinated_creator) if should_recover
                           else self._coordinated_creator.create_session())

    @property
    def graph(self) -> Any:
        return self._graph

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        """Runs one step with every hook's fetches merged in; returns the caller's values.

        Raises:
            RuntimeError: if called after `should_stop()` became True or after close.
        """
        if self._sess is None:
            raise RuntimeError("This MonitoredSession is closed; create a new one to run.")
        return self._sess.run(fetches, feed_dict=feed_dict, options=options,
                              run_metadata=run_metadata)

    def run_step_fn(self, step_fn: Callable[[Any], Any]) -> Any:
        """Calls `step_fn(step_context)` and returns what it returns.

        `step_fn` may call `step_context.run_with_hooks(...)` (a step with hooks),
        `step_context.session.run(...)` (the raw session, no hooks) or
        `step_context.request_stop()`. A `MonitoredSession` that meets AbortedError or
        UnavailableError anywhere in `step_fn` re-creates the session and calls the
        whole `step_fn` again.

        Raises:
            StopIteration: `step_fn` called `request_stop()`; a `with` block over this
                session ends cleanly on it.
            ValueError: if step_fn does not take exactly one argument.
        """
        # Beyond TF 1.x, which insists on the parameter name `step_context`, any one
        # parameter (besides a bound method's self) is accepted.
        params = [p for p in inspect.signature(step_fn).parameters if p != "self"]
        if len(params) != 1:
            raise ValueError(f"`step_fn` may either have one `step_context` argument, or "
                             f"`self` and `step_context` if it is a method; {step_fn!r} "
                             f"takes {params}.")
        if self._sess is None:
            raise RuntimeError("This MonitoredSession is closed; create a new one to run.")

        def make_context(run_with_hooks: Callable[..., Any]) -> Any:
            return StepContext(self._tf_sess(), run_with_hooks)
        if isinstance(self._sess, RecoverableSession):
            return self._sess.run_step_fn(step_fn, make_context)
        return step_fn(make_context(self._sess.run))

    def should_stop(self) -> bool:
        """True once a hook or the coordinator asked to stop, or after close."""
        return self._sess is None or self._sess.should_stop()

    def close(self) -> None:
        """Ends hooks (a normal end), stops queue-runner threads and closes the session."""
        self._close_internal()

    def _tf_sess(self) -> Any:
        return self._coordinated_creator.tf_sess

    def _is_closed(self) -> bool:
        return self._coordinated_creator.tf_sess is None

    def __enter__(self) -> _MonitoredSession:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        # Running out of input is how a training loop over a finite dataset ends.
        if exc_type is not None and issubclass(exc_type, (errors.OutOfRangeError,
                                                          StopIteration)):
            exc_type = None
        self._close_internal(exc_type)
        return exc_type is None

    def _close_internal(self, exc_type: Any = None) -> None:
        try:
            if not exc_type:
                for hook in self._hooks:
                    hook.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("This MonitoredSession is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None
                if not self._graph_was_finalized:
                    # Give the graph back as it was, so the caller can keep building.
                    self._graph._unsafe_unfinalize()


class MonitoredSession(_MonitoredSession):
    """A session that runs hooks, handles initialization and recovers from preemption.

    Args:
        session_creator: how to make the session (default: `ChiefSessionCreator()`).
        hooks: `SessionRunHook`s.
        stop_grace_period_secs: how long close() waits for queue-runner threads.

    Example:
        >>> with tf.train.MonitoredSession(
        ...         session_creator=tf.train.ChiefSessionCreator(master=target),
        ...         hooks=[tf.train.StopAtStepHook(num_steps=10)]) as sess:
        ...     while not sess.should_stop():
        ...         sess.run(train_op)
    """

    def __init__(self, session_creator: SessionCreator | None = None,
                 hooks: list[SessionRunHook] | None = None,
                 stop_grace_period_secs: float = 120) -> None:
        super().__init__(session_creator, hooks, should_recover=True,
                         stop_grace_period_secs=stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A monitored chief session without recovery, with access to the raw session.

    Example:
        >>> with tf.train.SingularMonitoredSession(checkpoint_dir=d) as sess:
        ...     sess.raw_session().run(v)
    """

    def __init__(self, hooks: list[SessionRunHook] | None = None,
                 scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 checkpoint_dir: str | None = None, stop_grace_period_secs: float = 120,
                 checkpoint_filename_with_path: str | None = None) -> None:
        creator = ChiefSessionCreator(
            scaffold=scaffold or Scaffold(), master=master, config=config,
            checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, should_recover=False,
                         stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self) -> Any:
        """The underlying `tf.Session` (running it calls no hooks)."""
        return self._tf_sess()


class _UseDefault:
    """The marker for "use the default value" arguments (`tf.train.USE_DEFAULT`)."""

    def __repr__(self) -> str:
        return "USE_DEFAULT"


USE_DEFAULT: Any = _UseDefault()


def _resolve_pair(steps: Any, secs: Any, default_steps: Any, default_secs: Any
                  ) -> tuple[Any, Any]:
    # Neither given: the defaults; one given: the other is off.
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


def MonitoredTrainingSession(
        master: str = "", is_chief: bool = True, checkpoint_dir: str | None = None,
        scaffold: Scaffold | None = None, hooks: list[SessionRunHook] | None = None,
        chief_only_hooks: list[SessionRunHook] | None = None,
        save_checkpoint_secs: Any = USE_DEFAULT, save_summaries_steps: Any = USE_DEFAULT,
        save_summaries_secs: Any = USE_DEFAULT, config: Any = None,
        stop_grace_period_secs: float = 120, log_step_count_steps: int | None = 100,
        max_wait_secs: float = 7200, save_checkpoint_steps: Any = USE_DEFAULT,
        summary_dir: str | None = None,
        save_incremental_checkpoint_secs: float | None = None) -> MonitoredSession:
    """A `MonitoredSession` set up for (distributed) training.

    The chief restores the latest checkpoint of `checkpoint_dir` or initializes the
    model, and (with a checkpoint_dir) saves checkpoints every 600 s, summaries every
    100 steps and logs the step rate; other workers wait up to `max_wait_secs` for the
    chief to make the model ready and run only `hooks`.

    Args:
        master: the session target, e.g. `server.target`.
        is_chief: whether this task initializes, restores and saves the model.
        checkpoint_dir: where to restore from and save checkpoints and summaries.
        scaffold: the `Scaffold` (init/ready/local-init ops, saver, summary op).
        hooks: hooks for every task.
        chief_only_hooks: hooks for the chief only.
        save_checkpoint_secs / save_checkpoint_steps: checkpoint frequency (default
            600 s; None or 0 turns it off).
        save_summaries_steps / save_summaries_secs: summary frequency (default 100 steps).
        config: a `tf.ConfigProto`.
        stop_grace_period_secs: how long close() waits for queue-runner threads.
        log_step_count_steps: log global steps/sec this often (None or 0: never).
        max_wait_secs: how long a non-chief waits for the model to become ready.
        summary_dir: summaries go here instead of checkpoint_dir.
        save_incremental_checkpoint_secs: (DeepRec's) between full checkpoints, save
            what changed since the last save every this many seconds, into
            `<checkpoint_dir>/.incremental_checkpoint/`; a restarted chief restores the
            newest full checkpoint plus those changes (see `Saver.incremental_save`).

    Returns:
        A `MonitoredSession`; use it in a `with` block.

    Raises:
        tf.errors.DeadlineExceededError: (non-chief) the model was not ready in time.
        tf.errors.UnavailableError: tasks stayed unreachable for the whole session
            deadline (about a minute; `config.operation_timeout_in_ms` or
            TENSORWEAVE_SESSION_DEADLINE_SECS), naming them; beyond TF 1.x, which
            retried forever.

    Example:
        >>> with tf.train.MonitoredTrainingSession(master=server.target,
        ...                                        is_chief=(task_index == 0),
        ...                                        checkpoint_dir="/tmp/train_logs",
        ...                                        hooks=hooks) as mon_sess:
        ...     while not mon_sess.should_stop():
        ...         mon_sess.run(train_op)
    """
    save_summaries_steps, save_summaries_secs = _resolve_pair(
        save_summaries_steps, save_summaries_secs, 100, None)
    save_checkpoint_steps, save_checkpoint_secs = _resolve_pair(
        save_checkpoint_steps, save_checkpoint_secs, None, 600)
    scaffold = scaffold or Scaffold()
    if save_incremental_checkpoint_secs is not None and is_chief:
        if not checkpoint_dir or not ((save_checkpoint_secs or 0) > 0 or
                                      (save_checkpoint_steps or 0) > 0):
            raise ValueError("save_incremental_checkpoint_secs needs full checkpoints too (a "
                             "checkpoint_dir and save_checkpoint_secs or _steps): each "
                             "incremental checkpoint builds on a full one.")
        scaffold.incremental_save_restore = True   # the default saver, if none is given
    if not is_chief:
        creator: SessionCreator = WorkerSessionCreator(
            scaffold=scaffold, master=master, config=config, max_wait_secs=max_wait_secs)
        return MonitoredSession(session_creator=creator, hooks=hooks or [],
                                stop_grace_period_secs=stop_grace_period_secs)
    all_hooks: list[SessionRunHook] = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir,
                                  master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(hooks_mod.StepCounterHook(output_dir=summary_dir,
                                                       every_n_steps=log_step_count_steps))
        if (save_summaries_steps or 0) > 0 or (save_summaries_secs or 0) > 0:
            all_hooks.append(hooks_mod.SummarySaverHook(
                scaffold=scaffold, save_steps=save_summaries_steps,
                save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs or 0) > 0 or
                           (save_checkpoint_steps or 0) > 0):
        all_hooks.append(hooks_mod.CheckpointSaverHook(
            checkpoint_dir, save_steps=save_checkpoint_steps, save_secs=save_checkpoint_secs,
            scaffold=scaffold, incremental_save_secs=save_incremental_checkpoint_secs))
    all_hooks.extend(hooks or [])
    all_hooks.append(_JobDoneHook(master))  # last: other hooks' end() may still need the ps
    return MonitoredSession(session_creator=creator, hooks=all_hooks,
                            stop_grace_period_secs=stop_grace_period_secs)


class _JobDoneHook(SessionRunHook):
    """On the chief's normal end, tells the ps tasks the job is done (beyond TF 1.x,
    whose ps tasks never exit); their join() returns once the workers' sessions close."""

    def __init__(self, master: str) -> None:
        self._master = master

    def end(self, session: Any) -> None:
        from tensorweave.distributed.job import notify_job_done
        notify_job_done(self._master)


__all__ = [
    "USE_DEFAULT",
    "MonitoredSession",
    "MonitoredTrainingSession",
    "Scaffold",
    "SingularMonitoredSession",
    "StepContext",
]
