"""The import hook behind `tensorweave.python.*`.

`tensorweave.python.<path>` is a `TFModule` made on import from one row of
`table.MODULES`: it offers exactly the public names TF 1.15's
`tensorflow.python.<path>` has (`tf_names.NAMES`), each looked up on first use
in our modules of that row and cached. A TF name we lack raises AttributeError
naming the module and the name; so does a name TF's module does not have, and
a function whose required parameters differ from TF's (calling it with TF's
positional arguments would silently mean something else).

Example:
    >>> from tensorweave.python.ops import array_ops
    >>> array_ops.concat is tensorweave.concat
    True
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import inspect
import sys
import types
from typing import Any

from tensorweave.python.table import MODULES, OURS_ONLY, RENAMES, SAME_POSITIONS

PREFIX = "tensorweave.python."
_ALL_PATHS = {**MODULES, **OURS_ONLY}
# Every path and each folder above it; a folder is a package (has submodules).
PACKAGES = {rel.rsplit(".", i)[0] for rel in _ALL_PATHS for i in range(1, rel.count(".") + 1)}
KNOWN = set(_ALL_PATHS) | PACKAGES


def _children(rel: str) -> list[str]:
    depth = rel.count(".") + 1
    return sorted({p.split(".")[depth] for p in KNOWN
                   if p.startswith(rel + ".") and p.count(".") >= depth})


def _required_positional(obj: Any) -> list[str] | None:
    """Our callable's positional parameters, or None where they cannot be read or
    it takes `*args` (a wrapper: any call shape)."""
    if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        return None
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _public_names(module: types.ModuleType) -> list[str]:
    """A module's own public names: its `__all__`, else the classes and functions defined
    in tensorweave and the plain constants (not what it imported from elsewhere)."""
    listed = getattr(module, "__all__", None)
    if listed is not None:
        return [n for n in listed if not n.startswith("_")]
    out = []
    for n, v in vars(module).items():
        if n.startswith("_") or isinstance(v, types.ModuleType):
            continue
        if isinstance(v, (int, float, str, bytes, tuple, frozenset)) or str(
                getattr(v, "__module__", "")).startswith("tensorweave"):
            out.append(n)
    return out


class TFModule(types.ModuleType):
    """One of TF's `tensorflow.python.*` modules, its names served by ours."""

    def __init__(self, name: str, rel: str) -> None:
        super().__init__(name, f"TF 1.15's tensorflow.python.{rel}, served by tensorweave "
                               f"({', '.join(_ALL_PATHS.get(rel, ())) or 'a package'}).")
        self._tw_rel = rel

    def _tw_tf_names(self) -> dict[str, tuple[str, ...] | None]:
        rel = self._tw_rel
        if rel in OURS_ONLY:  # TF's names are not in TF's repository: offer ours
            names: dict[str, tuple[str, ...] | None] = {}
            for src in OURS_ONLY[rel]:
                names.update((n, None) for n in _public_names(importlib.import_module(src)))
            return names
        # The names table is big: read on first use, not when tensorweave is imported.
        from tensorweave.python.tf_names import NAMES
        return NAMES.get(rel, {})

    def __getattr__(self, name: str) -> Any:
        rel = self._tw_rel
        if name == "__all__":
            return [n for n in sorted(self._tw_tf_names()) if self._tw_has(n)]
        if name.startswith("_"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r} "
                                 "(TF's private names are not offered)")
        if name in _children(rel):
            return importlib.import_module(f"{self.__name__}.{name}")
        names = self._tw_tf_names()
        if name not in names:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}: TF "
                                 f"1.15's tensorflow.python.{rel} has no public {name!r} either")
        value = self._tw_resolve(name, names[name])
        setattr(self, name, value)
        return value

    def _tw_has(self, name: str) -> bool:
        try:
            getattr(self, name)
        except AttributeError:
            return False
        return True

    def _tw_resolve(self, name: str, tf_params: tuple[str, ...] | None) -> Any:
        rel = self._tw_rel
        where = f"tensorflow.python.{rel}.{name}"
        renamed = RENAMES.get(f"{rel}.{name}")
        candidates = ([tuple(renamed.split(":"))] if renamed else
                      [(src, name) for src in _ALL_PATHS[rel]])
        for src, attr in candidates:
            value = getattr(importlib.import_module(src), attr, _MISSING)
            if value is _MISSING:
                continue
            ours = _required_positional(value)
            if (tf_params is not None and ours is not None
                    and ours[:len(tf_params)] != list(tf_params)
                    and not (f"{rel}.{name}" in SAME_POSITIONS
                             and len(ours) >= len(tf_params))):
                raise AttributeError(
                    f"module {self.__name__!r} has no attribute {name!r}: TF 1.15's {where} "
                    f"is not built in tensorweave with TF's parameters (TF's takes "
                    f"({', '.join(tf_params)}, ...); {src}.{attr} takes ({', '.join(ours)}))")
            return value
        looked = ", ".join(f"{s}.{a}" for s, a in candidates)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}: TF 1.15's "
                             f"{where} is not built in tensorweave (looked for {looked})")

    def __dir__(self) -> list[str]:
        return sorted(set(self._tw_tf_names()) | set(_children(self._tw_rel)))


_MISSING = object()


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers imports of `tensorweave.python.*` (TF's paths) with TFModules."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith(PREFIX):
            rel = fullname[len(PREFIX):]
            if rel not in KNOWN:
                return None
            return importlib.machinery.ModuleSpec(fullname, self,
                                                  is_package=rel in PACKAGES)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = TFModule(spec.name, spec.name[len(PREFIX):])
        if spec.submodule_search_locations is not None:
            module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: a TFModule finds its names on first use."""


_FINDER = _Finder()


def install() -> None:
    """Puts the hook on `sys.meta_path` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_FINDER)
