"""`tf.contrib.layers.optimize_loss` (TF 1.x): one call from a loss to a train op.

It runs UPDATE_OPS before the loss, builds the optimizer from a name, class,
instance or function, optionally adds gradient noise, multiplies and clips
gradients (by global norm), writes summaries and applies the gradients.

Example:
    >>> step = tf.train.get_or_create_global_step()
    >>> train_op = optimize_loss(loss, step, learning_rate=0.1, optimizer="Adam",
    ...                          clip_gradients=5.0)
    >>> sess.run(train_op)          # returns the loss value, after the update
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.math import clip_ops, math_ops
from tensorweave.ops.random import random_ops
from tensorweave.state import init_ops
from tensorweave.state.variable_scope import get_variable, variable_scope
from tensorweave.state.variables import Variable, trainable_variables
from tensorweave.summary import summary
from tensorweave.train import training_util
from tensorweave.train.adagrad import AdagradOptimizer
from tensorweave.train.adam import AdamOptimizer
from tensorweave.train.ftrl import FtrlOptimizer
from tensorweave.train.gradient_descent import GradientDescentOptimizer
from tensorweave.train.momentum import MomentumOptimizer
from tensorweave.train.optimizer import Optimizer
from tensorweave.train.rmsprop import RMSPropOptimizer

OPTIMIZER_CLS_NAMES: dict[str, Callable[..., Optimizer]] = {
    "Adagrad": AdagradOptimizer,
    "Adam": AdamOptimizer,
    "Ftrl": FtrlOptimizer,
    # TF's "Momentum" fixes momentum at 0.9 (there is no way to pass it by name).
    "Momentum": lambda learning_rate: MomentumOptimizer(learning_rate, momentum=0.9),
    "RMSProp": RMSPropOptimizer,
    "SGD": GradientDescentOptimizer,
}

OPTIMIZER_SUMMARIES = ["learning_rate", "loss", "gradients", "gradient_norm",
                       "global_gradient_norm"]

GradsAndVars = list[tuple[Any, Any]]


def _learning_rate(learning_rate: Any) -> Any:
    """A scalar Tensor as is; a float becomes the non-trainable variable "learning_rate"."""
    if learning_rate is None:
        return None
    if isinstance(learning_rate, (Tensor, Variable)) and \
            learning_rate.get_shape().ndims == 0:
        return learning_rate
    if isinstance(learning_rate, float):
        if learning_rate < 0.0:
            raise ValueError(f"Invalid learning_rate {learning_rate}.")
        return get_variable("learning_rate", [], trainable=False,
                            initializer=init_ops.constant_initializer(learning_rate))
    raise ValueError(f"Learning rate should be 0d Tensor or float. Got {learning_rate!r} "
                     f"of type {type(learning_rate)}")


def _make_optimizer(optimizer: Any, lr: Any, learning_rate: Any) -> Optimizer:
    if isinstance(optimizer, str):
        if lr is None:
            raise ValueError(f"Learning rate is None, but should be specified if optimizer "
                             f"is string ({optimizer}).")
        if optimizer not in OPTIMIZER_CLS_NAMES:
            raise ValueError(f"Optimizer name should be one of "
                             f"[{', '.join(OPTIMIZER_CLS_NAMES)}], you provided {optimizer}.")
        return OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
    if isinstance(optimizer, type) and issubclass(optimizer, Optimizer):
        if lr is None:
            raise ValueError(f"Learning rate is None, but should be specified if optimizer "
                             f"is class ({optimizer}).")
        cls: Any = optimizer  # a subclass; the base class takes no learning rate
        return cls(learning_rate=lr)
    if isinstance(optimizer, Optimizer):
        return optimizer
    if callable(optimizer):
        opt = optimizer(lr) if learning_rate is not None else optimizer()
        if not isinstance(opt, Optimizer):
            raise ValueError(f"Unrecognized optimizer: function should return subclass of "
                             f"Optimizer. Got {opt!r}.")
        return opt
    raise ValueError("Unrecognized optimizer: should be string, subclass of Optimizer, "
                     "instance of subclass of Optimizer or function with one argument. "
                     f"Got {optimizer!r}.")


def _add_scaled_noise(grads_and_vars: GradsAndVars, scale: float) -> GradsAndVars:
    out: GradsAndVars = []
    for grad, var in grads_and_vars:
        if grad is None:
            out.append((grad, var))
            continue
        if isinstance(grad, IndexedSlices):
            values = grad.values
            noise = math_ops.multiply(random_ops.random_normal(
                convert_to_tensor(values).get_shape().as_list()), scale)
            out.append((IndexedSlices(math_ops.add(values, noise), grad.indices,
                                      grad.dense_shape), var))
        else:
            noise = math_ops.multiply(random_ops.random_normal(grad.get_shape().as_list(),
                                                               dtype=grad.dtype), scale)
            out.append((math_ops.add(grad, noise), var))
    return out


def _multiply_gradients(grads_and_vars: GradsAndVars, multipliers: dict) -> GradsAndVars:
    """Scales the gradients of the variables keyed (by Variable or name) in `multipliers`."""
    out = []
    for grad, var in grads_and_vars:
        key = var if var in multipliers else var.name if var.name in multipliers else None
        if grad is not None and key is not None:
            if isinstance(grad, IndexedSlices):
                values = math_ops.multiply(grad.values, multipliers[key])
                grad = IndexedSlices(values, grad.indices, grad.dense_shape)
            else:
                grad = math_ops.multiply(grad, math_ops.cast(multipliers[key], grad.dtype))
        out.append((grad, var))
    return out


def _global_norm(grads_and_vars: GradsAndVars) -> Tensor:
    return clip_ops.global_norm([g for g, _ in grads_and_vars])


def _checked_summaries(summaries: list[str] | None) -> list[str]:
    """The summaries to write (TF's default three), each one of OPTIMIZER_SUMMARIES."""
    if summaries is None:
        return ["loss", "learning_rate", "global_gradient_norm"]
    for s in summaries:
        if s not in OPTIMIZER_SUMMARIES:
            raise ValueError(f"Summaries should be one of [{', '.join(OPTIMIZER_SUMMARIES)}]"
                             f", you provided {s}.")
    return summaries


def _transform_gradients(grads: GradsAndVars, noise_scale: float | None,
                         multipliers: dict | None, clip_gradients: Any,
                         summaries: list[str]) -> GradsAndVars:
    """TF's order: noise, multipliers, the global norm's summary, then clipping."""
    if noise_scale is not None:
        grads = _add_scaled_noise(grads, noise_scale)
    if multipliers is not None:
        grads = _multiply_gradients(grads, multipliers)
        if not grads:
            raise ValueError("Empty list of (gradient, var) pairs encountered. This is "
                             "most likely to be caused by an improper value of "
                             "gradient_multipliers.")
    if "global_gradient_norm" in summaries or "gradient_norm" in summaries:
        summary.scalar("global_norm/gradient_norm", _global_norm(grads))
    if isinstance(clip_gradients, float):
        clipped, _ = clip_ops.clip_by_global_norm([gr for gr, _ in grads], clip_gradients)
        grads = list(zip(clipped, [v for _, v in grads]))
    elif callable(clip_gradients):
        grads = clip_gradients(grads)
    elif clip_gradients is not None:
        raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
    return grads


def _gradient_summaries(grads: GradsAndVars, summaries: list[str], clipped: bool) -> None:
    """Per-variable gradient histograms and norms, then the clipped global norm."""
    for grad, var in grads:
        values = grad.values if isinstance(grad, IndexedSlices) else grad
        if values is None:
            continue
        var_name = var.name.replace(":", "_")
        if "gradients" in summaries:
            summary.histogram(f"gradients/{var_name}", values)
        if "gradient_norm" in summaries:
            summary.scalar(f"gradient_norm/{var_name}", clip_ops.global_norm([values]))
    if clipped and ("global_gradient_norm" in summaries or "gradient_norm" in summaries):
        summary.scalar("global_norm/clipped_gradient_norm", _global_norm(grads))


def optimize_loss(loss: Any, global_step: Any, learning_rate: Any, optimizer: Any,
                  gradient_noise_scale: float | None = None,
                  gradient_multipliers: dict | None = None, clip_gradients: Any = None,
                  learning_rate_decay_fn: Callable[[Any, Any], Any] | None = None,
                  update_ops: Any = None, variables: Any = None, name: str | None = None,
                  summaries: list[str] | None = None,
                  colocate_gradients_with_ops: bool = False,
                  increment_global_step: bool = True) -> Tensor:
    """Builds the training step for `loss`; returns the loss, computed after the update.

    Args:
        loss: scalar Tensor.
        global_step: int scalar variable (None: the graph's global step, if any);
            incremented by each step when `increment_global_step`.
        learning_rate: float (stored in a variable "OptimizeLoss/learning_rate"),
            scalar Tensor, or None when `optimizer` is an instance or a 0-arg function.
        optimizer: a name in OPTIMIZER_CLS_NAMES ("Adagrad", "Adam", "Ftrl",
            "Momentum", "RMSProp", "SGD"), an Optimizer subclass taking the learning
            rate, an instance, or a function of the learning rate returning one.
        gradient_noise_scale: adds N(0, scale^2) noise to each gradient.
        gradient_multipliers: {variable or its name: factor}.
        clip_gradients: a float (clip by global norm) or a function of grads_and_vars.
        learning_rate_decay_fn: `fn(lr, global_step) -> lr`.
        update_ops: run before the loss (default: the UPDATE_OPS collection).
        variables: those to train (default: all trainable).
        summaries: any of OPTIMIZER_SUMMARIES (default loss, learning_rate,
            global_gradient_norm).

    Returns:
        The loss tensor, depending on the update op: running it trains one step.

    Raises:
        ValueError: a bad learning rate, optimizer, summary, clip_gradients, or
            learning_rate_decay_fn without a global step.

    Example:
        >>> train_op = optimize_loss(loss, tf.train.get_or_create_global_step(), 0.01,
        ...                          "SGD", clip_gradients=1.0)
    """
    loss = convert_to_tensor(loss)
    if loss.get_shape().ndims not in (0, None):
        raise ValueError(f"optimize_loss: loss must be a scalar, got shape {loss.get_shape()} "
                         f"({loss.name}).")
    if global_step is None:
        global_step = training_util.get_global_step()
    else:
        training_util.assert_global_step(global_step)
    g = get_default_graph()
    with variable_scope(name, "OptimizeLoss", [loss, global_step]):
        if update_ops is None:
            update_ops = list(dict.fromkeys(g.get_collection(GraphKeys.UPDATE_OPS)))
        if update_ops:
            # The loss (hence its gradients) is computed after the updates ran.
            with g.control_dependencies(list(update_ops)):
                loss = identity(loss)
        lr = _learning_rate(learning_rate)
        summaries = _checked_summaries(summaries)
        if learning_rate is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
        if lr is not None and "learning_rate" in summaries:
            summary.scalar("learning_rate", lr)
        opt = _make_optimizer(optimizer, lr, learning_rate)
        if variables is None:
            variables = trainable_variables()
        grads = opt.compute_gradients(loss, variables,
                                      colocate_gradients_with_ops=colocate_gradients_with_ops)
        grads = _transform_gradients(grads, gradient_noise_scale, gradient_multipliers,
                                     clip_gradients, summaries)
        if "loss" in summaries:
            summary.scalar("loss", loss)
        _gradient_summaries(grads, summaries, clipped=clip_gradients is not None)
        grad_updates = opt.apply_gradients(
            grads, global_step=global_step if increment_global_step else None, name="train")
        with g.control_dependencies([grad_updates]):
            return identity(loss)


__all__ = ["optimize_loss", "OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES"]
