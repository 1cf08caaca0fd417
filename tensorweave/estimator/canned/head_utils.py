"""The checks and small builders the canned heads share (TF 1.x head_lib helpers).

Static problems (missing or sparse labels, a wrong last dimension, string labels
without a vocabulary) raise at graph construction; what only the data can show
(labels out of range, a batch whose labels and logits disagree) fails when the
step runs, with TF's messages ("Labels must <= n_classes - 1").

Example:
    >>> labels = check_dense_labels(labels, logits, expected_dimension=1)  # [batch, 1]
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from tensorweave.feature_column.builder import FeatureBuilder
from tensorweave.feature_column.dense import NumericColumn, numeric_column
from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph_defaults import (
    GraphKeys, control_dependencies, get_collection, name_scope)
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Tensor
from tensorweave.losses.losses_impl import Reduction
from tensorweave.metrics.metric_utils import broadcast_weights
from tensorweave.metrics.metrics_impl import mean
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.control_flow import (
    assert_equal, assert_less_equal, assert_non_negative, group)
from tensorweave.ops.lookup.hash_ops import as_string
from tensorweave.lookup.vocab_tables import index_table_from_tensor
from tensorweave.ops.math import math_ops
from tensorweave.train.optimizer import Optimizer
from tensorweave.train.training_util import get_global_step

__all__ = ["LossSpec", "check_reduction", "check_vocabulary", "check_logits",
           "check_dense_labels", "get_weights", "label_ids", "assert_range",
           "all_class_ids", "all_classes", "weighted_mean", "accuracy_baseline", "broadcast",
           "make_train_op", "string_labels_message"]


class LossSpec(NamedTuple):
    """What `Head.create_loss` returns (TF's LossSpec fields)."""

    training_loss: Tensor      # the reduced, weighted scalar loss
    unreduced_loss: Tensor     # per example, unweighted: [batch, loss_dim]
    weights: Any               # the example weights (1.0 without weight_column)
    processed_labels: Tensor   # labels after vocabulary lookup and reshaping


def check_reduction(loss_reduction: str) -> None:
    """Raises ValueError unless loss_reduction can reduce a training loss."""
    valid = (Reduction.SUM, Reduction.SUM_OVER_BATCH_SIZE, Reduction.MEAN,
             Reduction.SUM_BY_NONZERO_WEIGHTS)
    if loss_reduction not in valid:
        raise ValueError(f"Invalid loss_reduction: {loss_reduction!r}; use one of "
                         f"tf.losses.Reduction {list(valid)} (NONE cannot train).")


def check_vocabulary(label_vocabulary: Any) -> tuple[str, ...] | None:
    """The vocabulary as a tuple (None stays None); TypeError unless a list or tuple."""
    if label_vocabulary is None:
        return None
    if not isinstance(label_vocabulary, (list, tuple)):
        raise TypeError(f"label_vocabulary should be a list or a tuple. Given type: "
                        f"{type(label_vocabulary).__name__} ({label_vocabulary!r}).")
    return tuple(label_vocabulary)


def check_logits(logits: Any, dimension: int) -> Tensor:
    """Logits as float32 [batch, ..., dimension] (a wrong static last dim raises)."""
    with name_scope(None, "logits"):
        logits = math_ops.cast(convert_to_tensor(logits), _dt.float32)
        shape = logits.shape
        if shape.ndims is not None:
            if shape.ndims < 2:
                raise ValueError(f"logits shape must be [D0, D1, ... DN, logits_dimension="
                                 f"{dimension}], got {shape} for {logits.name}.")
            last = shape.as_list()[-1]
            if last is not None and last != dimension:
                raise ValueError(f"logits shape must be [D0, D1, ... DN, logits_dimension="
                                 f"{dimension}], got {shape}.")
        return logits


def check_dense_labels(labels: Any, logits: Tensor, expected_dimension: int) -> Tensor:
    """Labels as a dense [batch, ..., expected_dimension] Tensor ([batch] is expanded).

    Raises:
        ValueError: labels None, a SparseTensor, or a wrong static last dimension.
    """
    if labels is None:
        raise ValueError("You must provide a labels Tensor. Given: None. Suggested "
                         "troubleshooting steps: Check that your data contain your label "
                         "feature. Check that your input_fn properly parses and returns "
                         "labels.")
    if isinstance(labels, dict):
        raise ValueError(f"labels must be a Tensor for this head, got a dict with keys "
                         f"{sorted(labels)}; return the label Tensor from input_fn.")
    if isinstance(labels, SparseTensor):
        raise ValueError(f"SparseTensor labels are not supported. labels must be a Tensor "
                         f"of shape [D0, D1, ..., DN, {expected_dimension}], e.g. "
                         f"[batch_size, {expected_dimension}]; use "
                         "tf.sparse_tensor_to_dense() in your input_fn.")
    with name_scope(None, "labels"):
        labels = convert_to_tensor(labels)
        if labels.shape.ndims is not None and logits.shape.ndims is not None and \
                labels.shape.ndims == logits.shape.ndims - 1:
            labels = array_ops.expand_dims(labels, -1)
        if labels.shape.ndims is not None:
            last = labels.shape.as_list()[-1] if labels.shape.ndims else None
            if labels.shape.ndims < 2 or (last is not None and last != expected_dimension):
                raise ValueError(
                    f"Mismatched label shape. Expected labels dimension="
                    f"{expected_dimension}. Received {labels.shape} ({labels.name}). "
                    "Suggested Fix: check your n_classes (or label_dimension) argument "
                    "to the estimator and/or the shape of your label.")
        expected = array_ops.concat(
            [array_ops.shape(logits)[:-1], [expected_dimension]], 0)
        check = assert_equal(expected, array_ops.shape(labels), message=(
            f"labels shape must be [D0, D1, ... DN, {expected_dimension}]. Suggested Fix: "
            "check your n_classes argument to the estimator and/or the shape of your "
            "label."))
        with control_dependencies([check]):
            return identity(labels)


def string_labels_message(labels: Tensor) -> str:
    """The error for string labels given to a head without label_vocabulary."""
    return (f"Labels are strings ({labels.name}, dtype string) but no label_vocabulary "
            "was given: pass label_vocabulary=[...] (the possible label strings) to "
            "the estimator, or feed class ids.")


def get_weights(features: dict[str, Any], weight_column: Any, logits: Tensor,
                per_logit: bool = False) -> Any:
    """The example weights of `weight_column` as float32 [batch, 1] (1.0 without one).

    Raises:
        TypeError: weight_column is neither a string nor a numeric_column.
        ValueError: the weights are not numbers.
    """
    if weight_column is None:
        return 1.0
    if isinstance(weight_column, str):
        weight_column = numeric_column(weight_column, shape=(1,))
    if not isinstance(weight_column, NumericColumn):
        raise TypeError(f"Weight column must be either a string or a numeric_column. "
                        f"Given type: {type(weight_column).__name__} ({weight_column!r}).")
    with name_scope(None, "weights"):
        weights = weight_column._get_dense_tensor(FeatureBuilder(features))
        if not (weights.dtype.is_floating or weights.dtype.is_integer):
            raise ValueError(f"Weight column {weight_column.key!r} should be castable to "
                             f"float. Given dtype: {weights.dtype.name}")
        weights = math_ops.cast(weights, _dt.float32)
        if weights.shape.ndims is not None and logits.shape.ndims is not None and \
                weights.shape.ndims == logits.shape.ndims - 1:
            weights = array_ops.expand_dims(weights, -1)
        if not per_logit:
            expected = array_ops.concat([array_ops.shape(logits)[:-1], [1]], 0)
            check = assert_equal(expected, array_ops.shape(weights), message=(
                "weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]"))
            with control_dependencies([check]):
                weights = identity(weights)
        return weights


def label_ids(labels: Tensor, vocabulary: Sequence[str] | None) -> Tensor:
    """Labels as int64 class ids: through the vocabulary table when there is one.

    Raises:
        ValueError: a vocabulary but labels that are not strings.
    """
    if vocabulary is None:
        return labels
    if labels.dtype != _dt.string:
        raise ValueError(f"Labels dtype should be string if there is a vocabulary. "
                         f"Instead got {labels.dtype.name} ({labels.name}); "
                         f"label_vocabulary={list(vocabulary)!r}.")
    # Unknown strings map to -1, which assert_range then reports.
    table = index_table_from_tensor(list(vocabulary), name="class_id_lookup")
    return table.lookup(labels)


def assert_range(labels: Tensor, n_classes: int) -> Tensor:
    """`labels` once the run checks 0 <= labels <= n_classes - 1 (TF's messages)."""
    with name_scope(None, "assert_range"):
        upper = assert_less_equal(
            labels, convert_to_tensor(n_classes - 1, dtype=labels.dtype),
            message=f"Labels must <= n_classes - 1 (n_classes={n_classes})")
        lower = assert_non_negative(labels, message="Labels must >= 0")
        with control_dependencies([upper, lower]):
            return identity(labels)


def all_class_ids(logits: Tensor, n_classes: int) -> Tensor:
    """[batch, n_classes] int32: 0..n_classes-1 in every row."""
    row = array_ops.expand_dims(array_ops.range(n_classes), 0)
    return array_ops.tile(row, array_ops.stack([array_ops.shape(logits)[0], 1]))


def all_classes(logits: Tensor, n_classes: int,
                vocabulary: Sequence[str] | None = None) -> Tensor:
    """[batch, n_classes] strings: the vocabulary, or "0".."n-1", in every row."""
    names = (convert_to_tensor(list(vocabulary), dtype=_dt.string) if vocabulary
             else as_string(array_ops.range(n_classes)))
    row = array_ops.expand_dims(names, 0)
    return array_ops.tile(row, array_ops.stack([array_ops.shape(logits)[0], 1]))


def broadcast(weights: Any, values: Tensor) -> Any:
    """Weights broadcast to `values` (a Python 1.0 stays as it is)."""
    if isinstance(weights, (int, float)):
        return None if weights == 1.0 else weights
    return broadcast_weights(weights, values)


def weighted_mean(values: Tensor, weights: Any, name: str) -> tuple[Any, Any]:
    """`tf.metrics.mean` of float32 values with weights broadcast to them."""
    values = math_ops.cast(values, _dt.float32)
    return mean(values, broadcast(weights, values), name=name)


def accuracy_baseline(label_mean: tuple[Any, Any]) -> tuple[Any, Any]:
    """The accuracy of always predicting the majority class: max(mean, 1 - mean)."""
    with name_scope(None, "accuracy_baseline"):
        value, update = label_mean
        return (math_ops.maximum(value, 1.0 - value, name="value"),
                math_ops.maximum(update, 1.0 - update, name="update_op"))


def make_train_op(loss: Tensor, optimizer: Optimizer | None,
                  train_op_fn: Callable[[Tensor], Any] | None) -> Any:
    """The TRAIN op: optimizer.minimize (which steps the global step) or train_op_fn,
    grouped with the UPDATE_OPS (batch norm's moving averages), as TF's heads.

    Raises:
        ValueError: both or neither of optimizer and train_op_fn.
    """
    if optimizer is not None:
        if train_op_fn is not None:
            raise ValueError("train_op_fn and optimizer cannot both be set.")
        train_op = optimizer.minimize(loss, global_step=get_global_step())
    elif train_op_fn is not None:
        train_op = train_op_fn(loss)
    else:
        raise ValueError("train_op_fn and optimizer cannot both be None.")
    update_ops = get_collection(GraphKeys.UPDATE_OPS)
    if update_ops:
        return group(train_op, *update_ops)
    return train_op
