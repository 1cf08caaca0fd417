"""Fixtures shared by the test files.

Graph isolation (pick one per test file with `pytestmark = pytest.mark.usefixtures(...)`
or ask for it as an argument):
    fresh_graph   resets the global default graph before the test (visible to threads)
    graph         a new `tf.Graph` installed as default for the test; yields it

Clusters (every server on loopback, stopped after the test):
    inprocess_cluster   ps + worker `Server`s in this process; yields (spec, servers)
                        where servers maps (job, index) -> Server. 1 ps + 2 workers,
                        or the shape of `@pytest.mark.cluster_shape(ps=1, workers=3)`.
    local_cluster       1 ps + 2 worker server processes (module scope): a LocalCluster
    net                 1 ps + 2 workers reached over each registered transport in turn
                        (`transport.registry.names()`: "grpc", "inprocess", "tcp", "unix";
                        module scope, parametrised): one test body runs against every
                        transport; `net.transport` names the current one
"""
from __future__ import annotations

import os
from typing import Any, Iterator

import pytest

import tensorweave as tf
from tensorweave.distributed.server import Server
from tensorweave.testing.cluster import LocalCluster, cluster_dict, cluster_over, transports


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster_shape(ps, workers): the shape of the inprocess_cluster fixture")


@pytest.fixture
def fresh_graph() -> Iterator[None]:
    tf.reset_default_graph()
    yield


@pytest.fixture
def graph() -> Iterator[Any]:
    with tf.Graph().as_default() as g:
        yield g


@pytest.fixture
def inprocess_cluster(request: pytest.FixtureRequest) -> Iterator[tuple[dict, dict]]:
    marker = request.node.get_closest_marker("cluster_shape")
    shape = {"ps": 1, "workers": 2}
    shape.update(marker.kwargs if marker else {})
    spec = cluster_dict(shape["ps"], shape["workers"])
    servers = {(job, i): Server(spec, job_name=job, task_index=i)
               for job in spec for i in range(len(spec[job]))}
    yield spec, servers
    for s in servers.values():
        s.stop()


@pytest.fixture
def flushed_messages(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, list[str]]]:
    """Every message a step's held Sends leave in, as (from task, to task, sorted
    tensor names), recorded in this process for the test's length."""
    from tensorweave.runtime import rendezvous
    messages: list[tuple[str, str, list[str]]] = []
    real_flush = rendezvous.StepRendezvous.flush

    def flush(self: Any) -> None:
        for dst, items in self._held.items():
            messages.append((self.task, dst, sorted(k.split(";")[2] for k, _ in items)))
        real_flush(self)
    monkeypatch.setattr(rendezvous.StepRendezvous, "flush", flush)
    return messages


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[LocalCluster]:
    """1 ps + 2 worker processes; sessions go to the workers' masters over gRPC."""
    with LocalCluster(ps=1, workers=2) as lc:
        yield lc


@pytest.fixture(scope="module", params=transports())
def net(request: pytest.FixtureRequest) -> Iterator[Any]:
    """1 ps + 2 workers reached over one transport; this process's sessions use it too."""
    old = os.environ.get("TENSORWEAVE_TRANSPORT")
    os.environ["TENSORWEAVE_TRANSPORT"] = request.param
    try:
        with cluster_over(request.param, ps=1, workers=2) as c:
            c.transport = request.param
            yield c
    finally:
        if old is None:
            os.environ.pop("TENSORWEAVE_TRANSPORT", None)
        else:
            os.environ["TENSORWEAVE_TRANSPORT"] = old
