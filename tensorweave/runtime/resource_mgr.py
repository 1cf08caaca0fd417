"""Per-device resource manager: variables, queues and accumulators live here.

A resource is keyed by (container, name). Sessions of a cluster share one
manager per task, which is what lets between-graph replicas share variables.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.file_access import FilePolicy


class VariableResource:
    """The storage behind a variable: a NumPy array, or None until initialized."""

    __slots__ = ("name", "value", "lock", "dtype", "shape")
    # Update kernels take `lock` even without use_locking (an EmbeddingVariable's rows:
    # a lookup may grow the buffer under them).
    always_lock = False

    def __init__(self, name: str, dtype: Any, shape: Any) -> None:
        self.name = name
        self.value: np.ndarray | None = None
        self.lock = threading.Lock()
        self.dtype = dtype
        self.shape = shape

    def read(self) -> np.ndarray:
        """The current value (not a copy); FailedPreconditionError if uninitialized."""
        v = self.value
        if v is None:
            raise errors.FailedPreconditionError(
                None, None, f"Attempting to use uninitialized value {self.name}. Run its "
                "initializer (e.g. tf.global_variables_initializer()) first.")
        return v

    def snapshot(self) -> np.ndarray:
        """A copy of the value that later in-place updates do not change."""
        return self.read().copy()

    def __repr__(self) -> str:
        state = "uninitialized" if self.value is None else f"shape={self.value.shape}"
        return f"<VariableResource {self.name} {state}>"


class ResourceMgr:
    """Thread-safe (container, name) -> resource map for one device."""

    DEFAULT_CONTAINER = ""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._containers: dict[str, dict[str, Any]] = {}
        # The tasks of an elastic job not training now (distributed/membership.py says
        # which): SyncReplicasOptimizer's accumulators do not wait for their gradients.
        self.absent_tasks: frozenset[str] = frozenset()

    def lookup_or_create(self, container: str, name: str, creator: Callable[[], Any]) -> Any:
        with self._lock:
            c = self._containers.setdefault(container, {})
            res = c.get(name)
            if res is None:
                res = c[name] = creator()
            return res

    def lookup(self, container: str, name: str) -> Any:
        with self._lock:
            try:
                return self._containers[container][name]
            except KeyError:
                raise errors.NotFoundError(
                    None, None, f"Resource {container or '<default>'}/{name} does not exist."
                ) from None

    def delete(self, container: str, name: str) -> None:
        with self._lock:
            self._containers.get(container, {}).pop(name, None)

    def cleanup(self, containers: list[str] | None = None) -> None:
        """Drops the named containers (all of them when None or empty)."""
        with self._lock:
            if not containers:
                dropped = list(self._containers.values())
                self._containers.clear()
            else:
                dropped = [self._containers.pop(c, {}) for c in containers]
        for c in dropped:
            for res in c.values():
                close = getattr(res, "close_on_reset", None)
                if close:
                    close()

    def session_closed(self, handle: str) -> None:
        """Tells every resource with a `session_closed(handle)` method that a session
        ended on this task (a WorkQueue puts back the slices it had in flight)."""
        for _, _, res in self.resources():
            hear = getattr(res, "session_closed", None)
            if hear is not None:
                hear(handle)

    def set_absent_tasks(self, tasks: frozenset[str]) -> None:
        """Records the tasks not training now and tells every resource with a
        `set_absent(tasks)` method (an accumulator's waiting take is evaluated again).

        Example:
            >>> mgr.set_absent_tasks(frozenset({"/job:worker/replica:0/task:2"}))
        """
        with self._lock:
            if tasks == self.absent_tasks:
                return
            self.absent_tasks = tasks
        for _, _, res in self.resources():
            hear = getattr(res, "set_absent", None)
            if hear is not None:
                hear(tasks)

    def resources(self) -> list[tuple[str, str, Any]]:
        with self._lock:
            return [(c, n, r) for c, m in self._containers.items() for n, r in m.items()]


class DeviceContext:
    """What kernels on one device see: its full name, its resource manager, and the
    directories its file ops may touch (`framework/file_access.py`; None: the
    process's local policy, unconfined unless TENSORWEAVE_ALLOW_DIRS is set)."""

    def __init__(self, name: str, resource_mgr: ResourceMgr | None = None,
                 file_policy: FilePolicy | None = None) -> None:
        self.name = name
        self.resource_mgr = resource_mgr or ResourceMgr()
        self.file_policy = file_policy
