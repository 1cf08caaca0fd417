"""The transport interface: how one task reaches another task's services.

A `Peer` is what a caller holds for one service (master or worker) of one
task. Every transport's peers subclass it, so the master, the worker and the
client session never know which one they got, and never probe for more:

* `call(method, request, tensors, timeout)` blocks for the answer;
* `call_async(..., done)` returns at once and calls `done(response, tensors,
  error)` from whatever thread completes it (the master issues a step's
  RunGraph calls this way, all at once);
* `push(step_id, [(key, value), ...])` delivers tensors of a step to the
  peer's rendezvous as soon as _Sends produce them (push, not pull);
* `push_and_call_async(step_id, items, method, ...)`: `push` then `call_async`;
  a transport that can send both in one write overrides it;
* `close()`;
* `shares_memory`: whether pushed arrays arrive as the very objects (a live
  variable buffer must then be copied first);
* `local_service`: the service object itself when it lives in this process
  (a client session then shares its Graph with the master), else None.

A `Transport` makes peers: `connect(address, task, service)` returns a Peer,
or None when it cannot reach that address, and `listen(...)` starts what a
server needs to be reached by it. `transport/registry.py` holds them by name.
Method names are the services' snake_case names ("run_graph").
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Protocol, Sequence

import numpy as np

Tensors = list[np.ndarray]
Done = Callable[[Any, Tensors, "BaseException | None"], None]
Items = list[tuple[str, Any]]


class Peer(abc.ABC):
    """One service of one task, reached by some transport.

    Subclasses implement the four abstract calls and set `name` (the task, or the
    address, that errors name); the capabilities below have defaults that are right
    for a transport that copies everything it sends and makes one write per call.
    """

    name: str
    #: Pushed arrays arrive as the same objects (not copied): True for in-process peers.
    shares_memory: bool = False

    @property
    def local_service(self) -> Any:
        """The service object when it is in this process (callers may share objects
        with it, e.g. a Graph), else None."""
        return None

    @abc.abstractmethod
    def call(self, method: str, request: Any, tensors: Sequence[Any] = (),
             timeout: float | None = None) -> tuple[Any, Tensors]:
        """Calls `method`; blocks; raises the tf.errors class the service raised."""

    @abc.abstractmethod
    def call_async(self, method: str, request: Any, tensors: Sequence[Any], done: Done,
                   timeout: float | None = None) -> None:
        """Starts `method`; `done(response, tensors, error)` runs once when it ends, or
        with DeadlineExceededError naming the task when no answer came within `timeout`
        seconds (a peer that cannot lose a message, in-process, may ignore it)."""

    @abc.abstractmethod
    def push(self, step_id: int, items: Items) -> None:
        """Hands Sends' values to the peer's rendezvous (worker peers only); returns
        once they are on their way (the arrays may be reused after that)."""

    def push_and_call_async(self, step_id: int, items: Items, method: str, request: Any,
                            tensors: Sequence[Any], done: Done,
                            timeout: float | None = None) -> None:
        """`push(step_id, items)`, then `call_async(method, ...)`: the peer sees the
        tensors before the call. A failed push is reported to `done`."""
        try:
            self.push(step_id, items)
        except BaseException as e:  # noqa: BLE001 - one outcome per call, through done
            done(None, [], e)
            return
        self.call_async(method, request, tensors, done, timeout)

    @abc.abstractmethod
    def close(self) -> None:
        """Fails this peer's calls in flight with CancelledError; later calls may
        reconnect."""


class Listener(Protocol):
    """What a transport starts for a server to be reached; `stop()` ends it."""

    def stop(self) -> None:
        ...


class ServiceHost(Protocol):
    """What a serving transport needs from a server: its services by name."""

    def service(self, name: str) -> Any:
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
