"""More `tf.nn` functions: selu (an op), and the composites batch_normalization, crelu,
swish, xw_plus_b, weighted_cross_entropy_with_logits and log_poisson_loss.

`Selu` is an op as in TF (with `SeluGrad`, which takes the *outputs*, as TF's does);
the rest are built from existing ops exactly as TF's Python builds them, so their
gradients come for free.

Example:
    >>> y = tf.nn.batch_normalization(x, mean, var, offset=None, scale=None,
    ...                               variance_epsilon=1e-3)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.arg_aliases import one_of
from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import control_dependencies, name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.array.fill_ops import range as _range
from tensorweave.ops.array.join_ops import concat
from tensorweave.ops.array.shape_ops import expand_dims, reshape
from tensorweave.ops.control_flow.assert_ops import assert_non_negative
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn.layer_ops import bias_add
from tensorweave.ops.nn.nn_ops import (
    check_float, create, define_exp_linear, relu)

# The self-normalizing constants of Klambauer et al. (2017), as TF's kernel uses them.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# ---- Selu / SeluGrad: Elu's stanzas with TF's scale and alpha ---------------------
selu_op, selu_grad_op = define_exp_linear("Selu", "SeluGrad", SELU_SCALE, SELU_ALPHA)


def selu(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.selu`: scale * (features if > 0 else alpha * (exp(features) - 1)).

    Example:
        >>> tf.nn.selu([-1.0, 1.0])  # -> [-1.1113, 1.0507]
    """
    return create("Selu", [convert_to_tensor(features, name="features")],
                  name=name).outputs[0]


# ---- composites ----------------------------------------------------------------------
def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any,
                        variance_epsilon: float, name: str | None = None) -> Tensor:
    """`tf.nn.batch_normalization`: (x - mean) * scale / sqrt(variance + eps) + offset.

    Computed as TF does, as `x * inv + (offset - mean * inv)` with
    `inv = scale * rsqrt(variance + eps)`, so the per-channel terms are formed once.
    `offset` and `scale` may be None (0 and 1).

    Example:
        >>> tf.nn.batch_normalization(x, m, v, None, None, 1e-3)  # ~ (x - m) / sqrt(v)
    """
    with name_scope(name, "batchnorm") as _:
        x = convert_to_tensor(x, name="x")
        dt = x.dtype.base_dtype
        mean = convert_to_tensor(mean, dtype=dt, name="mean")
        variance = convert_to_tensor(variance, dtype=dt, name="variance")
        inv = math_ops.rsqrt(math_ops.add(variance, np.asarray(variance_epsilon,
                                                               dt.as_numpy_dtype)))
        if scale is not None:
            inv = math_ops.multiply(inv, convert_to_tensor(scale, dtype=dt, name="scale"))
        shift = math_ops.multiply(mean, inv)
        shift = (math_ops.subtract(convert_to_tensor(offset, dtype=dt, name="offset"), shift)
                 if offset is not None else math_ops.negative(shift))
        return math_ops.add(math_ops.multiply(x, inv), shift)


def crelu(features: Any, name: str | None = None, axis: int = -1) -> Tensor:
    """`tf.nn.crelu`: relu of `[features, -features]` concatenated along `axis`
    (so that dimension doubles).

    Example:
        >>> tf.nn.crelu([1.0, -2.0])  # -> [1., 0., 0., 2.]
    """
    with name_scope(name, "CRelu") as _:
        x = convert_to_tensor(features, name="features")
        check_float("CRelu", x)
        return relu(array_ops.concat([x, math_ops.negative(x)], axis))


def swish(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.swish`: features * sigmoid(features) (a.k.a. SiLU).

    TF attaches a memory-saving custom gradient; this composite's gradient is the same
    function, recomputing nothing it needs to keep.

    Example:
        >>> tf.nn.swish([0.0, 1.0])  # -> [0., 0.7311]
    """
    with name_scope(name, "swish") as _:
        x = convert_to_tensor(features, name="features")
        check_float("swish", x)
        return math_ops.multiply(x, math_ops.sigmoid(x))


def xw_plus_b(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """`tf.nn.xw_plus_b`: matmul(x, weights) + biases, for a 2-D x and 1-D biases.

    Example:
        >>> tf.nn.xw_plus_b([[1.0, 2.0]], [[1.0], [1.0]], [0.5])  # -> [[3.5]]
    """
    with name_scope(name, "xw_plus_b") as _:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, dtype=x.dtype.base_dtype, name="weights")
        biases = convert_to_tensor(biases, dtype=x.dtype.base_dtype, name="biases")
        return bias_add(math_ops.matmul(x, weights), biases)


def _same_shape_or_raise(what: str, a: Tensor, a_name: str, b: Tensor, b_name: str) -> None:
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"{what}: {a_name} and {b_name} must have the same shape, got "
                         f"{a.shape} ({a.name}) and {b.shape} ({b.name}).")


def weighted_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                       pos_weight: Any = None, name: str | None = None,
                                       targets: Any = None) -> Tensor:
    """`tf.nn.weighted_cross_entropy_with_logits`: sigmoid cross entropy whose positive
    term is weighted by `pos_weight`: `pos_weight * t * -log(sigmoid(l)) +
    (1 - t) * -log(1 - sigmoid(l))`, t being `labels` (TF 1.x's deprecated name:
    `targets`).

    Computed, as TF does, as `(1 - t) * l + (1 + (pos_weight - 1) * t) *
    (log1p(exp(-|l|)) + relu(-l))`, which never overflows exp.

    Raises:
        ValueError: if targets and logits have incompatible shapes (naming both).

    Example:
        >>> tf.nn.weighted_cross_entropy_with_logits([1.0], [0.0], 2.0)  # -> [1.3863]
    """
    labels = one_of("weighted_cross_entropy_with_logits", "labels", labels, "targets",
                    targets)
    if logits is None or pos_weight is None:
        raise ValueError("weighted_cross_entropy_with_logits: logits and pos_weight are "
                         "required.")
    with name_scope(name, "logistic_loss") as _:
        logits = convert_to_tensor(logits, name="logits")
        dt = logits.dtype.base_dtype
        targets = convert_to_tensor(labels, dtype=dt, name="targets")
        _same_shape_or_raise("weighted_cross_entropy_with_logits", logits, "logits",
                             targets, "targets")
        pos_weight = convert_to_tensor(pos_weight, dtype=dt, name="pos_weight")
        log_weight = math_ops.add(1.0, math_ops.multiply(
            math_ops.subtract(pos_weight, 1.0), targets))
        softplus_neg = math_ops.add(
            math_ops.log1p(math_ops.exp(math_ops.negative(math_ops.abs(logits)))),
            relu(math_ops.negative(logits)))
        return math_ops.add(math_ops.multiply(math_ops.subtract(1.0, targets), logits),
                            math_ops.multiply(log_weight, softplus_neg))


def log_poisson_loss(targets: Any, log_input: Any, compute_full_loss: bool = False,
                     name: str | None = None) -> Tensor:
    """`tf.nn.log_poisson_loss`: the Poisson negative log likelihood given the log of the
    predicted rate, `exp(log_input) - log_input * targets`.

    With `compute_full_loss`, adds Stirling's approximation of `log(targets!)`,
    `t * log(t) - t + 0.5 * log(2 * pi * t)`, for targets > 1 (0 for targets in [0, 1],
    as TF).

    Raises:
        ValueError: if targets and log_input have incompatible shapes (naming both).

    Example:
        >>> tf.nn.log_poisson_loss([2.0], [0.0])  # -> [1.]  (exp(0) - 0 * 2)
    """
    with name_scope(name, "log_poisson_loss") as _:
        log_input = convert_to_tensor(log_input, name="log_input")
        dt = log_input.dtype.base_dtype
        targets = convert_to_tensor(targets, dtype=dt, name="targets")
        _same_shape_or_raise("log_poisson_loss", log_input, "log_input", targets, "targets")
        result = math_ops.subtract(math_ops.exp(log_input),
                                   math_ops.multiply(log_input, targets))
        if not compute_full_loss:
            return result
        small = math_ops.logical_and(math_ops.greater_equal(targets, 0.0),
                                     math_ops.less_equal(targets, 1.0))
        # Stirling's terms are dropped for targets in [0, 1]; evaluating them at 1 there
        # instead keeps log(0) (a warning, and NaN gradients w.r.t. targets) out of it.
        t = math_ops.select(small, array_ops.ones_like(targets), targets)
        stirling = math_ops.add(
            math_ops.subtract(math_ops.multiply(t, math_ops.log(t)), t),
            math_ops.multiply(0.5, math_ops.log(math_ops.multiply(2.0 * np.pi, t))))
        return math_ops.add(result, math_ops.select(
            small, array_ops.zeros_like(stirling), stirling))


# ---- sequence_mask -------------------------------------------------------------------
def sequence_mask(lengths: Any, maxlen: Any = None, dtype: Any = _dt.bool,
                  name: str | None = None) -> Tensor:
    """`tf.sequence_mask`: `mask[i..., j] = j < lengths[i...]`, shape lengths.shape + [maxlen].

    `maxlen` defaults to max(lengths) (0 for an empty `lengths`). Unlike TF, which
    silently gives an all-False row, a negative length is an error: it is almost
    always a bug upstream (an off-by-one or an uninitialised length).

    Raises:
        ValueError: if `maxlen` is not a scalar, or a constant `lengths` is negative.
        InvalidArgumentError: at run time, if a fed/computed length is negative.

    Example:
        >>> tf.sequence_mask([1, 3, 2], 5)  # [[T,F,F,F,F], [T,T,T,F,F], [T,T,F,F,F]]
    """
    with name_scope(name, "SequenceMask") as _:
        lengths = convert_to_tensor(lengths)  # TF's names: plain Consts in the scope
        if not lengths.dtype.base_dtype.is_integer:
            raise TypeError(f"sequence_mask: lengths must be integers, but {lengths.name} "
                            f"has dtype {lengths.dtype.base_dtype.name}.")
        known = constant_value(lengths)
        if known is not None and np.any(np.asarray(known) < 0):
            raise ValueError(f"sequence_mask: lengths ({lengths.name}) must be >= 0, got "
                             f"{np.asarray(known).tolist()}.")
        if maxlen is None:
            # A trailing 0 makes max() of an empty `lengths` 0 rather than an error.
            flat = reshape(lengths, [-1])
            zero = convert_to_tensor(np.zeros([1], lengths.dtype.as_numpy_dtype))
            maxlen_t = math_ops.reduce_max(concat([flat, zero], 0))
        else:
            maxlen_t = convert_to_tensor(maxlen)
            if maxlen_t.shape.ndims not in (None, 0):
                raise ValueError(f"sequence_mask: maxlen must be a scalar, got shape "
                                 f"{maxlen_t.shape} ({maxlen_t.name}).")
        mdt = maxlen_t.dtype.base_dtype
        if known is None:
            check = assert_non_negative(
                lengths, message=f"sequence_mask: lengths ({lengths.name}) must be >= 0")
            with control_dependencies([check]):
                lengths = identity(lengths)
        row = _range(convert_to_tensor(np.array(0, mdt.as_numpy_dtype)), maxlen_t,
                     convert_to_tensor(np.array(1, mdt.as_numpy_dtype)), name="Range")
        matrix = math_ops.cast(expand_dims(lengths, -1), mdt)
        mask = math_ops.less(row, matrix)
        out_dt = _dt.as_dtype(dtype).base_dtype
        return mask if out_dt == _dt.bool else math_ops.cast(mask, out_dt)


__all__ = ["sequence_mask", "selu", "batch_normalization", "crelu", "swish", "xw_plus_b",
           "weighted_cross_entropy_with_logits", "log_poisson_loss"]
