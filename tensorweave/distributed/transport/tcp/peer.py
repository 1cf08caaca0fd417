"""Tasks on other machines: the master and worker services over gRPC.

The fallback transport: it reaches any address, at the cost of gRPC Python's
per-call overhead. Calls are unary (rpc.py); `push` is a PushTensors call per
tensor; `call_async` runs the call on a pool thread. The server side
(`GrpcListener`) serves both services and big tensors' bulk connections on the
task's one port (shared_port.py).
"""
from __future__ import annotations

import os
import secrets
from typing import Any, Sequence

from tensorweave.base import knobs
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.protocol.methods import SERVICES
from tensorweave.distributed.transport import credentials as creds_mod
from tensorweave.distributed.transport.admission import PeerFilter
from tensorweave.distributed.transport.base import Done, Peer, ServiceHost, Tensors
from tensorweave.distributed.transport.tcp.bulk import BulkOffers
from tensorweave.distributed.transport.credentials import Credentials
from tensorweave.distributed.transport.tcp.grpc_auth import Guard, RefusalServer
from tensorweave.distributed.transport.tcp.rpc import (
    Client, RpcServer, ServiceEndpoint, bulk_enabled)
from tensorweave.distributed.transport.tcp.shared_port import SharedPort, relay_target
from tensorweave.runtime.threads import DaemonPool

_pool = DaemonPool(256, "tw-grpc-call")


class GrpcPeer(Peer):
    """One service of one task over a gRPC channel."""

    def __init__(self, address: str, task: str, service: str,
                 credentials: Credentials | None = None) -> None:
        self.name = task or address
        self._client = Client(address, service, SERVICES[service], peer_name=self.name,
                              credentials=credentials or creds_mod.default())

    def call(self, method: str, request: Any, tensors: Sequence[Any] = (),
             timeout: float | None = None) -> tuple[Any, Tensors]:
        return self._client.call(method, request, list(tensors), timeout)

    def call_async(self, method: str, request: Any, tensors: Sequence[Any], done: Done,
                   timeout: float | None = None) -> None:
        def run() -> None:
            try:
                resp, out = self._client.call(method, request, list(tensors), timeout)
            except BaseException as e:  # noqa: BLE001 - handed to the caller's callback
                done(None, [], e)
                return
            done(resp, out, None)
        _pool.submit(run)

    def push(self, step_id: int, items: list[tuple[str, Any]]) -> None:
        # Bounded as a silent peer is everywhere: a frozen task never answers the push.
        self._client.call("push_tensors", pb.PushTensorsRequest(
            step_id=step_id, rendezvous_key=[k for k, _ in items]), [v for _, v in items],
            knobs.PEER_SILENCE_SECS.get())

    def close(self) -> None:
        self._client.close()


class GrpcTransport:
    """Reaches any "host:port" (the one transport that crosses machines)."""

    name = "tcp"

    def connect(self, address: str, task: str, service: str,
                credentials: Credentials | None = None) -> GrpcPeer:
        return GrpcPeer(address, task, service, credentials)


class GrpcListener:
    """Serves a host's services on `bind_address` (its cluster port) over gRPC.

    `credentials` (default: none) are what every connection must prove: the port
    terminates TLS, the servers' guard checks each call (grpc_auth.py).
    `peer_filter` (admission.py; None: any address) is who may connect at all.

    Raises:
        ValueError: when the address cannot be bound.
    """

    def __init__(self, bind_address: str, host: ServiceHost, name: str,
                 credentials: Credentials = creds_mod.NONE,
                 peer_filter: PeerFilter | None = None) -> None:
        # gRPC listens on a private abstract socket; the task's one TCP port is the
        # SharedPort in front of it, which also serves big tensors' raw pulls.
        grpc_socket = f"tensorweave-grpc-{os.getpid()}-{secrets.token_hex(8)}"
        self._offers = BulkOffers()
        guard = Guard(credentials, name) if credentials.enabled else None
        endpoints = [ServiceEndpoint(s, methods, host.service(s), self._offers, guard)
                     for s, methods in SERVICES.items()]
        self._server = RpcServer(relay_target(grpc_socket), endpoints,
                                 DaemonPool(256, f"tw-{name}"))
        self._refusal: RefusalServer | None = None
        refusal_socket = f"{grpc_socket}-refuse"
        try:
            if credentials.tls:  # plain gRPC clients are told UNAUTHENTICATED by it
                self._refusal = RefusalServer(refusal_socket, name)
            metrics = getattr(host, "metrics", None)  # a Server's TaskMetrics (GET /metrics)
            self._front = SharedPort(bind_address, grpc_socket, self._offers, credentials,
                                     name, refusal_socket, peer_filter,
                                     metrics.render if metrics is not None else None)
        except ValueError:
            self._server.stop(None)
            if self._refusal is not None:
                self._refusal.stop()
            raise
        self.port: int = self._front.port
        # Offers name the port to pull from; with TENSORWEAVE_BULK=0, none (clients then
        # fetch big tensors over the gRPC stream).
        self._offers.port = self.port if bulk_enabled() else 0

    def stop(self, grace: float | None = 0.5) -> None:
        self._front.stop()
        self._server.stop(grace)
        if self._refusal is not None:
            self._refusal.stop()
        self._offers.close()


TCP = GrpcTransport()
__all__ = ["TCP", "GrpcListener", "GrpcPeer", "GrpcTransport"]
