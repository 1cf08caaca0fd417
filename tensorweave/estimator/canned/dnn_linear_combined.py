"""`DNNLinearCombinedClassifier` / `Regressor`: wide & deep (TF 1.x `tf.estimator`).

The logits are the sum of a linear model (scope `linear`, usually over sparse,
crossed columns: the "wide" part) and a DNN (scope `dnn`, over embeddings and
dense columns: the "deep" part). Each part has its own optimizer and trains
only its own variables (FTRL for linear, Adagrad for dnn by default); the
train op runs both and then steps the global step once, as TF's does.
Variable names are TF's, so TF 1.x wide & deep checkpoints line up.

Example:
    >>> city = tf.feature_column.categorical_column_with_hash_bucket("city", 1000)
    >>> est = DNNLinearCombinedClassifier(
    ...     linear_feature_columns=[city],
    ...     dnn_feature_columns=[tf.feature_column.embedding_column(city, 8), age],
    ...     dnn_hidden_units=[32, 16])
    >>> est.train(train_input_fn, steps=100)
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from tensorweave.distributed.run_config import RunConfig
from tensorweave.estimator.canned import optimizers
from tensorweave.estimator.canned.dnn import (
    check_dropout, check_hidden_units, dnn_logit_fn_builder)
from tensorweave.estimator.canned.head import (
    Head, binary_logistic_or_multi_class_head, regression_head)
from tensorweave.estimator.canned.linear import default_partitioner, linear_logit_fn_builder
from tensorweave.estimator.estimator import Estimator
from tensorweave.framework.graph_defaults import (
    GraphKeys, control_dependencies, get_collection)
from tensorweave.framework.tensor import Tensor
from tensorweave.losses.losses_impl import Reduction
from tensorweave.ops.control_flow import group
from tensorweave.ops.nn.nn_ops import relu
from tensorweave.ops.state.state_ops import assign_add
from tensorweave.state.variable_scope import variable_scope
from tensorweave.math_impl.stats_ops import zero_fraction
from tensorweave.summary.summary import histogram as summary_histogram
from tensorweave.summary.summary import scalar as summary_scalar
from tensorweave.train.sync_replicas_optimizer import SyncReplicasOptimizer
from tensorweave.train.training_util import get_global_step

__all__ = ["DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor"]

# TF's defaults: the DNN part's learning rate, and the linear part's cap.
_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005


def _linear_learning_rate(num_columns: int) -> float:
    return min(_LINEAR_LEARNING_RATE, 1.0 / math.sqrt(num_columns))


def _check_no_sync_replicas(optimizer: Any) -> None:
    # Two optimizers cannot share one SyncReplicasOptimizer's token queue.
    if isinstance(optimizer, SyncReplicasOptimizer):
        raise ValueError(f"SyncReplicasOptimizer does not support multi optimizers case. "
                         f"Therefore, it is not supported in DNNLinearCombined model. If "
                         f"you want to use this optimizer, please use either DNN or Linear "
                         f"model. Given: {optimizer!r}")


def _columns(columns: Any) -> tuple[Any, ...]:
    if columns is None:
        return ()
    if hasattr(columns, "_parse_example_spec"):
        return (columns,)
    return tuple(columns)


def _dnn_linear_combined_model_fn(
        features: Any, labels: Any, mode: str, head: Head,
        linear_feature_columns: tuple[Any, ...], linear_optimizer: Any,
        dnn_feature_columns: tuple[Any, ...], dnn_optimizer: Any,
        dnn_hidden_units: tuple[int, ...], dnn_activation_fn: Callable[..., Any],
        dnn_dropout: float | None, input_layer_partitioner: Any,
        config: RunConfig | None, batch_norm: bool, linear_sparse_combiner: str) -> Any:
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                         f"{type(features).__name__}")
    input_layer_partitioner = input_layer_partitioner or default_partitioner(
        config, min_slice_size=64 << 20)
    values = tuple(features.values())

    dnn_logits = linear_logits = None
    dnn_scope = linear_scope = ""
    if dnn_feature_columns:
        dnn_opt = optimizers.get_optimizer_instance(dnn_optimizer,
                                                    learning_rate=_DNN_LEARNING_RATE)
        _check_no_sync_replicas(dnn_opt)
        with variable_scope("dnn", values=values,
                            partitioner=default_partitioner(config)) as scope:
            dnn_scope = scope.name
            dnn_logits = dnn_logit_fn_builder(
                head.logits_dimension, dnn_hidden_units, dnn_feature_columns,
                dnn_activation_fn, dnn_dropout, input_layer_partitioner,
                batch_norm)(features, mode)
    if linear_feature_columns:
        linear_opt = optimizers.get_optimizer_instance(
            linear_optimizer, learning_rate=_linear_learning_rate(len(linear_feature_columns)))
        _check_no_sync_replicas(linear_opt)
        with variable_scope("linear", values=values,
                            partitioner=input_layer_partitioner) as scope:
            linear_scope = scope.name
            linear_logits = linear_logit_fn_builder(
                head.logits_dimension, linear_feature_columns,
                linear_sparse_combiner)(features)
            summary_scalar(f"{scope.name}/fraction_of_zero_values",
                           zero_fraction(linear_logits))
            summary_histogram(f"{scope.name}/activation", linear_logits)

    parts = [t for t in (dnn_logits, linear_logits) if t is not None]
    logits: Tensor = parts[0] + parts[1] if len(parts) == 2 else parts[0]

    def _train_op_fn(loss: Tensor) -> Any:
        # Each optimizer updates only its own part (by variable scope).
        train_ops = []
        if dnn_logits is not None:
            train_ops.append(dnn_opt.minimize(loss, var_list=get_collection(
                GraphKeys.TRAINABLE_VARIABLES, scope=dnn_scope + "/")))
        if linear_logits is not None:
            train_ops.append(linear_opt.minimize(loss, var_list=get_collection(
                GraphKeys.TRAINABLE_VARIABLES, scope=linear_scope + "/")))
        with control_dependencies([group(*train_ops)]):
            # One global step per combined update (neither minimize steps it).
            return assign_add(get_global_step(), 1).op

    return head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                      train_op_fn=_train_op_fn, logits=logits)


def _checked_parts(linear_feature_columns: Any, dnn_feature_columns: Any,
                   dnn_hidden_units: Any, dnn_dropout: Any
                   ) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[int, ...]]:
    linear_cols, dnn_cols = _columns(linear_feature_columns), _columns(dnn_feature_columns)
    if not linear_cols and not dnn_cols:
        raise ValueError(f"Either linear_feature_columns or dnn_feature_columns must be "
                         f"defined. Given: linear_feature_columns={linear_feature_columns!r}, "
                         f"dnn_feature_columns={dnn_feature_columns!r}.")
    units: tuple[int, ...] = ()
    if dnn_cols:
        if not dnn_hidden_units:
            raise ValueError(f"dnn_hidden_units must be defined when dnn_feature_columns "
                             f"is specified. Given: dnn_hidden_units={dnn_hidden_units!r}.")
        units = check_hidden_units(dnn_hidden_units, "dnn_hidden_units")
    check_dropout(dnn_dropout)
    return linear_cols, dnn_cols, units


class DNNLinearCombinedClassifier(Estimator):
    """A wide & deep classifier: binary (sigmoid) for n_classes=2, else softmax.

    Args:
        model_dir: where checkpoints go.
        linear_feature_columns: the linear (wide) part's columns.
        linear_optimizer: its optimizer (name, class, callable or instance; default
            FTRL at min(0.005, 1/sqrt(#columns))).
        dnn_feature_columns: the DNN (deep) part's dense columns.
        dnn_optimizer: its optimizer (default Adagrad at 0.001).
        dnn_hidden_units: the DNN's layer sizes (required with dnn columns).
        dnn_activation_fn: the hidden layers' activation (default relu).
        dnn_dropout: the probability of dropping a hidden unit in training.
        n_classes: number of classes (>= 2).
        weight_column: a feature key or numeric_column of example weights.
        label_vocabulary: the label strings, when labels are strings.
        input_layer_partitioner: partitioner of the input layers (embeddings and
            linear weights), e.g. `tf.fixed_size_partitioner(num_ps)`.
        config: a RunConfig.
        warm_start_from: a checkpoint or `WarmStartSettings` to start from.
        loss_reduction: how the batch's losses reduce (default SUM, as TF).
        batch_norm: batch-normalize each hidden layer.
        linear_sparse_combiner: "sum", "mean" or "sqrtn" for the linear part.

    Raises:
        ValueError: no columns at all, dnn columns without dnn_hidden_units,
            n_classes < 2, dropout outside [0, 1).

    Example:
        >>> est = DNNLinearCombinedClassifier(linear_feature_columns=[city_x_age],
        ...     dnn_feature_columns=[emb_city, age], dnn_hidden_units=[64, 32])
    """

    def __init__(self, model_dir: str | None = None, linear_feature_columns: Any = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Any = None,
                 dnn_optimizer: Any = "Adagrad", dnn_hidden_units: Sequence[int] | None = None,
                 dnn_activation_fn: Callable[..., Any] = relu,
                 dnn_dropout: float | None = None, n_classes: int = 2,
                 weight_column: Any = None, label_vocabulary: Any = None,
                 input_layer_partitioner: Any = None, config: RunConfig | None = None,
                 warm_start_from: Any = None, loss_reduction: str = Reduction.SUM,
                 batch_norm: bool = False, linear_sparse_combiner: str = "sum") -> None:
        linear_cols, dnn_cols, units = _checked_parts(
            linear_feature_columns, dnn_feature_columns, dnn_hidden_units, dnn_dropout)
        head = binary_logistic_or_multi_class_head(n_classes, weight_column,
                                                   label_vocabulary, loss_reduction)

        def _model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> Any:
            return _dnn_linear_combined_model_fn(
                features, labels, mode, head, linear_cols, linear_optimizer, dnn_cols,
                dnn_optimizer, units, dnn_activation_fn, dnn_dropout,
                input_layer_partitioner, config, batch_norm, linear_sparse_combiner)

        super().__init__(_model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(Estimator):
    """A wide & deep regressor (squared error; "predictions").

    Args:
        model_dir, linear_feature_columns, linear_optimizer, dnn_feature_columns,
            dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
            weight_column, input_layer_partitioner, config, warm_start_from,
            loss_reduction, batch_norm, linear_sparse_combiner: as for
            `DNNLinearCombinedClassifier`.
        label_dimension: the number of regression targets per example.

    Raises:
        ValueError: no columns at all, dnn columns without dnn_hidden_units,
            label_dimension < 1.

    Example:
        >>> est = DNNLinearCombinedRegressor(linear_feature_columns=[x],
        ...     dnn_feature_columns=[x], dnn_hidden_units=[8])
    """

    def __init__(self, model_dir: str | None = None, linear_feature_columns: Any = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Any = None,
                 dnn_optimizer: Any = "Adagrad", dnn_hidden_units: Sequence[int] | None = None,
                 dnn_activation_fn: Callable[..., Any] = relu,
                 dnn_dropout: float | None = None, label_dimension: int = 1,
                 weight_column: Any = None, input_layer_partitioner: Any = None,
                 config: RunConfig | None = None, warm_start_from: Any = None,
                 loss_reduction: str = Reduction.SUM, batch_norm: bool = False,
                 linear_sparse_combiner: str = "sum") -> None:
        linear_cols, dnn_cols, units = _checked_parts(
            linear_feature_columns, dnn_feature_columns, dnn_hidden_units, dnn_dropout)
        head = regression_head(weight_column, label_dimension, loss_reduction)

        def _model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> Any:
            return _dnn_linear_combined_model_fn(
                features, labels, mode, head, linear_cols, linear_optimizer, dnn_cols,
                dnn_optimizer, units, dnn_activation_fn, dnn_dropout,
                input_layer_partitioner, config, batch_norm, linear_sparse_combiner)

        super().__init__(_model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)
