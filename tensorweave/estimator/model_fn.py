"""`tf.estimator.ModeKeys` and `tf.estimator.EstimatorSpec`: what a model_fn returns.

A model_fn builds the graph for one mode and returns an `EstimatorSpec` naming
the tensors the Estimator runs: `train_op` and `loss` for TRAIN, `loss` and
`eval_metric_ops` for EVAL, `predictions` for PREDICT. The spec checks its
arguments as TF 1.x does (missing or mistyped pieces raise at once, naming them).

Example:
    >>> def model_fn(features, labels, mode):
    ...     logits = tf.layers.dense(features["x"], 10)
    ...     if mode == tf.estimator.ModeKeys.PREDICT:
    ...         return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
    ...     loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    ...     train_op = tf.train.AdamOptimizer().minimize(
    ...         loss, global_step=tf.train.get_global_step())
    ...     return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from tensorweave.estimator.export_output import ExportOutput, PredictOutput
from tensorweave.framework.graph_defaults import get_default_graph
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.array import reshape
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.session_run_hook import SessionRunHook

__all__ = ["ModeKeys", "EstimatorSpec", "DEFAULT_SERVING_KEY"]

# The signature key TF Serving uses when a request names none.
DEFAULT_SERVING_KEY = "serving_default"


class ModeKeys:
    """The three modes a model_fn is called in (their values are TF's strings).

    Example:
        >>> tf.estimator.ModeKeys.PREDICT
        'infer'
    """

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)


class _SpecFields(NamedTuple):
    mode: str
    predictions: Any
    loss: Any
    train_op: Any
    eval_metric_ops: dict[str, tuple[Any, Any]]
    export_outputs: dict[str, ExportOutput] | None
    training_chief_hooks: tuple[SessionRunHook, ...]
    training_hooks: tuple[SessionRunHook, ...]
    scaffold: Scaffold
    evaluation_hooks: tuple[SessionRunHook, ...]
    prediction_hooks: tuple[SessionRunHook, ...]


class EstimatorSpec(_SpecFields):
    """What a model_fn returns: the ops and tensors of one mode, checked.

    Args:
        mode: a `ModeKeys` value.
        predictions: a Tensor or a dict of name -> Tensor (required for PREDICT).
        loss: a scalar Tensor (required for TRAIN and EVAL).
        train_op: the Operation (or Tensor) of one training step (required for TRAIN).
        eval_metric_ops: dict of name -> (metric_value, update_op), e.g. from
            `tf.metrics.accuracy`.
        export_outputs: dict of signature name -> `ExportOutput` for SavedModel
            export; in PREDICT mode the default is a `PredictOutput` of the
            predictions under "serving_default".
        training_chief_hooks, training_hooks, evaluation_hooks, prediction_hooks:
            `SessionRunHook`s for that mode (chief hooks run on the chief only).
        scaffold: a `tf.train.Scaffold` (default: a new one).

    Raises:
        ValueError: unknown mode, a piece the mode needs is missing, a loss that
            is not scalar, or a tensor from another graph.
        TypeError: a piece of the wrong type (the message names it).

    Example:
        >>> spec = tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.EVAL, loss=loss,
        ...     eval_metric_ops={"accuracy": tf.metrics.accuracy(labels, classes)})
    """

    def __new__(cls, mode: str, predictions: Any = None, loss: Any = None,
                train_op: Any = None, eval_metric_ops: Mapping[str, Any] | None = None,
                export_outputs: Mapping[str, ExportOutput] | None = None,
                training_chief_hooks: Any = None, training_hooks: Any = None,
                scaffold: Scaffold | None = None, evaluation_hooks: Any = None,
                prediction_hooks: Any = None) -> EstimatorSpec:
        if mode not in _MODES:
            raise ValueError(f"mode={mode!r} is not one of the ModeKeys {list(_MODES)}.")
        graph = get_default_graph()
        loss = _check_loss(mode, loss, graph)
        predictions = _check_predictions(mode, predictions, graph)
        if mode == ModeKeys.TRAIN and train_op is None:
            raise ValueError("Missing train_op: an EstimatorSpec for TRAIN needs the op "
                             "that runs one training step (e.g. optimizer.minimize(loss)).")
        if train_op is not None:
            _check_in_graph(_as_op_or_tensor(train_op, "train_op"), "train_op", graph)
        metrics = _check_metrics(eval_metric_ops, graph)
        outputs = _check_export_outputs(mode, export_outputs, predictions)
        if scaffold is None:
            scaffold = Scaffold()
        elif not isinstance(scaffold, Scaffold):
            raise TypeError(f"scaffold must be a tf.train.Scaffold, got {scaffold!r}.")
        return super().__new__(
            cls, mode, predictions, loss, train_op, metrics, outputs,
            _check_hooks(training_chief_hooks, "training_chief_hooks"),
            _check_hooks(training_hooks, "training_hooks"), scaffold,
            _check_hooks(evaluation_hooks, "evaluation_hooks"),
            _check_hooks(prediction_hooks, "prediction_hooks"))

    def _replace(self, **kwargs: Any) -> EstimatorSpec:
        """A copy with some fields changed, checked again like a new spec."""
        if "mode" in kwargs and kwargs["mode"] != self.mode:
            raise ValueError(f"mode of EstimatorSpec cannot be changed (from {self.mode!r} "
                             f"to {kwargs['mode']!r}); build a new spec for another mode.")
        fields = self._asdict()
        fields.update(kwargs)
        return EstimatorSpec(**fields)


def _check_in_graph(value: Any, what: str, graph: Any) -> None:
    if getattr(value, "graph", graph) is not graph:
        raise ValueError(f"{what} {value!r} must be from the default graph; build every "
                         "tensor of the model_fn in the graph the Estimator calls it in.")


def _as_op_or_tensor(value: Any, what: str) -> Any:
    if not isinstance(value, (Operation, Tensor)):
        raise TypeError(f"{what} must be an Operation or a Tensor, given: {value!r}.")
    return value


def _check_loss(mode: str, loss: Any, graph: Any) -> Any:
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError(f"Missing loss: an EstimatorSpec for mode {mode!r} needs a "
                             "scalar loss tensor.")
        return None
    if not isinstance(loss, Tensor):
        raise TypeError(f"loss must be a Tensor, given: {loss!r}.")
    _check_in_graph(loss, "loss", graph)
    n = loss.shape.num_elements()
    if n not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss!r} of shape {loss.shape}; "
                         "reduce it, e.g. with tf.reduce_mean.")
    if loss.shape.ndims not in (None, 0):
        loss = reshape(loss, [])
    return loss


def _check_predictions(mode: str, predictions: Any, graph: Any) -> Any:
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions: an EstimatorSpec for PREDICT needs a "
                             "Tensor or a dict of Tensors.")
        return None
    if isinstance(predictions, Mapping):
        for key, value in predictions.items():
            if not isinstance(value, Tensor):
                raise TypeError(f"predictions[{key!r}] must be a Tensor, given: {value!r}.")
            _check_in_graph(value, f"predictions[{key!r}]", graph)
        return dict(predictions)
    if not isinstance(predictions, Tensor):
        raise TypeError(f"predictions must be a Tensor or a dict of Tensors, given: "
                        f"{predictions!r}.")
    _check_in_graph(predictions, "predictions", graph)
    return predictions


def _check_metrics(eval_metric_ops: Any, graph: Any) -> dict[str, tuple[Any, Any]]:
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, Mapping):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops!r}.")
    out: dict[str, tuple[Any, Any]] = {}
    for name, pair in eval_metric_ops.items():
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Values of eval_metric_ops must be (metric_value, update_op) "
                            f"tuples, given: {pair!r} for key {name!r}.")
        # The value may be a nested tuple of tensors (e.g. several statistics).
        for part in _flatten(pair):
            _check_in_graph(_as_op_or_tensor(part, f"eval_metric_ops[{name!r}]"),
                            f"eval_metric_ops[{name!r}]", graph)
        out[name] = pair
    return out


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _flatten(item)]
    return [value]


def _check_export_outputs(mode: str, export_outputs: Any, predictions: Any
                          ) -> dict[str, ExportOutput] | None:
    if export_outputs is None:
        if mode == ModeKeys.PREDICT:
            return {DEFAULT_SERVING_KEY: PredictOutput(predictions)}
        return None
    if not isinstance(export_outputs, Mapping):
        raise TypeError(f"export_outputs must be a dict, given: {export_outputs!r}.")
    for key, value in export_outputs.items():
        if not isinstance(value, ExportOutput):
            raise TypeError(f"Values in export_outputs must be ExportOutput objects, given "
                            f"{value!r} for key {key!r}.")
    outputs = dict(export_outputs)
    if DEFAULT_SERVING_KEY not in outputs:
        if len(outputs) != 1:
            raise ValueError(f"Multiple export_outputs were given ({sorted(outputs)}) but "
                             f"none is the default; name one {DEFAULT_SERVING_KEY!r}.")
        # As TF: a single output also serves as the default signature.
        outputs[DEFAULT_SERVING_KEY] = next(iter(outputs.values()))
    return outputs


def _check_hooks(hooks: Any, what: str) -> tuple[SessionRunHook, ...]:
    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook!r} "
                            f"in {what}.")
    return hooks
