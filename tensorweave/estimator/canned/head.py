"""Heads of the canned estimators: logits in, an `EstimatorSpec` out (TF 1.x `head_lib`).

A head owns everything after the logits: predictions, the loss (weighted by
`weight_column`, reduced by `loss_reduction`), the train op (from an optimizer
or a `train_op_fn`, plus the UPDATE_OPS), the eval metrics and the export
signatures. The three heads are TF 1.x's: binary logistic (sigmoid cross
entropy), multi-class (sparse softmax cross entropy) and regression (squared
error), with TF's prediction keys, metric keys and signature keys.

Example:
    >>> head = binary_logistic_or_multi_class_head(n_classes=2)
    >>> def model_fn(features, labels, mode):
    ...     logits = tf.layers.dense(features["x"], head.logits_dimension)
    ...     return head.create_estimator_spec(features=features, mode=mode, logits=logits,
    ...         labels=labels, optimizer=tf.train.AdagradOptimizer(0.1))
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tensorweave.estimator.canned import head_utils as utils
from tensorweave.estimator.canned.head_utils import LossSpec
from tensorweave.estimator.canned.metric_keys import MetricKeys, PredictionKeys
from tensorweave.estimator.export_output import (
    ClassificationOutput, ExportOutput, PredictOutput, RegressionOutput)
from tensorweave.estimator.model_fn import DEFAULT_SERVING_KEY, EstimatorSpec, ModeKeys
from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.losses.losses_impl import Reduction, compute_weighted_loss
from tensorweave.metrics.confusion_metrics import auc, precision, recall
from tensorweave.metrics.metrics_impl import accuracy, mean
from tensorweave.ops import array as array_ops
from tensorweave.ops.lookup.hash_ops import as_string
from tensorweave.lookup.vocab_tables import index_to_string_table_from_tensor
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn.nn_ops import softmax
from tensorweave.ops.nn.xent_ops import (
    sigmoid_cross_entropy_with_logits, sparse_softmax_cross_entropy_with_logits)
from tensorweave.summary.summary import scalar as summary_scalar
from tensorweave.train.optimizer import Optimizer

__all__ = ["Head", "LossSpec", "BinaryLogisticHead", "MultiClassHead", "RegressionHead",
           "binary_logistic_or_multi_class_head", "regression_head",
           "CLASSIFY_SERVING_KEY", "REGRESS_SERVING_KEY", "PREDICT_SERVING_KEY"]

# "serving_default" is TF Serving's; these three are the canned estimators' own names.
CLASSIFY_SERVING_KEY = "classification"
REGRESS_SERVING_KEY = "regression"
PREDICT_SERVING_KEY = "predict"


class Head:
    """The base head: subclasses give predictions, loss, metrics and export outputs.

    Args:
        weight_column: None, a feature key, or a `numeric_column` of example weights.
        loss_reduction: a `tf.losses.Reduction` other than NONE (TF's canned
            default is SUM).
        name: suffixes summary and metric keys with "/name" and names the scope.

    Example:
        >>> spec = head.create_estimator_spec(features=f, mode=mode, logits=logits,
        ...                                   labels=labels, optimizer=opt)
    """

    def __init__(self, weight_column: Any = None, loss_reduction: str = Reduction.SUM,
                 name: str | None = None) -> None:
        utils.check_reduction(loss_reduction)
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._name = name

    name = property(lambda self: self._name, doc="The head's name (None by default).")

    @property
    def logits_dimension(self) -> int:
        """The size of the last dimension of the logits."""
        raise NotImplementedError(f"{type(self).__name__} must define logits_dimension.")

    def _key(self, key: str) -> str:
        return f"{key}/{self._name}" if self._name else key

    # ---- what subclasses define ------------------------------------------------------
    def _predictions(self, logits: Tensor) -> dict[str, Tensor]:
        raise NotImplementedError(f"{type(self).__name__} must define _predictions.")

    def _export_outputs(self, predictions: dict[str, Tensor]) -> dict[str, ExportOutput]:
        raise NotImplementedError(f"{type(self).__name__} must define _export_outputs.")

    def _eval_metric_ops(self, predictions: dict[str, Tensor], loss: LossSpec
                         ) -> dict[str, tuple[Any, Any]]:
        raise NotImplementedError(f"{type(self).__name__} must define _eval_metric_ops.")

    def create_loss(self, features: dict[str, Any], mode: str, logits: Tensor,
                    labels: Any) -> LossSpec:
        """The weighted, reduced training loss and its parts (see `LossSpec`)."""
        raise NotImplementedError(f"{type(self).__name__} must define create_loss.")

    def _weighted_loss(self, features: dict[str, Any], logits: Tensor, unweighted: Tensor,
                       labels: Tensor, per_logit: bool = False) -> LossSpec:
        weights = utils.get_weights(features, self._weight_column, logits, per_logit)
        # As TF's heads: the reduced loss also goes into GraphKeys.LOSSES.
        training = compute_weighted_loss(unweighted, weights=weights,
                                         reduction=self._loss_reduction)
        return LossSpec(training, unweighted, weights, labels)

    # ---- the spec -----------------------------------------------------------------------
    def create_estimator_spec(self, features: dict[str, Any], mode: str, logits: Any,
                              labels: Any = None, optimizer: Optimizer | None = None,
                              train_op_fn: Callable[[Tensor], Any] | None = None,
                              regularization_losses: Sequence[Tensor] | None = None
                              ) -> EstimatorSpec:
        """The `EstimatorSpec` of `mode` for these logits.

        Args:
            features: the input dict (weight_column is read from it).
            mode: a `ModeKeys` value.
            logits: [batch, logits_dimension] (float; cast to float32).
            labels: required for TRAIN and EVAL.
            optimizer: TRAIN: `optimizer.minimize(loss, global_step)`.
            train_op_fn: TRAIN, instead of optimizer: loss -> train op (it must
                increment the global step itself).
            regularization_losses: scalars added to the training loss.

        Returns:
            An `EstimatorSpec`.

        Raises:
            ValueError: bad logits or labels, or TRAIN without exactly one of
                optimizer and train_op_fn.
        """
        with name_scope(self._name, "head"):
            logits = utils.check_logits(logits, self.logits_dimension)
            with name_scope(None, "predictions"):
                predictions = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions,
                                     export_outputs=self._export_outputs(predictions))
            loss = self.create_loss(features, mode, logits, labels)
            regularization = (math_ops.add_n(list(regularization_losses))
                              if regularization_losses else None)
            total = (math_ops.add_n([loss.training_loss, regularization])
                     if regularization is not None else loss.training_loss)
            if mode == ModeKeys.EVAL:
                with name_scope(None, "metrics"):
                    metrics = self._eval_metric_ops(predictions, loss)
                    if regularization is not None:
                        metrics[self._key(MetricKeys.LOSS_REGULARIZATION)] = mean(
                            regularization, name=MetricKeys.LOSS_REGULARIZATION)
                return EstimatorSpec(mode, predictions=predictions, loss=total,
                                     eval_metric_ops=metrics)
            train_op = utils.make_train_op(total, optimizer, train_op_fn)
            mean_loss = None
            if self._loss_reduction == Reduction.SUM:
                # As TF: with SUM the per-example mean is summarized too.
                weight_sum = math_ops.reduce_sum(
                    loss.weights * array_ops.ones_like(loss.unreduced_loss))
                mean_loss = math_ops.divide(loss.training_loss, weight_sum)
        # The Estimator itself summarizes "loss" (the total); the head adds the rest.
        with name_scope(""):
            if self._name:
                summary_scalar(self._key(MetricKeys.LOSS), total)
            if mean_loss is not None:
                summary_scalar(self._key(MetricKeys.LOSS_MEAN), mean_loss)
            if regularization is not None:
                summary_scalar(self._key(MetricKeys.LOSS_REGULARIZATION), regularization)
        return EstimatorSpec(mode, predictions=predictions, loss=total, train_op=train_op)


class _ClassificationHead(Head):
    """What the binary and the multi-class heads share: vocabulary and class outputs."""

    def __init__(self, n_classes: int, weight_column: Any, label_vocabulary: Any,
                 loss_reduction: str, name: str | None) -> None:
        super().__init__(weight_column, loss_reduction, name)
        self._n_classes = n_classes
        self._label_vocabulary = utils.check_vocabulary(label_vocabulary)

    def _class_outputs(self, logits: Tensor, class_ids: Tensor) -> dict[str, Tensor]:
        k = PredictionKeys
        class_ids = array_ops.expand_dims(class_ids, -1)
        if self._label_vocabulary:
            table = index_to_string_table_from_tensor(list(self._label_vocabulary),
                                                      name="class_string_lookup")
            classes = table.lookup(class_ids)
        else:
            classes = as_string(class_ids, name="str_classes")
        return {k.CLASS_IDS: class_ids, k.CLASSES: classes,
                k.ALL_CLASS_IDS: utils.all_class_ids(logits, self._n_classes),
                k.ALL_CLASSES: utils.all_classes(logits, self._n_classes,
                                                 self._label_vocabulary)}

    def _classification_output(self, predictions: dict[str, Tensor]) -> ClassificationOutput:
        # TF Serving's classify API wants string classes beside the scores.
        scores = predictions[PredictionKeys.PROBABILITIES]
        return ClassificationOutput(scores=scores, classes=utils.all_classes(
            scores, self._n_classes, self._label_vocabulary))

    def _label_ids(self, labels: Tensor) -> Tensor:
        return utils.label_ids(labels, self._label_vocabulary)


class BinaryLogisticHead(_ClassificationHead):
    """Binary classification with sigmoid cross entropy (n_classes=2).

    Labels are 0/1 (int or float, in [0, 1]) or, with `label_vocabulary`, strings
    of it. Logits are [batch, 1].

    Example:
        >>> head = BinaryLogisticHead(weight_column="w", label_vocabulary=["no", "yes"])
    """

    def __init__(self, weight_column: Any = None, label_vocabulary: Any = None,
                 loss_reduction: str = Reduction.SUM, name: str | None = None) -> None:
        super().__init__(2, weight_column, label_vocabulary, loss_reduction, name)

    logits_dimension = property(lambda self: 1)

    def _predictions(self, logits: Tensor) -> dict[str, Tensor]:
        k = PredictionKeys
        logistic = math_ops.sigmoid(logits, name=k.LOGISTIC)
        two_class = array_ops.concat([array_ops.zeros_like(logits), logits], -1,
                                     name="two_class_logits")
        class_ids = math_ops.argmax(two_class, axis=-1, name=k.CLASS_IDS)
        return {k.LOGITS: logits, k.LOGISTIC: logistic,
                k.PROBABILITIES: softmax(two_class, name=k.PROBABILITIES),
                **self._class_outputs(logits, class_ids)}

    def _export_outputs(self, predictions: dict[str, Tensor]) -> dict[str, ExportOutput]:
        classify = self._classification_output(predictions)
        return {DEFAULT_SERVING_KEY: classify, CLASSIFY_SERVING_KEY: classify,
                REGRESS_SERVING_KEY: RegressionOutput(predictions[PredictionKeys.LOGISTIC]),
                PREDICT_SERVING_KEY: PredictOutput(predictions)}

    def create_loss(self, features: dict[str, Any], mode: str, logits: Tensor,
                    labels: Any) -> LossSpec:
        labels = utils.check_dense_labels(labels, logits, 1)
        if self._label_vocabulary is None and labels.dtype == _dt.string:
            raise ValueError(utils.string_labels_message(labels))
        if self._label_vocabulary is not None:
            labels = self._label_ids(labels)
        labels = utils.assert_range(math_ops.cast(labels, _dt.float32), 2)
        unweighted = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        return self._weighted_loss(features, logits, unweighted, labels)

    def _eval_metric_ops(self, predictions: dict[str, Tensor], loss: LossSpec
                         ) -> dict[str, tuple[Any, Any]]:
        k, p = MetricKeys, PredictionKeys
        labels, weights = loss.processed_labels, loss.weights
        class_ids, logistic = predictions[p.CLASS_IDS], predictions[p.LOGISTIC]
        label_mean = utils.weighted_mean(labels, weights, k.LABEL_MEAN)
        return {
            self._key(k.LOSS_MEAN): mean(loss.unreduced_loss, weights, name=k.LOSS_MEAN),
            self._key(k.ACCURACY): accuracy(labels, class_ids, weights, name=k.ACCURACY),
            self._key(k.PRECISION): precision(labels, class_ids, weights, name=k.PRECISION),
            self._key(k.RECALL): recall(labels, class_ids, weights, name=k.RECALL),
            self._key(k.PREDICTION_MEAN): utils.weighted_mean(logistic, weights,
                                                              k.PREDICTION_MEAN),
            self._key(k.LABEL_MEAN): label_mean,
            self._key(k.ACCURACY_BASELINE): utils.accuracy_baseline(label_mean),
            self._key(k.AUC): auc(labels, logistic, utils.broadcast(weights, logistic),
                                  name=k.AUC),
            self._key(k.AUC_PR): auc(labels, logistic, utils.broadcast(weights, logistic),
                                     curve="PR", name=k.AUC_PR),
        }


class MultiClassHead(_ClassificationHead):
    """Multi-class classification with sparse softmax cross entropy (n_classes > 2).

    Labels are class ids in [0, n_classes) or, with `label_vocabulary`, strings of
    it. Logits are [batch, n_classes].

    Raises:
        ValueError: n_classes is not an int > 2.

    Example:
        >>> head = MultiClassHead(n_classes=10)
    """

    def __init__(self, n_classes: int, weight_column: Any = None,
                 label_vocabulary: Any = None, loss_reduction: str = Reduction.SUM,
                 name: str | None = None) -> None:
        if n_classes is None or isinstance(n_classes, bool) or \
                not isinstance(n_classes, int) or n_classes <= 2:
            raise ValueError(f"n_classes must be > 2: {n_classes!r}.")
        super().__init__(n_classes, weight_column, label_vocabulary, loss_reduction, name)

    logits_dimension = property(lambda self: self._n_classes)

    def _predictions(self, logits: Tensor) -> dict[str, Tensor]:
        k = PredictionKeys
        class_ids = math_ops.argmax(logits, axis=-1, name=k.CLASS_IDS)
        return {k.LOGITS: logits, k.PROBABILITIES: softmax(logits, name=k.PROBABILITIES),
                **self._class_outputs(logits, class_ids)}

    def _export_outputs(self, predictions: dict[str, Tensor]) -> dict[str, ExportOutput]:
        classify = self._classification_output(predictions)
        return {DEFAULT_SERVING_KEY: classify, CLASSIFY_SERVING_KEY: classify,
                PREDICT_SERVING_KEY: PredictOutput(predictions)}

    def create_loss(self, features: dict[str, Any], mode: str, logits: Tensor,
                    labels: Any) -> LossSpec:
        labels = utils.check_dense_labels(labels, logits, 1)
        if self._label_vocabulary is None and labels.dtype == _dt.string:
            raise ValueError(utils.string_labels_message(labels))
        if self._label_vocabulary is None and not labels.dtype.is_integer:
            raise ValueError(f"Labels dtype should be integer. Instead got "
                             f"{labels.dtype.name} ({labels.name}).")
        label_ids = utils.assert_range(self._label_ids(labels), self._n_classes)
        unweighted = array_ops.expand_dims(sparse_softmax_cross_entropy_with_logits(
            labels=array_ops.squeeze(label_ids, [-1]), logits=logits), -1)
        return self._weighted_loss(features, logits, unweighted, label_ids)

    def _eval_metric_ops(self, predictions: dict[str, Tensor], loss: LossSpec
                         ) -> dict[str, tuple[Any, Any]]:
        k = MetricKeys
        return {
            self._key(k.LOSS_MEAN): mean(loss.unreduced_loss, loss.weights,
                                         name=k.LOSS_MEAN),
            self._key(k.ACCURACY): accuracy(loss.processed_labels,
                                            predictions[PredictionKeys.CLASS_IDS],
                                            loss.weights, name=k.ACCURACY),
        }


class RegressionHead(Head):
    """Regression with squared error; logits are the predictions [batch, label_dimension].

    Raises:
        ValueError: label_dimension < 1.

    Example:
        >>> head = RegressionHead(label_dimension=2, weight_column="w")
    """

    def __init__(self, label_dimension: int = 1, weight_column: Any = None,
                 loss_reduction: str = Reduction.SUM, name: str | None = None) -> None:
        if not isinstance(label_dimension, int) or label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension!r}: it must be an "
                             "int >= 1.")
        super().__init__(weight_column, loss_reduction, name)
        self._label_dimension = label_dimension

    logits_dimension = property(lambda self: self._label_dimension)

    def _predictions(self, logits: Tensor) -> dict[str, Tensor]:
        return {PredictionKeys.PREDICTIONS: logits}

    def _export_outputs(self, predictions: dict[str, Tensor]) -> dict[str, ExportOutput]:
        regress = RegressionOutput(predictions[PredictionKeys.PREDICTIONS])
        return {DEFAULT_SERVING_KEY: regress, REGRESS_SERVING_KEY: regress,
                PREDICT_SERVING_KEY: PredictOutput(predictions)}

    def create_loss(self, features: dict[str, Any], mode: str, logits: Tensor,
                    labels: Any) -> LossSpec:
        labels = utils.check_dense_labels(labels, logits, self._label_dimension)
        if labels.dtype == _dt.string:
            raise ValueError(f"Regression labels must be numbers, got the string tensor "
                             f"{labels.name}; parse them (tf.string_to_number) first.")
        labels = math_ops.cast(labels, _dt.float32)
        unweighted = math_ops.squared_difference(logits, labels)
        return self._weighted_loss(features, logits, unweighted, labels, per_logit=True)

    def _eval_metric_ops(self, predictions: dict[str, Tensor], loss: LossSpec
                         ) -> dict[str, tuple[Any, Any]]:
        k = MetricKeys
        weights = loss.weights
        return {
            self._key(k.LOSS_MEAN): mean(loss.unreduced_loss, weights, name=k.LOSS_MEAN),
            self._key(k.PREDICTION_MEAN): utils.weighted_mean(
                predictions[PredictionKeys.PREDICTIONS], weights, k.PREDICTION_MEAN),
            self._key(k.LABEL_MEAN): utils.weighted_mean(loss.processed_labels, weights,
                                                         k.LABEL_MEAN),
        }


def binary_logistic_or_multi_class_head(n_classes: int, weight_column: Any = None,
                                        label_vocabulary: Any = None,
                                        loss_reduction: str = Reduction.SUM
                                        ) -> Head:
    """The head of a canned classifier: binary for n_classes=2, else multi-class.

    Raises:
        ValueError: n_classes is not an int >= 2 (the message names it).

    Example:
        >>> binary_logistic_or_multi_class_head(3).logits_dimension
        3
    """
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 2:
        raise ValueError(f"n_classes must be an int >= 2 (2 is binary classification), "
                         f"got n_classes={n_classes!r}.")
    if n_classes == 2:
        return BinaryLogisticHead(weight_column, label_vocabulary, loss_reduction)
    return MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction)


def regression_head(weight_column: Any = None, label_dimension: int = 1,
                    loss_reduction: str = Reduction.SUM, name: str | None = None
                    ) -> RegressionHead:
    """TF's `_regression_head`: a `RegressionHead` (squared error loss).

    Example:
        >>> regression_head(label_dimension=1).logits_dimension
        1
    """
    return RegressionHead(label_dimension, weight_column, loss_reduction, name)
