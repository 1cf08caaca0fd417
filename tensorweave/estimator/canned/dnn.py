"""`DNNClassifier` and `DNNRegressor` (TF 1.x `tf.estimator.DNN*`).

A feed-forward network over `tf.feature_column.input_layer`, built with TF's
scopes so checkpoints line up: `dnn/input_from_feature_columns/input_layer/...`,
`dnn/hiddenlayer_<i>/kernel|bias` (optionally `.../batchnorm_<i>/...`) and
`dnn/logits/kernel|bias`. In a cluster the Estimator's replica_device_setter
places the variables on the ps tasks, and the `dnn` scope's partitioner
(`min_max_variable_partitioner(num_ps)`, TF's, only when there are ps tasks)
splits the big ones across them;
`input_layer_partitioner` (e.g. `tf.fixed_size_partitioner(num_ps)`) splits the
embeddings.

Example:
    >>> est = DNNClassifier(hidden_units=[64, 32], feature_columns=[
    ...     tf.feature_column.numeric_column("x", shape=[8])], n_classes=3)
    >>> est.train(train_input_fn, steps=100)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tensorweave.distributed.run_config import RunConfig
from tensorweave.estimator.canned import optimizers
from tensorweave.estimator.canned.head import (
    Head, binary_logistic_or_multi_class_head, regression_head)
from tensorweave.estimator.canned.linear import check_feature_columns, default_partitioner
from tensorweave.estimator.estimator import Estimator
from tensorweave.estimator.model_fn import ModeKeys
from tensorweave.feature_column.layers import input_layer
from tensorweave.framework.tensor import Tensor
from tensorweave.layers.core import dense, dropout as dropout_layer
from tensorweave.layers.normalization import batch_normalization
from tensorweave.losses.losses_impl import Reduction
from tensorweave.ops.nn.nn_ops import relu
from tensorweave.state.init_ops import glorot_uniform_initializer
from tensorweave.state.variable_scope import get_variable_scope, variable_scope
from tensorweave.math_impl.stats_ops import zero_fraction
from tensorweave.summary.summary import histogram as summary_histogram
from tensorweave.summary.summary import scalar as summary_scalar

__all__ = ["DNNClassifier", "DNNRegressor", "dnn_logit_fn_builder", "check_hidden_units"]

# TF's default learning rate of the DNN estimators' optimizer.
_LEARNING_RATE = 0.05


def check_hidden_units(hidden_units: Any, what: str = "hidden_units") -> tuple[int, ...]:
    """The layer sizes as a tuple of positive ints.

    Raises:
        ValueError: None, empty, or a size that is not a positive int.
    """
    if hidden_units is None or isinstance(hidden_units, (str, bytes)):
        raise ValueError(f"{what} must be a list of layer sizes, e.g. [64, 32]; got "
                         f"{hidden_units!r}.")
    units = tuple(hidden_units)
    if not units or any(isinstance(u, bool) or not isinstance(u, int) or u < 1
                        for u in units):
        raise ValueError(f"{what} must be a non-empty list of positive ints, e.g. "
                         f"[64, 32]; got {hidden_units!r}.")
    return units


def check_dropout(dropout: Any) -> None:
    """Raises ValueError unless dropout is None or a probability in [0, 1)."""
    if dropout is not None and not 0.0 <= float(dropout) < 1.0:
        raise ValueError(f"dropout must be None or a probability in [0, 1); got "
                         f"{dropout!r}.")


def _add_layer_summary(value: Tensor, tag: str) -> None:
    summary_scalar(f"{tag}/fraction_of_zero_values", zero_fraction(value))
    summary_histogram(f"{tag}/activation", value)


def _batch_norm(net: Tensor, layer_id: int, mode: str) -> Tensor:
    # The moving mean/variance are updated with assign ops, which need whole
    # variables: as TF's layer does, switch the scope's partitioner off meanwhile
    # (these are [units] vectors; checkpoint names are the same either way).
    scope = get_variable_scope()
    partitioner = scope.partitioner
    scope.set_partitioner(None)
    try:
        # TF uses momentum 0.999 here: 0.99 was found to diverge on some problems.
        return batch_normalization(net, momentum=0.999, training=mode == ModeKeys.TRAIN,
                                   name=f"batchnorm_{layer_id}")
    finally:
        scope.set_partitioner(partitioner)


def dnn_logit_fn_builder(units: int, hidden_units: Sequence[int],
                         feature_columns: tuple[Any, ...], activation_fn: Callable[..., Any],
                         dropout: float | None, input_layer_partitioner: Any,
                         batch_norm: bool = False) -> Callable[[dict[str, Any], str], Tensor]:
    """A function (features, mode) -> [batch, units] logits of the network.

    Example:
        >>> logits = dnn_logit_fn_builder(1, [8], (x_col,), tf.nn.relu, None, None)(
        ...     features, tf.estimator.ModeKeys.TRAIN)
    """
    def dnn_logit_fn(features: dict[str, Any], mode: str) -> Tensor:
        with variable_scope("input_from_feature_columns", values=tuple(features.values()),
                            partitioner=input_layer_partitioner):
            net = input_layer(features, list(feature_columns))
        for layer_id, width in enumerate(hidden_units):
            with variable_scope(f"hiddenlayer_{layer_id}", values=(net,)) as scope:
                # name=scope puts kernel/bias straight under dnn/hiddenlayer_<i>, as TF.
                net = dense(net, width, activation=activation_fn,
                            kernel_initializer=glorot_uniform_initializer(),
                            name=scope)  # type: ignore[arg-type]
                if dropout is not None and mode == ModeKeys.TRAIN:
                    net = dropout_layer(net, rate=dropout, training=True)
                if batch_norm:
                    net = _batch_norm(net, layer_id, mode)
            _add_layer_summary(net, scope.name)
        with variable_scope("logits", values=(net,)) as scope:
            logits = dense(net, units, activation=None,
                           kernel_initializer=glorot_uniform_initializer(),
                           name=scope)  # type: ignore[arg-type]
        _add_layer_summary(logits, scope.name)
        return logits
    return dnn_logit_fn


def _dnn_model_fn(features: Any, labels: Any, mode: str, head: Head,
                  hidden_units: tuple[int, ...], feature_columns: tuple[Any, ...],
                  optimizer: Any, activation_fn: Callable[..., Any], dropout: float | None,
                  input_layer_partitioner: Any, config: RunConfig | None,
                  batch_norm: bool) -> Any:
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                         f"{type(features).__name__}")
    opt = optimizers.get_optimizer_instance(optimizer, learning_rate=_LEARNING_RATE)
    with variable_scope("dnn", values=tuple(features.values()),
                        partitioner=default_partitioner(config)):
        # TF's default for the input layer: split only embeddings over 64 MiB.
        input_layer_partitioner = input_layer_partitioner or default_partitioner(
            config, min_slice_size=64 << 20)
        logits = dnn_logit_fn_builder(head.logits_dimension, hidden_units, feature_columns,
                                      activation_fn, dropout, input_layer_partitioner,
                                      batch_norm)(features, mode)
        return head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                          optimizer=opt, logits=logits)


class DNNClassifier(Estimator):
    """A feed-forward network classifier: binary (sigmoid) for n_classes=2, else softmax.

    Args:
        hidden_units: sizes of the hidden layers, e.g. [64, 32].
        feature_columns: dense columns (numeric, embedding, indicator, bucketized).
        model_dir: where checkpoints go.
        n_classes: number of classes (>= 2).
        weight_column: a feature key or numeric_column of example weights.
        label_vocabulary: the label strings, when labels are strings.
        optimizer: an Optimizer, a name ('Adagrad', 'Adam', 'Ftrl', 'RMSProp',
            'SGD'; learning rate 0.05), an Optimizer class or a callable returning
            one (default Adagrad).
        activation_fn: the hidden layers' activation (default relu).
        dropout: the probability of dropping a hidden unit in training.
        input_layer_partitioner: partitioner of the input layer's variables.
        config: a RunConfig.
        warm_start_from: a checkpoint or `WarmStartSettings` to start from.
        loss_reduction: how the batch's losses reduce (default SUM, as TF).
        batch_norm: batch-normalize each hidden layer.

    Raises:
        ValueError: missing hidden_units, empty feature_columns, n_classes < 2,
            dropout outside [0, 1).

    Example:
        >>> est = DNNClassifier([16, 8], [tf.feature_column.numeric_column("x")],
        ...                     optimizer=tf.train.AdamOptimizer(1e-3), dropout=0.1)
    """

    def __init__(self, hidden_units: Sequence[int], feature_columns: Any,
                 model_dir: str | None = None, n_classes: int = 2, weight_column: Any = None,
                 label_vocabulary: Any = None, optimizer: Any = "Adagrad",
                 activation_fn: Callable[..., Any] = relu, dropout: float | None = None,
                 input_layer_partitioner: Any = None, config: RunConfig | None = None,
                 warm_start_from: Any = None, loss_reduction: str = Reduction.SUM,
                 batch_norm: bool = False) -> None:
        units = check_hidden_units(hidden_units)
        columns = check_feature_columns(feature_columns)
        check_dropout(dropout)
        head = binary_logistic_or_multi_class_head(n_classes, weight_column,
                                                   label_vocabulary, loss_reduction)

        def _model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> Any:
            return _dnn_model_fn(features, labels, mode, head, units, columns, optimizer,
                                 activation_fn, dropout, input_layer_partitioner, config,
                                 batch_norm)

        super().__init__(_model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
    """A feed-forward network regressor (squared error; "predictions").

    Args:
        hidden_units: sizes of the hidden layers.
        feature_columns: dense columns.
        model_dir: where checkpoints go.
        label_dimension: the number of regression targets per example.
        weight_column: a feature key or numeric_column of example weights.
        optimizer, activation_fn, dropout, input_layer_partitioner, config,
            warm_start_from, loss_reduction, batch_norm: as for `DNNClassifier`.

    Raises:
        ValueError: missing hidden_units, empty feature_columns, label_dimension < 1.

    Example:
        >>> est = DNNRegressor([16], [tf.feature_column.numeric_column("x")])
    """

    def __init__(self, hidden_units: Sequence[int], feature_columns: Any,
                 model_dir: str | None = None, label_dimension: int = 1,
                 weight_column: Any = None, optimizer: Any = "Adagrad",
                 activation_fn: Callable[..., Any] = relu, dropout: float | None = None,
                 input_layer_partitioner: Any = None, config: RunConfig | None = None,
                 warm_start_from: Any = None, loss_reduction: str = Reduction.SUM,
                 batch_norm: bool = False) -> None:
        units = check_hidden_units(hidden_units)
        columns = check_feature_columns(feature_columns)
        check_dropout(dropout)
        head = regression_head(weight_column, label_dimension, loss_reduction)

        def _model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> Any:
            return _dnn_model_fn(features, labels, mode, head, units, columns, optimizer,
                                 activation_fn, dropout, input_layer_partitioner, config,
                                 batch_norm)

        super().__init__(_model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)
