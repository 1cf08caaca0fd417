"""The chief Supervisor's background services: summaries, step rate and checkpoints,
each a `LooperThread` under the supervisor's coordinator (so `sv.stop()` ends them),
and the Supervisor's setup helpers (collections, summary writer, saver, exit hook)."""
from __future__ import annotations

import time
from typing import Any

from tensorweave.state import variables
from tensorweave.train import training_util
from tensorweave.train.coordinator import LooperThread
from tensorweave.train.hook_utils import add_session_log, log, scalar_summary, summary_api
from tensorweave.train.saver import Saver
from tensorweave.runtime.threads import at_exit


class SummaryThread(LooperThread):
    """Runs the summary op every save_summaries_secs and writes the result."""

    def __init__(self, sv: Any, sess: Any) -> None:
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self) -> None:
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        self._sv.summary_writer.add_summary(summary, step)


class StepCounterThread(LooperThread):
    """Writes global steps per second every save_summaries_secs."""

    def __init__(self, sv: Any, sess: Any) -> None:
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess
        self._tag = f"{sv.global_step.op.name}/sec"

    def start_loop(self) -> None:
        self._last_time = time.time()
        self._last_step = training_util.global_step(self._sess, self._sv.global_step)

    def run_loop(self) -> None:
        step = training_util.global_step(self._sess, self._sv.global_step)
        now = time.time()
        elapsed = now - self._last_time
        rate = (step - self._last_step) / elapsed if elapsed > 0 else float("inf")
        self._last_step, self._last_time = step, now
        summary = scalar_summary(self._tag, rate)
        if summary is not None:
            self._sv.summary_writer.add_summary(summary, step)
        log.debug("%s: %g", self._tag, rate)


class CheckpointThread(LooperThread):
    """Saves a checkpoint every save_model_secs (the first one right away)."""

    def __init__(self, sv: Any, sess: Any) -> None:
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self) -> None:
        log.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.global_step is not None:
            add_session_log(self._sv.summary_writer, "CHECKPOINT",
                            training_util.global_step(self._sess, self._sv.global_step),
                            self._sv.save_path)


__all__ = ["CheckpointThread", "StepCounterThread", "SummaryThread"]


# ---- Supervisor setup helpers ----------------------------------------------------
def first_in_collection(graph: Any, key: str) -> Any:
    items = graph.get_collection(key)
    if len(items) > 1:
        log.info("Found %d items in collection %r; using the first.", len(items), key)
    return items[0] if items else None


def new_summary_writer(logdir: str) -> Any:
    """A FileWriter for `logdir`, or None when tf.summary is not available."""
    file_writer = summary_api("FileWriter")
    if file_writer is None:
        log.info("Supervisor: no tf.summary.FileWriter; not writing events to %s.", logdir)
        return None
    return file_writer(logdir)


def default_saver() -> Any:
    if not variables.global_variables():
        return None
    return Saver()


_uncaught: list[BaseException] = []


def notify_at_exit(sv: Any) -> None:
    """Seed-style programs never call sv.stop(): a chief that exits normally ends the job."""
    import sys

    if not _uncaught and sys.excepthook is sys.__excepthook__:
        def hook(exc_type: Any, exc: Any, tb: Any) -> None:
            _uncaught.append(exc)
            sys.__excepthook__(exc_type, exc, tb)
        sys.excepthook = hook
    def notify() -> None:  # holds `sv`: seed programs drop theirs when main() returns
        if not _uncaught:
            sv._notify_job_done()
    at_exit(notify)  # runs before the program's sessions are closed at exit
