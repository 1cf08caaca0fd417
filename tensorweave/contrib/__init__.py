"""`tf.contrib`: the few TF 1.x contrib names that distributed programs still use.

Only `tf.contrib.training` (ps placement strategies, HParams), `tf.contrib.framework`
(global step helpers, arg_scope, variable helpers), `tf.contrib.opt` (LazyAdamOptimizer),
`tf.contrib.layers` (slim-style layers, regularizers, safe_embedding_lookup_sparse),
`tf.contrib.losses`, `tf.contrib.slim`, `tf.contrib.data` (AUTOTUNE), `tf.contrib.lookup`
(hash and vocabulary tables) and `tf.contrib.rnn` exist; everything else of TF's contrib
is out of scope.

Example:
    >>> strategy = tf.contrib.training.GreedyLoadBalancingStrategy(
    ...     2, tf.contrib.training.byte_size_load_fn)
    >>> step = tf.contrib.framework.get_or_create_global_step()
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.contrib import framework as framework
from tensorweave.contrib import training as training
from tensorweave.contrib import layers as layers
from tensorweave.contrib import opt as opt
from tensorweave.contrib import data as data
from tensorweave.contrib import lookup as lookup
from tensorweave.contrib import losses as losses
from tensorweave.contrib import slim as slim
from tensorweave.rnn import contrib_rnn as rnn

__all__ = ["framework", "training", "layers", "opt", "data", "lookup", "losses", "rnn", "slim"]
