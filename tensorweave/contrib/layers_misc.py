"""`tf.contrib.layers` (TF 1.x): layer combinators (`repeat`, `stack`), `layer_norm`,
`unit_norm`, `one_hot_encoding` and the `relu`/`linear` shorthands of fully_connected.

Example:
    >>> net = repeat(images, 2, conv2d, 64, [3, 3], scope="conv1")  # conv1/conv1_1, _2
    >>> net = stack(flat, fully_connected, [256, 128], scope="fc")    # fc/fc_1, fc/fc_2
    >>> net = layer_norm(net)                                         # LayerNorm/beta
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from tensorweave.contrib.arg_scope import add_arg_scope
from tensorweave.contrib.layers_impl import (
    _add_to_collections, _collect_named_outputs, _model_variable, fully_connected)
from tensorweave.framework import dtypes
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn import layer_ops, nn_extra_ops, nn_ops
from tensorweave.state import init_ops
from tensorweave.state.variable_scope import variable_scope


def _layer_name(layer: Callable[..., Any]) -> str:
    """The per-call scope prefix: the layer's name, a partial's function's, or "stack"."""
    if hasattr(layer, "__name__"):
        return str(layer.__name__)
    if hasattr(layer, "func") and hasattr(layer.func, "__name__"):
        return str(layer.func.__name__)
    return "stack"


def repeat(inputs: Any, repetitions: int, layer: Callable[..., Any], *args: Any,
           **kwargs: Any) -> Any:
    """Applies `layer` `repetitions` times with the same arguments.

    The calls get scopes `<scope>/<scope>_1`, `_2`, ... where `scope` is the
    `scope` keyword, else the layer's `__name__` (conv2d's is "convolution2d")
    under a "Repeat" scope.

    Example:
        >>> net = repeat(net, 3, conv2d, 64, [3, 3], scope="conv1")
        >>> # same as conv2d(..., scope="conv1/conv1_1"), ..._2, ..._3
    """
    scope = kwargs.pop("scope", None)
    with variable_scope(scope, "Repeat", [inputs]):
        outputs = convert_to_tensor(inputs)
        prefix = scope if scope is not None else _layer_name(layer)
        for i in range(int(repetitions)):
            kwargs["scope"] = f"{prefix}_{i + 1}"
            outputs = layer(outputs, *args, **kwargs)
        return outputs


def stack(inputs: Any, layer: Callable[..., Any], stack_args: Any, **kwargs: Any) -> Any:
    """Applies `layer` once per entry of `stack_args`, each entry its positional args.

    Scopes are named as in `repeat` (default outer scope "Stack").

    Raises:
        ValueError: `stack_args` is not a list or tuple.

    Example:
        >>> net = stack(x, fully_connected, [32, 64, 128], scope="fc")
        >>> net = stack(x, conv2d, [(32, [3, 3]), (64, [1, 1])], scope="conv")
    """
    scope = kwargs.pop("scope", None)
    if not isinstance(stack_args, (list, tuple)):
        raise ValueError(f"stack_args need to be a list or tuple, got {stack_args!r}.")
    with variable_scope(scope, "Stack", [inputs]):
        outputs = convert_to_tensor(inputs)
        prefix = scope if scope is not None else _layer_name(layer)
        for i, layer_args in enumerate(stack_args):
            kwargs["scope"] = f"{prefix}_{i + 1}"
            if not isinstance(layer_args, (list, tuple)):
                layer_args = [layer_args]
            outputs = layer(outputs, *layer_args, **kwargs)
        return outputs


@add_arg_scope
def one_hot_encoding(labels: Any, num_classes: Any, on_value: Any = 1.0,
                     off_value: Any = 0.0, outputs_collections: Any = None,
                     scope: Any = None) -> Tensor:
    """Integer labels -> one-hot rows of `num_classes` (float32 by default).

    Example:
        >>> onehot = one_hot_encoding(labels, 10)   # [batch] int -> [batch, 10]
    """
    with name_scope(scope, "OneHotEncoding", [labels, num_classes]) as sc:
        y = convert_to_tensor(labels)
        if y.dtype.base_dtype == dtypes.int32:
            y = math_ops.cast(y, dtypes.int64)
        outputs = array_ops.one_hot(y, num_classes, on_value=on_value, off_value=off_value)
        return _collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def unit_norm(inputs: Any, dim: int, epsilon: float = 1e-7, scope: Any = None) -> Tensor:
    """`inputs / sqrt(epsilon + sum(inputs ** 2, dim))`: unit length along `dim`.

    Raises:
        ValueError: unknown rank, or `dim` not in [0, rank).

    Example:
        >>> normed = unit_norm(embeddings, dim=1)
    """
    with variable_scope(scope, "UnitNorm", [inputs]):
        x = convert_to_tensor(inputs)
        rank = x.get_shape().ndims
        if rank is None:
            raise ValueError(f"The input rank must be known (inputs {x.name}).")
        if dim < 0 or dim >= rank:
            raise ValueError(f"dim must be positive but smaller than the input rank {rank}, "
                             f"got {dim}.")
        lengths = math_ops.sqrt(math_ops.add(
            epsilon, math_ops.reduce_sum(math_ops.square(x), axis=dim, keepdims=True)))
        return math_ops.divide(x, lengths)


@add_arg_scope
def layer_norm(inputs: Any, center: bool = True, scale: bool = True, activation_fn: Any = None,
               reuse: Any = None, variables_collections: Any = None,
               outputs_collections: Any = None, trainable: bool = True,
               begin_norm_axis: int = 1, begin_params_axis: int = -1,
               scope: Any = None) -> Tensor:
    """Layer normalization (Ba et al.): moments over axes `begin_norm_axis:`.

    Variables `<scope>/beta` (center) and `<scope>/gamma` (scale) have the shape of
    `inputs.shape[begin_params_axis:]`; scope default "LayerNorm". The variance
    epsilon is 1e-12 (1e-3 for float16), as TF's.

    Raises:
        ValueError: unknown rank, an axis not below the rank, or a params shape not
            fully defined.

    Example:
        >>> h = layer_norm(h, begin_norm_axis=-1)   # normalize each row
    """
    with variable_scope(scope, "LayerNorm", [inputs], reuse=reuse) as sc:
        x = convert_to_tensor(inputs)
        shape = x.get_shape()
        rank = shape.ndims
        if rank is None:
            raise ValueError(f"Inputs {x.name} has undefined rank.")
        norm_axis = begin_norm_axis + rank if begin_norm_axis < 0 else begin_norm_axis
        if begin_params_axis >= rank or norm_axis >= rank:
            raise ValueError(f"begin_params_axis ({begin_params_axis}) and begin_norm_axis "
                             f"({begin_norm_axis}) must be < rank(inputs) ({rank}).")
        params_shape = shape[begin_params_axis:]
        if not params_shape.is_fully_defined():
            raise ValueError(f"Inputs {x.name}: shape(inputs)[{begin_params_axis}:] is not "
                             f"fully defined: {params_shape}")
        dtype = x.dtype.base_dtype
        beta = gamma = None
        if center:
            beta = _model_variable("beta", params_shape.as_list(), dtype,
                                   init_ops.zeros_initializer(), None, trainable)
            _add_to_collections(beta, variables_collections, "beta")
        if scale:
            gamma = _model_variable("gamma", params_shape.as_list(), dtype,
                                    init_ops.ones_initializer(), None, trainable)
            _add_to_collections(gamma, variables_collections, "gamma")
        mean, variance = layer_ops.moments(x, list(range(norm_axis, rank)), keep_dims=True)
        eps = 1e-3 if dtype == dtypes.float16 else 1e-12
        outputs = nn_extra_ops.batch_normalization(x, mean, variance, beta, gamma, eps)
        outputs.set_shape(shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


# fully_connected with a fixed activation, as contrib defines them (partials keep
# `func.__name__`, so repeat/stack name their scopes "fully_connected_<i>").
relu = functools.partial(fully_connected, activation_fn=nn_ops.relu)
relu6 = functools.partial(fully_connected, activation_fn=nn_ops.relu6)
elu = functools.partial(fully_connected, activation_fn=nn_ops.elu)
linear = functools.partial(fully_connected, activation_fn=None)

__all__ = ["elu", "layer_norm", "linear", "one_hot_encoding", "relu", "relu6", "repeat",
           "stack", "unit_norm"]
