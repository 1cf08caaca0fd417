"""The knob types of `tensorweave.base.knobs`: one parser per type, one unit spelling.

`knobs.py` holds the table of every `TENSORWEAVE_*` variable and the rules they follow;
this module holds what a knob is (name, default, doc, old spellings) and how each type
reads its value from the environment, at each use. Nothing else declares knobs.

Example:
    >>> from tensorweave.base.knob_types import Secs
    >>> Secs("TENSORWEAVE_EXAMPLE_SECS", 2.0, doc="an example").get()
    2.0
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
           "Words"]

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
