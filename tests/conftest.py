"""Fixtures shared by the test files.

Graph isolation: every test starts on a new global default graph (the autouse
`new_default_graph`), so no test sees another's ops or global step whatever order they
run in (pytest-xdist runs modules in another order than a serial run), and any change a
test makes to os.environ is undone after it (`restored_environ`). Also:
    fresh_graph   the same reset, asked for by name (older test files)
    graph         a new `tf.Graph` installed as default for the test; yields it

Clusters (every server on loopback). The shape is 1 ps + 2 workers, or that of
`@pytest.mark.cluster_shape(ps=2, workers=1)` on the test (or its module's pytestmark).
A test that asks for one of these runs once per registered transport
(`transport.registry.names()`: "grpc", "inprocess", "tcp", "unix"), its id ending in the
name, or over those its `@pytest.mark.transports("grpc", "tcp", why="...")` names:
    inprocess_cluster   new ps + worker `Server`s in this process, built with `protocol=`
                        the transport ("tcp" and "unix" cross real sockets even in one
                        process), stopped after the test; yields (spec, servers) where
                        servers maps (job, index) -> Server
    local_cluster       server processes (a LocalCluster) started once per session and
                        transport and lent to each test with its state cleared
                        (`cluster_pool.ClusterPool`: no variable, queue or table of an
                        earlier test, no open session); TENSORWEAVE_TRANSPORT is set for the
                        test, so this process's sessions use the transport too;
                        `.transport` names it. A test may not kill or stop its tasks (start
                        a LocalCluster of its own for that). `net` is its older name

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
    """A test with a cluster fixture runs once per registered transport, or per transport
    its `@pytest.mark.transports(*names, why=...)` names (`why` says what rules out the
    others, e.g. a program in another process cannot use "inprocess")."""
    for name in ("inprocess_cluster", "local_cluster"):
        if name in metafunc.fixturenames:  # also when asked for through `net`
            metafunc.parametrize(name, _transports_of(metafunc.definition), indirect=True)


def _transports_of(test: pytest.Item) -> list[str]:
    marker = test.get_closest_marker("transports")
    if marker is None:
        return transports()
    unknown = set(marker.args) - set(transports())
    if unknown or not marker.args or not marker.kwargs.get("why"):
        raise pytest.UsageError(
            f"{test.nodeid}: @pytest.mark.transports takes registered names "
            f"({transports()}; {sorted(unknown)} are not) and why=\"what rules out the others\".")
    return [t for t in transports() if t in marker.args]


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
    # The test's transport (pytest_generate_tests); the Server's default protocol, as a TF
    # program that names none gets, where the fixture is used unparametrised.
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
def local_cluster(request: pytest.FixtureRequest, cluster_pool: ClusterPool,
                  monkeypatch: pytest.MonkeyPatch) -> LocalCluster:
    """Server processes reached over one transport (each registered one in turn: the test
    is parametrised); this process's sessions use it too; `.transport` names it."""
    transport = getattr(request, "param", registry.DEFAULT)
    monkeypatch.setenv(registry.ENV, transport)
    c = cluster_pool.lend(transport, *_shape(request))
    c.transport = transport
    return c


@pytest.fixture
def net(local_cluster: LocalCluster) -> LocalCluster:
    """The older name of `local_cluster`."""
    return local_cluster


NETNS_HOSTS = ("ps0", "worker0", "worker1", "proxy", "outsider")


@pytest.fixture(scope="module")
def netns_bed() -> Iterator[NetnsBed]:
    """One multi-host bed per module (see the module docstring); always removed."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with NetnsBed(NETNS_HOSTS) as bed:
        yield bed
