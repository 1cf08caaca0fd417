"""The transport interface: how one task reaches another task's services.

A `Peer` is what a caller holds for one service (master or worker) of one
task. Every transport implements the same four calls, so the master, the
worker and the client session never know which one they got:

* `call(method, request, tensors, timeout)` blocks for the answer;
* `call_async(..., done)` returns at once and calls `done(response, tensors,
  error)` from whatever thread completes it (the master issues a step's
  RunGraph calls this way, all at once);
* `push(step_id, [(key, value), ...])` delivers tensors of a step to the
  peer's rendezvous as soon as _Sends produce them (push, not pull);
* `close()`.

A `Transport` makes peers: `connect(address, task, service)` returns a Peer,
or None when it cannot reach that address (the next transport is tried).
`tensorweave.distributed.peers` holds the ordered list and is the one place
that chooses. Method names are the services' snake_case names ("run_graph").
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

import numpy as np

Tensors = list[np.ndarray]
Done = Callable[[Any, Tensors, "BaseException | None"], None]


class Peer(Protocol):
    """One service of one task, reached by some transport."""

    name: str  # the task (or address) it reaches, for error messages

    def call(self, method: str, request: Any, tensors: Sequence[Any] = (),
             timeout: float | None = None) -> tuple[Any, Tensors]:
        """Calls `method`; blocks; raises the tf.errors class the service raised."""
        ...

    def call_async(self, method: str, request: Any, tensors: Sequence[Any], done: Done,
                   timeout: float | None = None) -> None:
        """Starts `method`; `done(response, tensors, error)` runs once when it ends."""
        ...

    def push(self, step_id: int, items: list[tuple[str, Any]]) -> None:
        """Hands Sends' values to the peer's rendezvous (worker peers only); returns
        once they are on their way (the arrays may be reused after that)."""
        ...

    def close(self) -> None:
        """Releases connections; later calls may reconnect."""
        ...


class Transport(Protocol):
    """A way to reach tasks: in-process, a same-host socket, gRPC, ..."""

    name: str

    def connect(self, address: str, task: str, service: str,
                credentials: Any = None) -> Peer | None:
        """A peer for `service` ("tensorweave.Worker"/"tensorweave.Master") at
        `address`, or None when this transport cannot reach it; it proves itself
        with `credentials` (credentials.Credentials; None: the process default)."""
        ...


class ServiceHost(Protocol):
    """What a serving transport needs from a server: its services by name."""

    def service(self, name: str) -> Any:
        ...
