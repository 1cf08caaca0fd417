"""Rendezvous: where a step's Send leaves a tensor and its Recv picks it up.

Keys are "<send device>;<recv device>;<tensor name>" within one step id. The
table is per worker; a Send whose receiver is another task pushes the value
to that task's table through the transport (TF pulls; pushing takes the
request round trip off the step's critical path). Everything meets in a table.
"""
from __future__ import annotations

import collections
import threading
from typing import Any, Callable, Iterable

from tensorweave.framework import errors
from tensorweave.framework.device import device_task

Callback = Callable[[Any], None]


def make_key(send_device: str, recv_device: str, tensor_name: str) -> str:
    return f"{send_device};{recv_device};{tensor_name}"


class LocalRendezvous:
    """Thread-safe (step_id, key) table; a recv waits by callback, never by blocking."""

    _ABORTED_MEMORY = 1024  # remember this many aborted steps to fail late receivers

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[int, str], Any] = {}
        self._waiters: dict[tuple[int, str], list[Callback]] = {}
        self._aborted: collections.OrderedDict[int, BaseException] = collections.OrderedDict()

    def send(self, step_id: int, key: str, value: Any) -> None:
        self.send_many(step_id, ((key, value),))

    def send_many(self, step_id: int, items: Iterable[tuple[str, Any]]) -> None:
        """Sends several tensors of one step (a pushed frame) under one lock; the
        receivers already waiting are called back after it is released."""
        ready: list[tuple[Callback, Any]] = []
        duplicate = None
        with self._lock:
            if step_id in self._aborted:
                return
            for key, value in items:
                waiters = self._waiters.get((step_id, key))
                if waiters:
                    ready.append((waiters.pop(0), value))
                    if not waiters:
                        del self._waiters[(step_id, key)]
                elif (step_id, key) in self._values:
                    duplicate = duplicate or key
                else:
                    self._values[(step_id, key)] = value
        for cb, value in ready:
            cb(value)
        if duplicate is not None:
            raise errors.InternalError(None, None, f"Duplicate send of {duplicate} in step "
                                       f"{step_id}")

    def recv_async(self, step_id: int, key: str, callback: Callback) -> None:
        """Calls `callback(value)` once the value is sent (or with the abort error)."""
        with self._lock:
            err = self._aborted.get(step_id)
            if err is None:
                if (step_id, key) in self._values:
                    value = self._values.pop((step_id, key))
                else:
                    self._waiters.setdefault((step_id, key), []).append(callback)
                    return
        callback(err if err is not None else value)

    def abort_step(self, step_id: int, error: BaseException) -> None:
        """Fails every present and future receiver of `step_id` with `error`."""
        with self._lock:
            self._aborted[step_id] = error
            while len(self._aborted) > self._ABORTED_MEMORY:
                self._aborted.popitem(last=False)
            callbacks = [cb for (s, _), cbs in self._waiters.items() if s == step_id for cb in cbs]
            self._waiters = {k: v for k, v in self._waiters.items() if k[0] != step_id}
            self._values = {k: v for k, v in self._values.items() if k[0] != step_id}
        for cb in callbacks:
            cb(error)

    def cleanup_step(self, step_id: int) -> None:
        """Drops what a finished step left behind (unreceived sends)."""
        with self._lock:
            if any(k[0] == step_id for k in self._values):
                self._values = {k: v for k, v in self._values.items() if k[0] != step_id}

    def pending(self) -> int:
        with self._lock:
            return len(self._values) + sum(len(v) for v in self._waiters.values())


class StepRendezvous:
    """What Send/Recv kernels of one step see (`step.rendezvous`).

    A Send whose Recv is on another task is pushed there (push, not pull: the
    receiving task's transport puts it into that task's table), so a Recv
    always waits on its own task's table and a tensor never waits to be asked
    for. Pushes are held until `flush`, which the executor calls whenever it
    has nothing left to run before a wait (and the worker at the end of the
    part): every Send of one burst of ready ops goes in one message per task.

    Args:
        local: this worker's table.
        step_id: the step.
        task: this task ("/job:ps/replica:0/task:0"); None: every Send is local.
        push: `push(task, step_id, [(key, value), ...])` delivers to another task.
        push_live: as `push`, for a variable's live buffer: it must have copied the
            values (into a socket, or a copy) when it returns.
        flushed: called after each flush, when this part is about to wait or has
            ended (whoever runs the step may start other tasks' parts then).
    The runtime only calls these; it never learns what is behind them.
    """

    def __init__(self, local: LocalRendezvous, step_id: int, task: str | None = None,
                 push: Callable[[str, int, list[tuple[str, Any]]], None] | None = None,
                 push_live: Callable[[str, int, list[tuple[str, Any]]], None] | None = None,
                 flushed: Callable[[], None] | None = None) -> None:
        self.local = local
        self.step_id = step_id
        self.task = task
        self.push = push
        self.push_live = push_live
        self.flushed = flushed
        self._held: dict[str, list[tuple[str, Any]]] = {}

    def send(self, key: str, value: Any) -> None:
        dst = recv_task(key)
        if self.push is None or dst == self.task:
            self.local.send(self.step_id, key, value)
        else:
            self._held.setdefault(dst, []).append((key, value))

    def send_now(self, key: str, live: Any) -> None:
        """Sends a variable's live buffer at once: `push_live` must have copied it (into
        a socket, or a copy for an in-process task) when it returns. Without one, or
        for this task, a copy is sent as by `send`."""
        dst = recv_task(key)
        if self.push_live is None or dst == self.task:
            self.send(key, live.copy())
        else:
            self.push_live(dst, self.step_id, [(key, live)])

    def flush(self) -> None:
        """Pushes every held Send, one message per receiving task, then tells
        `flushed`."""
        if self._held:
            held, self._held = self._held, {}
            for dst, items in held.items():
                self.push(dst, self.step_id, items)  # type: ignore[misc]
        if self.flushed is not None:
            self.flushed()

    def recv_async(self, key: str, send_device: str, callback: Callback) -> None:
        self.local.recv_async(self.step_id, key, callback)


_recv_tasks: dict[str, str] = {}
_send_tasks: dict[str, str] = {}


def recv_task(key: str) -> str:
    """The task of a rendezvous key's receiving device (cached: keys repeat every step)."""
    return _key_task(key, 1, _recv_tasks)


def send_task(key: str) -> str:
    """The task of a rendezvous key's sending device (cached, as `recv_task`)."""
    return _key_task(key, 0, _send_tasks)


def _key_task(key: str, index: int, cache: dict[str, str]) -> str:
    task = cache.get(key)
    if task is None:
        device = key.split(";", 2)[index]
        try:
            task = device_task(device)
        except ValueError:  # a device of no task (an in-process session's): itself
            task = device
        cache[key] = task
        if len(cache) > 100_000:
            cache.clear()
    return task
