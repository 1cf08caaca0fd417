"""Device specifications: the one place that parses and matches "/job:ps/task:0/cpu:0".

A spec may be partial: fields it leaves out are unspecified. A partial spec
used as a *filter* (ConfigProto.device_filters) matches every device whose
fields equal the ones the filter names, as in TF 1.x.

Example:
    >>> DeviceSpec.from_string("/job:ps/task:1/cpu:0").to_string()
    '/job:ps/task:1/device:CPU:0'
    >>> device_matches_filters("/job:worker/replica:0/task:1/device:CPU:0",
    ...                        ["/job:ps", "/job:worker/task:1"])
    True
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

_FIELDS = ("job", "replica", "task", "device_type", "device_index")
# A task name inside free text (an error message): job, optional replica, task.
_TASK_IN_TEXT = re.compile(r"/job:[A-Za-z0-9_.\-]+(?:/replica:\d+)?/task:\d+")


class DeviceSpec:
    """A (partial) device: job, replica, task, device_type, device_index.

    Fields that are None are unspecified; `merge_from` fills them from another
    spec, which is how nested `tf.device` scopes combine.
    """

    __slots__ = ("job", "replica", "task", "device_type", "device_index")

    def __init__(self, job: str | None = None, replica: int | None = None,
                 task: int | None = None, device_type: str | None = None,
                 device_index: int | None = None) -> None:
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = _device_type(device_type)
        self.device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec: str | None) -> "DeviceSpec":
        """Parses a device string; raises ValueError naming the bad part."""
        return _parse(spec or "")

    def parse_from_string(self, spec: str) -> "DeviceSpec":
        other = _parse(spec)
        for f in self.__slots__:
            setattr(self, f, getattr(other, f))
        return self

    def merge_from(self, dev: "DeviceSpec") -> None:
        """Fields set in `dev` override this spec's (TF's merge semantics)."""
        for f in self.__slots__:
            v = getattr(dev, f)
            if v is not None:
                setattr(self, f, v)

    def make_merged_spec(self, dev: "DeviceSpec") -> "DeviceSpec":
        out = self.copy()
        out.merge_from(dev)
        return out

    def replace(self, **kwargs: Any) -> "DeviceSpec":
        out = self.copy()
        for k, v in kwargs.items():
            setattr(out, k, v)
        return out

    def matches(self, device: "str | DeviceSpec") -> bool:
        """Whether `device` has every field this (partial) spec names.

        Fields this spec leaves unset match anything, so "/job:ps" matches every
        device of the ps job and "/job:worker/task:1" every device of that task.

        Example:
            >>> DeviceSpec.from_string("/job:worker/task:0").matches(
            ...     "/job:worker/replica:0/task:0/device:CPU:0")
            True
        """
        other = device if isinstance(device, DeviceSpec) else _parse(device)
        for f in _FIELDS:
            mine = getattr(self, f)
            if mine is not None and getattr(other, f) != mine:
                return False
        return True

    def copy(self) -> "DeviceSpec":
        return DeviceSpec(self.job, self.replica, self.task, self.device_type, self.device_index)

    def to_string(self) -> str:
        parts = []
        if self.job is not None:
            parts.append(f"/job:{self.job}")
        if self.replica is not None:
            parts.append(f"/replica:{self.replica}")
        if self.task is not None:
            parts.append(f"/task:{self.task}")
        if self.device_type is not None:
            idx = "*" if self.device_index is None else str(self.device_index)
            parts.append(f"/device:{self.device_type}:{idx}")
        return "".join(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())

    def __repr__(self) -> str:
        return f"DeviceSpec({self.to_string()!r})"


def _device_type(device_type: str | None) -> str | None:
    # TF upper-cases the legacy "cpu"/"gpu" spellings only; other types keep their case.
    if not device_type:
        return None
    return device_type.upper() if device_type.lower() in ("cpu", "gpu") else device_type


def _parse(spec: str) -> DeviceSpec:
    out = DeviceSpec()
    if isinstance(spec, DeviceSpec):
        return spec.copy()
    if not isinstance(spec, str):
        raise TypeError(f"A device must be a string, DeviceSpec, function or None; got {spec!r}")
    typed = False
    for part in spec.split("/"):
        if not part:
            continue
        fields = part.split(":")
        key = fields[0].lower()
        if key in ("device", "cpu", "gpu"):
            if typed:
                raise ValueError(
                    f"Invalid device specification {spec!r}: multiple device types are not "
                    f"allowed (part {part!r}); name one device, e.g. '/job:ps/task:0/cpu:0'.")
            typed = True
        try:
            if key == "job" and len(fields) == 2 and fields[1]:
                out.job = fields[1]
            elif key == "replica" and len(fields) == 2:
                out.replica = int(fields[1])
            elif key == "task" and len(fields) == 2:
                out.task = int(fields[1])
            elif key == "device" and len(fields) == 3:
                out.device_type = _device_type(fields[1])
                out.device_index = None if fields[2] == "*" else int(fields[2])
            elif key == "device" and len(fields) == 2:
                out.device_type = _device_type(fields[1])
            elif key in ("cpu", "gpu") and len(fields) == 2:
                out.device_type = key.upper()
                out.device_index = None if fields[1] == "*" else int(fields[1])
            elif key in ("cpu", "gpu") and len(fields) == 1:
                out.device_type = key.upper()
            else:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"Invalid device specification {spec!r}: cannot parse part {part!r}. Expected "
                "'/job:<name>/replica:<int>/task:<int>/device:<TYPE>:<int>' or '/cpu:0'."
            ) from None
    return out


def canonical(spec: str | DeviceSpec | None) -> str:
    """The canonical string form of a device spec ('' for none)."""
    if not spec:
        return ""
    return (spec if isinstance(spec, DeviceSpec) else _parse(spec)).to_string()


def merge_device(outer: str, inner: str) -> str:
    """Merges an inner `tf.device` string under an outer one (inner wins)."""
    merged = _parse(outer)
    merged.merge_from(_parse(inner))
    return merged.to_string()


def task_name(job: str, task: int) -> str:
    """The canonical name of a task: "/job:<job>/replica:0/task:<task>"."""
    return DeviceSpec(job=job, replica=0, task=task).to_string()


def device_task(device: str) -> str:
    """The task a full device belongs to, in canonical form.

    Example:
        >>> device_task("/job:ps/replica:0/task:1/device:CPU:0")
        '/job:ps/replica:0/task:1'
    """
    d = _parse(device)
    if d.job is None or d.task is None:
        raise ValueError(f"Device {device!r} names no task; a full device such as "
                         "'/job:ps/replica:0/task:0/device:CPU:0' is needed here.")
    return task_name(d.job, d.task) if d.replica in (None, 0) else \
        DeviceSpec(d.job, d.replica, d.task).to_string()


def parse_filters(filters: Iterable[str]) -> list[DeviceSpec]:
    """Parses ConfigProto.device_filters; a bad one is a ValueError naming it.

    Example:
        >>> [f.to_string() for f in parse_filters(["/job:ps", "/job:worker/task:1"])]
        ['/job:ps', '/job:worker/task:1']
    """
    out = []
    for f in filters:
        text = f.decode() if isinstance(f, bytes) else f
        try:
            out.append(_parse(text))
        except (ValueError, TypeError) as e:
            raise ValueError(f"Invalid device filter {text!r} in ConfigProto.device_filters: "
                             f"{e}") from None
    return out


def device_matches_filters(device: "str | DeviceSpec",
                           filters: Sequence["str | DeviceSpec"]) -> bool:
    """Whether `device` passes `filters` (TF 1.x device_filters semantics).

    No filters pass every device; otherwise the device must match at least one
    filter, each a partial spec whose named fields must all equal the device's.

    Example:
        >>> device_matches_filters("/job:worker/replica:0/task:0/device:CPU:0",
        ...                        ["/job:ps", "/job:worker/task:1"])
        False
    """
    if not filters:
        return True
    specs = [f if isinstance(f, DeviceSpec) else parse_filters([f])[0] for f in filters]
    dev = device if isinstance(device, DeviceSpec) else _parse(device)
    return any(f.matches(dev) for f in specs)


def task_device(task: str, device_type: str = "CPU", index: int = 0) -> str:
    """A device of a task: `task_device("/job:ps/replica:0/task:0")` is its CPU:0."""
    return f"{task}/device:{device_type}:{index}"


def parse_task_name(task: str) -> tuple[str, int]:
    """(job, index) of a task name or device string.

    Raises:
        ValueError: when `task` names no job.

    Example:
        >>> parse_task_name("/job:worker/replica:0/task:3")
        ('worker', 3)
    """
    d = _parse(task)
    if not d.job:
        raise ValueError(f"{task!r} is not a task name; expected '/job:<name>/task:<index>'.")
    return d.job, d.task or 0


def tasks_named(text: str) -> list[str]:
    """The task names ("/job:ps/replica:0/task:0") a message mentions, in order, once each.

    Example:
        >>> tasks_named("/job:ps/replica:0/task:1 is down; /job:ps/replica:0/task:1 again")
        ['/job:ps/replica:0/task:1']
    """
    return list(dict.fromkeys(_TASK_IN_TEXT.findall(text)))
