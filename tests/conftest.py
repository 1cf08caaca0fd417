"""Fixtures shared by the test files.

Graph isolation: every test starts on a new global default graph (the autouse
`new_default_graph`), so no test sees another's ops or global step whatever order they
run in (pytest-xdist runs modules in another order than a serial run), and any change a
test makes to os.environ is undone after it (`restored_environ`). Also:
    fresh_graph   the same reset, asked for by name (older test files)
    graph         a new `tf.Graph` installed as default for the test; yields it

Clusters (every server on loopback). The shape is 1 ps + 2 workers, or that of
`@pytest.mark.cluster_shape(ps=2, workers=1)` on the test (or its module's pytestmark):
    inprocess_cluster   new ps + worker `Server`s in this process, stopped after the test;
                        yields (spec, servers) where servers maps (job, index) -> Server.
                        With `@pytest.mark.every_transport` the test runs once per
                        registered transport, the servers built with `protocol=` it
                        ("tcp" and "unix" cross real sockets even in one process)
    local_cluster       server processes (a LocalCluster) started once per session and
                        lent to each test with its state cleared (`cluster_pool.ClusterPool`:
                        no variable, queue or table of an earlier test, no open session);
                        a test may not kill or stop its tasks (start a LocalCluster of its
                        own for that)
    net                 the same, reached over each registered transport in turn
                        (`transport.registry.names()`: "grpc", "inprocess", "tcp", "unix";
                        parametrised, TENSORWEAVE_TRANSPORT set for the test): one test body
                        runs against every transport; `net.transport` names the current one

Several hosts on one machine (root and `ip netns` needed, else skipped with the reason):
    netns_bed           one `NetnsBed` per test module: hosts "ps0", "worker0", "worker1",
                        "proxy" (for a `NetnsCluster(..., via_proxy=True)`'s fault proxy) and
                        "outsider" (in no ClusterSpec), each a network namespace with its own
                        10.213.n.x address on one bridge; removed after the module
"""
from __future__ import annotations

import os

from typing import Any, Iterator

import pytest

import tensorweave as tf
from tensorweave.base import knobs
from tensorweave.distributed.transport import registry
from tensorweave.testing import lossy
from tensorweave.testing.cluster import InProcessCluster, LocalCluster, transports
from tensorweave.testing.cluster_pool import ClusterPool
from tensorweave.testing.netns import NetnsBed, unavailable_reason

import suite_markers
from suite_markers import unit_guard  # noqa: F401  (an autouse fixture: found by its name here)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (pyproject's addopts): two workers per core for the suite, a folder of it
    or many files (most cluster tests wait on task processes and timers, so one worker
    per core leaves half the CPU idle: 9m15s -> 6m30s for the suite on 2 cores); none
    for a few files, where starting the workers (each imports tensorweave) costs more
    than it saves (`--dist loadscope` keeps a file on one worker)."""
    paths = {str(arg).split("::")[0] for arg in config.args}
    if paths and len(paths) < _FILES_FOR_WORKERS and all(p.endswith(".py") for p in paths):
        return 0
    return _WORKERS_PER_CORE * len(os.sched_getaffinity(0))


_FILES_FOR_WORKERS = 8
_WORKERS_PER_CORE = 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    suite_markers.apply(items)  # unit / cluster (markers in pyproject.toml)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`every_transport` tests: one run per registered transport name (their servers')."""
    if "inprocess_cluster" in metafunc.fixturenames and \
            metafunc.definition.get_closest_marker("every_transport"):
        metafunc.parametrize("inprocess_cluster", transports(), indirect=True)


@pytest.fixture(autouse=True)
def new_default_graph() -> Iterator[None]:
    tf.reset_default_graph()
    yield


@pytest.fixture
def lossy_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[InProcessCluster]:
    """1 ps + 1 worker in this process, reaching each other over the test transport that
    delays and drops messages on purpose (tensorweave.testing.lossy); no process exits."""
    monkeypatch.delenv(knobs.TRANSPORT.name, raising=False)
    lossy.register()
    try:
        with InProcessCluster(ps=1, workers=1, protocol=lossy.NAME) as cluster:
            yield cluster
    finally:
        lossy.unregister()


@pytest.fixture(autouse=True)
def restored_environ() -> Iterator[None]:
    # Settings are environment variables (tensorweave.base.knobs), and code under test may
    # export them (the CLI's --allow-from, --allow-dir): whatever a test leaves in
    # os.environ is undone, so no later test (or the tasks it starts) inherits it. A
    # leaked TENSORWEAVE_ALLOW_FROM=10.0.0.0/8 once let the netns bed's outsider in.
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def fresh_graph() -> Iterator[None]:
    tf.reset_default_graph()
    yield


@pytest.fixture
def graph() -> Iterator[Any]:
    with tf.Graph().as_default() as g:
        yield g


def _shape(request: pytest.FixtureRequest) -> tuple[int, int]:
    marker = request.node.get_closest_marker("cluster_shape")
    shape = {"ps": 1, "workers": 2, **(marker.kwargs if marker else {})}
    return shape["ps"], shape["workers"]


@pytest.fixture
def inprocess_cluster(request: pytest.FixtureRequest) -> Iterator[tuple[dict, dict]]:
    ps, workers = _shape(request)
    # The Server's default protocol, as a TF program that names none gets; or the
    # every_transport run's.
    with InProcessCluster(ps, workers, protocol=getattr(request, "param", None)) as c:
        yield c.spec, dict(c.servers)


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


@pytest.fixture(scope="session")
def cluster_pool() -> Iterator[ClusterPool]:
    """The clusters this session's tests share (see the module docstring)."""
    pool = ClusterPool()
    yield pool
    pool.stop()


@pytest.fixture
def local_cluster(request: pytest.FixtureRequest, cluster_pool: ClusterPool) -> LocalCluster:
    """Server processes on the default transport, as a TF program's `Server`s get."""
    ps, workers = _shape(request)
    return cluster_pool.lend(registry.DEFAULT, ps, workers)


@pytest.fixture(params=transports())
def net(request: pytest.FixtureRequest, cluster_pool: ClusterPool,
        monkeypatch: pytest.MonkeyPatch) -> Any:
    """1 ps + 2 workers reached over one transport; this process's sessions use it too."""
    monkeypatch.setenv(registry.ENV, request.param)
    c = cluster_pool.lend(request.param, *_shape(request))
    c.transport = request.param
    return c


NETNS_HOSTS = ("ps0", "worker0", "worker1", "proxy", "outsider")


@pytest.fixture(scope="module")
def netns_bed() -> Iterator[NetnsBed]:
    """One multi-host bed per module (see the module docstring); always removed."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with NetnsBed(NETNS_HOSTS) as bed:
        yield bed
