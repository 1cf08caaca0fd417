"""The standard hooks: stop at a step, log tensors, catch NaN loss, run final ops, wait
for a global step; the saving hooks (checkpoints, summaries, step rate) are re-exported
from `saving_hooks`.

Example:
    >>> hooks = [tf.train.StopAtStepHook(last_step=1000),
    ...          tf.train.NanTensorHook(loss),
    ...          tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=100)]
    >>> with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
    ...     while not sess.should_stop():
    ...         sess.run(train_op)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tensorweave.base.waits import Backoff, Wait
from tensorweave.framework import errors
# Looked up per call (tf_logging.info, not a bound logger): as in TF, what these hooks
# log goes through tf.logging, so a program that patches or silences tf.logging sees it.
from tensorweave.platform import tf_logging
from tensorweave.train.hook_utils import (
    NeverTriggerTimer,
    SecondOrStepTimer,
    as_graph_element,
    require_global_step,
)
# The saving hooks live in their own module to keep files short; they are part of this
# module's public surface, as in TF.
from tensorweave.train.profiler_hook import ProfilerHook as ProfilerHook
from tensorweave.train.saving_hooks import CheckpointSaverHook as CheckpointSaverHook
from tensorweave.train.saving_hooks import CheckpointSaverListener as CheckpointSaverListener
from tensorweave.train.saving_hooks import StepCounterHook as StepCounterHook
from tensorweave.train.saving_hooks import SummarySaverHook as SummarySaverHook
from tensorweave.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches a limit.

    Args:
        num_steps: run this many steps past the global step found when the session is
            created (so a restored run does `num_steps` more).
        last_step: stop once the global step is >= this.

    Raises:
        ValueError: unless exactly one of num_steps and last_step is given.

    Example:
        >>> hook = tf.train.StopAtStepHook(last_step=1000000)
    """

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified (StopAtStepHook: "
                             "num_steps runs this many more steps, last_step stops there).")
        if num_steps is not None and last_step is not None:
            raise ValueError(f"Only one of num_steps or last_step can be specified "
                             f"(StopAtStepHook got num_steps={num_steps}, "
                             f"last_step={last_step}).")
        self._num_steps = num_steps
        self._last_step: int | None = last_step

    def begin(self) -> None:
        self._global_step_tensor = require_global_step("StopAtStepHook")

    def after_create_session(self, session: Any, coord: Any) -> None:
        # Only the first session fixes the target: a session re-created after a failure
        # keeps counting towards the same last step.
        if self._last_step is None:
            assert self._num_steps is not None  # one of the two was given
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        # The fetched value may predate this step's increment; re-read before stopping.
        last = self._last_step
        assert last is not None  # set in after_create_session
        if int(run_values.results) + 1 >= last:
            step = int(run_context.session.run(self._global_step_tensor))
            if step >= last:
                run_context.request_stop()


class LoggingTensorHook(SessionRunHook):
    """Logs the values of tensors every N steps, every N seconds and/or at the end.

    Args:
        tensors: a dict tag -> tensor (or name), or a list of tensors/names.
        every_n_iter: log every this many `run` calls of this session.
        every_n_secs: log at most once per this many seconds.
        at_end: also log when the session ends.
        formatter: `f(dict tag -> value) -> str`; default "tag = value, ...".

    Raises:
        ValueError: unless exactly one of every_n_iter/every_n_secs is given (or only
            at_end), or for every_n_iter <= 0.

    Example:
        >>> tf.train.LoggingTensorHook({"loss": loss, "step": global_step}, every_n_iter=10)
    """

    def __init__(self, tensors: Any, every_n_iter: int | None = None,
                 every_n_secs: float | None = None, at_end: bool = False,
                 formatter: Callable[[dict], str] | None = None) -> None:
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("LoggingTensorHook needs at_end=True and/or exactly one of "
                             f"every_n_iter and every_n_secs (got every_n_iter={every_n_iter},"
                             f" every_n_secs={every_n_secs}).")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"LoggingTensorHook: invalid every_n_iter={every_n_iter}: it must "
                             "be a positive number of steps.")
        if isinstance(tensors, dict):
            self._tag_order = sorted(tensors, key=str)
        else:
            self._tag_order = [t if isinstance(t, str) else t.name for t in tensors]
            tensors = dict(zip(self._tag_order, tensors))
        self._tensors = tensors
        self._formatter = formatter
        self._timer = NeverTriggerTimer() if only_at_end else SecondOrStepTimer(
            every_secs=every_n_secs, every_steps=every_n_iter)
        self._log_at_end = at_end

    def begin(self) -> None:
        self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session: Any) -> None:
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))

    def _log_tensors(self, values: dict) -> None:
        elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count)
        # As TF: the formatter's string is the message itself; the default message is
        # "tag = value, ..." with the seconds since the last one appended.
        with np.printoptions(suppress=True):
            if self._formatter is not None:
                tf_logging.info(self._formatter(values))
                return
            text = ", ".join(f"{tag} = {values[tag]}" for tag in self._tag_order)
        if elapsed_secs is not None:
            tf_logging.info("%s (%.3f sec)", text, elapsed_secs)
        else:
            tf_logging.info("%s", text)


class NanLossDuringTrainingError(RuntimeError):
    """Raised by `NanTensorHook` when the loss becomes NaN."""

    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Stops training when the loss is NaN: raises, or requests a stop.

    Args:
        loss_tensor: the loss tensor.
        fail_on_nan_loss: raise `NanLossDuringTrainingError` (True) or just stop (False).

    Example:
        >>> tf.train.NanTensorHook(loss)
    """

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True) -> None:
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if np.any(np.isnan(run_values.results)):
            if self._fail_on_nan_loss:
                tf_logging.error("Model diverged with loss = NaN.")
                raise NanLossDuringTrainingError
            tf_logging.warning("Model diverged with loss = NaN; requesting a stop.")
            run_context.request_stop()


class FinalOpsHook(SessionRunHook):
    """Runs ops (or fetches tensors) once when the session ends; see `final_ops_values`.

    Args:
        final_ops: anything `Session.run` can fetch.
        final_ops_feed_dict: feeds for that run.

    Example:
        >>> hook = tf.train.FinalOpsHook({"acc": accuracy})
        >>> # ... after the monitored session closes:
        >>> hook.final_ops_values["acc"]
    """

    def __init__(self, final_ops: Any, final_ops_feed_dict: Any = None) -> None:
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values: Any = None

    @property
    def final_ops_values(self) -> Any:
        return self._final_ops_values

    def end(self, session: Any) -> None:
        if self._final_ops is None:
            return
        try:
            self._final_ops_values = session.run(self._final_ops,
                                                 feed_dict=self._final_ops_feed_dict)
        except (errors.OutOfRangeError, StopIteration):
            tf_logging.warning(
                "FinalOpsHook: its final ops raised OutOfRangeError/StopIteration, so they "
                "have a dependency back to some input source (they read another batch from an "
                "input pipeline that is already exhausted). Final ops should only read "
                "variables: e.g. fetch a metric's value_op there, not its update_op.")
            raise


class GlobalStepWaiterHook(SessionRunHook):
    """Delays this worker's first step until the global step reaches `wait_until_step`.

    Used to start workers gradually. Polls quickly (from 50 ms up to 0.5 s), so the
    worker starts soon after the step is reached.

    Args:
        wait_until_step: the global step to wait for (<= 0: do not wait).

    Example:
        >>> hook = tf.train.GlobalStepWaiterHook(wait_until_step=10 * task_index)
    """

    def __init__(self, wait_until_step: int) -> None:
        self._wait_until_step = wait_until_step

    def begin(self) -> None:
        self._worker_is_started = False
        self._global_step_tensor = require_global_step("GlobalStepWaiterHook")

    def before_run(self, run_context: SessionRunContext) -> None:
        if self._worker_is_started:
            return
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return
        tf_logging.info("Waiting for global step %d before starting training.",
                        self._wait_until_step)
        # Unbounded, as in TF (the step may be hours away); each read fails by itself
        # when the cluster goes away.
        wait = Wait(f"for global step {self._wait_until_step}", None,
                    backoff=Backoff(cap=0.5), log_every_s=30.0, first_log_s=30.0)
        while True:
            step = int(run_context.session.run(self._global_step_tensor))
            if step >= self._wait_until_step:
                self._worker_is_started = True
                return
            if wait.should_log():
                tf_logging.info("Waiting for global step %d; it is %d.",
                                self._wait_until_step, step)
            wait.sleep()


class FeedFnHook(SessionRunHook):
    """Feeds every `run` with the dict `feed_fn()` returns (e.g. the next input batch).

    Args:
        feed_fn: a callable taking no arguments and returning a feed dict.

    Example:
        >>> batches = iter(batch_list)
        >>> hook = tf.train.FeedFnHook(lambda: {x: next(batches)})
    """

    def __init__(self, feed_fn: Callable[[], dict]) -> None:
        if not callable(feed_fn):
            raise TypeError(f"FeedFnHook needs a callable returning a feed dict; got "
                            f"{type(feed_fn).__name__}.")
        self.feed_fn = feed_fn

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())



__all__ = [
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "FeedFnHook",
    "FinalOpsHook",
    "GlobalStepWaiterHook",
    "LoggingTensorHook",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "ProfilerHook",
    "SecondOrStepTimer",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
]
