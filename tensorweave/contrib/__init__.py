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
from __future__ import annotations

from types import ModuleType

from tensorweave.base import lazy as _lazy

# Each part is imported when a program first names it (`tf.contrib.layers`, or `import
# tensorweave.contrib.layers`): together they cost every process ~50 ms of its start,
# and a task server or a program that uses none of them pays nothing.
_PARTS = {"framework": "tensorweave.contrib.framework",
          "training": "tensorweave.contrib.training",
          "layers": "tensorweave.contrib.layers", "opt": "tensorweave.contrib.opt",
          "data": "tensorweave.contrib.data", "lookup": "tensorweave.contrib.lookup",
          "losses": "tensorweave.contrib.losses", "slim": "tensorweave.contrib.slim",
          "rnn": "tensorweave.rnn.contrib_rnn"}
__all__ = list(_PARTS)


def __getattr__(name: str) -> ModuleType:
    return _lazy.load(globals(), _PARTS, name,
                     f"tf.contrib.{name} is not offered: tensorweave keeps only the contrib "
                     f"modules distributed programs use ({', '.join(_PARTS)}).")


def __dir__() -> list[str]:
    return _lazy.names(globals(), _PARTS)
