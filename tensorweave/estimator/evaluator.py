"""Evaluating new checkpoints for `train_and_evaluate`: the evaluator task's loop
body and the local mode's checkpoint listener.

Example:
    >>> evaluator = CheckpointEvaluator(estimator, eval_spec, max_steps=1000)
    >>> evaluator.evaluate_and_export()   # evaluates model_dir's latest checkpoint
"""
from __future__ import annotations

import os
from typing import Any, NamedTuple

from tensorweave.framework import errors
from tensorweave.framework.graph_defaults import GraphKeys
from tensorweave.platform import tf_logging as logging
from tensorweave.train.hook_utils import SecondOrStepTimer
from tensorweave.train.saving_hooks import CheckpointSaverListener

__all__ = ["EvalResult", "CheckpointEvaluator", "NewCheckpointListener"]


class EvalResult(NamedTuple):
    """One evaluation: the checkpoint it read and the metrics it gave."""

    checkpoint_path: str
    metrics: dict[str, Any]


class CheckpointEvaluator:
    """Evaluates model_dir's latest checkpoint if it is new, then runs the exporters.

    Args:
        estimator: the Estimator.
        eval_spec: the EvalSpec (input_fn, steps, name, hooks, exporters).
        max_steps: the train spec's max_steps; the checkpoint at or past it is final.
    """

    def __init__(self, estimator: Any, eval_spec: Any, max_steps: int | None) -> None:
        self._estimator = estimator
        self._spec = eval_spec
        self._max_steps = max_steps
        self.last_result: EvalResult | None = None
        self.export_results: list[Any] = []

    @property
    def last_global_step(self) -> int | None:
        """The global step of the last evaluated checkpoint."""
        if self.last_result is None:
            return None
        return int(self.last_result.metrics[GraphKeys.GLOBAL_STEP])

    @property
    def final_evaluated(self) -> bool:
        """Whether the checkpoint at max_steps (or later) has been evaluated."""
        step = self.last_global_step
        return step is not None and self._max_steps is not None and step >= self._max_steps

    def evaluate_and_export(self) -> EvalResult | None:
        """Evaluates the latest checkpoint unless it was evaluated already.

        Returns:
            The new result, or None (no checkpoint yet, no new one, or it was
            deleted before it could be read: the next call tries the newest).

        Raises:
            RuntimeError: the evaluation's metrics lack the global step.
        """
        # The state file first (cheap, every poll); the newest checkpoint that verifies
        # (reads it whole) only when that names one not evaluated yet.
        newest = self._estimator.latest_checkpoint()
        evaluated = self.last_result.checkpoint_path if self.last_result else None
        path = self._estimator._restorable_checkpoint() if newest != evaluated else newest
        if not path:
            logging.info("Estimator is not trained yet. Will start an evaluation when a "
                         "checkpoint is ready.")
            return None
        if path == evaluated:
            logging.info("No new checkpoint ready for evaluation. Skip the current "
                         "evaluation pass as evaluation results are expected to be same "
                         "for the same checkpoint.")
            return None
        try:
            metrics = self._estimator.evaluate(
                self._spec.input_fn, steps=self._spec.steps, hooks=list(self._spec.hooks),
                checkpoint_path=path, name=self._spec.name)
        except errors.NotFoundError as e:
            if _checkpoint_present(path):
                raise
            # keep_checkpoint_max removed it while we read it: a newer one exists.
            logging.warning("Checkpoint %s was deleted during its evaluation (%s); "
                            "evaluating a newer one next.", path, e)
            return None
        if GraphKeys.GLOBAL_STEP not in metrics:
            raise RuntimeError(f"Internal error: evaluation of {path} gave no global step "
                               f"({sorted(metrics)}).")
        self.last_result = EvalResult(path, metrics)
        self._export(path, metrics)
        return self.last_result

    def _export(self, path: str, metrics: dict[str, Any]) -> None:
        for exporter in self._spec.exporters:
            export_path = os.path.join(self._estimator.model_dir, "export", exporter.name)
            result = exporter.export(self._estimator, export_path, path, metrics,
                                     self.final_evaluated)
            if result is not None:
                self.export_results.append(result)


def _checkpoint_present(path: str) -> bool:
    return os.path.exists(path + ".index")


class NewCheckpointListener(CheckpointSaverListener):
    """(local mode) Evaluates after a checkpoint save, at most every `throttle_secs`,
    and after the last save if that one was skipped.

    The first save (the untrained model, before step one) is not evaluated, as in TF.
    """

    def __init__(self, evaluator: CheckpointEvaluator, throttle_secs: float) -> None:
        self._evaluator = evaluator
        self._throttle_secs = throttle_secs
        self._timer = SecondOrStepTimer(every_secs=throttle_secs)
        self._first_save = True

    def begin(self) -> None:
        self._timer.reset()
        self._first_save = True

    def after_save(self, session: Any, global_step_value: int) -> bool | None:
        if self._first_save:
            self._first_save = False
            return None
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
        else:
            logging.info("Skip the current checkpoint eval due to throttle secs (%s secs).",
                         self._throttle_secs)
        return None

    def end(self, session: Any, global_step_value: int) -> None:
        if self._evaluator.last_global_step != global_step_value:
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value: int) -> None:
        self._timer.update_last_triggered_step(global_step_value)
        self._evaluator.evaluate_and_export()
