"""The `unit`, `cluster` and `slow` markers, applied at collection (tests/conftest.py).

    cluster  the test starts servers, in this process or as processes. Found by reading
             the test module: the test asks for a fixture that starts them (conftest's
             `inprocess_cluster`, `local_cluster`, `net`, `cluster_pool`, `lossy_cluster`,
             `netns_bed`, or a fixture
             of its module that calls a server-making API), or its body, or a function
             of its module that it calls, calls one (`Server`, `LocalCluster`,
             `cluster_over`, `create_local_server`, `SeedJob`, `Launcher`, ... below)
             or names a command that does ("launch", "server": `tensorweave launch` in a
             subprocess). A test that starts servers some
             other way carries `@pytest.mark.cluster` itself.
    slow     marked by hand: more than ~2 s on 2 cores (real multi-process jobs, training
             to an accuracy); `pytest -m "not slow"` leaves them out.
    unit     every other test: in this process, no server, fast. `pytest -m unit`.

A test marked `unit` that starts a server anyway fails with a message naming the marker
to add (`unit_guard`), so the markers cannot drift from what the tests do.
"""
from __future__ import annotations

import ast
import functools
import json
import os
from typing import Any, Iterator

import pytest

CLUSTER_FIXTURES = frozenset({"inprocess_cluster", "local_cluster", "net", "cluster_pool",
                              "lossy_cluster", "netns_bed"})
# Calls that start servers (by the called name: `Server(...)`, `tf.train.Server(...)`).
SERVER_MAKERS = frozenset({
    "Server", "LocalCluster", "InProcessCluster", "cluster_over", "create_local_server",
    "SeedJob", "run_seed_job", "ClusterPool", "serve", "Launcher"})
# Strings that start servers when a test runs them as a command (`tensorweave launch`,
# `tensorweave server`).
SERVER_COMMANDS = frozenset({"launch", "server"})
# Why a cluster test runs over fewer than every transport: the `why` of its
# `@pytest.mark.transports(...)` (tests/conftest.py runs each cluster test over every
# registered transport unless it names some).
OTHER_PROCESSES = ("some of its servers or clients are other processes, which 'inprocess' (calls "
                   "within one process) cannot reach")
TASK_PROCESSES = ("its tasks are processes on this host: 'inprocess' cannot reach them, and "
                  "between them 'grpc' is the 'unix' link")
PORT = "it is about a task's port, which 'inprocess' does not open"
ONE_WIRE = "it tests one wire by name: its sockets, framing, handshake or limits"
CONNECTION = "it breaks or cuts a connection between tasks, which 'inprocess' does not have"
DEFAULT_PROTOCOL = "it is about what 'grpc', TF's default protocol, chooses"
ACROSS_HOSTS = ("its tasks are on distinct hosts (the netns bed): 'grpc' between hosts is the "
                "'tcp' link, and 'unix' and 'inprocess' do not leave a host")
WHOLE_JOB = ("a whole job of processes on this host (launcher, trainers: seconds to minutes of CPU "
             "each) checking the program, not the wire: over 'grpc' (the 'unix' link between "
             "them); jobs over 'tcp' run on the netns bed (tests/distributed/test_netns_*)")
FAULT_MATRIX = ("task processes killed and restarted (~10-20 s a case): the same cases run over "
                "'tcp', each task on its own host, in test_netns_fault_matrix")
JOB_END = ("the ps and a worker are processes waiting out silences and graces (5-40 s a case): "
           "over 'grpc' (the 'unix' link between them); 'inprocess' cannot reach them")
SYNC_JOB = ("a synchronous job of task processes (~10-20 s a case), checking TF's sync-replicas "
            "semantics, not the wire: over 'grpc' (the 'unix' link between them)")
# Methods run around every test of a class: a server they start belongs to each test.
_CLASS_SETUP = ("setUp", "setUpClass", "setup_method", "setup_class")


def _names_of(node: ast.AST) -> tuple[set[str], set[str], set[str]]:
    """What a function calls, what names it refers to or takes as arguments (helpers,
    fixtures), and its string constants: one walk of its tree."""
    called: set[str] = set()
    referenced: set[str] = set()
    strings: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            called.add(f.id if isinstance(f, ast.Name) else getattr(f, "attr", ""))
        elif isinstance(sub, ast.Name):
            referenced.add(sub.id)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            strings.add(sub.value)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        referenced |= {a.arg for a in node.args.args + node.args.kwonlyargs}
    return called, referenced, strings


def _may_start_servers(source: str) -> bool:
    """False where the module's text names nothing that starts servers (most unit test
    files): parsing them is the bulk of classifying the suite, once per xdist worker."""
    return any(name in source for name in SERVER_MAKERS | CLUSTER_FIXTURES) or any(
        f"{q}{c}{q}" in source for c in SERVER_COMMANDS for q in "\"'")


@functools.lru_cache(maxsize=None)
def _servers_starting_functions(path: str) -> frozenset[str]:
    """Qualified names ("f", "Class.f") of the module's functions that start servers."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    if not _may_start_servers(source):
        return frozenset()
    tree = ast.parse(source, path)
    funcs: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            funcs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    funcs[f"{node.name}.{sub.name}"] = sub
    names = {name: _names_of(node) for name, node in funcs.items()}
    starting = {name for name, (called, referenced, strings) in names.items()
                if called & SERVER_MAKERS or referenced & CLUSTER_FIXTURES
                or strings & SERVER_COMMANDS}
    refs = {name: referenced for name, (_, referenced, _) in names.items()}
    while True:  # through the module's helpers and fixtures, to a fixed point
        more = {name for name, r in refs.items()
                if name not in starting and r & {s.rsplit(".", 1)[-1] for s in starting}}
        if not more:
            return frozenset(starting)
        starting |= more


def starts_servers(item: pytest.Item) -> bool:
    """Whether the test, read as source, starts servers (see the module docstring)."""
    if CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    path = str(getattr(item, "path", ""))
    if not path.endswith(".py"):
        return False
    starting = _servers_starting_functions(path)
    plain = {s.rsplit(".", 1)[-1] for s in starting if "." not in s}
    if plain & set(getattr(item, "fixturenames", ())):
        return True
    name = getattr(item, "originalname", item.name)
    cls = item.cls.__name__ if getattr(item, "cls", None) else None
    if cls is None:
        return name in starting
    return any(f"{c.__name__}.{m}" in starting
               for c in item.cls.__mro__ for m in (name, *_CLASS_SETUP))


def apply(items: list[pytest.Item]) -> None:
    """Adds `cluster` to the tests that start servers and `unit` to the rest but slow;
    then puts the files with the most slow and cluster tests first (`longest_first`)."""
    for item in items:
        if item.get_closest_marker("cluster") is None and starts_servers(item):
            item.add_marker(pytest.mark.cluster)
        if not (item.get_closest_marker("cluster") or item.get_closest_marker("slow")):
            item.add_marker(pytest.mark.unit)
    longest_first(items)


def longest_first(items: list[pytest.Item]) -> None:
    """Reorders `items` file by file, the files that take longest first, keeping each
    file's own order.

    pytest-xdist's `--dist loadscope` hands out whole files in collection order, each to
    the next idle worker; in alphabetical order a long file met near the end ran alone
    while the other workers sat idle (the suite's last ~2% took a minute). Longest first
    is the classic list-scheduling rule that bounds that tail. A file's length is its
    seconds in tests/durations.json (written by tools/test_durations.py from a whole
    run); a file not there yet is estimated from its slow and cluster tests."""
    estimate: dict[str, float] = {}
    for item in items:
        path = item.nodeid.split("::")[0]
        estimate[path] = estimate.get(path, 0.0) + (
            _SLOW_SECS if item.get_closest_marker("slow") is not None else
            _CLUSTER_SECS if item.get_closest_marker("cluster") is not None else 0.0)
    recorded = _recorded_durations()
    order = {path: rank for rank, path in enumerate(
        sorted(estimate, key=lambda p: -recorded.get(p, estimate[p])))}
    items.sort(key=lambda item: order[item.nodeid.split("::")[0]])


# What an unrecorded file's tests are assumed to take (the suite's medians, roughly).
_SLOW_SECS, _CLUSTER_SECS = 8.0, 1.0


@functools.lru_cache(maxsize=1)
def _recorded_durations() -> dict[str, float]:
    path = os.path.join(os.path.dirname(__file__), "durations.json")
    try:
        with open(path, encoding="utf-8") as f:
            return {k: float(v) for k, v in json.load(f).items()}
    except (OSError, ValueError):
        return {}  # no table: estimates only


@pytest.fixture(autouse=True)
def unit_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
               ) -> Iterator[None]:
    """A `unit` test may not start a server: it fails saying which marker it needs."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return
    from tensorweave.distributed import peers
    from tensorweave.testing.cluster import LocalCluster

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(
            f"{request.node.nodeid} starts a server but was classified `unit` (see "
            f"tests/suite_markers.py): mark it @pytest.mark.cluster.")
    monkeypatch.setattr(peers, "serve", refuse)
    monkeypatch.setattr(LocalCluster, "start_task", refuse)
    yield
