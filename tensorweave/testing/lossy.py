"""A transport that delays and drops messages on purpose, for tests of what the rest does
about a slow or lossy network (a deadline error naming the task, a retry).

It wraps another link (the same-host unix sockets by default, so messages really cross
a socket) and applies `Rule`s to what its peers send: a push of a step's tensors
(matched by rendezvous key), a call (matched by method name), to a task (matched by
name). It is not registered by default: a test registers it under an explicit name
(`register()`), builds its servers with `protocol=` that name, and unregisters it.

Example:
    >>> lossy.register()                        # the protocol "lossy"
    >>> lossy.LOSSY.rules = [lossy.Rule("push", match="doubled", drop=True, times=1)]
    >>> server = tf.train.Server(spec, job_name="worker", task_index=0, protocol="lossy")
"""
from __future__ import annotations

import dataclasses
import importlib
import threading
import time
from typing import Any, Sequence

import numpy as np

from tensorweave.distributed.transport import registry
from tensorweave.distributed.transport.base import Done, Items, Peer, Tensors
from tensorweave.framework import errors

NAME = "lossy"


@dataclasses.dataclass
class Rule:
    """What to do to the messages it matches: drop them, or deliver them `delay_s` late.

    Args:
        kind: "push" (a step's tensors) or "call" (a service method, sync or async).
        match: a substring of the push's rendezvous keys or of the method name.
        task: a substring of the receiving task's name ("" matches every task).
        drop: never deliver (a call then fails with DeadlineExceededError once its
            timeout has passed, as a real lost request would).
        delay_s: deliver this many seconds late (ignored when dropping).
        times: how many messages it applies to (then it is spent); None: all.
    """

    kind: str
    match: str = ""
    task: str = ""
    drop: bool = False
    delay_s: float = 0.0
    times: int | None = None
    hits: list[str] = dataclasses.field(default_factory=list)  # what it applied to

    def __post_init__(self) -> None:
        if self.kind not in ("push", "call"):
            raise ValueError(f"Rule kind {self.kind!r} must be 'push' or 'call'.")

    def applies(self, kind: str, what: str, task: str) -> bool:
        return (kind == self.kind and self.match in what and self.task in task
                and (self.times is None or len(self.hits) < self.times))


class LossyPeer(Peer):
    """A peer of the wrapped link whose messages go through the transport's rules."""

    def __init__(self, inner: Peer, transport: "LossyTransport") -> None:
        self.name = inner.name
        self.shares_memory = inner.shares_memory
        self._inner, self._transport = inner, transport

    def call(self, method: str, request: Any, tensors: Sequence[Any] = (),
             timeout: float | None = None) -> tuple[Any, Tensors]:
        rule = self._transport.rule("call", method, self.name)
        if rule is not None and rule.drop:
            time.sleep(_timeout(method, self.name, timeout))
            raise _lost(method, self.name, timeout)
        if rule is not None:
            time.sleep(rule.delay_s)
        return self._inner.call(method, request, tensors, timeout)

    def call_async(self, method: str, request: Any, tensors: Sequence[Any], done: Done,
                   timeout: float | None = None) -> None:
        rule = self._transport.rule("call", method, self.name)
        if rule is not None and rule.drop:
            try:
                wait_s = _timeout(method, self.name, timeout)
            except errors.OpError as e:
                done(None, [], e)
                return
            _later(wait_s, done, None, [], _lost(method, self.name, timeout))
        elif rule is not None:
            _later(rule.delay_s, self._inner.call_async, method, request, list(tensors),
                   done, timeout)
        else:
            self._inner.call_async(method, request, tensors, done, timeout)

    def push(self, step_id: int, items: Items) -> None:
        keys = "\n".join(k for k, _ in items)
        rule = self._transport.rule("push", keys, self.name)
        if rule is None:
            self._inner.push(step_id, items)
        elif not rule.drop:  # copied: the caller may reuse the arrays once this returns
            copies = [(k, np.array(v, copy=True)) for k, v in items]
            _later(rule.delay_s, self._inner.push, step_id, copies)

    def close(self) -> None:
        self._inner.close()


class LossyTransport:
    """Connects through `inner` ("module:attribute" of a link) and wraps its peers."""

    name = NAME

    def __init__(self, inner: str = registry.UNIX) -> None:
        self.inner = inner
        self.rules: list[Rule] = []
        self._lock = threading.Lock()

    def connect(self, address: str, task: str, service: str,
                credentials: Any = None) -> LossyPeer | None:
        module, _, attr = self.inner.partition(":")
        link = getattr(importlib.import_module(module), attr)
        peer = link.connect(address, task, service, credentials)
        return None if peer is None else LossyPeer(peer, self)

    def rule(self, kind: str, what: str, task: str) -> Rule | None:
        """The first live rule for this message (recording the hit), or None."""
        with self._lock:
            for rule in self.rules:
                if rule.applies(kind, what, task):
                    rule.hits.append(f"{task}: {what}")
                    return rule
        return None


LOSSY = LossyTransport()


def register(name: str = NAME) -> None:
    """Registers the protocol `name` (links: this transport; servers listen on sockets)."""
    registry.register(name, (f"{__name__}:LOSSY",), True,
                      "unix links whose messages tests delay or drop on purpose")


def unregister(name: str = NAME) -> None:
    LOSSY.rules = []
    registry.unregister(name)


def _timeout(method: str, task: str, timeout: float | None) -> float:
    if timeout is None:
        raise errors.InternalError(None, None, f"The lossy transport would drop call {method} "
                                   f"to task {task}, which has no timeout: it would wait "
                                   "forever. Give the call a timeout.")
    return timeout


def _lost(method: str, task: str, timeout: float | None) -> errors.OpError:
    return errors.DeadlineExceededError(None, None, f"Call {method} to task {task} timed "
                                        f"out after {timeout}s (dropped by the lossy "
                                        "transport)")


def _later(delay_s: float, fn: Any, *args: Any) -> None:
    timer = threading.Timer(delay_s, fn, args)
    timer.daemon = True
    timer.start()


__all__ = ["LOSSY", "LossyPeer", "LossyTransport", "NAME", "Rule", "register", "unregister"]
