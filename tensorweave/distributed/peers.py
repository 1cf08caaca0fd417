"""The one place that chooses how a task reaches another task's services.

`connect(address, task, service, protocol=...)` returns a `Peer`
(transport/base.py) from the first link of the protocol (transport/registry.py)
that can reach the address: with the default "grpc", the service object itself
when that task's server runs in this process (no RPC, no serialization), a
Unix-domain socket for tasks of this machine, gRPC on TCP for any other.
`serve(protocol, ...)` starts the listeners a server of that protocol needs.

A new transport is a sub-package of `transport/` with a `Transport` (and, to be
served, a listener) and a `registry.register(...)` line; nothing here changes.
"""
from __future__ import annotations

from typing import Any

from tensorweave.distributed.transport import registry
from tensorweave.distributed.transport.base import Peer
from tensorweave.distributed.transport.inprocess import (
    INPROCESS, InProcessPeer, local_server, register_local, unregister_local)
from tensorweave.framework import errors


def connect(address: str, task: str, service: str, credentials: Any = None,
            in_process: bool = True, protocol: str | None = None) -> Peer:
    """A peer for `service` ("tensorweave.Worker" or "tensorweave.Master") of the
    task at `address` (`task` names it in errors), reached by `protocol`'s links
    (None: TENSORWEAVE_TRANSPORT's, else "grpc"), proving itself with `credentials`
    (transport.credentials.Credentials; None: this process's default). A server of
    this process is called directly unless `in_process` is False (then through a
    socket, as a remote one: ConfigProto.rpc_options.use_rpc_for_inprocess_master).

    Raises:
        ValueError: a protocol name that is not registered.
        UnavailableError: when no link of the protocol can reach the address.
    """
    name = registry.resolve(protocol)
    for link in registry.links(name):
        if link is INPROCESS and not in_process:
            continue
        peer = link.connect(address, task, service, credentials)
        if peer is not None:
            return peer
    links = [path.rpartition(":")[2].lower() for path in registry.get(name).links]
    raise errors.UnavailableError(
        None, None, f"Protocol {name!r} cannot reach {address} (task {task}): none of its "
        f"links {links} does (the 'unix' protocol reaches only this machine's tasks, "
        "'inprocess' only this process's). Use the default protocol 'grpc'.")


def serve(protocol: str | None, bind_host: str, host: str, port: int, server: Any,
          name: str, credentials: Any = None, peer_filter: Any = None) -> list[Any]:
    """Starts every listener a server of `protocol` needs; a socket protocol's first
    listener has `port`. None of them for a protocol that serves no sockets.

    A socket protocol serves both sockets, whichever way this task reaches others:
    gRPC on the cluster port (other machines, clients, the readiness check) and the
    unix listener for this machine's tasks on the address's abstract socket. The
    unix socket starts first (once the cluster port answers, every path must be
    ready), except for port 0, whose real number only gRPC's bind tells. Both
    require `credentials` (None: this process's default) of every connection; the
    cluster port admits only the addresses `peer_filter` allows
    (transport/admission.py; None: any; the unix socket serves this machine only).

    Raises:
        ValueError: an address that cannot be bound (or port 0 without sockets).
    """
    if not registry.get(protocol).serves_sockets:
        if not port:
            raise ValueError(f"protocol {protocol!r} opens no port, so the task's "
                             "address must name its port (not 0)")
        return []
    from tensorweave.distributed.transport import credentials as creds_mod
    from tensorweave.distributed.transport.tcp.peer import GrpcListener
    from tensorweave.distributed.transport.unix import UnixListener
    creds = credentials or creds_mod.default()
    listeners: list[Any] = []
    try:
        if port:
            listeners.append(UnixListener(f"{host}:{port}", server, creds, name))
        grpc_listener = GrpcListener(f"{bind_host}:{port}", server, name, creds, peer_filter)
        listeners.insert(0, grpc_listener)
        if not port:
            listeners.append(UnixListener(f"{host}:{grpc_listener.port}", server, creds,
                                          name))
    except ValueError:
        for listener in listeners:
            listener.stop()
        raise
    return listeners


__all__ = ["InProcessPeer", "connect", "local_server", "register_local", "serve",
           "unregister_local"]
