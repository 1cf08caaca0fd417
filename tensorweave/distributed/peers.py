"""The one place that chooses how a task reaches another task's services.

`connect(address, task, service)` returns a `Peer` (transport/base.py):

1. the service object itself when that task's server runs in this process
   (no RPC, no serialization: tensors are handed over as they are);
2. otherwise the first transport in `transports()` that can reach the address:
   "unix" (one Unix-domain socket per task pair, for tasks of this machine),
   then "grpc" (any machine).

TENSORWEAVE_TRANSPORT=grpc (or =unix) narrows the choice to one transport;
the test cluster fixture uses it to run one test body over each. A new
transport is a module with a `connect` (and a listener the server starts):
add it to `_TRANSPORTS` and to `serving_transports`, nothing else changes.

This module also keeps the registry of the servers started in this process.
"""
from __future__ import annotations

import importlib
import os
import threading
from typing import Any, Sequence

from tensorweave.base.address import address_key
from tensorweave.distributed.transport.base import Done, Peer, Tensors, Transport
from tensorweave.framework import errors
from tensorweave.runtime.threads import DaemonPool

# name -> "module:attribute"; imported on first use, so grpc loads only when needed.
_TRANSPORTS = {"unix": "tensorweave.distributed.transport.unix:UNIX",
               "grpc": "tensorweave.distributed.transport.grpc_peer:GRPC"}
_local: dict[tuple[str, int], Any] = {}
_local_lock = threading.Lock()
_pool = DaemonPool(256, "tw-inproc")


def transports() -> list[str]:
    """The transport names to try, in order (TENSORWEAVE_TRANSPORT narrows them)."""
    chosen = os.environ.get("TENSORWEAVE_TRANSPORT", "").strip().lower()
    if not chosen or chosen == "auto":
        return list(_TRANSPORTS)
    if chosen not in _TRANSPORTS:
        raise ValueError(f"TENSORWEAVE_TRANSPORT={chosen!r} names no transport; use one of "
                         f"{sorted(_TRANSPORTS)} or 'auto'.")
    return [chosen]


def transport(name: str) -> Transport:
    module, _, attr = _TRANSPORTS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def register_local(address: str, server: Any) -> None:
    with _local_lock:
        _local[address_key(address)] = server


def unregister_local(address: str, server: Any) -> None:
    with _local_lock:
        if _local.get(address_key(address)) is server:
            del _local[address_key(address)]


def local_server(address: str) -> Any:
    """The started Server of this process listening at `address`, if any."""
    with _local_lock:
        return _local.get(address_key(address))


def connect(address: str, task: str, service: str, credentials: Any = None,
            in_process: bool = True) -> Peer:
    """A peer for `service` ("tensorweave.Worker" or "tensorweave.Master") of the
    task at `address` (`task` names it in errors), proving itself with `credentials`
    (transport.credentials.Credentials; None: this process's default). A server of
    this process is called directly unless `in_process` is False (then through a
    transport, as a remote one: ConfigProto.rpc_options.use_rpc_for_inprocess_master).

    Raises:
        UnavailableError: when no transport can reach the address.
    """
    local = local_server(address) if in_process else None
    if local is not None:
        return InProcessPeer(local.service(service), task or address)
    for name in transports():
        peer = transport(name).connect(address, task, service, credentials)
        if peer is not None:
            return peer
    raise errors.UnavailableError(None, None, f"No transport among {transports()} reaches "
                                  f"{address} (task {task}); unset TENSORWEAVE_TRANSPORT.")


class InProcessPeer(Peer):
    """A service object of this process, called directly; `timeout` is ignored."""

    shares_memory = True  # pushed arrays arrive as the same objects (not copied)

    def __init__(self, service: Any, name: str) -> None:
        self.name = name
        self._service = service

    @property
    def local_service(self) -> Any:
        """The service object itself (in-process callers may share objects with it)."""
        return self._service

    def call(self, method: str, request: Any, tensors: Sequence[Any] = (),
             timeout: float | None = None) -> tuple[Any, Tensors]:
        return getattr(self._service, method)(request, list(tensors))

    def call_async(self, method: str, request: Any, tensors: Sequence[Any], done: Done,
                   timeout: float | None = None) -> None:
        # Only several in-process tasks (tests) get here: their parts must run at once.
        def run() -> None:
            try:
                resp, out = self.call(method, request, tensors)
            except BaseException as e:  # noqa: BLE001 - handed to the caller's callback
                done(None, [], e)
                return
            done(resp, out, None)
        _pool.submit(run)

    def push(self, step_id: int, items: list[tuple[str, Any]]) -> None:
        self._service.deliver(step_id, items)

    def close(self) -> None:
        pass


def serving_transports(bind_host: str, host: str, port: int, server: Any, name: str,
                       credentials: Any = None) -> list[Any]:
    """Starts every listener a server needs; each has `stop()`, the first `port`.

    gRPC always serves the cluster port (other machines, clients); the unix
    listener serves this machine's tasks on the address's abstract socket. The
    unix socket starts first (once the cluster port answers, every path must be
    ready), except for port 0, whose real number only gRPC's bind tells. Both
    require `credentials` (None: this process's default) of every connection.
    """
    from tensorweave.distributed.transport import credentials as creds_mod
    from tensorweave.distributed.transport.grpc_peer import GrpcListener
    from tensorweave.distributed.transport.unix import UnixListener
    creds = credentials or creds_mod.default()
    listeners: list[Any] = []
    try:
        if port:
            unix = UnixListener(f"{host}:{port}", server, creds, name)
            listeners.append(unix)
        grpc_listener = GrpcListener(f"{bind_host}:{port}", server, name, creds)
        listeners.insert(0, grpc_listener)
        if not port:
            listeners.append(UnixListener(f"{host}:{grpc_listener.port}", server, creds,
                                          name))
    except ValueError:
        for listener in listeners:
            listener.stop()
        raise
    return listeners


__all__ = ["InProcessPeer", "connect", "local_server", "register_local", "serving_transports",
           "transport", "transports", "unregister_local"]
