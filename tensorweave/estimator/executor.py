"""What `train_and_evaluate` runs for each role of TF_CONFIG (see `training.py`).

Deliberate differences from TF 1.x, each because our ps tasks exit when the
chief ends the job:
* a worker (not the chief) starts at once instead of sleeping 5 s per task index:
  its session waits for the chief to initialize the model anyway;
* a worker that finds the job already over (the final checkpoint is in
  model_dir and the ps tasks are gone) ends normally instead of failing;
* a chief with nothing left to train (model_dir's checkpoint is at max_steps,
  e.g. a rerun) tells the ps tasks that the job is done, so that they exit.
"""
from __future__ import annotations

import time
from typing import Any

from tensorweave.base.waits import Wait, WaitTimeout
from tensorweave.distributed.job import notify_enabled, notify_job_done
from tensorweave.distributed.run_config import TaskType
from tensorweave.distributed.server import Server
from tensorweave.estimator.graph_parts import checkpoint_global_step
from tensorweave.estimator.evaluator import CheckpointEvaluator, NewCheckpointListener
from tensorweave.framework import errors
from tensorweave.platform import tf_logging as logging

__all__ = ["TrainingExecutor"]

_ROLES = (TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER, TaskType.PS, TaskType.EVALUATOR)


class TrainingExecutor:
    """Runs train_and_evaluate's part for this process's task.

    Args:
        estimator: the Estimator; its config says the task.
        train_spec: a TrainSpec.
        eval_spec: an EvalSpec.
    """

    def __init__(self, estimator: Any, train_spec: Any, eval_spec: Any) -> None:
        self._estimator = estimator
        self._train_spec = train_spec
        self._eval_spec = eval_spec

    def run(self) -> tuple[dict[str, Any] | None, list[Any]] | None:
        """Runs this task's role; see `train_and_evaluate`.

        Raises:
            ValueError: an evaluator with task id > 0, or an unknown task type.
        """
        config = self._estimator.config
        task_type = config.task_type
        if task_type == TaskType.EVALUATOR and config.task_id > 0:
            raise ValueError(f"For distributed training, there can only be one `evaluator` "
                             f"task (with task id 0). Given task id {config.task_id}.")
        if not config.cluster_spec and task_type != TaskType.EVALUATOR:
            logging.info("Running training and evaluation locally (non-distributed).")
            return self.run_local()
        if task_type not in _ROLES:
            raise ValueError(f"Task type {task_type!r} is not supported by train_and_evaluate;"
                             f" TF_CONFIG's task type must be one of {list(_ROLES)}.")
        logging.info("Running train_and_evaluate as %s %s.", task_type, config.task_id)
        if task_type == TaskType.PS:
            self.run_ps()
        elif task_type == TaskType.EVALUATOR:
            self.run_evaluator()
        else:  # chief, legacy master, worker: between-graph training on this task's server
            self.run_trainer(evaluate=task_type == TaskType.MASTER)
        return None

    # ---- local --------------------------------------------------------------------
    def run_local(self) -> tuple[dict[str, Any] | None, list[Any]]:
        """Trains here, evaluating after new checkpoints (throttled) and at the end.

        Raises:
            ValueError: the RunConfig saves no checkpoints (nothing to evaluate).
        """
        config = self._estimator.config
        if not config.save_checkpoints_steps and not config.save_checkpoints_secs:
            raise ValueError("train_and_evaluate evaluates each new checkpoint, but the "
                             "RunConfig saves none: set save_checkpoints_steps or "
                             "save_checkpoints_secs.")
        logging.info("Start train and evaluate loop. The evaluate will happen after every "
                     "checkpoint (at most every %s secs). Checkpoint frequency is determined "
                     "based on RunConfig arguments: save_checkpoints_steps %s or "
                     "save_checkpoints_secs %s.", self._eval_spec.throttle_secs,
                     config.save_checkpoints_steps, config.save_checkpoints_secs)
        evaluator = CheckpointEvaluator(self._estimator, self._eval_spec,
                                        self._train_spec.max_steps)
        listener = NewCheckpointListener(evaluator, self._eval_spec.throttle_secs)
        self._estimator.train(self._train_spec.input_fn, hooks=list(self._train_spec.hooks),
                              max_steps=self._train_spec.max_steps,
                              saving_listeners=[listener])
        result = evaluator.last_result
        return (result.metrics if result else None), evaluator.export_results

    # ---- cluster roles ------------------------------------------------------------------
    def _start_server(self) -> Server:
        config = self._estimator.config
        if not config.cluster_spec or not config.task_type or config.task_id is None:
            raise RuntimeError("Could not start server; be sure to specify cluster_spec, "
                               "task_type, and task in RunConfig or set the TF_CONFIG "
                               "environment variable.")
        logging.info("Start Tensorflow server.")
        return Server(config.cluster_spec, job_name=config.task_type,
                      task_index=config.task_id, config=config.session_config,
                      protocol=config.protocol, start=True)

    def run_ps(self) -> None:
        """Serves the variables until the chief ends the job, when `join()` ends this
        process with exit code 0 (TF 1.x: forever; neither returns to the caller)."""
        server = self._start_server()
        server.join()

    def run_trainer(self, evaluate: bool = False) -> None:
        """Chief or worker: trains between-graph on this task's server. The legacy
        `master` also evaluates its new checkpoints, as TF 1.x's run_master does."""
        server = self._start_server()
        listeners = []
        if evaluate:
            evaluator = CheckpointEvaluator(self._estimator, self._eval_spec,
                                            self._train_spec.max_steps)
            listeners.append(NewCheckpointListener(evaluator, self._eval_spec.throttle_secs))
        try:
            if self._estimator.config.is_chief and self._trained_already():
                self._end_job_without_training()
            self._estimator.train(self._train_spec.input_fn,
                                  hooks=list(self._train_spec.hooks),
                                  max_steps=self._train_spec.max_steps,
                                  saving_listeners=listeners)
        except (errors.UnavailableError, errors.AbortedError) as e:
            if not self._job_already_done():
                raise
            logging.info("The job ended while this worker was joining (%s); the final "
                         "checkpoint is in model_dir, so there is nothing left to train.",
                         type(e).__name__)
        finally:
            server.stop()

    def _end_job_without_training(self) -> None:
        """No training session will end the job (a rerun on a finished model_dir): tell
        the ps tasks here, retrying while some are still starting (bounded)."""
        config = self._estimator.config
        if not notify_enabled():  # TENSORWEAVE_NOTIFY_JOB_DONE=0: TF's ps that never exit
            return
        wait = Wait(f"for the {config.num_ps_replicas} ps task(s) to hear that the job is "
                    "done", hint="Those that did not will wait for a chief that does not "
                    "come: stop them by hand.")
        while True:
            told = notify_job_done(config.master)
            if len(told) >= config.num_ps_replicas:
                return
            try:
                wait.pause(f"told {told or 'none'}")
            except WaitTimeout as e:  # the chief's own work is done: say so, do not fail
                logging.warning("%s", e)
                return

    def _job_already_done(self) -> bool:
        return not self._estimator.config.is_chief and self._trained_already()

    def _trained_already(self) -> bool:
        """Whether model_dir's checkpoint is at or past the train spec's max_steps."""
        max_steps = self._train_spec.max_steps
        if max_steps is None:
            return False
        step = checkpoint_global_step(self._estimator.model_dir)
        return step is not None and step >= max_steps

    def run_evaluator(self) -> None:
        """Evaluates each new checkpoint until the final one (global step >= max_steps)."""
        delay = self._eval_spec.start_delay_secs
        if delay:
            logging.info("Waiting %s secs before starting eval.", delay)
            time.sleep(delay)
        evaluator = CheckpointEvaluator(self._estimator, self._eval_spec,
                                        self._train_spec.max_steps)
        if not self._eval_spec.throttle_secs:
            logging.warning("EvalSpec.throttle_secs is set as 0. This might overload the job "
                            "before finding (next) new checkpoint. Please consider to "
                            "increase it.")
        while True:
            start = time.monotonic()
            evaluator.evaluate_and_export()
            if evaluator.final_evaluated:
                logging.info("Exiting evaluation, global_step=%s >= train max_steps=%s",
                             evaluator.last_global_step, self._train_spec.max_steps)
                return
            left = self._eval_spec.throttle_secs - (time.monotonic() - start)
            if left > 0:
                logging.info("Waiting %.1f secs before starting next eval run.", left)
                time.sleep(left)
            else:
                time.sleep(0.5)  # no throttle: poll for a new checkpoint, but not in a spin
