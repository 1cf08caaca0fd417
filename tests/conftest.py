"""Fixtures shared by the test files.

Graph isolation: every test starts on a new global default graph (the autouse
`new_default_graph`), so no test sees another's ops or global step whatever order they
run in (pytest-xdist runs modules in another order than a serial run), and any change a
test makes to os.environ is undone after it (`restored_environ`). Also:
    fresh_graph   the same reset, asked for by name (older test files)
    graph         a new `tf.Graph` installed as default for the test; yields it

Transports. Every cluster test (marked `cluster`, tests/suite_markers.py) runs once per
registered transport (`transport.registry.names()`: "grpc", "inprocess", "tcp", "unix"),
its id ending in the name, or over those its `@pytest.mark.transports("grpc", "tcp",
why="...")` names; `why` says what rules out the others (suite_markers holds the common
reasons). Collection fails for a cluster test that names no transport. The test gets its
transport through a cluster fixture below, or else through the autouse `transport`, which
sets TENSORWEAVE_TRANSPORT for it: the servers it builds without `protocol=`, the task
processes it starts and its sessions use it. `per_transport` keeps a module's shared
servers once per transport.

Clusters (every server on loopback). The shape is 1 ps + 2 workers, or that of
`@pytest.mark.cluster_shape(ps=2, workers=1)` on the test (or its module's pytestmark):
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

import contextlib
import os

from typing import Any, Callable, ContextManager, Iterator

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
    or many files (most cluster tests wait on task processes and timers, so one worker per
    core leaves half the CPU idle: 9m15s -> 6m30s for the suite on 2 cores). Three per core
    was ~10 s faster, but in three of nine runs with it a first gRPC call over tcp timed out
    "before receiving SETTINGS frame" (20 s: a loaded machine's, or a bug of the relay's; see
    the issue 31 note). None for a few files, where starting the workers (each imports
    tensorweave) costs more than it saves (`--dist loadscope` keeps a file on one worker)."""
    paths = {str(arg).split("::")[0] for arg in config.args}
    if paths and len(paths) < _FILES_FOR_WORKERS and all(p.endswith(".py") for p in paths):
        return 0
    return _WORKERS_PER_CORE * len(os.sched_getaffinity(0))


_FILES_FOR_WORKERS = 8
_WORKERS_PER_CORE = 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    suite_markers.apply(items)  # unit / cluster (markers in pyproject.toml)
    unplaced = [item.nodeid for item in items
                if item.get_closest_marker("cluster") and _wire_of(item) is None]
    if unplaced:
        raise pytest.UsageError(
            "these cluster tests name no transport: ask for `local_cluster`, "
            "`inprocess_cluster` or `transport`, or mark them @pytest.mark.transports() (each "
            "registered one) or @pytest.mark.transports(\"name\", ..., why=\"what rules out "
            "the others\"):\n  " + "\n  ".join(unplaced))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A cluster test runs once per registered transport, or per transport its
    `@pytest.mark.transports(*names, why=...)` names (`why` says what rules out the
    others, e.g. a program in another process cannot use "inprocess"): through its cluster
    fixture, or else through `transport` (TENSORWEAVE_TRANSPORT for the test)."""
    for name in ("inprocess_cluster", "local_cluster"):
        if name in metafunc.fixturenames:  # also when asked for through `net`
            metafunc.parametrize(name, _transports_of(metafunc.definition, name),
                                 indirect=True)
            return
    marker = metafunc.definition.get_closest_marker("transports")
    if (marker is not None and len(marker.args) != 1
            and "transport" not in _own_params(metafunc)
            and (metafunc.definition.get_closest_marker("cluster") is not None
                 or suite_markers.starts_servers(metafunc.definition))):
        metafunc.parametrize("transport", _transports_of(metafunc.definition, "transport"),
                             indirect=True)


def _own_params(metafunc: pytest.Metafunc) -> set[str]:
    """The argnames the test parametrizes itself (they shadow fixtures of that name)."""
    return {name.strip() for m in metafunc.definition.iter_markers("parametrize")
            for name in (m.args[0].split(",") if isinstance(m.args[0], str) else m.args[0])}


# "grpc" tries the in-process link, then unix, then tcp: for servers of this process it is
# the in-process link, and for task processes on this host the unix link. A test that runs
# over every transport takes each link once: not that one again under its own name.
_SAME_AS_GRPC = {"inprocess_cluster": "inprocess", "transport": "inprocess",
                 "local_cluster": "unix"}


def _transports_of(test: pytest.Item, fixture: str = "") -> list[str]:
    """The transports `test` runs over through `fixture` (see `_SAME_AS_GRPC`)."""
    marker = test.get_closest_marker("transports")
    if marker is None or not marker.args:
        return [t for t in transports() if t != _SAME_AS_GRPC.get(fixture)]
    unknown = set(marker.args) - set(transports())
    if unknown or not marker.kwargs.get("why"):
        raise pytest.UsageError(
            f"{test.nodeid}: @pytest.mark.transports takes registered names "
            f"({transports()}; {sorted(unknown)} are not) and why=\"what rules out the others\".")
    return [t for t in transports() if t in marker.args]


def _wire_of(item: pytest.Item) -> str | None:
    """The transport a test runs over: its parameter's, or the one its marker names."""
    if "lossy_cluster" in getattr(item, "fixturenames", ()):
        return lossy.NAME  # the test transport that delays and drops on purpose
    params = getattr(getattr(item, "callspec", None), "params", {})
    for value in params.values():  # a cluster fixture's, `transport`'s or the test's own
        if isinstance(value, str) and value in transports():
            return value
    marker = item.get_closest_marker("transports")
    if marker is not None and len(marker.args) == 1:
        return _transports_of(item)[0]
    return None


@pytest.fixture(autouse=True)
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """The transport this test runs over (`pytest_generate_tests`), set as its
    TENSORWEAVE_TRANSPORT: servers it builds without `protocol=`, task processes it starts
    and its sessions use it. None for a test that names none (a cluster fixture's test
    gets its transport from the fixture)."""
    name = getattr(request, "param", None)
    marker = request.node.get_closest_marker("transports")
    if name is None and marker is not None and len(marker.args) == 1 and not (
            {"inprocess_cluster", "local_cluster"} & set(request.fixturenames)):
        name = _transports_of(request.node)[0]
    if name is not None:
        monkeypatch.setenv(registry.ENV, name)
    return name


class PerTransport:
    """What a module's tests share, made once per transport (`per_transport`)."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self._stack = stack
        self._made: dict[Any, Any] = {}

    def get(self, transport: str | None, make: Callable[[], ContextManager[Any]]) -> Any:
        """`make()`'s value for `transport`, entered the first time it is asked for."""
        if transport not in self._made:
            self._made[transport] = self._stack.enter_context(make())
        return self._made[transport]


@pytest.fixture(scope="module")
def per_transport() -> Iterator[PerTransport]:
    """Servers a module's tests share, one set per transport, stopped after the module.

    A module-scoped fixture that started servers would serve every transport's tests from
    the first one's servers; a function fixture that asks for `transport` gets its own:

    Example:
        >>> @pytest.fixture
        ... def remote(transport, per_transport):
        ...     return per_transport.get(transport, lambda: LocalCluster(ps=0, workers=1))
    """
    with contextlib.ExitStack() as stack:
        yield PerTransport(stack)


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
