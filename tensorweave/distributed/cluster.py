"""`tf.train.ClusterSpec`: which tasks, grouped into jobs, make up a cluster.

A ClusterSpec is pure data: job name -> {task index: "host:port"}. It never
opens a connection. Besides TensorFlow 1.x's public API it offers the few
helpers the runtime needs (`task_device`, `all_tasks`, `validate_device`).
Addresses are split by `tensorweave.base.address.parse_host_port`.

Example:
    >>> cluster = ClusterSpec({"ps": ["ps0:2222"], "worker": {1: "w1:2222"}})
    >>> cluster.as_dict()
    {'ps': ['ps0:2222'], 'worker': {1: 'w1:2222'}}
    >>> cluster.job_tasks("worker")
    [None, 'w1:2222']
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Union

from tensorweave.distributed.protocol.cluster_pb2 import ClusterDef
from tensorweave.framework.device import DeviceSpec

__all__ = ["ClusterSpec", "ClusterLike"]

ClusterLike = Union["ClusterSpec", Mapping, ClusterDef]

_EXAMPLE = '{"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]}'


def _as_text(value: Any, what: str) -> str:
    """Returns `value` as str (bytes are decoded, as TF accepts both)."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} {value!r} must be a string (bytes or unicode), "
                    f"got {type(value).__name__}.")


def _as_index(value: Any, job: str) -> int:
    """Checks a task index: a non-negative int (bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"Task index {value!r} of job {job!r} must be an integer, "
                        f"got {type(value).__name__}. Use {{0: 'host:port', ...}} "
                        "or a list of addresses.")
    if value < 0:
        raise ValueError(f"Task index {value} of job {job!r} is negative; task "
                         "indices must be >= 0.")
    return value


def _tasks_from(job: str, tasks: Any) -> dict[int, str]:
    """Normalizes one job's tasks (list/tuple or {index: address}) to a dict."""
    items: Iterable[tuple[Any, Any]]
    if isinstance(tasks, (list, tuple)):
        items = enumerate(tasks)
    elif isinstance(tasks, Mapping):
        items = tasks.items()
    else:
        raise TypeError(f"The tasks for job {job!r} must be a list of addresses or a "
                        f"dict from task index to address, got {type(tasks).__name__}: "
                        f"{tasks!r}.")
    return {_as_index(i, job): _as_text(addr, f"Task address of /job:{job}/task:{i}")
            for i, addr in items}


class ClusterSpec:
    """Represents a cluster as a set of tasks, organized into jobs.

    Args:
        cluster: A dict mapping each job name to a list of addresses (the task
            index is the position) or to a dict {task index: address}; another
            ClusterSpec (copied); or a `ClusterDef` protocol buffer.

    Raises:
        TypeError: If `cluster` is none of these, or a job name, task index or
            address has the wrong type.
        ValueError: If a task index is negative or a ClusterDef names a job twice.

    Example:
        >>> cluster = ClusterSpec({"worker": ["w0:2222", "w1:2222"], "ps": ["ps0:2222"]})
        >>> cluster.jobs, cluster.num_tasks("worker")
        (['ps', 'worker'], 2)
        >>> cluster.task_address("worker", 1)
        'w1:2222'
    """

    __hash__ = None  # type: ignore[assignment]  # Like TF: mutable-looking, compared by content.

    def __init__(self, cluster: ClusterLike) -> None:
        self._cluster_spec: dict[str, dict[int, str]] = {}
        if isinstance(cluster, ClusterSpec):
            self._cluster_spec = {job: dict(tasks) for job, tasks in cluster._cluster_spec.items()}
        elif isinstance(cluster, ClusterDef):
            for job_def in cluster.job:
                if job_def.name in self._cluster_spec:
                    raise ValueError(f"Job {job_def.name!r} is defined twice in the ClusterDef; "
                                     "put all of its tasks in one JobDef.")
                self._cluster_spec[job_def.name] = {int(i): a for i, a in job_def.tasks.items()}
        elif isinstance(cluster, Mapping):
            for job, tasks in cluster.items():
                name = _as_text(job, "Job name")
                self._cluster_spec[name] = _tasks_from(name, tasks)
        else:
            raise TypeError(
                "`cluster` must be a dict mapping job names to lists of network addresses "
                "(or to dicts {task index: address}), a ClusterSpec or a ClusterDef; got "
                f"{type(cluster).__name__}: {cluster!r}. Example: ClusterSpec({_EXAMPLE}).")

    # ----- TF 1.x public API -------------------------------------------------

    @property
    def jobs(self) -> list[str]:
        """The job names in this cluster, sorted.

        Example:
            >>> ClusterSpec({"worker": ["w0:1"], "ps": ["p0:1"]}).jobs
            ['ps', 'worker']
        """
        return sorted(self._cluster_spec)

    def num_tasks(self, job_name: str) -> int:
        """The number of tasks defined in job `job_name`.

        Raises:
            ValueError: If there is no such job.

        Example:
            >>> ClusterSpec({"ps": {0: "p0:1", 3: "p3:1"}}).num_tasks("ps")
            2
        """
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """The task indices defined in job `job_name`, sorted.

        Raises:
            ValueError: If there is no such job.

        Example:
            >>> ClusterSpec({"ps": {3: "p3:1", 0: "p0:1"}}).task_indices("ps")
            [0, 3]
        """
        return sorted(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """The address ("host:port") of task `task_index` in job `job_name`.

        Raises:
            ValueError: If there is no such job or no such task in it.

        Example:
            >>> ClusterSpec({"ps": ["p0:2222"]}).task_address("ps", 0)
            'p0:2222'
        """
        job = self._job(job_name)
        try:
            return job[task_index]
        except (KeyError, TypeError):
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}; it has "
                             f"tasks {sorted(job)}.") from None

    def job_tasks(self, job_name: str) -> list[str | None]:
        """The addresses of job `job_name` as a list indexed by task, None in gaps.

        Raises:
            ValueError: If there is no such job.

        Example:
            >>> ClusterSpec({"worker": {0: "w0:1", 2: "w2:1"}}).job_tasks("worker")
            ['w0:1', None, 'w2:1']
        """
        job = self._job(job_name)
        out: list[str | None] = [None] * (max(job) + 1 if job else 0)
        for index, address in job.items():
            out[index] = address
        return out

    def as_dict(self) -> dict[str, list[str] | dict[int, str]]:
        """The cluster as a dict: a list per job where its indices are dense
        (0..n-1), a dict {index: address} where they are sparse.

        Example:
            >>> ClusterSpec({"ps": {0: "p0:1"}, "worker": {1: "w1:1"}}).as_dict()
            {'ps': ['p0:1'], 'worker': {1: 'w1:1'}}
        """
        out: dict[str, list[str] | dict[int, str]] = {}
        for job in self.jobs:
            indices = self.task_indices(job)
            if not indices:
                out[job] = {}
            elif indices[-1] + 1 == len(indices):
                out[job] = [self._cluster_spec[job][i] for i in indices]
            else:
                out[job] = {i: self._cluster_spec[job][i] for i in indices}
        return out

    def as_cluster_def(self) -> ClusterDef:
        """A new `ClusterDef` protocol buffer for this cluster (jobs sorted).

        Example:
            >>> ClusterSpec({"ps": ["p0:1"]}).as_cluster_def().job[0].tasks[0]
            'p0:1'
        """
        cluster_def = ClusterDef()
        for job in self.jobs:
            job_def = cluster_def.job.add(name=job)
            for index in self.task_indices(job):
                job_def.tasks[index] = self._cluster_spec[job][index]
        return cluster_def

    def __bool__(self) -> bool:
        return bool(self._cluster_spec)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClusterSpec):
            return self._cluster_spec == other._cluster_spec
        if isinstance(other, (Mapping, ClusterDef)):
            try:
                return self._cluster_spec == ClusterSpec(other)._cluster_spec
            except (TypeError, ValueError):
                return False
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __repr__(self) -> str:
        items = ", ".join(f"{job!r}: {tasks!r}" for job, tasks in self.as_dict().items())
        return "ClusterSpec({" + items + "})"

    __str__ = __repr__

    # ----- helpers for the runtime -------------------------------------------

    def task_device(self, job_name: str, task_index: int) -> str:
        """The device prefix of one task: "/job:<job>/replica:0/task:<index>".

        Raises:
            ValueError: If the job or task is not in this cluster.

        Example:
            >>> ClusterSpec({"ps": ["p0:1", "p1:1"]}).task_device("ps", 1)
            '/job:ps/replica:0/task:1'
        """
        self.task_address(job_name, task_index)  # Validates job and index.
        return DeviceSpec(job=job_name, replica=0, task=task_index).to_string()

    def all_tasks(self) -> list[tuple[str, int]]:
        """Every task as (job, index), jobs sorted, then indices sorted.

        Example:
            >>> ClusterSpec({"worker": ["w0:1"], "ps": ["p0:1", "p1:1"]}).all_tasks()
            [('ps', 0), ('ps', 1), ('worker', 0)]
        """
        return [(job, index) for job in self.jobs for index in self.task_indices(job)]

    def validate_device(self, device: str | DeviceSpec | None) -> DeviceSpec:
        """Checks that the job and task a device names (if any) exist here.

        Args:
            device: A device string such as "/job:ps/task:1/cpu:0", a DeviceSpec,
                or None/"" (names nothing, always valid).

        Returns:
            The parsed DeviceSpec.

        Raises:
            ValueError: If the device string is malformed, or names a job or a
                task that this cluster does not have.

        Example:
            >>> ClusterSpec({"ps": ["p0:1"]}).validate_device("/job:ps/task:0").task
            0
        """
        spec = device.copy() if isinstance(device, DeviceSpec) else DeviceSpec.from_string(device)
        shown = spec.to_string()
        if spec.job is None:
            return spec
        if spec.job not in self._cluster_spec:
            raise ValueError(f"Device {shown} names job {spec.job!r}, which is not in the "
                             f"cluster (jobs: {self.jobs}). Check tf.device(...) and the "
                             "ClusterSpec.")
        if spec.task is not None and spec.task not in self._cluster_spec[spec.job]:
            raise ValueError(f"Device {shown} names task {spec.task} of job {spec.job!r}, which "
                             f"has tasks {self.task_indices(spec.job)}. Check tf.device(...) "
                             "and the ClusterSpec.")
        return spec

    # ----- internals -----------------------------------------------------------

    def _job(self, job_name: str) -> dict[int, str]:
        try:
            return self._cluster_spec[job_name]
        except (KeyError, TypeError):
            raise ValueError(f"No such job in cluster: {job_name!r}. The cluster has jobs "
                             f"{self.jobs}.") from None
