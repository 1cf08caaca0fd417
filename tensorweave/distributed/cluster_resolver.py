"""Cluster resolvers: where a program learns its cluster, its own task and its master.

`TFConfigClusterResolver` reads the TF_CONFIG environment variable that Kubeflow's
TFJob, SageMaker and Vertex AI set (parsed by `tensorweave.distributed.tf_config`);
`SimpleClusterResolver` wraps a ClusterSpec you already have.

Example:
    >>> # TF_CONFIG='{"cluster": {"ps": ["p0:2222"], "worker": ["w0:2222", "w1:2222"]},
    >>> #             "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}'
    >>> resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    >>> resolver.task_type, resolver.task_id, resolver.master()
    ('worker', 1, 'grpc://w1:2222')
    >>> server = tf.train.Server(resolver.cluster_spec(), job_name=resolver.task_type,
    ...                          task_index=resolver.task_id)
"""
from __future__ import annotations

import abc
from typing import Any

from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.tf_config import load_tf_config, parse_tf_config

__all__ = ["ClusterResolver", "SimpleClusterResolver", "TFConfigClusterResolver",
           "format_master_url"]


def format_master_url(master: str, rpc_layer: str | None = None) -> str:
    """`"<rpc_layer>://<master>"`, or `master` unchanged when there is no rpc_layer.

    Example:
        >>> format_master_url("w0:2222", "grpc")
        'grpc://w0:2222'
    """
    return f"{rpc_layer}://{master}" if rpc_layer else master


class ClusterResolver(abc.ABC):
    """The interface of all cluster resolvers.

    Subclasses provide `cluster_spec()` and `master()` and the attributes
    `task_type`, `task_id` and `rpc_layer`.

    Example:
        >>> isinstance(TFConfigClusterResolver(), ClusterResolver)
        True
    """

    task_type: str | None
    task_id: int | None
    rpc_layer: str | None

    @abc.abstractmethod
    def cluster_spec(self) -> ClusterSpec:
        """The current ClusterSpec (may change between calls)."""

    @abc.abstractmethod
    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """The session target of a task ("grpc://host:port"), or "" for none."""

    def num_accelerators(self, task_type: str | None = None, task_id: int | None = None,
                         config_proto: Any = None) -> dict[str, int]:
        """Accelerators per type on each task: {} (tensorweave runs on CPUs)."""
        return {}

    @property
    def environment(self) -> str:
        """"google" inside Google's environment, else "" (always "" here)."""
        return ""


class SimpleClusterResolver(ClusterResolver):
    """A resolver that returns the ClusterSpec and master it was given.

    Args:
        cluster_spec: a ClusterSpec (or dict) for the cluster.
        master: the session target returned by `master()` with no task given.
        task_type: this process's job name.
        task_id: this process's task index.
        environment: "" or "google".
        num_accelerators: e.g. {"GPU": 0}; default {}.
        rpc_layer: prefixed to addresses by `master()` (e.g. "grpc").

    Raises:
        TypeError: if cluster_spec is not a ClusterSpec or dict of jobs.

    Example:
        >>> r = SimpleClusterResolver(tf.train.ClusterSpec({"worker": ["w0:2222"]}),
        ...                           task_type="worker", task_id=0, rpc_layer="grpc")
        >>> r.master("worker", 0)
        'grpc://w0:2222'
    """

    def __init__(self, cluster_spec: Any, master: str = "", task_type: str | None = None,
                 task_id: int | None = None, environment: str = "",
                 num_accelerators: dict[str, int] | None = None,
                 rpc_layer: str | None = None) -> None:
        self._cluster_spec = cluster_spec if isinstance(cluster_spec, ClusterSpec) \
            else ClusterSpec(cluster_spec)
        self._master = master
        self.task_type = task_type
        self.task_id = task_id
        self._environment = environment
        self._num_accelerators = dict(num_accelerators or {})
        self.rpc_layer = rpc_layer

    def cluster_spec(self) -> ClusterSpec:
        return self._cluster_spec

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """The given task's address (with rpc_layer), else the master given at creation."""
        if task_type is not None and task_id is not None:
            address = self._cluster_spec.task_address(task_type, task_id)
        else:
            address = self._master
        return format_master_url(address, rpc_layer or self.rpc_layer)

    @property
    def environment(self) -> str:
        return self._environment

    def num_accelerators(self, task_type: str | None = None, task_id: int | None = None,
                         config_proto: Any = None) -> dict[str, int]:
        return dict(self._num_accelerators)


class TFConfigClusterResolver(ClusterResolver):
    """A resolver that reads TF_CONFIG (again on every call, as TF does).

    Args:
        task_type: overrides TF_CONFIG's task type.
        task_id: overrides TF_CONFIG's task index.
        rpc_layer: overrides TF_CONFIG's "rpc_layer".
        environment: overrides TF_CONFIG's "environment".

    As in TF, `master()` prefixes the task's address with the rpc layer (argument,
    constructor or TF_CONFIG's "rpc_layer") and returns it bare when none is named:
    set "rpc_layer": "grpc" in TF_CONFIG (or pass rpc_layer="grpc") for a session
    target.

    Raises:
        ValueError: (from its methods) when TF_CONFIG is malformed, naming what to fix.

    Example:
        >>> r = TFConfigClusterResolver()      # TF_CONFIG as set by the cluster manager
        >>> with tf.Session(r.master()) as sess: ...
    """

    def __init__(self, task_type: str | None = None, task_id: int | None = None,
                 rpc_layer: str | None = None, environment: str | None = None) -> None:
        self._task_type = task_type
        self._task_id = task_id
        self._rpc_layer = rpc_layer
        self._environment = environment

    @property
    def task_type(self) -> str | None:
        """The explicit task type, else TF_CONFIG's "task.type" (None if unset)."""
        if self._task_type is not None:
            return self._task_type
        return parse_tf_config().task_type

    @task_type.setter
    def task_type(self, task_type: str | None) -> None:
        self._task_type = task_type

    @property
    def task_id(self) -> int | None:
        """The explicit task index, else TF_CONFIG's "task.index" (None if no task)."""
        if self._task_id is not None:
            return self._task_id
        return parse_tf_config().task_index

    @task_id.setter
    def task_id(self, task_id: int | None) -> None:
        self._task_id = task_id

    @property
    def rpc_layer(self) -> str | None:
        """The explicit rpc layer, else TF_CONFIG's "rpc_layer" (None if unset)."""
        if self._rpc_layer is not None:
            return self._rpc_layer
        return parse_tf_config().rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: str | None) -> None:
        self._rpc_layer = rpc_layer

    @property
    def environment(self) -> str:
        if self._environment is not None:
            return self._environment
        return str(load_tf_config().get("environment", ""))

    def cluster_spec(self) -> ClusterSpec:
        """TF_CONFIG's "cluster" (an empty ClusterSpec when there is none).

        Example:
            >>> TFConfigClusterResolver().cluster_spec().jobs
            ['ps', 'worker']
        """
        return parse_tf_config().cluster_spec

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """The address of a task (default: this one) with its rpc layer: "grpc://w1:2222",
        or "w1:2222" when no rpc layer is named (as TF).

        As in TF, TF_CONFIG's "session_master" wins when set, and a cluster of one
        task (or none) means a local run: "" (an in-process session). Returns ""
        too when no task is known.

        Raises:
            ValueError: the task is not in the cluster (naming it and the jobs).
        """
        session_master = load_tf_config().get("session_master")
        if session_master:
            return str(session_master)
        cluster = self.cluster_spec()
        if sum(cluster.num_tasks(j) for j in cluster.jobs) <= 1:
            return ""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if task_type is None or task_id is None:
            return ""
        address = self.cluster_spec().task_address(task_type, task_id)
        return format_master_url(address, rpc_layer or self.rpc_layer)
