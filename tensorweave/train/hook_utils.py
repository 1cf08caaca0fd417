"""Shared pieces of the session-run hooks: timers, global-step lookup, summary writers.

Example:
    >>> timer = tf.train.SecondOrStepTimer(every_steps=10)
    >>> timer.should_trigger_for_step(0)
    True
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from tensorweave.framework.graph import get_default_graph
from tensorweave.train import training_util
from tensorweave.train.meta_graph_io import export_meta_graph

log = logging.getLogger("tensorweave.train")


class SecondOrStepTimer:
    """Triggers every `every_secs` seconds or every `every_steps` steps (exactly one).

    The first call of `should_trigger_for_step` always triggers.

    Args:
        every_secs: seconds between triggers.
        every_steps: steps between triggers.

    Raises:
        ValueError: if neither or both are given.

    Example:
        >>> t = tf.train.SecondOrStepTimer(every_steps=2)
        >>> t.should_trigger_for_step(5)
        True
        >>> t.update_last_triggered_step(5)
        (None, None)
        >>> t.should_trigger_for_step(6), t.should_trigger_for_step(7)
        (False, True)
    """

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None) -> None:
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided "
                             "(SecondOrStepTimer got neither).")
        if every_secs is not None and every_steps is not None:
            raise ValueError(f"Can not provide both every_secs and every_steps "
                             f"(SecondOrStepTimer got every_secs={every_secs}, "
                             f"every_steps={every_steps}); pass one.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        self._last_triggered_step: int | None = None
        self._last_triggered_time: float | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        """True when `step` is due: first call, or enough seconds/steps since the last."""
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None:
            assert self._last_triggered_time is not None
            # Elapsed-versus-period (not now-versus-deadline) so that float rounding of
            # large epoch times cannot move a trigger by one step.
            return time.time() - self._last_triggered_time >= self._every_secs
        assert self._every_steps is not None  # set when every_secs is not
        return step - self._last_triggered_step >= self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Records a trigger at `step`; returns (seconds, steps) since the previous one."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed: tuple[float | None, int | None] = (None, None)
        else:
            assert self._last_triggered_step is not None  # set with the time
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time, self._last_triggered_step = now, step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_triggered_step


class NeverTriggerTimer(SecondOrStepTimer):
    """A timer that never triggers (for hooks that only act at the end)."""

    def __init__(self) -> None:
        self._every_secs = self._every_steps = None
        self.reset()

    def should_trigger_for_step(self, step: int) -> bool:
        return False


def require_global_step(hook_name: str) -> Any:
    """The default graph's global step, or a RuntimeError saying how to create one."""
    step = training_util.get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}: call "
                           "tf.train.get_or_create_global_step() while building the graph.")
    return step


def as_graph_element(obj: Any, graph: Any = None) -> Any:
    """`obj` (a Tensor, Operation, Variable or name) as an element of `graph`.

    Raises:
        ValueError: if `obj` belongs to another graph or names nothing in it.
    """
    g = graph or get_default_graph()
    if isinstance(obj, str) and ":" not in obj:
        try:
            first = g.as_graph_element(obj + ":0", allow_tensor=True, allow_operation=False)
        except (KeyError, ValueError):
            first = None
        if first is not None:
            # As TF: an op name stands for its only output; with several it is ambiguous.
            if len(first.op.outputs) > 1:
                raise ValueError(f"Name {obj} is ambiguous, as this `Operation` has multiple "
                                 f"outputs (at least 2): name one, e.g. '{obj}:0'.")
            return first
    if not isinstance(obj, str) and getattr(obj, "graph", g) is not g:
        raise ValueError(f"Passed {obj!r} should have graph attribute that is equal to current "
                         "graph: build the hook's tensors in the graph the monitored session "
                         "runs.")
    return g.as_graph_element(obj, allow_tensor=True, allow_operation=True)


# ---- summary writers, shared per directory like TF's FileWriterCache ------------------
_writers: dict[str, Any] = {}
_writers_lock = threading.Lock()


def summary_api(name: str) -> Any:
    """`tensorweave.summary.<name>` (e.g. FileWriter, merge_all), or None when absent.

    Summaries are optional for training: hooks and supervisors only write events when
    tf.summary is there.
    """
    try:
        import tensorweave.summary as summary_mod
    except ImportError:
        return None
    return getattr(summary_mod, name, None)


def summary_writer_for(logdir: str) -> Any:
    """The shared summary FileWriter for `logdir` (one per directory in this process).

    Uses tf.summary's FileWriterCache when it has one, else a FileWriter kept here, so
    hooks writing to one directory share one events file.

    Raises:
        ImportError: if tf.summary.FileWriter is not available.
    """
    cache = summary_api("FileWriterCache")
    if cache is not None:
        return cache.get(logdir)
    file_writer = summary_api("FileWriter")
    if file_writer is None:
        raise ImportError("tensorweave.summary.FileWriter is not available")
    with _writers_lock:
        writer = _writers.get(logdir)
        if writer is None:
            writer = _writers[logdir] = file_writer(logdir, graph=get_default_graph())
        return writer


def merge_all_summaries() -> Any:
    """`tf.summary.merge_all()`, or None without tf.summary (so no summary ops either)."""
    merge_all = summary_api("merge_all")
    return merge_all() if merge_all is not None else None


def add_graph_events(writer: Any, graph: Any, saver: Any = None) -> None:
    """Adds `graph` and its MetaGraphDef (with `saver`'s SaverDef) to a summary writer.

    What TF's CheckpointSaverHook and Supervisor write for TensorBoard's graph view:
    the GraphDef with `_output_shapes`, then the MetaGraphDef. A writer without one of
    the `add_*` methods (a user's own) just does not get that event.

    Example:
        >>> add_graph_events(tf.summary.FileWriter(logdir), tf.get_default_graph(), saver)
    """
    if writer is None:
        return
    if hasattr(writer, "add_graph"):
        writer.add_graph(graph)
    if hasattr(writer, "add_meta_graph"):
        as_saver_def = getattr(saver, "as_saver_def", None)
        writer.add_meta_graph(export_meta_graph(
            graph=graph, graph_def=graph.as_graph_def(add_shapes=True),
            saver_def=as_saver_def() if as_saver_def is not None else None))


def add_session_log(writer: Any, status: str, step: int | None = None,
                    checkpoint_path: str = "") -> None:
    """Writes a SessionLog event (START, STOP or CHECKPOINT) when `writer` can."""
    proto = summary_api("SessionLog")
    if writer is None or proto is None or not hasattr(writer, "add_session_log"):
        return
    entry = proto(status=getattr(proto, status), checkpoint_path=checkpoint_path)
    writer.add_session_log(entry, step)


def scalar_summary(tag: str, value: float) -> Any:
    """A `tf.Summary` proto with one simple_value (None when no Summary proto exists)."""
    proto = summary_api("Summary")
    if proto is None:
        return None
    return proto(value=[proto.Value(tag=tag, simple_value=float(value))])


__all__ = [
    "NeverTriggerTimer",
    "SecondOrStepTimer",
    "add_session_log",
    "as_graph_element",
    "merge_all_summaries",
    "require_global_step",
    "scalar_summary",
    "summary_api",
    "summary_writer_for",
]
