"""`tf.distribute`: `tf.distribute.cluster_resolver` (TF_CONFIG and friends) and
`tf.distribute.Server` (TF 1.15's name for `tf.train.Server`).

Example:
    >>> resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    >>> resolver.cluster_spec(), resolver.task_type, resolver.task_id
    >>> server = tf.distribute.Server(resolver.cluster_spec(), job_name="ps", task_index=0)
"""
# ruff: noqa: F401  (this module only re-exports)
from typing import Any

from tensorweave.distribute import cluster_resolver as cluster_resolver

__all__ = ["Server", "cluster_resolver"]


def __getattr__(name: str) -> Any:  # PEP 562: the server (gRPC) loads on first use
    if name == "Server":
        from tensorweave import train
        value = train.Server
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tensorweave.distribute' has no attribute {name!r}")


def __dir__() -> list:
    return sorted([*globals(), "Server"])
