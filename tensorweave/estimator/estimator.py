"""`tf.estimator.Estimator`: train, evaluate, predict and export a model_fn's model.

Each call builds a fresh graph: input_fn gives features and labels, model_fn
gives an `EstimatorSpec` for the mode, and a monitored session runs it with
checkpoints in `model_dir`. Training resumes from the latest checkpoint there;
evaluation and prediction restore it.

Example:
    >>> est = tf.estimator.Estimator(model_fn, model_dir="/tmp/model",
    ...                              config=tf.estimator.RunConfig(save_checkpoints_steps=100))
    >>> est.train(train_input_fn, max_steps=1000)
    >>> est.evaluate(eval_input_fn)["accuracy"]
"""
from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from tensorweave.distributed.run_config import RunConfig
from tensorweave.estimator import exporting
from tensorweave.estimator import graph_parts as parts
from tensorweave.estimator import run_setup
from tensorweave.estimator.eval_hooks import StopAfterNEvalsHook
from tensorweave.estimator.model_fn import EstimatorSpec, ModeKeys
from tensorweave.estimator.warm_starting import WarmStartSettings, warm_start
from tensorweave.framework.graph import Graph
from tensorweave.framework.graph_defaults import GraphKeys, device
from tensorweave.ops.control_flow import group
from tensorweave.ops.random.random_ops import set_random_seed
from tensorweave.platform import tf_logging as logging
from tensorweave.summary.summary import scalar as summary_scalar
from tensorweave.train import basic_session_run_hooks as hooks_lib
from tensorweave.train.checkpoint_management import (
    latest_checkpoint,
    latest_valid_checkpoint,
    list_variables,
    load_variable,
)
from tensorweave.train.monitored_session import MonitoredSession, MonitoredTrainingSession
from tensorweave.train.session_creators import ChiefSessionCreator
from tensorweave.train.training_util import get_or_create_global_step

__all__ = ["Estimator"]


class Estimator:
    """Trains, evaluates, predicts with and exports the model a model_fn builds.

    Args:
        model_fn: `model_fn(features, labels, mode, params, config)` returning an
            `EstimatorSpec`; only `features` is required, the others are passed
            when its signature names them.
        model_dir: where checkpoints, summaries and exports go (default:
            `config.model_dir`, else a new temporary directory).
        config: a `tf.estimator.RunConfig` (default: `RunConfig()`, which reads
            TF_CONFIG).
        params: a dict of hyperparameters passed to model_fn as `params`.
        warm_start_from: a checkpoint directory or file, or a
            `tf.estimator.WarmStartSettings`; when model_dir has no checkpoint yet,
            training starts from the (trainable, by default) variables stored
            there (matched by name).

    Raises:
        ValueError: model_fn's signature cannot be served, model_dir disagrees
            with config.model_dir, or params given to a model_fn without `params`.
        TypeError: config is not a RunConfig.

    Example:
        >>> est = tf.estimator.Estimator(model_fn, params={"learning_rate": 0.01})
    """

    def __init__(self, model_fn: Callable[..., Any], model_dir: str | None = None,
                 config: RunConfig | None = None, params: dict[str, Any] | None = None,
                 warm_start_from: str | WarmStartSettings | None = None) -> None:
        if not callable(model_fn):
            raise ValueError(f"model_fn must be provided (a callable), got {model_fn!r}.")
        if config is None:
            config = RunConfig()
            logging.info("Using default config.")
        if not isinstance(config, RunConfig):
            raise TypeError(f"config must be an instance of RunConfig, but provided "
                            f"{config!r}.")
        if model_dir is not None and config.model_dir is not None and \
                os.fspath(model_dir) != config.model_dir:
            raise ValueError(f"model_dir are set both in constructor and RunConfig, but "
                             f"with different values. In constructor: '{model_dir}', in "
                             f"RunConfig: '{config.model_dir}'.")
        model_dir = os.fspath(model_dir) if model_dir is not None else config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp()
            logging.warning("Using temporary folder as model directory: %s", model_dir)
        self._config = config.replace(model_dir=model_dir)
        self._model_dir = model_dir
        parts.verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        self._warm_start_from = warm_start_from
        logging.info("Using config: %r", self._config)

    model_dir = property(lambda self: self._model_dir, doc="Where checkpoints go.")
    config = property(lambda self: copy.deepcopy(self._config), doc="A copy of the RunConfig.")
    params = property(lambda self: copy.deepcopy(self._params), doc="A copy of params.")
    model_fn = property(lambda self: self._model_fn)

    # ---- checkpoints -------------------------------------------------------------------
    def latest_checkpoint(self) -> str | None:
        """The newest checkpoint in model_dir, or None before the first save."""
        return latest_checkpoint(self._model_dir)

    def _restorable_checkpoint(self) -> str | None:
        # evaluate/predict/export restore the newest checkpoint that verifies (ours, as
        # training's restore does: issue 13); a damaged one is skipped with a WARNING but
        # left in place, as the chief owns model_dir.
        return latest_valid_checkpoint(self._model_dir)

    def get_variable_names(self) -> list[str]:
        """Names of the variables in the latest checkpoint.

        Raises:
            ValueError: model_dir has no checkpoint yet.
        """
        return [name for name, _ in list_variables(self._checkpoint_or_raise())]

    def get_variable_value(self, name: str) -> Any:
        """The value (numpy array) of variable `name` in the latest checkpoint.

        Raises:
            ValueError: model_dir has no checkpoint yet.
        """
        return load_variable(self._checkpoint_or_raise(), name)

    def _checkpoint_or_raise(self) -> str:
        path = self.latest_checkpoint()
        if not path:
            raise ValueError(f"Could not find trained model in model_dir: {self._model_dir}. "
                             "Train the Estimator first.")
        return path

    # ---- train -------------------------------------------------------------------------
    def train(self, input_fn: Callable[..., Any], hooks: Any = None, steps: int | None = None,
              max_steps: int | None = None, saving_listeners: Any = None) -> Estimator:
        """Trains until input ends, `steps` more steps, or global step `max_steps`.

        Args:
            input_fn: returns a `tf.data.Dataset` of (features, labels), or a
                (features, labels) tuple of tensors.
            hooks: extra `SessionRunHook`s for this task.
            steps: train this many steps more than the restored global step.
            max_steps: train until the global step reaches this (a no-op if the
                latest checkpoint is already there).
            saving_listeners: `CheckpointSaverListener`s called around each save.

        Returns:
            self.

        Raises:
            ValueError: both steps and max_steps, or a non-positive one.

        Example:
            >>> est.train(lambda: dataset, max_steps=1000)
        """
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None:
            done = parts.checkpoint_global_step(self._model_dir)
            if done is not None and done >= max_steps:
                logging.info("Skipping training since max_steps has already saved.")
                return self
        hooks = parts.check_hooks(hooks)
        if steps is not None or max_steps is not None:  # else: until input_fn's data ends
            hooks.append(hooks_lib.StopAtStepHook(num_steps=steps, last_step=max_steps))
        loss = self._train_model(input_fn, hooks, list(saving_listeners or []))
        logging.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn: Callable[..., Any], hooks: list[Any],
                     saving_listeners: list[Any]) -> Any:
        config = self._config
        with Graph().as_default() as g, device(run_setup.device_fn(config)):
            set_random_seed(config.tf_random_seed)
            global_step = get_or_create_global_step(g)
            features, labels, input_hooks = parts.call_input_fn(
                input_fn, ModeKeys.TRAIN, self._params, config)
            spec = parts.call_model_fn(self._model_fn, features, labels, ModeKeys.TRAIN,
                                       self._params, config)
            if self._warm_start_from:
                spec = warm_start(spec, self._warm_start_from)
            run_setup.ensure_saver(spec, config)
            summary_scalar("loss", spec.loss)  # as TF 1.x: every Estimator logs its loss
            worker_hooks, chief_hooks = run_setup.training_hooks(
                spec, config, global_step, input_hooks + list(hooks), saving_listeners)
            loss = None
            with MonitoredTrainingSession(
                    master=config.master, is_chief=config.is_chief,
                    checkpoint_dir=self._model_dir, scaffold=spec.scaffold,
                    hooks=worker_hooks, chief_only_hooks=chief_hooks,
                    save_checkpoint_secs=0, save_summaries_steps=config.save_summary_steps,
                    config=run_setup.session_config(config),
                    max_wait_secs=config.session_creation_timeout_secs,
                    log_step_count_steps=config.log_step_count_steps) as sess:
                while not sess.should_stop():
                    _, loss = sess.run([spec.train_op, spec.loss])
        return loss

    # ---- evaluate ----------------------------------------------------------------------
    def evaluate(self, input_fn: Callable[..., Any], steps: int | None = None,
                 hooks: Any = None, checkpoint_path: str | None = None,
                 name: str | None = None) -> dict[str, Any]:
        """Evaluates the model of a checkpoint on input_fn's data.

        Runs the eval_metric_ops' update ops for `steps` batches or until input
        ends, then reads the metrics; also writes them as summaries under
        model_dir/eval (or eval_<name>).

        Args:
            input_fn: as for `train`.
            steps: at most this many batches (None: until input ends).
            hooks: extra `SessionRunHook`s.
            checkpoint_path: a checkpoint to evaluate (default: the latest; with
                none, the freshly initialized model, as TF 1.x).
            name: names this evaluation (several eval sets: "train", "test").

        Returns:
            A dict of metric name -> value, plus "loss" (the mean loss) and
            "global_step" (of the checkpoint).

        Raises:
            ValueError: steps <= 0, or model_fn defines a metric named "loss".

        Example:
            >>> est.evaluate(eval_input_fn, steps=10)["accuracy"]
        """
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        hooks = parts.check_hooks(hooks)
        if checkpoint_path is None:
            checkpoint_path = self._restorable_checkpoint()
            if not checkpoint_path:
                logging.info("Could not find trained model in model_dir: %s, running "
                             "initialization to evaluate.", self._model_dir)
        with Graph().as_default():
            spec, update_op, final, eval_hooks = self._evaluate_build_graph(input_fn)
            all_hooks = eval_hooks + hooks + [StopAfterNEvalsHook(steps), final]
            creator = ChiefSessionCreator(
                scaffold=spec.scaffold, master=self._config.evaluation_master,
                config=self._config.session_config,
                checkpoint_filename_with_path=checkpoint_path)
            with MonitoredSession(session_creator=creator, hooks=all_hooks) as sess:
                while not sess.should_stop():
                    sess.run(update_op)
        result = dict(final.final_ops_values)
        logging.info("Saving dict for global step %s: %s", result[GraphKeys.GLOBAL_STEP],
                     ", ".join(f"{k} = {v}" for k, v in sorted(result.items())))
        parts.write_dict_to_summary(self.eval_dir(name), result,
                                    int(result[GraphKeys.GLOBAL_STEP]))
        return result

    def _evaluate_build_graph(self, input_fn: Callable[..., Any]
                              ) -> tuple[EstimatorSpec, Any, Any, list[Any]]:
        """The EVAL graph: (spec, the metrics' update op, the hook reading the metrics
        at the end, the input's and the spec's evaluation hooks)."""
        set_random_seed(self._config.tf_random_seed)
        global_step = get_or_create_global_step()
        features, labels, input_hooks = parts.call_input_fn(
            input_fn, ModeKeys.EVAL, self._params, self._config)
        spec = parts.call_model_fn(self._model_fn, features, labels, ModeKeys.EVAL,
                                   self._params, self._config)
        for reserved in (parts.LOSS_METRIC_KEY, GraphKeys.GLOBAL_STEP):
            if reserved in spec.eval_metric_ops:
                raise ValueError(f"Metric with name {reserved!r} is not allowed, because "
                                 "Estimator already defines a default metric with the "
                                 "same name; rename it in eval_metric_ops.")
        metrics = dict(spec.eval_metric_ops)
        metrics[parts.LOSS_METRIC_KEY] = parts.loss_mean(spec.loss)
        update_op = group(*[update for _, update in metrics.values()])
        values = {k: value for k, (value, _) in metrics.items()}
        values[GraphKeys.GLOBAL_STEP] = global_step
        final = hooks_lib.FinalOpsHook(values)
        return spec, update_op, final, input_hooks + list(spec.evaluation_hooks)

    def eval_dir(self, name: str | None = None) -> str:
        """The directory evaluate() writes its summaries to."""
        return os.path.join(self._model_dir, "eval" if not name else f"eval_{name}")

    # ---- predict -----------------------------------------------------------------------
    def predict(self, input_fn: Callable[..., Any], predict_keys: Any = None,
                hooks: Any = None, checkpoint_path: str | None = None,
                yield_single_examples: bool = True) -> Iterator[Any]:
        """Yields predictions for input_fn's features (labels are ignored).

        Args:
            input_fn: returns features (or (features, labels)), or a Dataset of them.
            predict_keys: a key or list of keys of a dict of predictions to keep.
            hooks: extra `SessionRunHook`s.
            checkpoint_path: the checkpoint to use (default: the latest).
            yield_single_examples: yield one example at a time (else whole batches).

        Yields:
            One prediction (a value, or a dict key -> value) per example or batch.

        Raises:
            ValueError: predict_keys names no prediction, or the predictions of a
                dict disagree on the batch size.

        Example:
            >>> for p in est.predict(lambda: {"x": tf.constant(x)}):
            ...     print(p["classes"])
        """
        hooks = parts.check_hooks(hooks)
        if checkpoint_path is None:
            checkpoint_path = self._restorable_checkpoint()
            if not checkpoint_path:
                logging.info("Could not find trained model in model_dir: %s, running "
                             "initialization to predict.", self._model_dir)
        with Graph().as_default():
            set_random_seed(self._config.tf_random_seed)
            get_or_create_global_step()
            features, _, input_hooks = parts.call_input_fn(
                input_fn, ModeKeys.PREDICT, self._params, self._config)
            parts.warn_if_input_never_ends()
            spec = parts.call_model_fn(self._model_fn, features, None, ModeKeys.PREDICT,
                                       self._params, self._config)
            predictions = parts.extract_keys(spec.predictions, predict_keys)
            creator = ChiefSessionCreator(
                scaffold=spec.scaffold, master=self._config.master,
                config=self._config.session_config,
                checkpoint_filename_with_path=checkpoint_path)
            all_hooks = input_hooks + hooks + list(spec.prediction_hooks)
            with MonitoredSession(session_creator=creator, hooks=all_hooks) as sess:
                while not sess.should_stop():
                    batch = sess.run(predictions)
                    if not yield_single_examples:
                        yield batch
                    elif not isinstance(batch, dict):
                        yield from batch
                    else:
                        for i in range(parts.batch_length(batch)):
                            yield {key: value[i] for key, value in batch.items()}

    # ---- export ------------------------------------------------------------------------
    def export_saved_model(self, export_dir_base: str,
                           serving_input_receiver_fn: Callable[[], Any],
                           assets_extra: dict[str, str] | None = None, as_text: bool = False,
                           checkpoint_path: str | None = None,
                           experimental_mode: str = ModeKeys.PREDICT,
                           strip_default_attrs: bool = False) -> bytes:
        """Exports the PREDICT graph and the checkpoint's variables as a SavedModel.

        Args:
            export_dir_base: the export goes into a new timestamped subdirectory.
            serving_input_receiver_fn: returns a `ServingInputReceiver` (see
                `tf.estimator.export.build_raw_serving_input_receiver_fn`).
            assets_extra: dest path (relative, under assets.extra) -> source file.
            as_text: write saved_model.pbtxt instead of saved_model.pb.
            checkpoint_path: the checkpoint to export (default: the latest).
            experimental_mode: ModeKeys.PREDICT (the only graph exported here).
            strip_default_attrs: leave attrs at their default values out.

        Returns:
            The export directory, as bytes (as TF 1.x returns it).

        Raises:
            ValueError: no serving_input_receiver_fn, or no checkpoint to export.

        Example:
            >>> est.export_saved_model("/tmp/export", serving_input_receiver_fn)
        """
        if experimental_mode != ModeKeys.PREDICT:
            raise ValueError(f"export_saved_model: experimental_mode={experimental_mode!r} is "
                             "not supported; only the PREDICT graph is exported "
                             "(ModeKeys.PREDICT).")
        return exporting.export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                                  assets_extra, as_text, checkpoint_path, strip_default_attrs)

    def export_savedmodel(self, export_dir_base: str,
                          serving_input_receiver_fn: Callable[[], Any],
                          assets_extra: dict[str, str] | None = None, as_text: bool = False,
                          checkpoint_path: str | None = None,
                          strip_default_attrs: bool = False) -> bytes:
        """The TF 1.x name of `export_saved_model` (same arguments)."""
        return self.export_saved_model(export_dir_base, serving_input_receiver_fn,
                                       assets_extra, as_text, checkpoint_path,
                                       strip_default_attrs=strip_default_attrs)

    def _build_predict_spec(self, features: Any) -> EstimatorSpec:
        """The PREDICT spec for `features` in the current graph (for export)."""
        return parts.call_model_fn(self._model_fn, features, None, ModeKeys.PREDICT,
                                   self._params, self._config)
