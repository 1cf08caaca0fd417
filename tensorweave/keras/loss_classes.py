"""`tf.keras.losses`' loss classes (TF 1.15's): `BinaryCrossentropy()(y_true, y_pred)`.

A loss object computes its per-example function (keras/losses.py, mean over the last
axis), weights it by `sample_weight` and reduces it by `reduction`:
`SUM_OVER_BATCH_SIZE` (the default, `AUTO`: the weighted sum over the number of
elements), `SUM`, or `NONE` (the weighted per-example losses).

Example:
    >>> bce = tf.keras.losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1)
    >>> loss = bce(labels, logits)                      # a scalar
    >>> per_example = tf.keras.losses.MeanSquaredError(
    ...     reduction=tf.keras.losses.Reduction.NONE)(y, p)
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.keras import loss_functions as fns
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.math.div_no_nan_ops import div_no_nan

__all__ = ["BinaryCrossentropy", "CategoricalCrossentropy", "CategoricalHinge",
           "CosineSimilarity", "Hinge", "Huber", "KLDivergence", "LogCosh", "Loss",
           "MeanAbsoluteError", "MeanAbsolutePercentageError", "MeanSquaredError",
           "MeanSquaredLogarithmicError", "Poisson", "Reduction",
           "SparseCategoricalCrossentropy", "SquaredHinge"]


class Reduction:
    """How a loss object reduces its weighted per-example losses (TF's ReductionV2)."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key!r}: use one of {list(cls.all())}")


class Loss:
    """A loss object: `call(y_true, y_pred)` per example, then weighted and reduced.

    Example:
        >>> class Absolute(tf.keras.losses.Loss):
        ...     def call(self, y_true, y_pred):
        ...         return tf.reduce_mean(tf.abs(y_pred - y_true), axis=-1)
    """

    def __init__(self, reduction: str = Reduction.AUTO, name: str | None = None) -> None:
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        with name_scope(self.name or type(self).__name__):
            losses = self.call(y_true, y_pred)
            return _reduce(losses, sample_weight, self.reduction)

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        """The per-example losses (subclasses define it)."""
        raise NotImplementedError(f"{type(self).__name__} must define call(y_true, y_pred)")

    def get_config(self) -> dict[str, Any]:
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Loss:
        return cls(**config)


def _reduce(losses: Tensor, sample_weight: Any, reduction: str) -> Tensor:
    losses = convert_to_tensor(losses)
    if sample_weight is not None:
        weight = math_ops.cast(convert_to_tensor(sample_weight), losses.dtype.base_dtype)
        if weight.shape.ndims is not None and losses.shape.ndims is not None and \
                weight.shape.ndims > losses.shape.ndims:
            # TF squeezes a [batch, 1] weight against [batch] per-example losses
            weight = array_ops.squeeze(weight, [-1])
        losses = math_ops.multiply(losses, weight)
    if reduction == Reduction.NONE:
        return losses
    total = math_ops.reduce_sum(losses)
    if reduction == Reduction.SUM:
        return total
    count = math_ops.cast(array_ops.size(losses), losses.dtype.base_dtype)
    return div_no_nan(total, count)


class _Wrapped(Loss):
    """A loss object over one of keras/losses.py's functions and its keyword arguments."""

    _fn: Callable[..., Tensor]
    _default_name = ""

    def __init__(self, reduction: str = Reduction.AUTO, name: str | None = None,
                 **fn_kwargs: Any) -> None:
        super().__init__(reduction, name or self._default_name)
        self._fn_kwargs = fn_kwargs

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        return type(self)._fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self._fn_kwargs}


def _class(name: str, fn: Callable[..., Tensor], default_name: str,
           doc: str) -> type[_Wrapped]:
    return type(name, (_Wrapped,), {"_fn": staticmethod(fn), "_default_name": default_name,
                                    "__doc__": doc})


class BinaryCrossentropy(_Wrapped):
    """Binary cross-entropy; `label_smoothing` pulls labels towards 0.5."""

    _fn = staticmethod(fns.binary_crossentropy)

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0,
                 reduction: str = Reduction.AUTO,
                 name: str = "binary_crossentropy") -> None:
        super().__init__(reduction, name, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class CategoricalCrossentropy(_Wrapped):
    """Categorical cross-entropy of one-hot labels; `label_smoothing` spreads their mass."""

    _fn = staticmethod(fns.categorical_crossentropy)

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0,
                 reduction: str = Reduction.AUTO,
                 name: str = "categorical_crossentropy") -> None:
        super().__init__(reduction, name, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class SparseCategoricalCrossentropy(_Wrapped):
    """Categorical cross-entropy against integer class ids."""

    _fn = staticmethod(fns.sparse_categorical_crossentropy)

    def __init__(self, from_logits: bool = False, reduction: str = Reduction.AUTO,
                 name: str = "sparse_categorical_crossentropy") -> None:
        super().__init__(reduction, name, from_logits=from_logits)


class Huber(_Wrapped):
    """Quadratic for errors under `delta`, linear beyond."""

    _fn = staticmethod(fns.huber_loss)

    def __init__(self, delta: float = 1.0, reduction: str = Reduction.AUTO,
                 name: str = "huber_loss") -> None:
        super().__init__(reduction, name, delta=delta)


class CosineSimilarity(_Wrapped):
    """The negated cosine similarity along `axis`."""

    _fn = staticmethod(fns.cosine_similarity)

    def __init__(self, axis: int = -1, reduction: str = Reduction.AUTO,
                 name: str = "cosine_similarity") -> None:
        super().__init__(reduction, name, axis=axis)


MeanSquaredError = _class("MeanSquaredError", fns.mean_squared_error, "mean_squared_error",
                          "Mean of squared errors.")
MeanAbsoluteError = _class("MeanAbsoluteError", fns.mean_absolute_error,
                           "mean_absolute_error", "Mean of absolute errors.")
MeanAbsolutePercentageError = _class(
    "MeanAbsolutePercentageError", fns.mean_absolute_percentage_error,
    "mean_absolute_percentage_error", "100 * mean(|y_true - y_pred| / |y_true|).")
MeanSquaredLogarithmicError = _class(
    "MeanSquaredLogarithmicError", fns.mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "Mean of squared differences of log(1 + y).")
Hinge = _class("Hinge", fns.hinge, "hinge", "mean(max(1 - y_true * y_pred, 0)).")
SquaredHinge = _class("SquaredHinge", fns.squared_hinge, "squared_hinge",
                      "mean(max(1 - y_true * y_pred, 0) ** 2).")
CategoricalHinge = _class("CategoricalHinge", fns.categorical_hinge, "categorical_hinge",
                          "max(0, 1 + max wrong-class score - true-class score).")
KLDivergence = _class("KLDivergence", fns.kullback_leibler_divergence,
                      "kullback_leibler_divergence", "sum(y_true * log(y_true / y_pred)).")
Poisson = _class("Poisson", fns.poisson, "poisson", "mean(y_pred - y_true * log(y_pred)).")
LogCosh = _class("LogCosh", fns.logcosh, "logcosh", "mean(log(cosh(y_pred - y_true))).")
