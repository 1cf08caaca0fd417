"""`tf.contrib.layers` (TF 1.x): the slim-style layers (regularizers and initializers are in
`layers_regularizers`, optimize_loss in `layers_optimizers`; all re-exported here).

Layers create their variables with `tf.get_variable` inside a variable scope named
as TF names it (`fully_connected/weights`, `BatchNorm/moving_mean`, ...), add them
to MODEL_VARIABLES (as contrib's `model_variable` does) and put regularization
losses in REGULARIZATION_LOSSES, so TF1 model code and checkpoints line up.

Example:
    >>> net = fully_connected(x, 32, weights_regularizer=l2_regularizer(1e-3))
    >>> logits = fully_connected(net, 10, activation_fn=None)
    >>> loss = tf.losses.sparse_softmax_cross_entropy(y, logits) + \\
    ...     tf.losses.get_regularization_loss()
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Sequence

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.keras.layers.layer_utils import smart_cond, static_bool, training_as_float
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.array.unique_ops import unique
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn import layer_ops, nn_ops
from tensorweave.ops.nn.embedding_ops import embedding_lookup
from tensorweave.keras.layers.normalization import batch_normalization as _nn_batch_normalization
from tensorweave.state import init_ops
from tensorweave.state.variable_scope import get_variable, variable_scope
from tensorweave.state.variables import Variable
from tensorweave.train.moving_averages import assign_moving_average

from tensorweave.contrib.arg_scope import add_arg_scope
from tensorweave.contrib.layers_regularizers import (
    apply_regularization, l1_l2_regularizer, l1_regularizer,
    l2_regularizer, sum_regularizer, variance_scaling_initializer, xavier_initializer,
    xavier_initializer_conv2d)


# ---- layer helpers ---------------------------------------------------------------------
def _collections_for(variables_collections: Any, name: str) -> list[str]:
    """A list of collections, or a dict of them per variable name (TF's two forms)."""
    if isinstance(variables_collections, dict):
        found = variables_collections.get(name)
    else:
        found = variables_collections
    if found is None:
        return []
    return [found] if isinstance(found, str) else list(found)


def _model_variable(name: str, shape: Any, dtype: Any, initializer: Any,
                    regularizer: Any = None, trainable: bool = True,
                    collections: Sequence[str] = ()) -> Variable:
    """contrib's `model_variable`: a get_variable also in MODEL_VARIABLES."""
    cols = list(collections) + [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
    return get_variable(name, shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=trainable,
                        collections=list(dict.fromkeys(cols)))


def _add_to_collections(var: Any, variables_collections: Any, name: str) -> None:
    g = get_default_graph()
    for key in _collections_for(variables_collections, name):
        if var not in g.get_collection(key):
            g.add_to_collection(key, var)


def _collect_named_outputs(collections: Any, alias: str, outputs: Tensor) -> Tensor:
    """Adds `outputs` to `collections`, recording `alias` (TF's `tensor.aliases`)."""
    if collections:
        aliases = list(getattr(outputs, "aliases", []))
        aliases.append(alias[:-1] if alias.endswith("/") else alias)
        try:
            outputs.aliases = aliases  # type: ignore[attr-defined]
        except AttributeError:
            pass  # a Tensor without attribute space still goes to the collections
        get_default_graph().add_to_collections(
            [collections] if isinstance(collections, str) else collections, outputs)
    return outputs


# ---- layers ---------------------------------------------------------------------------
_XAVIER = xavier_initializer()  # shared defaults, as TF's signature has them
_ZEROS = init_ops.zeros_initializer()


@add_arg_scope
def fully_connected(inputs: Any, num_outputs: int, activation_fn: Any = nn_ops.relu,
                    normalizer_fn: Any = None, normalizer_params: dict | None = None,
                    weights_initializer: Any = _XAVIER,
                    weights_regularizer: Any = None,
                    biases_initializer: Any = _ZEROS,
                    biases_regularizer: Any = None, reuse: Any = None,
                    variables_collections: Any = None, outputs_collections: Any = None,
                    trainable: bool = True, scope: Any = None) -> Tensor:
    """`activation_fn(normalizer_fn(inputs @ weights + biases))`, over the last axis.

    Variables are `<scope>/weights` and `<scope>/biases` (scope default
    "fully_connected", made unique). With a `normalizer_fn`, or
    `biases_initializer=None`, there are no biases (the normalizer centers).

    Raises:
        ValueError: num_outputs is not an int, or the inputs' last dimension is unknown.

    Example:
        >>> h = fully_connected(x, 64)                       # ReLU, fully_connected/weights
        >>> logits = fully_connected(h, 10, activation_fn=None, scope="logits")
    """
    if isinstance(num_outputs, bool) or not isinstance(num_outputs, numbers.Integral):
        raise ValueError(f"num_outputs type should be one of [int], got {type(num_outputs)}.")
    with variable_scope(scope, "fully_connected", [inputs], reuse=reuse) as sc:
        x = convert_to_tensor(inputs)
        dtype = x.dtype.base_dtype
        rank = x.get_shape().ndims
        in_dim = x.get_shape().as_list()[-1] if rank else None
        if in_dim is None:
            raise ValueError(f"The last dimension of the inputs to fully_connected should be "
                             f"defined. Found None (inputs {x.name}, shape {x.get_shape()}).")
        weights = _model_variable("weights", [in_dim, int(num_outputs)], dtype,
                                  weights_initializer, weights_regularizer, trainable)
        _add_to_collections(weights, variables_collections, "weights")
        if rank == 2:
            outputs = math_ops.matmul(x, weights)
        else:  # [..., in] -> [N, in] @ W -> [..., out], as Dense's tensordot does
            flat = array_ops.reshape(x, [-1, in_dim])
            out_shape = array_ops.concat([array_ops.shape(x)[:-1], [int(num_outputs)]], 0)
            outputs = array_ops.reshape(math_ops.matmul(flat, weights), out_shape)
            outputs.set_shape(x.get_shape()[:-1].concatenate([int(num_outputs)]))
        if normalizer_fn is None and biases_initializer is not None:
            biases = _model_variable("biases", [int(num_outputs)], dtype, biases_initializer,
                                     biases_regularizer, trainable)
            _add_to_collections(biases, variables_collections, "biases")
            outputs = layer_ops.bias_add(outputs, biases)
        if normalizer_fn is not None:
            outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def flatten(inputs: Any, outputs_collections: Any = None, scope: str | None = None) -> Tensor:
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...].

    Raises:
        ValueError: inputs of unknown rank or rank below 2.

    Example:
        >>> flat = flatten(pool2)                       # [batch, 7 * 7 * 64]
    """
    g = get_default_graph()
    with g.name_scope(g.unique_name(scope or "Flatten", mark_as_used=False) + "/") as sc:
        x = convert_to_tensor(inputs)
        rank = x.get_shape().ndims
        if rank is None or rank < 2:
            raise ValueError(f"Inputs must have a least 2 dimensions (got {x.get_shape()} "
                             f"for {x.name}).")
        rest = x.get_shape().as_list()[1:]
        if all(d is not None for d in rest):
            k = int(math.prod(d for d in rest if d is not None))
            outputs = array_ops.reshape(x, [-1, k])
        else:  # unknown inner dims: compute their product at run time
            dyn = array_ops.shape(x)
            outputs = array_ops.reshape(
                x, array_ops.concat([dyn[:1], math_ops.reduce_prod(dyn[1:], keepdims=True)], 0))
        return _collect_named_outputs(outputs_collections, sc, outputs)


@add_arg_scope
def dropout(inputs: Any, keep_prob: Any = 0.5, noise_shape: Any = None,
            is_training: Any = True, outputs_collections: Any = None,
            scope: str | None = None, seed: int | None = None) -> Tensor:
    """Keeps each element with probability `keep_prob` (scaled by 1/keep_prob) in training.

    Args:
        is_training: Python bool or boolean tensor; False returns the inputs unchanged.
            Note contrib's default is True (tf.layers.dropout's is False).

    Example:
        >>> h = dropout(h, keep_prob=0.8, is_training=is_training)
    """
    with variable_scope(scope, "Dropout", [inputs]) as sc:
        x = convert_to_tensor(inputs)
        outputs = smart_cond(
            is_training,
            lambda: layer_ops.dropout(x, keep_prob=keep_prob, noise_shape=noise_shape,
                                      seed=seed),
            lambda: identity(x))
        outputs.set_shape(x.get_shape())
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


@add_arg_scope
def batch_norm(inputs: Any, decay: float = 0.999, center: bool = True, scale: bool = False,
               epsilon: float = 0.001, activation_fn: Any = None,
               param_initializers: dict | None = None, param_regularizers: dict | None = None,
               updates_collections: Any = GraphKeys.UPDATE_OPS, is_training: Any = True,
               reuse: Any = None, variables_collections: Any = None,
               outputs_collections: Any = None, trainable: bool = True,
               batch_weights: Any = None, fused: bool | None = None,
               data_format: str = "NHWC", zero_debias_moving_mean: bool = False,
               scope: Any = None, renorm: bool = False, renorm_clipping: Any = None,
               renorm_decay: float = 0.99, adjustment: Any = None) -> Tensor:
    """Batch normalization (Ioffe & Szegedy) over every axis but the channel one.

    Training (`is_training` True or a true boolean tensor) normalizes with the batch's
    moments and builds updates `moving = decay * moving + (1 - decay) * batch`, which
    go to `updates_collections` (run them with the train op) or, when that is None,
    run before the output is computed. Inference uses moving_mean/moving_variance.
    Variables: `<scope>/beta` (center), `gamma` (scale), `moving_mean`,
    `moving_variance` (not trainable), scope default "BatchNorm".

    Raises:
        ValueError: unknown rank, unknown channel dimension, a bad data_format, or
            the unsupported batch_weights / renorm / adjustment.

    Example:
        >>> h = batch_norm(h, is_training=is_training, scale=True)
        >>> with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        ...     train_op = tf.train.AdamOptimizer().minimize(loss)
    """
    if batch_weights is not None or renorm or renorm_clipping is not None or \
            adjustment is not None:
        raise ValueError("batch_norm: batch_weights, renorm and adjustment are not supported.")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format has to be either NCHW or NHWC, got {data_format!r}.")
    inits = param_initializers or {}
    regs = param_regularizers or {}
    with variable_scope(scope, "BatchNorm", [inputs], reuse=reuse) as sc:
        x = convert_to_tensor(inputs)
        rank, axis, channels = _channel_axis(x, data_format)
        dtype = x.dtype.base_dtype

        def param(name: str, default: Any, train: bool) -> Variable:
            var = _model_variable(name, [channels], dtype, inits.get(name, default),
                                  regs.get(name), train and trainable,
                                  _collections_for(variables_collections, name))
            return var

        beta = param("beta", init_ops.zeros_initializer(), True) if center else None
        gamma = param("gamma", init_ops.ones_initializer(), True) if scale else None
        moving_mean = param("moving_mean", init_ops.zeros_initializer(), False)
        moving_variance = param("moving_variance", init_ops.ones_initializer(), False)

        def bcast(v: Any) -> Any:  # [C] -> [1, C, 1, 1] for NCHW
            if v is None or axis == rank - 1:
                return v
            return array_ops.reshape(v, [1, -1] + [1] * (rank - 2))

        def normalize(mean: Any, variance: Any) -> Tensor:
            return _nn_batch_normalization(x, bcast(mean), bcast(variance), bcast(beta),
                                           bcast(gamma), epsilon)

        if static_bool(is_training) is False:
            outputs = normalize(moving_mean, moving_variance)
        else:
            mean, variance = layer_ops.moments(x, [i for i in range(rank) if i != axis])
            updates = _moving_updates(x, mean, variance, moving_mean, moving_variance, decay,
                                      is_training, zero_debias_moving_mean,
                                      fused is not False and rank == 4)
            outputs = _attach_updates(
                smart_cond(is_training, lambda: normalize(mean, variance),
                           lambda: normalize(moving_mean, moving_variance)),
                updates, updates_collections)
        outputs.set_shape(x.get_shape())
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        return _collect_named_outputs(outputs_collections, sc.name, outputs)


def _channel_axis(x: Tensor, data_format: str) -> tuple[int, int, int]:
    """(rank, channel axis, channel count) of batch_norm's input; ValueError naming `x`
    when its rank or channel count is unknown."""
    rank = x.get_shape().ndims
    if rank is None:
        raise ValueError(f"Inputs {x.name} has undefined rank.")
    axis = 1 if data_format == "NCHW" and rank > 2 else rank - 1
    channels = x.get_shape().as_list()[axis]
    if channels is None:
        raise ValueError(f"Inputs {x.name} has undefined channels dimension "
                         f"{x.get_shape()}.")
    return rank, axis, channels


def _attach_updates(outputs: Tensor, updates: list[Tensor], updates_collections: Any
                    ) -> Tensor:
    """Puts the moving-average updates in `updates_collections`, or, when that is None,
    makes `outputs` depend on them (there is no collection to run them from)."""
    if updates_collections is None:
        with get_default_graph().control_dependencies(updates):
            return identity(outputs)
    cols = [updates_collections] if isinstance(updates_collections, str) \
        else list(updates_collections)
    for u in updates:
        get_default_graph().add_to_collections(cols, u)
    return outputs


def _moving_updates(x: Tensor, mean: Tensor, variance: Tensor, moving_mean: Variable,
                    moving_variance: Variable, decay: float, is_training: Any,
                    zero_debias: bool, unbiased_variance: bool) -> list[Tensor]:
    """moving <- decay * moving + (1 - decay) * batch; a no-op when not training."""
    dtype = x.dtype.base_dtype
    if unbiased_variance:
        # TF's default (fused) kernel for 4-D inputs feeds the moving variance the
        # unbiased batch variance, n / (n - 1) times the biased one.
        n = math_ops.cast(math_ops.divide(array_ops.size(x), array_ops.size(mean)), dtype)
        variance = math_ops.multiply(variance, math_ops.divide(
            n, math_ops.maximum(math_ops.subtract(n, 1.0), 1.0)))
    if static_bool(is_training) is True:
        return [assign_moving_average(moving_mean, mean, decay, zero_debias=zero_debias),
                assign_moving_average(moving_variance, variance, decay, zero_debias=False)]
    # A boolean tensor: scale the step by 0/1 instead of a cond around the assigns.
    step = math_ops.multiply(1.0 - decay, training_as_float(is_training, dtype))
    return [assign_moving_average(moving_mean, mean, math_ops.subtract(1.0, step),
                                  zero_debias=False),
            assign_moving_average(moving_variance, variance, math_ops.subtract(1.0, step),
                                  zero_debias=False)]


def embed_sequence(ids: Any, vocab_size: int | None = None, embed_dim: int | None = None,
                   unique: bool = False, initializer: Any = None, regularizer: Any = None,
                   trainable: bool = True, scope: Any = None, reuse: Any = None) -> Tensor:
    """Maps int ids [batch, time] to embeddings [batch, time, embed_dim].

    The table is `<scope>/embeddings` (scope default "EmbedSequence"), a model
    variable; `unique=True` looks each distinct id up once.

    Raises:
        ValueError: vocab_size / embed_dim missing when not reusing.

    Example:
        >>> emb = embed_sequence(word_ids, vocab_size=10000, embed_dim=64)
    """
    if not (reuse or (vocab_size and embed_dim)):
        raise ValueError(f"Must specify vocab size and embedding dimension when not reusing. "
                         f"Got vocab_size={vocab_size} and embed_dim={embed_dim}")
    with variable_scope(scope, "EmbedSequence", [ids], reuse=reuse):
        shape = None if vocab_size is None or embed_dim is None else [vocab_size, embed_dim]
        embeddings = _model_variable("embeddings", shape, None, initializer, regularizer,
                                     trainable)
        if not unique:
            return embedding_lookup(embeddings, ids)
        ids_t = convert_to_tensor(ids)
        flat = array_ops.reshape(ids_t, [-1])
        uniq, idx = _unique(flat)
        rows = array_ops.gather(embedding_lookup(embeddings, uniq), idx)
        out_shape = array_ops.concat([array_ops.shape(ids_t),
                                      array_ops.shape(embeddings)[1:]], 0)
        out = array_ops.reshape(rows, out_shape)
        out.set_shape(ids_t.get_shape().concatenate(embeddings.get_shape()[1:]))
        return out


_unique = unique  # the parameter `unique` of embed_sequence shadows the op

__all__ = ["l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer",
           "apply_regularization", "xavier_initializer", "xavier_initializer_conv2d",
           "variance_scaling_initializer", "fully_connected", "flatten", "dropout",
           "batch_norm", "embed_sequence"]


# optimize_loss lives next door (this file would pass 600 lines); re-exported here so
# `tf.contrib.layers` can take every name from this module.
from tensorweave.contrib.layers_optimizers import (  # noqa: E402
    OPTIMIZER_CLS_NAMES as OPTIMIZER_CLS_NAMES, OPTIMIZER_SUMMARIES as OPTIMIZER_SUMMARIES,
    optimize_loss as optimize_loss)

__all__ += ["optimize_loss", "OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES"]
