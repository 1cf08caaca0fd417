"""`tf.contrib.layers` (TF 1.x) regularizers and initializers: l1/l2/l1_l2/sum
regularizers, apply_regularization, xavier and contrib's variance-scaling initializers.
The layers that take them are in `layers_impl`.

Example:
    >>> w = tf.get_variable("w", [784, 32], initializer=xavier_initializer(),
    ...                     regularizer=l2_regularizer(1e-4))
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Sequence

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, get_default_graph, name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn import layer_ops
from tensorweave.ops.random import random_ops
from tensorweave.state import init_ops
from tensorweave.state.variables import Variable

Regularizer = Callable[[Any], Any]


# ---- naming helper -----------------------------------------------------------------
# ---- regularizers --------------------------------------------------------------------
def _scale_is_zero(scale: Any, what: str) -> bool:
    """Validates a regularizer scale as TF does; True when it disables the regularizer."""
    if isinstance(scale, (Tensor, Variable)):
        return False  # a tensor scale is allowed and never statically "zero"
    if isinstance(scale, numbers.Integral):  # bool too: TF rejects ints (likely a typo)
        raise ValueError(f"{what} cannot be an integer: {scale!r}")
    if not isinstance(scale, numbers.Real):
        raise ValueError(f"{what} must be a float or a scalar Tensor, got {scale!r} "
                         f"({type(scale).__name__})")
    if scale < 0.0:
        raise ValueError(f"Setting a scale less than 0 on a regularizer ({what}): {scale:g}")
    return float(scale) == 0.0


def _disabled(_: Any) -> None:
    """The regularizer TF returns for scale 0.0: it adds no loss."""
    return None


def _scaled(scale: Any, scope: str | None, default: str,
            penalty: Callable[[Tensor], Tensor]) -> Regularizer:
    def regularizer(weights: Any, name: str | None = None) -> Tensor:
        with name_scope(scope, default, [weights]) as scope_name:  # the op is named so
            w = convert_to_tensor(weights)
            my_scale = convert_to_tensor(scale, dtype=w.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, penalty(w), name=scope_name)
    return regularizer


def l1_regularizer(scale: Any, scope: str | None = None) -> Regularizer:
    """Returns `f(weights) = scale * sum(|weights|)`.

    Args:
        scale: a non-negative float (or scalar Tensor); 0.0 disables it.
        scope: name scope of the ops (default "l1_regularizer").

    Raises:
        ValueError: scale is an int, negative, or not a number.

    Example:
        >>> reg = l1_regularizer(0.01); penalty = reg(w)
    """
    if _scale_is_zero(scale, "scale"):
        return _disabled
    return _scaled(scale, scope, "l1_regularizer",
                   lambda w: math_ops.reduce_sum(math_ops.abs(w)))


def l2_regularizer(scale: Any, scope: str | None = None) -> Regularizer:
    """Returns `f(weights) = scale * sum(weights ** 2) / 2` (scale * tf.nn.l2_loss).

    Args:
        scale: a non-negative float (or scalar Tensor); 0.0 disables it.
        scope: name scope of the ops (default "l2_regularizer").

    Raises:
        ValueError: scale is an int, negative, or not a number.

    Example:
        >>> w = tf.get_variable("w", [4, 2], regularizer=l2_regularizer(1e-4))
    """
    if _scale_is_zero(scale, "scale"):
        return _disabled
    return _scaled(scale, scope, "l2_regularizer", layer_ops.l2_loss)


def sum_regularizer(regularizer_list: Sequence[Regularizer | None],
                    scope: str | None = None) -> Regularizer | None:
    """Returns a regularizer adding the results of `regularizer_list`.

    None entries are skipped; with none left the result is None (as in TF).

    Example:
        >>> reg = sum_regularizer([l1_regularizer(0.1), l2_regularizer(0.2)])
    """
    regs = [r for r in regularizer_list if r is not None]
    if not regs:
        return None

    def sum_reg(weights: Any) -> Tensor | None:
        g = get_default_graph()
        full = g.unique_name(scope or "sum_regularizer", mark_as_used=False)
        with g.name_scope(full + "/"):
            parts = [t for t in (r(weights) for r in regs) if t is not None]
        if not parts:
            return None
        return math_ops.add_n(parts, name=full.rsplit("/", 1)[-1])
    return sum_reg


def l1_l2_regularizer(scale_l1: Any = 1.0, scale_l2: Any = 1.0,
                      scope: str | None = None) -> Regularizer:
    """Returns `f(w) = scale_l1 * sum(|w|) + scale_l2 * sum(w ** 2) / 2`.

    Raises:
        ValueError: a scale is an int, negative, or not a number.

    Example:
        >>> reg = l1_l2_regularizer(1e-5, 1e-4)
    """
    zero_l1 = _scale_is_zero(scale_l1, "scale_l1")
    zero_l2 = _scale_is_zero(scale_l2, "scale_l2")
    scope = scope or "l1_l2_regularizer"
    if zero_l1 and zero_l2:
        return _disabled
    if zero_l1:
        return l2_regularizer(scale_l2, scope)
    if zero_l2:
        return l1_regularizer(scale_l1, scope)
    reg = sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)
    assert reg is not None  # both parts exist
    return reg


def apply_regularization(regularizer: Regularizer,
                         weights_list: Sequence[Any] | None = None) -> Tensor:
    """Sums `regularizer(w)` over `weights_list` and adds it to REGULARIZATION_LOSSES.

    Args:
        regularizer: a function of one weight tensor returning a scalar (or None).
        weights_list: defaults to the `tf.GraphKeys.WEIGHTS` collection.

    Returns:
        The scalar penalty (also added to REGULARIZATION_LOSSES).

    Raises:
        ValueError: no weights, or a penalty that is not a scalar.

    Example:
        >>> penalty = apply_regularization(l2_regularizer(1e-4), [w1, w2])
    """
    g = get_default_graph()
    weights = list(weights_list) if weights_list else g.get_collection(GraphKeys.WEIGHTS)
    if not weights:
        raise ValueError("No weights to regularize.")

    with name_scope(None, "get_regularization_penalty", weights) as scope_name:
        penalties = []
        for w in weights:
            p = regularizer(w)
            p = convert_to_tensor(0.0) if p is None else convert_to_tensor(p)
            if p.get_shape().ndims != 0:
                raise ValueError(f"regularizer must return a scalar Tensor instead of a "
                                 f"Tensor with rank {p.get_shape().ndims} (for {w.name}).")
            penalties.append(p)
        total = math_ops.add_n(penalties, name=scope_name)
    g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total


# ---- initializers --------------------------------------------------------------------
_MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")


class _ContribVarianceScaling(init_ops.Initializer):
    """contrib's variance scaling: n from the shape, then uniform or truncated normal."""

    def __init__(self, factor: float, mode: str, uniform: bool, seed: Any,
                 dtype: _dt.DType) -> None:
        self.factor, self.mode, self.uniform, self.seed, self.dtype = (
            factor, mode, uniform, seed, dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _dt.as_dtype(dtype or self.dtype).base_dtype
        if not dt.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        if self.uniform:
            # Same limit, sqrt(3 * factor / n), and the same fans as core's initializer.
            return init_ops.VarianceScaling(self.factor, self.mode.lower(), "uniform",
                                            self.seed, dt)(shape, dt)
        dims = [int(d) for d in shape]
        fan_in = float(dims[-2] if len(dims) > 1 else dims[-1]) if dims else 1.0
        fan_out = float(dims[-1]) if dims else 1.0
        for d in dims[:-2]:  # conv kernels: the receptive field counts in both fans
            fan_in, fan_out = fan_in * d, fan_out * d
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}
        # contrib keeps its own constant 1.3 (~ 1 / 0.8796^2, the variance lost by
        # truncating at 2 stddevs); core's variance_scaling uses 1 / 0.8796^2 exactly.
        stddev = math.sqrt(1.3 * self.factor / n[self.mode])
        return random_ops.truncated_normal(dims, 0.0, stddev, dt, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"factor": self.factor, "mode": self.mode, "uniform": self.uniform,
                "seed": self.seed, "dtype": self.dtype.name}


def variance_scaling_initializer(factor: float = 2.0, mode: str = "FAN_IN",
                                 uniform: bool = False, seed: Any = None,
                                 dtype: Any = _dt.float32) -> init_ops.Initializer:
    """He-style initializer (contrib): variance `factor / n`, n from `mode`.

    Args:
        factor: multiplicative factor (2.0: He et al. for ReLU).
        mode: "FAN_IN", "FAN_OUT" or "FAN_AVG".
        uniform: uniform in +-sqrt(3 * factor / n), else truncated normal with
            stddev sqrt(1.3 * factor / n).

    Raises:
        TypeError: a non-floating dtype or an unknown mode (TF raises TypeError too).

    Example:
        >>> w = tf.get_variable("w", [3, 3, 16, 32], initializer=variance_scaling_initializer())
    """
    dt = _dt.as_dtype(dtype)
    if not dt.is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in _MODES:
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
    return _ContribVarianceScaling(factor, mode, uniform, seed, dt)


def xavier_initializer(uniform: bool = True, seed: Any = None,
                       dtype: Any = _dt.float32) -> init_ops.Initializer:
    """Glorot/Xavier: variance 1 / mean(fan_in, fan_out).

    `uniform=True` is `tf.glorot_uniform_initializer`; the normal one is truncated
    with stddev sqrt(1.3 / n) as contrib computes it.

    Example:
        >>> w = tf.get_variable("w", [784, 10], initializer=xavier_initializer(seed=1))
    """
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer
