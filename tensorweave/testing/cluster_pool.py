"""Clusters started once per test session and lent to every test that asks for one.

Starting a cluster of server processes costs seconds (each task is a Python process
that imports tensorweave); most cluster tests only need one that serves, with nothing
left in it by the test before. `ClusterPool.lend` starts a cluster the first time a
(transport, shape) is asked for and, every later time, clears what earlier tests left:
`tf.Session.reset` on every task's master closes the masters' sessions and clears
every resource container (variables, queues, tables) on every task, the state a new
cluster starts with. A cluster with a task that died or was stopped is started again.

Example:
    >>> pool = ClusterPool()
    >>> lc = pool.lend("grpc", ps=1, workers=2)     # started now
    >>> lc = pool.lend("grpc", ps=1, workers=2)     # the same processes, reset
    >>> pool.stop()
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import errors
from tensorweave.testing.cluster import cluster_over


class ClusterPool:
    """Started clusters, one per (transport, ps, workers), until `stop`."""

    def __init__(self) -> None:
        self._clusters: dict[tuple[str, int, int], Any] = {}

    def lend(self, transport: str, ps: int = 1, workers: int = 2) -> Any:
        """A started cluster (`cluster_over(transport, ps, workers)`) with empty state.

        The caller sets TENSORWEAVE_TRANSPORT in this process first when the cluster's
        transport is not the default (as `cluster_over` asks), since the reset is a call
        from this process.
        """
        key = (transport, ps, workers)
        cluster = self._clusters.pop(key, None)
        if cluster is not None and not (cluster.alive() and _reset(cluster)):
            cluster.stop()
            cluster = None
        if cluster is None:
            cluster = cluster_over(transport, ps=ps, workers=workers)
            cluster.__enter__()  # stops what it started if it fails
        self._clusters[key] = cluster
        return cluster

    def stop(self) -> None:
        """Stops every cluster this pool started."""
        for cluster in self._clusters.values():
            cluster.stop()
        self._clusters.clear()


def _reset(cluster: Any) -> bool:
    """Closes every master's sessions and clears every container; False: a task is gone."""
    from tensorweave.client.session import Session
    try:
        for job, addrs in cluster.spec.items():
            for i, _ in enumerate(addrs):
                Session.reset(cluster.target(job, i))
    except (errors.UnavailableError, errors.DeadlineExceededError):
        return False
    return True
