"""`tf.keras.optimizers`: Keras names for our `tf.train` optimizers.

`Model.compile` accepts one of these, a name ("sgd", "adam", "rmsprop",
"adagrad") or any `tf.train.Optimizer`.

Example:
    >>> model.compile(tf.keras.optimizers.Adam(lr=0.01), "mse")
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.train.adagrad import AdagradOptimizer
from tensorweave.train.adam import AdamOptimizer
from tensorweave.train.gradient_descent import GradientDescentOptimizer
from tensorweave.train.momentum import MomentumOptimizer
from tensorweave.train.optimizer import Optimizer
from tensorweave.train.rmsprop import RMSPropOptimizer


def _rate(learning_rate: float, kwargs: dict[str, Any], who: str) -> float:
    """`learning_rate`, or Keras's older `lr` keyword (TF 1.x accepts both)."""
    lr = kwargs.pop("lr", None)
    if kwargs:
        raise TypeError(f"keras.optimizers.{who}: unexpected keyword arguments "
                        f"{sorted(kwargs)}; tensorweave's Keras optimizers take TF 1.x's "
                        "named parameters and lr.")
    return learning_rate if lr is None else lr


def SGD(learning_rate: float = 0.01, momentum: float = 0.0, nesterov: bool = False,
        name: str = "SGD", **kwargs: Any) -> Optimizer:
    """Plain, momentum or Nesterov gradient descent (TF 1.x's parameters; `lr=` too)."""
    rate = _rate(learning_rate, kwargs, "SGD")
    if momentum:
        return MomentumOptimizer(rate, momentum, use_nesterov=nesterov, name=name)
    return GradientDescentOptimizer(rate, name=name)


def Adam(learning_rate: float = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
         epsilon: float = 1e-7, amsgrad: bool = False, name: str = "Adam",
         **kwargs: Any) -> Optimizer:
    """Adam with Keras's defaults (TF 1.x's parameters; `lr=` too).

    Raises:
        ValueError: for amsgrad=True, which tensorweave's Adam does not implement.
    """
    if amsgrad:
        raise ValueError("keras.optimizers.Adam: amsgrad=True is not supported; use "
                         "amsgrad=False.")
    return AdamOptimizer(_rate(learning_rate, kwargs, "Adam"), beta_1, beta_2, epsilon,
                         name=name)


def RMSprop(learning_rate: float = 0.001, rho: float = 0.9, momentum: float = 0.0,
            epsilon: float = 1e-7, centered: bool = False, name: str = "RMSprop",
            **kwargs: Any) -> Optimizer:
    """RMSprop with Keras's defaults (TF 1.x's parameters; `lr=` too)."""
    return RMSPropOptimizer(_rate(learning_rate, kwargs, "RMSprop"), decay=rho,
                            momentum=momentum, epsilon=epsilon, centered=centered, name=name)


def Adagrad(learning_rate: float = 0.001, initial_accumulator_value: float = 0.1,
            epsilon: float = 1e-7, name: str = "Adagrad", **kwargs: Any) -> Optimizer:
    """Adagrad (TF 1.x's parameters; `lr=` too).

    Raises:
        ValueError: an `epsilon` other than 1e-7: tf.train's Adagrad has no epsilon term.
    """
    if epsilon != 1e-7:
        raise ValueError(f"keras.optimizers.Adagrad: epsilon={epsilon!r} is not supported "
                         "(tf.train.AdagradOptimizer has no epsilon); leave the default.")
    return AdagradOptimizer(_rate(learning_rate, kwargs, "Adagrad"),
                            initial_accumulator_value, name=name)


def get(identifier: Any) -> Optimizer:
    """An optimizer from a name or an Optimizer instance.

    Raises:
        ValueError: for an unknown name or object.
    """
    if isinstance(identifier, Optimizer):
        return identifier
    makers: dict[str, Callable[[], Optimizer]] = {
        "sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad}
    if isinstance(identifier, str) and identifier.lower() in makers:
        return makers[identifier.lower()]()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}; use one of "
                     f"{sorted(makers)} or a tf.train.Optimizer.")
