"""A peer that counts what crosses it: bytes each way and each call's latency.

`Server.peer` wraps every other task's peer in one (its own task's is not: nothing
crosses), so every transport is measured the same way, at the one place a task
reaches another. Bytes are the tensors' payload bytes (`nbytes`): what a step moves,
whichever wire carried it (protobuf headers and framing are not counted). Tensors
pushed *to* this task are counted where they arrive (`TaskMetrics.delivered`), by the
sending task named in their rendezvous keys.

Example:
    >>> peer = MeteredPeer(peers.connect(addr, "/job:ps/replica:0/task:0", WORKER_SERVICE),
    ...                    "/job:ps/replica:0/task:0", task_metrics)  # doctest: +SKIP
"""
from __future__ import annotations

import time
from typing import Any, Sequence

from tensorweave.distributed.task_metrics import TaskMetrics
from tensorweave.distributed.transport.base import Done, Items, Peer, Tensors
from tensorweave.runtime.metrics import HistogramChild

__all__ = ["MeteredPeer"]


def _nbytes(values: Sequence[Any]) -> int:
    return sum(getattr(v, "nbytes", 0) for v in values)


class MeteredPeer(Peer):
    """`inner`, counting into `metrics` under the label `peer=task`."""

    def __init__(self, inner: Peer, task: str, metrics: TaskMetrics) -> None:
        self.inner = inner
        self.name = inner.name
        self.shares_memory = inner.shares_memory
        self._task = task
        self._metrics = metrics
        self._sent = metrics.sent.labels(task)
        self._received = metrics.received.labels(task)
        self._latency: dict[str, HistogramChild] = {}  # method -> its child

    @property
    def local_service(self) -> Any:
        return self.inner.local_service

    def _timer(self, method: str) -> HistogramChild:
        child = self._latency.get(method)
        if child is None:
            child = self._latency[method] = self._metrics.rpc_seconds.labels(self._task,
                                                                              method)
        return child

    def call(self, method: str, request: Any, tensors: Sequence[Any] = (),
             timeout: float | None = None) -> tuple[Any, Tensors]:
        if tensors:
            self._sent.inc(_nbytes(tensors))
        start = time.perf_counter()
        try:
            response, out = self.inner.call(method, request, tensors, timeout)
        finally:
            self._timer(method).observe(time.perf_counter() - start)
        if out:
            self._received.inc(_nbytes(out))
        return response, out

    def _timed(self, method: str, done: Done) -> Done:
        start, timer, received = time.perf_counter(), self._timer(method), self._received

        def timed_done(response: Any, out: Tensors, error: BaseException | None) -> None:
            timer.observe(time.perf_counter() - start)
            if out:
                received.inc(_nbytes(out))
            done(response, out, error)
        return timed_done

    def call_async(self, method: str, request: Any, tensors: Sequence[Any], done: Done,
                   timeout: float | None = None) -> None:
        if tensors:
            self._sent.inc(_nbytes(tensors))
        self.inner.call_async(method, request, tensors, self._timed(method, done), timeout)

    def push(self, step_id: int, items: Items) -> None:
        self._sent.inc(sum(getattr(v, "nbytes", 0) for _, v in items))
        self.inner.push(step_id, items)

    def push_and_call_async(self, step_id: int, items: Items, method: str, request: Any,
                            tensors: Sequence[Any], done: Done,
                            timeout: float | None = None) -> None:
        self._sent.inc(sum(getattr(v, "nbytes", 0) for _, v in items) + _nbytes(tensors))
        self.inner.push_and_call_async(step_id, items, method, request, tensors,
                                       self._timed(method, done), timeout)

    def close(self) -> None:
        self.inner.close()
