"""The transports by name: what `tf.train.Server(protocol=...)` and `ServerDef.protocol`
choose, as in TF ("grpc", the default). The one table of them.

A protocol is an ordered list of links (each a `Transport` of `base.py`: `connect`
returns a Peer, or None when it cannot reach the address; the first that can wins)
plus what a server of that protocol listens on:

| name | links tried, in order | a server listens on |
| --- | --- | --- |
| `grpc` (default) | in-process, unix (this machine), tcp | unix socket + TCP port |
| `tcp` | tcp (every task, even this process's and this machine's) | unix socket + TCP port |
| `unix` | unix (this machine's tasks only, this process's too) | unix socket + TCP port |
| `inprocess` | in-process (servers of this process only) | nothing |

Every socket protocol serves both sockets, so tasks (and clients) that use any of
them reach it; the protocol decides how a task reaches the others. `tcp` and `unix`
name one wire and use it for every other task, servers of this process included
(a test's in-process cluster then crosses real sockets); a task reaches its own
worker directly whatever the protocol. The environment
variable TENSORWEAVE_TRANSPORT names the protocol of servers built without one and
of client sessions ("auto" is the old spelling of "grpc").

Example:
    >>> registry.register("lossy", links=("tensorweave.testing.lossy:LOSSY",),
    ...                   serves_sockets=True, doc="unix, with messages delayed")
    >>> tf.train.Server(cluster, job_name="ps", task_index=0, protocol="lossy")
"""
from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import Any, Iterator

from tensorweave.base import knobs
from tensorweave.distributed.transport.base import Transport

DEFAULT = "grpc"
ENV = knobs.TRANSPORT.name
_OLD_NAMES = {"auto": DEFAULT}
INPROCESS = "tensorweave.distributed.transport.inprocess:INPROCESS"
UNIX = "tensorweave.distributed.transport.unix:UNIX"
TCP = "tensorweave.distributed.transport.tcp.peer:TCP"


@dataclass(frozen=True)
class Protocol:
    """One registered name: its links ("module:attribute" of Transport objects, tried in
    order, imported on first use so grpc loads only when needed) and whether its
    servers listen on sockets (unix socket + TCP port) or not at all."""

    name: str
    links: tuple[str, ...]
    serves_sockets: bool
    doc: str


_PROTOCOLS: dict[str, Protocol] = {}
_lock = threading.Lock()


def register(name: str, links: tuple[str, ...], serves_sockets: bool, doc: str) -> None:
    """Registers protocol `name` (lower case); a name already taken is a ValueError."""
    if not name or name != name.strip().lower():
        raise ValueError(f"Protocol name {name!r} must be non-empty lower case.")
    if not links:
        raise ValueError(f"Protocol {name!r} needs at least one link.")
    with _lock:
        if name in _PROTOCOLS:
            raise ValueError(f"Protocol {name!r} is registered already.")
        _PROTOCOLS[name] = Protocol(name, tuple(links), serves_sockets, doc)


def unregister(name: str) -> None:
    """Removes `name` (tests' transports); the built-in ones stay."""
    if name in BUILT_IN:
        raise ValueError(f"Protocol {name!r} is built in and cannot be unregistered.")
    with _lock:
        _PROTOCOLS.pop(name, None)


def names() -> list[str]:
    """Every registered protocol name, the default first."""
    with _lock:
        return sorted(_PROTOCOLS, key=lambda n: (n != DEFAULT, n))


def default_name() -> str:
    """TENSORWEAVE_TRANSPORT's protocol, else "grpc"."""
    return resolve(knobs.TRANSPORT.get(), f"{ENV}=")


def resolve(name: str | None, what: str = "protocol ") -> str:
    """`name` checked against the registry (None or "": the default).

    Raises:
        ValueError: an unknown name, listing the registered ones.
    """
    if not name:
        return default_name()
    key = _OLD_NAMES.get(name.strip().lower(), name.strip().lower())
    with _lock:
        if key in _PROTOCOLS:
            return key
    raise ValueError(f"{what}{name!r} names no registered transport; use one of "
                     f"{names()} (tensorweave.distributed.transport.registry).")


def get(name: str | None) -> Protocol:
    """The registered protocol `name` (None: the default)."""
    key = resolve(name)
    with _lock:
        return _PROTOCOLS[key]


def links(name: str | None) -> Iterator[Transport]:
    """The link objects of protocol `name`, in the order they are tried; each is
    imported when reached (a peer found before the tcp link never loads grpc)."""
    return (_load(path) for path in get(name).links)


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


register("grpc", (INPROCESS, UNIX, TCP), True,
         "the default (TF's name): servers of this process called directly, this "
         "machine's tasks over Unix sockets (big tensors through shared-memory rings), "
         "other machines over gRPC on TCP (big tensors pulled raw on the same port)")
register("tcp", (TCP,), True,
         "gRPC on TCP for every task, this machine's and this process's too: what links "
         "between machines use")
register("unix", (UNIX,), True,
         "this machine's tasks only (this process's too), over Unix sockets and "
         "shared-memory rings")
register("inprocess", (INPROCESS,), False,
         "servers of this process only, called directly; the server opens no socket")
BUILT_IN = frozenset(_PROTOCOLS)
__all__ = ["BUILT_IN", "DEFAULT", "ENV", "Protocol", "default_name", "get", "links", "names",
           "register", "resolve", "unregister"]
