"""`LinearClassifier` and `LinearRegressor` (TF 1.x `tf.estimator.Linear*`).

The model is `tf.feature_column.linear_model` under the variable scope `linear`,
so its variables are TF's: `linear/linear_model/<column>/weights` and
`linear/linear_model/bias_weights`. The default optimizer is FTRL. In a cluster
(RunConfig with ps tasks) the Estimator's replica_device_setter puts the
weights on the ps tasks; big ones are split across them by the partitioner
(TF's default: `min_max_variable_partitioner(num_ps, min_slice_size=64 MiB)`).

Example:
    >>> city = tf.feature_column.categorical_column_with_hash_bucket("city", 1000)
    >>> est = LinearClassifier(feature_columns=[city, tf.feature_column.numeric_column("age")])
    >>> est.train(train_input_fn, steps=100)
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tensorweave.distributed.run_config import RunConfig
from tensorweave.estimator.canned import optimizers
from tensorweave.estimator.canned.head import (
    Head, binary_logistic_or_multi_class_head, regression_head)
from tensorweave.estimator.estimator import Estimator
from tensorweave.feature_column.layers import linear_model
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.losses.losses_impl import Reduction
from tensorweave.ops import array as array_ops
from tensorweave.state.partitioners import min_max_variable_partitioner
from tensorweave.state.variable_scope import variable_scope
from tensorweave.math_impl.stats_ops import zero_fraction
from tensorweave.summary.summary import histogram as summary_histogram
from tensorweave.summary.summary import scalar as summary_scalar
from tensorweave.train.ftrl import FtrlOptimizer

__all__ = ["LinearClassifier", "LinearRegressor", "linear_logit_fn_builder"]

# TF's historical default learning rate of the linear model.
_LEARNING_RATE = 0.2


def _default_optimizer(feature_columns: tuple[Any, ...]) -> FtrlOptimizer:
    # As TF: used only when optimizer is None; a name ("Ftrl") gets _LEARNING_RATE.
    return FtrlOptimizer(learning_rate=min(_LEARNING_RATE,
                                           1.0 / math.sqrt(len(feature_columns))))


def default_partitioner(config: RunConfig | None, **kwargs: Any) -> Any:
    """TF's `min_max_variable_partitioner(max_partitions=num_ps, ...)` in a cluster with
    ps tasks, else None.

    TF partitions even without a ps (into one part, named `.../part_0`); plain
    variables there give the same checkpoint keys, slots included (our slots of a
    partitioned variable are keyed `<var>/part_0/<slot>`), and warm-start by name.
    """
    num_ps = config.num_ps_replicas if config else 0
    if not num_ps:
        return None
    return min_max_variable_partitioner(max_partitions=num_ps, **kwargs)


def check_feature_columns(feature_columns: Any, what: str = "feature_columns"
                          ) -> tuple[Any, ...]:
    """The columns as a tuple; raises ValueError when there are none."""
    if feature_columns is None or isinstance(feature_columns, (str, bytes)):
        columns: tuple[Any, ...] = ()
    elif hasattr(feature_columns, "_parse_example_spec"):
        columns = (feature_columns,)
    else:
        columns = tuple(feature_columns)
    if not columns:
        raise ValueError(f"{what} must not be empty: got {feature_columns!r}; pass the "
                         "tf.feature_column columns the model reads.")
    return columns


def _fraction_of_zero(cols_to_vars: dict[Any, Any]) -> Tensor:
    parts = [array_ops.reshape(convert_to_tensor(v), [-1])
             for variables in cols_to_vars.values() for v in (variables or [])]
    return zero_fraction(array_ops.concat(parts, 0))


def linear_logit_fn_builder(units: int, feature_columns: tuple[Any, ...],
                            sparse_combiner: str = "sum") -> Callable[[dict[str, Any]], Tensor]:
    """A function features -> [batch, units] logits of a linear model (plus TF's
    `bias` and `fraction_of_zero_weights` summaries).

    Example:
        >>> logits = linear_logit_fn_builder(1, (age, city))(features)
    """
    def linear_logit_fn(features: dict[str, Any]) -> Tensor:
        cols_to_vars: dict[Any, Any] = {}
        logits = linear_model(features, list(feature_columns), units=units,
                              sparse_combiner=sparse_combiner, cols_to_vars=cols_to_vars)
        bias = convert_to_tensor(cols_to_vars.pop("bias")[0])
        if units > 1:
            summary_histogram("bias", bias)
        else:
            summary_scalar("bias", array_ops.reshape(bias, []))
        summary_scalar("fraction_of_zero_weights", _fraction_of_zero(cols_to_vars))
        return logits
    return linear_logit_fn


def _linear_model_fn(features: Any, labels: Any, mode: str, head: Head,
                     feature_columns: tuple[Any, ...], optimizer: Any, partitioner: Any,
                     config: RunConfig | None, sparse_combiner: str = "sum") -> Any:
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                         f"{type(features).__name__}")
    opt = optimizers.get_optimizer_instance(optimizer or _default_optimizer(feature_columns),
                                            learning_rate=_LEARNING_RATE)
    # With ps tasks, TF's default splits weights over 64 MiB across them.
    partitioner = partitioner or default_partitioner(config, min_slice_size=64 << 20)
    with variable_scope("linear", values=tuple(features.values()), partitioner=partitioner):
        logits = linear_logit_fn_builder(head.logits_dimension, feature_columns,
                                         sparse_combiner)(features)
        return head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                          optimizer=opt, logits=logits)


def _check_combiner(sparse_combiner: str) -> None:
    if sparse_combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"sparse_combiner must be one of 'sum', 'mean', 'sqrtn'; got "
                         f"{sparse_combiner!r}.")


class LinearClassifier(Estimator):
    """A linear classifier: binary (sigmoid) for n_classes=2, else softmax.

    Args:
        feature_columns: the columns the model reads (categorical columns, crosses,
            numeric and bucketized columns).
        model_dir: where checkpoints go.
        n_classes: number of classes (>= 2).
        weight_column: a feature key or numeric_column of example weights.
        label_vocabulary: the label strings, when labels are strings.
        optimizer: an Optimizer, a name ('Adagrad', 'Adam', 'Ftrl', 'RMSProp',
            'SGD'), an Optimizer class or a callable returning one (default FTRL).
        config: a RunConfig.
        partitioner: the partitioner of the model's variables.
        warm_start_from: a checkpoint or `WarmStartSettings` to start from.
        loss_reduction: how the batch's losses reduce (default SUM, as TF).
        sparse_combiner: "sum", "mean" or "sqrtn" for multivalent columns.

    Raises:
        ValueError: n_classes < 2, empty feature_columns, a bad sparse_combiner.

    Example:
        >>> est = LinearClassifier([age, city], n_classes=3,
        ...                        optimizer=tf.train.FtrlOptimizer(0.1))
    """

    def __init__(self, feature_columns: Any, model_dir: str | None = None,
                 n_classes: int = 2, weight_column: Any = None,
                 label_vocabulary: Any = None, optimizer: Any = "Ftrl",
                 config: RunConfig | None = None, partitioner: Any = None,
                 warm_start_from: Any = None, loss_reduction: str = Reduction.SUM,
                 sparse_combiner: str = "sum") -> None:
        columns = check_feature_columns(feature_columns)
        _check_combiner(sparse_combiner)
        head = binary_logistic_or_multi_class_head(n_classes, weight_column,
                                                   label_vocabulary, loss_reduction)

        def _model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> Any:
            return _linear_model_fn(features, labels, mode, head, columns, optimizer,
                                    partitioner, config, sparse_combiner)

        super().__init__(_model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
    """A linear regressor (squared error; predictions under "predictions").

    Args:
        feature_columns: the columns the model reads.
        model_dir: where checkpoints go.
        label_dimension: the number of regression targets per example.
        weight_column: a feature key or numeric_column of example weights.
        optimizer: as for `LinearClassifier` (default FTRL).
        config, partitioner, warm_start_from, loss_reduction, sparse_combiner:
            as for `LinearClassifier`.

    Raises:
        ValueError: empty feature_columns, label_dimension < 1, a bad combiner.

    Example:
        >>> est = LinearRegressor([tf.feature_column.numeric_column("x")])
    """

    def __init__(self, feature_columns: Any, model_dir: str | None = None,
                 label_dimension: int = 1, weight_column: Any = None,
                 optimizer: Any = "Ftrl", config: RunConfig | None = None,
                 partitioner: Any = None, warm_start_from: Any = None,
                 loss_reduction: str = Reduction.SUM, sparse_combiner: str = "sum") -> None:
        columns = check_feature_columns(feature_columns)
        _check_combiner(sparse_combiner)
        head = regression_head(weight_column, label_dimension, loss_reduction)

        def _model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> Any:
            return _linear_model_fn(features, labels, mode, head, columns, optimizer,
                                    partitioner, config, sparse_combiner)

        super().__init__(_model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)
