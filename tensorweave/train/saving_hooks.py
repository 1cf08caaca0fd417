"""Hooks that write to disk: checkpoints, summaries and the global-step rate.

Example:
    >>> saver_hook = tf.train.CheckpointSaverHook("/tmp/train", save_steps=100)
    >>> summary_hook = tf.train.SummarySaverHook(save_steps=10, output_dir="/tmp/train",
    ...                                          summary_op=tf.summary.merge_all())
"""
from __future__ import annotations

import os
from typing import Any

from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.platform import tf_logging
from tensorweave.train.hook_utils import (
    add_graph_events,
    SecondOrStepTimer,
    add_session_log,
    log,
    require_global_step,
    scalar_summary,
    summary_writer_for,
)
from tensorweave.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from tensorweave.train.incremental_checkpoints import incremental_path
from tensorweave.train.saver import Saver
from tensorweave.framework.graph_io import write_graph


def _optional_writer(logdir: str | None) -> Any:
    """A summary writer for `logdir`, or None when summaries are not available.

    Checkpointing and step counting must keep working without tf.summary, so they only
    write events when a writer can be had.
    """
    if not logdir:
        return None
    try:
        return summary_writer_for(logdir)
    except ImportError as e:
        log.debug("No summary writer for %s (%s); not writing events.", logdir, e)
        return None


def _estimate_step(fetched: int, expected: int | None) -> int:
    """The global step after this run, from the value fetched along with it.

    TF's hooks assume the fetched value is the one from before the increment. Here a
    fetched variable is read at the end of the step, after the increment, unless a
    read ran before it; both cases happen. A value already at the step this run was
    expected to reach is the post-increment one; a smaller one is a pre-increment read.
    """
    return fetched if expected is not None and fetched >= expected else fetched + 1


class CheckpointSaverListener:
    """Callbacks around the saves of a `CheckpointSaverHook`.

    `after_save` may return True to request that training stop.

    Example:
        >>> class Print(tf.train.CheckpointSaverListener):
        ...     def after_save(self, session, global_step_value):
        ...         print("saved", global_step_value)
    """

    def begin(self) -> None:
        pass

    def before_save(self, session: Any, global_step_value: int) -> None:
        pass

    def after_save(self, session: Any, global_step_value: int) -> bool | None:
        return None

    def end(self, session: Any, global_step_value: int) -> None:
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint when the session starts, every N steps or seconds, and at the end.

    Args:
        checkpoint_dir: where checkpoints (and graph.pbtxt) go.
        save_secs: seconds between saves.
        save_steps: global steps between saves (exactly one of save_secs/save_steps).
        saver: the `tf.train.Saver` to use (default: the scaffold's, else the SAVERS
            collection's).
        checkpoint_basename: checkpoint file prefix inside checkpoint_dir.
        scaffold: a `Scaffold` whose saver to use.
        listeners: `CheckpointSaverListener`s.
        incremental_save_secs: also save an incremental checkpoint (what changed since
            the last save) every this many seconds between full ones, into
            `<checkpoint_dir>/.incremental_checkpoint/` (DeepRec's); the saver must be
            built with incremental_save_restore=True.

    Raises:
        ValueError: for both saver and scaffold, or not exactly one of save_secs/save_steps;
            (at the session's start) incremental_save_secs with a saver that cannot.

    Example:
        >>> tf.train.CheckpointSaverHook("/tmp/train", save_steps=100)
    """

    def __init__(self, checkpoint_dir: str, save_secs: float | None = None,
                 save_steps: int | None = None, saver: Any = None,
                 checkpoint_basename: str = "model.ckpt", scaffold: Any = None,
                 listeners: list[CheckpointSaverListener] | None = None,
                 incremental_save_secs: float | None = None) -> None:
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold (CheckpointSaverHook "
                             "uses the scaffold's saver when no saver is given).")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._steps_per_run = 1
        self._incr_timer = None if incremental_save_secs is None else \
            SecondOrStepTimer(every_secs=incremental_save_secs)

    def add_listeners(self, listeners: list[CheckpointSaverListener]) -> None:
        """Adds `listeners` after the hook's own (Estimator's saving_listeners)."""
        self._listeners.extend(listeners)

    def _set_steps_per_run(self, steps_per_run: int) -> None:
        """For train ops that advance the global step by more than one per `run`."""
        self._steps_per_run = steps_per_run

    def begin(self) -> None:
        self._summary_writer = _optional_writer(self._checkpoint_dir)
        self._global_step_tensor = require_global_step("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session: Any, coord: Any) -> None:
        step = int(session.run(self._global_step_tensor))
        # Written here rather than in begin(): other hooks may add ops in their begin().
        os.makedirs(self._checkpoint_dir, exist_ok=True)
        write_graph(get_default_graph(), self._checkpoint_dir, "graph.pbtxt")
        add_graph_events(self._summary_writer, get_default_graph(), self._get_saver())
        # The checkpoint saved here is the state at `step` (after init or restore).
        self._save(session, step)
        self._timer.update_last_triggered_step(step)
        if self._incr_timer is not None:
            if not getattr(self._get_saver(), "_incremental", False):
                raise ValueError(
                    "CheckpointSaverHook(incremental_save_secs=...) needs a saver built with "
                    "incremental_save_restore=True: pass tf.train.Saver(..., "
                    "incremental_save_restore=True), or tf.train.Scaffold("
                    "incremental_save_restore=True) for the default one.")
            self._incr_timer.update_last_triggered_step(step)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + self._steps_per_run):
            step = int(run_context.session.run(self._global_step_tensor))  # after the step
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()
                if self._incr_timer is not None:   # a full save is newer than any delta
                    self._incr_timer.update_last_triggered_step(step)
        elif self._incr_timer is not None and \
                self._incr_timer.should_trigger_for_step(stale + self._steps_per_run):
            step = int(run_context.session.run(self._global_step_tensor))
            if not self._incr_timer.should_trigger_for_step(step):
                return   # the global step did not move (a read): nothing new to save
            self._incr_timer.update_last_triggered_step(step)
            if self._save(run_context.session, step, incremental=True):
                run_context.request_stop()

    def end(self, session: Any) -> None:
        step = int(session.run(self._global_step_tensor))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _save(self, session: Any, step: int, incremental: bool = False) -> bool:
        """Saves a checkpoint for `step` (an incremental one: listeners hear it too, as
        DeepRec's); True if a listener asked to stop."""
        path = incremental_path(self._checkpoint_dir) if incremental else self._save_path
        log.info("Saving %scheckpoints for %d into %s.", "incremental " * incremental, step,
                 path)
        for listener in self._listeners:
            listener.before_save(session, step)
        if incremental:
            self._get_saver().incremental_save(session, path, global_step=step)
        else:
            self._get_saver().save(session, path, global_step=step)
            add_session_log(self._summary_writer, "CHECKPOINT", step, path)
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                log.info("CheckpointSaverListener %r requested that training stop.", listener)
                should_stop = True
        return should_stop

    def _get_saver(self) -> Any:
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        graph = get_default_graph()
        savers = graph.get_collection(GraphKeys.SAVERS)
        if not savers and not graph.finalized:
            # As TF's default saver: made once and shared through the collection.
            graph.add_to_collection(GraphKeys.SAVERS, Saver())
            savers = graph.get_collection(GraphKeys.SAVERS)
        if len(savers) != 1:
            raise RuntimeError(f"CheckpointSaverHook found {len(savers)} savers in the "
                               f"{GraphKeys.SAVERS!r} collection; pass saver= or scaffold= to "
                               "say which to use.")
        self._saver = savers[0]
        return self._saver


class StepCounterHook(SessionRunHook):
    """Logs (and writes as a summary) the rate of global steps per second.

    Args:
        every_n_steps: report every this many global steps.
        every_n_secs: report every this many seconds (exactly one of the two).
        output_dir: write a "global_step/sec" summary here.
        summary_writer: or write it with this writer.

    Example:
        >>> tf.train.StepCounterHook(every_n_steps=100, output_dir="/tmp/train")
    """

    def __init__(self, every_n_steps: int | None = 100, every_n_secs: float | None = None,
                 output_dir: str | None = None, summary_writer: Any = None) -> None:
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError(f"StepCounterHook: exactly one of every_n_steps and every_n_secs "
                             f"should be provided (got {every_n_steps}, {every_n_secs}).")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step: int | None = None
        self._steps_per_run = 1

    def _set_steps_per_run(self, steps_per_run: int) -> None:
        """For train ops that advance the global step by more than one per `run`."""
        self._steps_per_run = steps_per_run

    def begin(self) -> None:
        if self._summary_writer is None:
            self._summary_writer = _optional_writer(self._output_dir)
        self._global_step_tensor = require_global_step("StepCounterHook")
        self._summary_tag = self._global_step_tensor.op.name + "/sec"

    def after_create_session(self, session: Any, coord: Any) -> None:
        # A re-created session restarts from a checkpoint: a repeated step is expected.
        self._last_global_step = None

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + self._steps_per_run):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                secs, steps = self._timer.update_last_triggered_step(step)
                if secs and steps is not None:
                    self._record(steps / secs, step)
        if stale == self._last_global_step:
            # As TF: through tf.logging, at most 5 times per process.
            tf_logging.log_first_n(
                tf_logging.WARN, "The global step has not been increased: it is %s, as at "
                "the previous step. Pass tf.train.get_global_step() to Optimizer.minimize or "
                "apply_gradients as global_step to increase it.", 5, stale)
        self._last_global_step = stale

    def _record(self, steps_per_sec: float, step: int) -> None:
        tf_logging.info("%s: %g", self._summary_tag, steps_per_sec)
        if self._summary_writer is not None:
            summary = scalar_summary(self._summary_tag, steps_per_sec)
            if summary is not None:
                self._summary_writer.add_summary(summary, step)


class SummarySaverHook(SessionRunHook):
    """Runs the summary op every N steps or seconds and writes its result.

    Args:
        save_steps: global steps between summaries.
        save_secs: seconds between summaries (exactly one of the two).
        output_dir: directory for the events file.
        summary_writer: or this writer.
        scaffold: take the summary op from this scaffold...
        summary_op: ...or use this op (or list of ops); exactly one of the two.

    Raises:
        ValueError: unless exactly one of scaffold and summary_op is given.

    Example:
        >>> tf.train.SummarySaverHook(save_steps=10, output_dir="/tmp/train",
        ...                           summary_op=tf.summary.merge_all())
    """

    def __init__(self, save_steps: int | None = None, save_secs: float | None = None,
                 output_dir: str | None = None, summary_writer: Any = None,
                 scaffold: Any = None, summary_op: Any = None) -> None:
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided "
                             "(SummarySaverHook got both or neither).")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            # Without tf.summary there is no summary op either, so nothing is lost.
            self._summary_writer = _optional_writer(self._output_dir)
        self._next_step: int | None = None
        self._global_step_tensor = require_global_step("SummarySaverHook")

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        self._request_summary = (self._next_step is None or
                                 self._timer.should_trigger_for_step(self._next_step))
        requests: dict[str, Any] = {"global_step": self._global_step_tensor}
        ops = self._get_summary_op()
        if self._request_summary and ops is not None:
            requests["summary"] = ops
        return SessionRunArgs(requests)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if not self._summary_writer:
            return
        step = _estimate_step(int(run_values.results["global_step"]), self._next_step)
        if self._next_step is None or self._request_summary:
            step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            add_session_log(self._summary_writer, "START", step)
        if self._request_summary:
            self._timer.update_last_triggered_step(step)
            for summary in run_values.results.get("summary", []):
                self._summary_writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session: Any = None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_op(self) -> list[Any] | None:
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return op if isinstance(op, list) else [op]


__all__ = [
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "StepCounterHook",
    "SummarySaverHook",
]
