"""Every `TENSORWEAVE_*` environment variable, declared once: the only module that reads them.

Each knob has a name, a type (one parser per type), a unit, a default and a one-line doc;
`docs/configuration.md` is generated from this table (`tools/gen_configuration_doc.py`).
Values are read from the environment at each use, never frozen at import, so a test's
monkeypatch or a launcher's child environment takes effect at once.

The rules, the same for every knob:

- An unset variable, or one set to an empty (or all-blank) value, means the default.
- Booleans: "1", "true", "yes", "on" are true; "0", "false", "no", "off" are false (any
  case, blanks around ignored). Anything else is a ValueError naming the variable.
- Units are spelled in the name, once for all: seconds end in `_SECS` (a decimal number,
  "2.5"), sizes end in `_BYTES` (an integer, or a number with a binary suffix: "512KiB",
  "16MiB", "1.5GiB", "1TiB"). Counts have no suffix. Nothing ends in `_S`, `_MS` or `_MB`.
- Paths are used as given; a path list is separated by `os.pathsep` (":" on Linux).
- A list of words (hosts, CIDRs) is separated by commas or blanks.
- An old spelling (`TENSORWEAVE_HANDSHAKE_TIMEOUT_S`, `TENSORWEAVE_SHM_RING_MB`) is still
  read when the new name is unset, in its old unit, and logs one WARNING naming the new one.

Code that starts processes writes settings through the same objects (`knob.setting(v)`,
`knob.export(v)`), never through a string literal. `tools/check_env_reads.py` (run by
`./dev.sh check`) fails on a read of a `TENSORWEAVE_*` variable anywhere else.

Example:
    >>> from tensorweave.base import knobs
    >>> knobs.HANDSHAKE_TIMEOUT_SECS.get()
    10.0
    >>> os.environ["TENSORWEAVE_BULK"] = "off"
    >>> knobs.BULK.get()
    False
    >>> knobs.SHM_RING_BYTES.setting(32 << 20)
    {'TENSORWEAVE_SHM_RING_BYTES': '33554432'}
"""
from __future__ import annotations

import logging
import math
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Alias", "Bool", "Bytes", "Int", "Knob", "Path", "PathList", "Secs", "Text",
           "Words", "all_knobs", "lookup"]

log = logging.getLogger("tensorweave.knobs")
T = TypeVar("T")
PREFIX = "TENSORWEAVE_"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_BINARY = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_OLD_UNITS = ("_S", "_MS", "_MB", "_SEC", "_SECONDS")
_WARNED: set[str] = set()  # old names already warned about in this process


@dataclass(frozen=True)
class Alias:
    """An old spelling still read (and warned about) when the new name is unset.

    Args:
        name: the old variable name.
        scale: what one unit of the old name is in the new unit (2**20 for a `_MB`
            alias of a `_BYTES` knob); applies to a plain number only.
        unit: the old name's unit, for the docs ("MiB"); "" when it is the new one's.
    """

    name: str
    scale: float = 1.0
    unit: str = ""


class Knob(ABC, Generic[T]):
    """One `TENSORWEAVE_*` variable: how to read it, its default and what it is for.

    Args:
        name: the variable, `TENSORWEAVE_` followed by upper case, its unit as suffix.
        default: the value when unset; `read()` gives None instead.
        doc: one line for docs/configuration.md.
        aliases: old spellings, read when `name` is unset.
        default_doc: how the default reads in the docs when it depends on context.
    """

    kind = "text"
    unit = ""
    suffix = ""  # the unit's spelling a name of this kind must end with
    area = ""  # the docs' section, set by _declare

    def __init__(self, name: str, default: T, doc: str, aliases: tuple[Alias, ...] = (),
                 default_doc: str = "") -> None:
        if not re.fullmatch(PREFIX + r"[A-Z0-9_]+", name):
            raise ValueError(f"Knob name {name!r} must be {PREFIX} and upper case.")
        if self.suffix and not name.endswith(self.suffix):
            raise ValueError(f"Knob {name} holds {self.unit}: its name must end in {self.suffix}.")
        if name.endswith(_OLD_UNITS):
            raise ValueError(f"Knob {name}: spell seconds _SECS and sizes _BYTES.")
        self.name, self.default, self.doc = name, default, doc
        self.aliases, self.default_doc = tuple(aliases), default_doc

    @abstractmethod
    def _parse(self, text: str, scale: float) -> T:
        """The value of `text` (as set; `scale`: an old spelling's unit in the new one)."""

    def format(self, value: T) -> str:
        """The text that `get()` reads back as `value`."""
        return str(value)

    def _text(self, environ: Mapping[str, str]) -> tuple[str, str, float] | None:
        """(variable read, its text, scale) or None when neither name nor alias is set."""
        text = environ.get(self.name, "")
        given = [a for a in self.aliases if environ.get(a.name, "").strip()]
        for alias in given:
            if alias.name not in _WARNED:
                _WARNED.add(alias.name)
                ignored = " and is ignored (both are set)" if text.strip() else ""
                log.warning("%s is deprecated%s: use %s (%s).", alias.name, ignored,
                            self.name, self.unit or self.kind)
        if text.strip():
            return self.name, text, 1.0
        if given:
            return given[0].name, environ[given[0].name], given[0].scale
        return None

    def read(self, environ: Mapping[str, str] | None = None) -> T | None:
        """The value set in the environment, or None when unset.

        Raises:
            ValueError: the value does not parse; the message names the variable.
        """
        found = self._text(os.environ if environ is None else environ)
        if found is None:
            return None
        name, text, scale = found
        try:
            return self._parse(text, scale)
        except ValueError as e:
            raise ValueError(f"{name}={text!r} {e}; unset it to use the default "
                             f"({self.default_text()}).") from None

    def get(self, environ: Mapping[str, str] | None = None) -> T:
        """The value set in the environment (`os.environ` unless given), else the default."""
        value = self.read(environ)
        return self.default if value is None else value

    def is_set(self, environ: Mapping[str, str] | None = None) -> bool:
        """Whether the variable (or an old spelling) is set to a non-empty value."""
        return self._text(os.environ if environ is None else environ) is not None

    def setting(self, value: T) -> dict[str, str]:
        """`{name: text}` for a child process's environment that makes it read `value`."""
        return {self.name: self.format(value)}

    def export(self, value: T, environ: MutableMapping[str, str] | None = None) -> None:
        """Sets the variable in `environ` (this process's environment unless given)."""
        (os.environ if environ is None else environ).update(self.setting(value))

    def kind_text(self) -> str:
        """The type as the docs show it ("seconds, > 0")."""
        return self.kind

    def default_text(self) -> str:
        """The default as the docs and error messages show it."""
        if self.default_doc:
            return self.default_doc
        text = self.format(self.default)
        return repr(text) if text == "" else text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, default={self.default_text()})"


class Bool(Knob[bool]):
    """A switch: 1/true/yes/on or 0/false/no/off."""

    kind = "bool"

    def _parse(self, text: str, scale: float) -> bool:
        low = text.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"must be a boolean: one of {'/'.join(_TRUE)} or {'/'.join(_FALSE)}")

    def format(self, value: bool) -> str:
        return "1" if value else "0"


class _Number(Knob[T]):
    """A number with a lower bound (`minimum`, or above it when `exclusive`)."""

    def __init__(self, name: str, default: T, doc: str, minimum: float = 0.0,
                 exclusive: bool = False, aliases: tuple[Alias, ...] = (),
                 default_doc: str = "") -> None:
        super().__init__(name, default, doc, aliases, default_doc)
        self.minimum, self.exclusive = minimum, exclusive

    def _check(self, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        if value < self.minimum or (self.exclusive and value == self.minimum):
            raise ValueError(f"must be {'>' if self.exclusive else '>='} {self.minimum:g}")
        return value

    def kind_text(self) -> str:
        return f"{self.kind}, {'>' if self.exclusive else '>='} {self.minimum:g}"


class Int(_Number[int]):
    """A count: a whole number."""

    kind = "int"

    def _parse(self, text: str, scale: float) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError("must be a whole number") from None
        return int(self._check(value))


class Secs(_Number[float]):
    """A duration in seconds: a decimal number ("0.5", "300")."""

    kind, unit, suffix = "seconds", "seconds", "_SECS"

    def _parse(self, text: str, scale: float) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise ValueError("must be a number of seconds (e.g. 2.5)") from None
        return self._check(value * scale)

    def format(self, value: float) -> str:
        return f"{value:g}"


class Bytes(_Number[int]):
    """A size in bytes: an integer, or a number with KiB/MiB/GiB/TiB."""

    kind, unit, suffix = "bytes", "bytes", "_BYTES"

    def _parse(self, text: str, scale: float) -> int:
        m = _SIZE_RE.match(text)
        mult = _BINARY.get(m.group(2).lower()) if m else None
        if m is None or mult is None:
            raise ValueError("must be a size: bytes (16777216) or a number with KiB, MiB, "
                             "GiB or TiB (16MiB)")
        value = float(m.group(1)) * (mult if m.group(2) else scale)
        return int(self._check(value))

    def format(self, value: int) -> str:
        return str(int(value))

    def default_text(self) -> str:
        if self.default_doc:
            return self.default_doc
        for suffix in ("TiB", "GiB", "MiB", "KiB"):
            mult = _BINARY[suffix.lower()]
            if self.default and self.default % mult == 0:
                return f"{self.default // mult}{suffix}"
        return str(self.default)


class Text(Knob[str]):
    """Text, kept exactly as set (a prefix may end in a blank); `word` strips blanks and
    folds to lower case (a name chosen from a list)."""

    def __init__(self, name: str, default: str, doc: str, word: bool = False,
                 aliases: tuple[Alias, ...] = (), default_doc: str = "") -> None:
        super().__init__(name, default, doc, aliases, default_doc)
        self.word = word

    def _parse(self, text: str, scale: float) -> str:
        return text.strip().lower() if self.word else text


class Path(Knob[str]):
    """A file or directory path, used as given (blanks around it removed)."""

    kind = "path"

    def _parse(self, text: str, scale: float) -> str:
        return text.strip()


class PathList(Knob[tuple[str, ...]]):
    """Paths separated by `os.pathsep`; empty entries are dropped."""

    kind = "path list"

    def _parse(self, text: str, scale: float) -> tuple[str, ...]:
        return tuple(p for p in text.split(os.pathsep) if p.strip())

    def format(self, value: tuple[str, ...]) -> str:
        return os.pathsep.join(value)


class Words(Knob[tuple[str, ...]]):
    """Words separated by commas or blanks ("10.0.0.0/8, ps0"); empty entries are dropped."""

    kind = "list"

    def _parse(self, text: str, scale: float) -> tuple[str, ...]:
        return tuple(w for w in re.split(r"[,\s]+", text) if w)

    def format(self, value: tuple[str, ...]) -> str:
        return ",".join(value)


K = TypeVar("K", bound=Knob)
_REGISTRY: dict[str, Knob] = {}


def _declare(area: str, knob: K) -> K:
    for name in (knob.name, *(a.name for a in knob.aliases)):
        if any(name in (k.name, *(a.name for a in k.aliases)) for k in _REGISTRY.values()):
            raise ValueError(f"{name} is declared twice; each knob has one home.")
    knob.area = area
    _REGISTRY[knob.name] = knob
    return knob


def all_knobs() -> list[Knob]:
    """Every declared knob, in declaration order."""
    return list(_REGISTRY.values())


def lookup(name: str) -> Knob:
    """The knob declared as `name` (or with `name` as an old spelling).

    Raises:
        KeyError: no knob has that name.
    """
    for knob in _REGISTRY.values():
        if name == knob.name or any(name == a.name for a in knob.aliases):
            return knob
    raise KeyError(f"No knob is named {name!r}; see docs/configuration.md.")


# --- The declarations: every TENSORWEAVE_* variable, once. ---------------------------------
_LIMITS, _SECURITY, _CLUSTER, _TRAIN, _LAUNCH = (
    "Transport and limits", "Security", "Servers and jobs", "Training", "Launcher")

MAX_MESSAGE_BYTES = _declare(_LIMITS, Bytes(
    "TENSORWEAVE_MAX_MESSAGE_BYTES", 1 << 30, minimum=1024,
    doc="Largest gRPC message a task receives (at most 2 GiB - 1); big tensors travel in "
        "chunks or over the bulk side channel, never in one message."))
MAX_TENSOR_BYTES = _declare(_LIMITS, Bytes(
    "TENSORWEAVE_MAX_TENSOR_BYTES", 16 << 30, minimum=1,
    doc="Largest tensor a frame's header may announce, checked before any buffer is "
        "allocated."))
MAX_CONNECTIONS = _declare(_LIMITS, Int(
    "TENSORWEAVE_MAX_CONNECTIONS", 1024, minimum=1,
    doc="Open connections on a listener (the task port: gRPC relays and bulk side "
        "channels together; the same-host socket: links); more are closed at once."))
MAX_HALF_OPEN = _declare(_LIMITS, Int(
    "TENSORWEAVE_MAX_HALF_OPEN", 256, minimum=1,
    doc="Connections a listener (the task port, the same-host socket) holds before they "
        "have said who they are (first bytes, TLS, hello); more are closed at once, with "
        "a log line naming the peer."))
HANDSHAKE_TIMEOUT_SECS = _declare(_LIMITS, Secs(
    "TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS", 10.0, minimum=0.1,
    aliases=(Alias("TENSORWEAVE_HANDSHAKE_TIMEOUT_S"),),
    doc="How long a new connection may take to say who it is (first bytes, TLS, token); "
        "then it is closed."))
SHM_RING_BYTES = _declare(_LIMITS, Bytes(
    "TENSORWEAVE_SHM_RING_BYTES", 16 << 20, minimum=0,
    aliases=(Alias("TENSORWEAVE_SHM_RING_MB", scale=1 << 20, unit="MiB"),),
    doc="Shared-memory ring each side of a same-host link writes its big tensors into; "
        "0: none (big tensors go through the socket)."))
BULK = _declare(_LIMITS, Bool(
    "TENSORWEAVE_BULK", True,
    doc="Big tensors move over raw connections to the task port; 0 keeps them inside gRPC "
        "(slower, same single port)."))
TRANSPORT = _declare(_LIMITS, Text(
    "TENSORWEAVE_TRANSPORT", "grpc", word=True,
    doc="The protocol of servers built without one and of client sessions: a registered "
        "name (grpc: unix for this machine's tasks, else TCP; tcp; unix; inprocess); "
        "auto is the old spelling of grpc."))
TLS_CA = _declare(_SECURITY, Path(
    "TENSORWEAVE_TLS_CA", "", doc="PEM file of the cluster CA; with TLS_CERT and TLS_KEY "
    "every connection is mutual TLS.", default_doc="unset: no TLS"))
TLS_CERT = _declare(_SECURITY, Path(
    "TENSORWEAVE_TLS_CERT", "", doc="PEM file of this process's certificate, signed by the "
    "cluster CA.", default_doc="unset: no TLS"))
TLS_KEY = _declare(_SECURITY, Path(
    "TENSORWEAVE_TLS_KEY", "", doc="PEM file of this process's private key.",
    default_doc="unset: no TLS"))
TLS_SERVER_NAME = _declare(_SECURITY, Text(
    "TENSORWEAVE_TLS_SERVER_NAME", "", word=False,
    doc="Check servers' certificates against this name instead of the host dialled "
        "(`tensorweave certs` uses tensorweave-cluster).",
    default_doc="unset: the host of the address"))
AUTH_TOKEN_FILE = _declare(_SECURITY, Path(
    "TENSORWEAVE_AUTH_TOKEN_FILE", "", doc="File holding the cluster's shared secret; every "
    "call carries a digest of it.", default_doc="unset: no token"))
ALLOW_DIRS = _declare(_SECURITY, PathList(
    "TENSORWEAVE_ALLOW_DIRS", (), doc="Directories a task's file ops (Saver, TFRecord, "
    "summaries) may touch; `--allow-dir` sets it.",
    default_doc="unset: a server allows the current and the temp directory; an in-process "
                "session is not confined"))
ALLOW_FROM = _declare(_SECURITY, Words(
    "TENSORWEAVE_ALLOW_FROM", (), doc="Without credentials a task accepts connections only "
    "from its ClusterSpec's hosts; these hosts, addresses or CIDRs (or `any`) may connect "
    "too; `--allow-from` sets it.", default_doc="unset: the cluster's hosts only"))
BIND_ALL = _declare(_CLUSTER, Bool(
    "TENSORWEAVE_BIND_ALL", False, doc="A server listens on every interface, not only its "
    "own address (`tensorweave manifest` sets it)."))
NOTIFY_JOB_DONE = _declare(_CLUSTER, Bool(
    "TENSORWEAVE_NOTIFY_JOB_DONE", True, doc="The chief's normal end tells the ps tasks, whose "
    "`join()` then exits 0; 0 keeps TF's ps that never exits."))
JOB_END_SILENCE_SECS = _declare(_CLUSTER, Secs(
    "TENSORWEAVE_JOB_END_SILENCE_SECS", 45.0, minimum=0,
    doc="Once the job is done, a ps closes a worker's open sessions when that worker has "
        "answered none of its health checks (3 at least) for this long; at most the "
        "server's done_grace_secs."))
PEER_SILENCE_SECS = _declare(_CLUSTER, Secs(
    "TENSORWEAVE_PEER_SILENCE_SECS", 30.0, minimum=0, exclusive=True,
    doc="A step waiting on a task that answers no health check for this long fails with "
        "UnavailableError naming it (MonitoredTrainingSession recovers); WARNING lines "
        "name it from a sixth of this on. Steps with a deadline end at their deadline."))
SESSION_DEADLINE_SECS = _declare(_TRAIN, Secs(
    "TENSORWEAVE_SESSION_DEADLINE_SECS", 60.0, minimum=0, exclusive=True,
    doc="How long a session's steps, and creating or recovering a session, may wait for "
        "unreachable tasks (base.waits.cluster_wait_secs).",
    default_doc="ConfigProto.operation_timeout_in_ms if set, else 60 (base.waits' default)"))
SYNC_REPLICA_WARN_SECS = _declare(_TRAIN, Secs(
    "TENSORWEAVE_SYNC_REPLICA_WARN_SECS", 10.0, minimum=0, exclusive=True,
    doc="A sync-replicas step waiting this long logs which replicas sent no gradient, "
        "and again every as long."))
SYNC_REPLICA_TIMEOUT_SECS = _declare(_TRAIN, Secs(
    "TENSORWEAVE_SYNC_REPLICA_TIMEOUT_SECS", 300.0, minimum=0,
    doc="The sync-replicas chief gives up (DeadlineExceededError naming the missing "
        "replicas) after this; 0 waits forever."))
SYNC_SERVE_SECS = _declare(_TRAIN, Secs(
    "TENSORWEAVE_SYNC_SERVE_SECS", 10.0, minimum=0,
    doc="At the end of training the sync-replicas chief serves replicas still training "
        "(while they progress) at most this long, then closes the token queue."))
PROGRESS_PREFIX = _declare(_LAUNCH, Text(
    "TENSORWEAVE_PROGRESS_PREFIX", "", doc="Set by `tensorweave launch` in each task: "
    "`report_progress` prints this plus JSON, which the launcher shows as progress.",
    default_doc="unset: report_progress prints nothing"))

