"""`tf.distribute.cluster_resolver`: ClusterResolver, SimpleClusterResolver,
TFConfigClusterResolver (implemented in `tensorweave.distributed.cluster_resolver`).

Example:
    >>> r = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    >>> target = r.master()      # "grpc://host:port" of this task with TF_CONFIG's
    >>>                          # "rpc_layer": "grpc" ("host:port" without), "" when local
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.distributed.cluster_resolver import (
    ClusterResolver as ClusterResolver, SimpleClusterResolver as SimpleClusterResolver,
    TFConfigClusterResolver as TFConfigClusterResolver)

__all__ = ["ClusterResolver", "SimpleClusterResolver", "TFConfigClusterResolver"]
