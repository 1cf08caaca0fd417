"""Tasks of this process: their service objects called directly (no RPC, no copy).

Every started Server registers itself here under its address; `INPROCESS.connect`
answers a peer for an address only when a server of this process listens there
(None otherwise, so the next link of the protocol is tried). Tensors are handed
over as they are, and a client session even shares its Graph with the master
(`Peer.local_service`).

Example:
    >>> register_local("localhost:2222", server)
    >>> INPROCESS.connect("localhost:2222", "/job:ps/replica:0/task:0",
    ...                   "tensorweave.Worker").call("get_status", GetStatusRequest())
"""
from __future__ import annotations

import threading
from typing import Any, Sequence

from tensorweave.base.address import address_key
from tensorweave.distributed.transport.base import Done, Items, Peer, Tensors
from tensorweave.runtime.threads import DaemonPool

_local: dict[tuple[str, int], Any] = {}
_local_lock = threading.Lock()
_pool = DaemonPool(256, "tw-inproc")
__all__ = ["INPROCESS", "InProcessPeer", "InProcessTransport", "local_server",
           "register_local", "unregister_local"]


def register_local(address: str, server: Any) -> None:
    """`server` (with `service(name)`) now answers for `address` in this process."""
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

    def push(self, step_id: int, items: Items) -> None:
        self._service.deliver(step_id, items)

    def close(self) -> None:
        pass


class InProcessTransport:
    """Reaches the servers of this process (and nothing else)."""

    name = "inprocess"

    def connect(self, address: str, task: str, service: str,
                credentials: Any = None) -> InProcessPeer | None:
        server = local_server(address)
        return None if server is None else InProcessPeer(server.service(service),
                                                         task or address)


INPROCESS = InProcessTransport()
