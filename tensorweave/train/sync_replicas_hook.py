"""The session hook of `tf.train.SyncReplicasOptimizer` (`make_session_run_hook`).

It runs each replica's local init once the model is ready, the chief's initial tokens
and its queue runner, watches the steps for missing replicas (sync_replicas_watch),
and at a normal end tells the accumulators this replica has finished; the chief then
serves the replicas still training for a while and closes the token queue.

Example:
    >>> hook = opt.make_session_run_hook(is_chief)
    >>> with tf.train.MonitoredTrainingSession(master, is_chief, hooks=[hook]) as sess:
    ...     sess.run(train_op)
"""
from __future__ import annotations

import logging
from typing import Any

from tensorweave.base import knobs
from tensorweave.base.waits import Backoff, wait_until
from tensorweave.framework import errors
from tensorweave.train.session_run_hook import SessionRunHook

log = logging.getLogger("tensorweave.sync_replicas")


class SyncReplicasOptimizerHook(SessionRunHook):
    """Runs the local init, the chief's initial tokens and its queue runner, and
    watches the steps for missing replicas (sync_replicas_watch).

    Args:
        opt: the SyncReplicasOptimizer whose apply_gradients made the train op (typed
            Any: that module imports this one).
        is_chief: whether this replica runs the chief's queue runner and tokens.
        num_tokens: the chief's initial tokens (-1: replicas_to_aggregate).

    Example:
        >>> hook = opt.make_session_run_hook(is_chief)   # makes one of these
    """

    def __init__(self, opt: Any, is_chief: bool, num_tokens: int) -> None:
        self._opt = opt
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self) -> None:
        opt = self._opt
        opt._require_applied("creating the session")
        self._local_init_op = opt.chief_init_op if self._is_chief else opt.local_step_init_op
        self._ready_op = opt.ready_for_local_init_op
        self._q_runner = opt.get_chief_queue_runner() if self._is_chief else None
        self._init_tokens = opt.get_init_tokens_op(self._num_tokens) if self._is_chief \
            else None
        self._end_op = opt.end_of_training_op() if self._is_chief else None
        # Every replica says whom its waiting step waits for; only the chief gives up.
        self._watch = opt.replica_watch(may_give_up=self._is_chief)

    def after_create_session(self, session: Any, coord: Any) -> None:
        not_ready: list = []

        def ready() -> bool:
            not_ready[:] = list(session.run(self._ready_op))
            return not not_ready
        # The chief may still be initializing the model.
        wait_until(ready, "for the model to be ready for SyncReplicasOptimizer's local init",
                   hint="Is the chief running, and did it initialize the model?",
                   backoff=Backoff(cap=0.25), error=RuntimeError,
                   detail=lambda: f"uninitialized: {not_ready[:10]}")
        session.run(self._local_init_op)
        if self._init_tokens is not None:
            session.run(self._init_tokens)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)
        self._watch.start(session, coord)

    def before_run(self, run_context: Any) -> None:
        self._watch.step_started()

    def after_run(self, run_context: Any, run_values: Any) -> None:
        self._watch.step_ended()

    def end(self, session: Any) -> None:
        if self._watch.gave_up is not None:
            # Not a normal end (the token queue was closed because the chief gave up):
            # raised here, the hooks after this one (telling the ps the job is done)
            # do not run, so a restarted chief finds its ps still serving.
            raise self._watch.gave_up
        try:
            session.run(self._opt._departed_op)
            if self._end_op is not None:
                self._opt.wait_for_other_replicas(session, knobs.SYNC_SERVE_SECS.get())
                session.run(self._end_op)
        except errors.OpError as e:  # the ps may already be gone: nothing to release
            log.debug("end-of-training ops of sync replicas failed: %s", e)
