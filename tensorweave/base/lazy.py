"""Package attributes that are modules imported when first named (PEP 562).

`tf.estimator`, `tf.contrib.layers` and the like cost every process their import, and
most processes (task servers among them) never use them. A package lists them as
{attribute: module} and answers `__getattr__`/`__dir__` with these two functions.

Example:
    >>> _PARTS = {"layers": "tensorweave.contrib.layers"}
    >>> def __getattr__(name):
    ...     return load(globals(), _PARTS, name, f"tf.contrib.{name} is not offered.")
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["load", "names"]


def load(namespace: dict[str, Any], parts: dict[str, str], name: str,
         missing: str) -> ModuleType:
    """Imports `parts[name]`, keeps it in `namespace` (the package's globals) so later
    lookups are plain attributes, and returns it; AttributeError(`missing`) otherwise."""
    target = parts.get(name)
    if target is None:
        raise AttributeError(missing)
    module = importlib.import_module(target)
    namespace[name] = module
    return module


def names(namespace: dict[str, Any], parts: dict[str, str]) -> list[str]:
    """What `dir()` of the package lists: its globals and the parts not loaded yet."""
    return sorted(set(namespace) | set(parts))
