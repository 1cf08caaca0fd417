"""`tf.nn.nce_loss` and `tf.nn.sampled_softmax_loss`: training losses over many classes
that look at the true classes and a few sampled ones instead of all of them.

Both gather the weight rows and biases of the true and sampled classes with
`embedding_lookup`, so the weights may be one variable, a list of shards or a
PartitionedVariable ("mod" or "div" layout), each shard's rows are read where
the shard lives, and the gradient of each shard is an IndexedSlices holding
only the rows the batch touched: a ps applies only those rows.

Example:
    >>> loss = tf.reduce_mean(tf.nn.nce_loss(
    ...     weights=nce_w, biases=nce_b, labels=train_labels, inputs=embed,
    ...     num_sampled=64, num_classes=vocabulary_size))
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn import candidate_sampling_ops as _cs
from tensorweave.ops.nn.embedding_ops import embedding_lookup
from tensorweave.ops.nn.xent_ops import (sigmoid_cross_entropy_with_logits,
                                         softmax_cross_entropy_with_logits_v2)
from tensorweave.ops.sparse.conversion_ops import sparse_to_dense
from tensorweave.state.partitioned_variables import PartitionedVariable

__all__ = ["nce_loss", "sampled_softmax_loss"]


def _labels(labels: Any, num_true: int, what: str) -> Tensor:
    """int64 labels of shape [batch_size, num_true], or an error that says how to fix them."""
    if not isinstance(labels, Tensor):
        labels = convert_to_tensor(labels, name="labels")
    if not labels.dtype.base_dtype.is_integer:
        raise TypeError(f"{what}: labels must hold integer class ids (int64, or int32 which is "
                        f"cast), got {labels.dtype.name} ({labels.name}); cast them with "
                        "tf.cast(labels, tf.int64).")
    if labels.dtype.base_dtype != _dt.int64:
        labels = math_ops.cast(labels, _dt.int64)
    _cs.check_true_classes(what, labels, num_true, arg="labels")
    return labels


def _as_shards(weights: Any) -> list[Any]:
    """Shards along axis 0; Variables stay Variables (their rows are gathered in place),
    anything else (a NumPy array, say) becomes a Tensor."""
    if isinstance(weights, PartitionedVariable):
        return list(weights)
    shards = list(weights) if isinstance(weights, (list, tuple)) else [weights]
    return [s if isinstance(s, Tensor) or hasattr(s, "_ref") else convert_to_tensor(s)
            for s in shards]


def _match(t: Tensor, dtype: _dt.DType) -> Tensor:
    return t if t.dtype.base_dtype == dtype else math_ops.cast(t, dtype)


def _accidental_hits_mask(labels: Tensor, sampled: Tensor, num_true: int,
                          num_sampled: int, dtype: _dt.DType) -> Tensor:
    """[batch_size, num_sampled]: -FLT_MAX where a sampled class is one of the row's true
    classes, else 0. Added to the sampled logits it takes those classes out of the loss."""
    rows, positions, weights = _cs.compute_accidental_hits(labels, sampled, num_true=num_true)
    indices = array_ops.concat([array_ops.reshape(rows, [-1, 1]),
                                array_ops.reshape(math_ops.cast(positions, _dt.int32), [-1, 1])],
                               1, name="sparse_indices")
    dense_shape = array_ops.concat([array_ops.shape(labels)[:1],
                                    convert_to_tensor([num_sampled], dtype=_dt.int32)], 0)
    # validate_indices=False: a true class repeated in a row hits the same cell twice,
    # and one -FLT_MAX is what TF writes there.
    return sparse_to_dense(indices, dense_shape, _match(weights, dtype), default_value=0.0,
                           validate_indices=False)


def compute_sampled_logits(weights: Any, biases: Any, labels: Any, inputs: Any,
                           num_sampled: int, num_classes: int, num_true: int = 1,
                           sampled_values: Any = None, subtract_log_q: bool = True,
                           remove_accidental_hits: bool = False,
                           partition_strategy: str = "mod", name: str | None = None,
                           seed: int | None = None) -> tuple[Tensor, Tensor]:
    """Logits [batch_size, num_true + num_sampled] of the true then sampled classes, and
    labels of the same shape (1/num_true for each true class, 0 for sampled ones).

    The sampled classes come from `sampled_values` or, when None, from
    `log_uniform_candidate_sampler(labels, num_true, num_sampled, unique=True,
    range_max=num_classes, seed=seed)`. With subtract_log_q each logit has the
    log of its class's expected count taken off (the correction that makes the
    sampled loss estimate the full one).

    Raises:
        TypeError: non-integer labels.
        ValueError: labels not [batch_size, num_true]; an unknown partition_strategy.

    Example:
        >>> logits, labels = compute_sampled_logits(w, b, labels, x, 5, 100)
    """
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition_strategy {partition_strategy!r}: use "
                         "\"mod\" or \"div\".")
    shards = _as_shards(weights)
    with name_scope(name, "compute_sampled_logits", shards + [biases, inputs, labels]):
        labels = _labels(labels, num_true, name or "compute_sampled_logits")
        inputs = convert_to_tensor(inputs, name="inputs")
        labels_flat = array_ops.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = _cs.log_uniform_candidate_sampler(
                labels, num_true=num_true, num_sampled=num_sampled, unique=True,
                range_max=num_classes, seed=seed)
        # The sampler's outputs are constants of the loss: no gradient through them.
        sampled, true_count, sampled_count = (array_ops.stop_gradient(convert_to_tensor(s))
                                              for s in sampled_values)
        sampled = _match(sampled, _dt.int64)
        n_true = array_ops.shape(labels_flat)[:1]
        # One lookup for true and sampled rows, so each shard is read once per step.
        all_ids = array_ops.concat([labels_flat, sampled], 0)
        dt = inputs.dtype.base_dtype
        all_w = _match(embedding_lookup(shards, all_ids, partition_strategy), dt)
        all_b = _match(embedding_lookup(_as_shards(biases), all_ids, partition_strategy), dt)
        zero = convert_to_tensor([0], dtype=_dt.int32)
        true_w = array_ops.slice(all_w, [0, 0], array_ops.concat([n_true, [-1]], 0))
        sampled_w = array_ops.slice(all_w, array_ops.concat([n_true, zero], 0), [-1, -1])
        true_b = array_ops.slice(all_b, [0], n_true)
        sampled_b = array_ops.slice(all_b, n_true, [-1])
        # true logits: each example's row dotted with its num_true class rows.
        dim = array_ops.shape(true_w)[1:2]
        per_example = array_ops.reshape(true_w, array_ops.concat([[-1, num_true], dim], 0))
        true_logits = math_ops.reduce_sum(
            math_ops.multiply(array_ops.expand_dims(inputs, 1), per_example), axis=2)
        true_logits = math_ops.add(true_logits, array_ops.reshape(true_b, [-1, num_true]))
        sampled_logits = math_ops.add(math_ops.matmul(inputs, sampled_w, transpose_b=True),
                                      sampled_b)
        if remove_accidental_hits:
            sampled_logits = math_ops.add(sampled_logits, _accidental_hits_mask(
                labels, sampled, num_true, num_sampled, sampled_logits.dtype.base_dtype))
        if subtract_log_q:
            true_logits = math_ops.subtract(true_logits, math_ops.log(_match(true_count, dt)))
            sampled_logits = math_ops.subtract(sampled_logits,
                                               math_ops.log(_match(sampled_count, dt)))
        out_logits = array_ops.concat([true_logits, sampled_logits], 1)
        out_labels = array_ops.concat(
            [math_ops.divide(array_ops.ones_like(true_logits), float(num_true)),
             array_ops.zeros_like(sampled_logits)], 1)
        return out_logits, out_labels


def nce_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
             num_classes: int, num_true: int = 1, sampled_values: Any = None,
             remove_accidental_hits: bool = False, partition_strategy: str = "mod",
             name: str = "nce_loss") -> Tensor:
    """`tf.nn.nce_loss`: noise-contrastive estimation, one loss per example ([batch_size]).

    Each true class is scored as a logistic "real" and each sampled class as
    "noise" (sigmoid cross-entropy on logits less log expected count).

    Args:
        weights: [num_classes, dim] class embeddings: a Tensor or Variable, a list of
            shards along axis 0, or a PartitionedVariable.
        biases: [num_classes] class biases (a Tensor, Variable or shards likewise).
        labels: int64 (or int32) [batch_size, num_true] target classes.
        inputs: [batch_size, dim] activations.
        num_sampled: classes sampled per batch.
        num_classes: the number of classes.
        num_true: target classes per example.
        sampled_values: (sampled_candidates, true_expected_count,
            sampled_expected_count) from a candidate sampler; default: a unique
            log-uniform sample.
        remove_accidental_hits: drop sampled classes that equal a true class.
        partition_strategy: "mod" or "div", how ids map to weight shards.
        name: the name scope.

    Returns:
        float [batch_size] per-example NCE losses.

    Raises:
        TypeError: non-integer labels.
        ValueError: labels not [batch_size, num_true]; bad partition_strategy.

    Example:
        >>> loss = tf.reduce_mean(tf.nn.nce_loss(w, b, labels, embed, 64, 50000))
    """
    logits, targets = compute_sampled_logits(
        weights, biases, labels, inputs, num_sampled, num_classes, num_true=num_true,
        sampled_values=sampled_values, subtract_log_q=True,
        remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name)
    losses = sigmoid_cross_entropy_with_logits(labels=targets, logits=logits,
                                               name="sampled_losses")
    return math_ops.reduce_sum(losses, axis=1)


def sampled_softmax_loss(weights: Any, biases: Any, labels: Any, inputs: Any,
                         num_sampled: int, num_classes: int, num_true: int = 1,
                         sampled_values: Any = None, remove_accidental_hits: bool = True,
                         partition_strategy: str = "mod", name: str = "sampled_softmax_loss",
                         seed: int | None = None) -> Tensor:
    """`tf.nn.sampled_softmax_loss`: softmax cross-entropy over the true and sampled
    classes only, one loss per example ([batch_size]); a fast training stand-in for
    the full softmax (evaluate with the full one).

    Arguments as `nce_loss`; accidental hits are removed by default, and `seed`
    seeds the default sampler.

    Raises:
        TypeError: non-integer labels.
        ValueError: labels not [batch_size, num_true]; bad partition_strategy.

    Example:
        >>> loss = tf.reduce_mean(tf.nn.sampled_softmax_loss(
        ...     w, b, labels, hidden, num_sampled=64, num_classes=50000))
    """
    logits, targets = compute_sampled_logits(
        weights, biases, labels, inputs, num_sampled, num_classes, num_true=num_true,
        sampled_values=sampled_values, subtract_log_q=True,
        remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name, seed=seed)
    targets = array_ops.stop_gradient(targets, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=targets, logits=logits)
