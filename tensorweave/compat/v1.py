"""`tf.compat.v1`: the TF 1.x API, i.e. tensorweave's own top level.

Every name is looked up on `tensorweave` when first asked for, so this module
needs nothing of its own: `import tensorweave.compat.v1 as tf` and
`tf.compat.v1.train.Saver` give exactly what `import tensorweave as tf` gives.
`import tensorweave.compat.v1.train` and `from tensorweave.compat.v1.keras import
layers` give our modules `tensorweave.train` and `tensorweave.keras.layers`.

Example:
    >>> import tensorweave.compat.v1 as tf
    >>> tf.disable_v2_behavior()           # graph mode is the only mode here
    >>> x = tf.placeholder(tf.float32, [None, 3])
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

# A package, so `import tensorweave.compat.v1.train` works (TF 1.15 has the v1 API as
# modules there too): `_AliasFinder` answers each such path with our module of that name.
__path__: list[str] = []
_PREFIX = __name__ + "."


def __getattr__(name: str) -> Any:
    top = importlib.import_module("tensorweave")
    try:
        return getattr(top, name)
    except AttributeError:
        raise AttributeError(f"module 'tensorweave.compat.v1' has no attribute {name!r} "
                             f"(tensorweave does not offer tf.{name})") from None


def __dir__() -> list[str]:
    return sorted(n for n in dir(importlib.import_module("tensorweave"))
                  if not n.startswith("_"))


def _our_module(rel: str) -> types.ModuleType | None:
    """`tensorweave.<rel>` when it is a module (an attribute chain, or importable)."""
    obj: Any = importlib.import_module("tensorweave")
    for part in rel.split("."):
        obj = getattr(obj, part, None)
    if isinstance(obj, types.ModuleType):
        return obj
    try:
        return importlib.import_module(f"tensorweave.{rel}")
    except ImportError:
        return None


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports `tensorweave.compat.v1.<rel>` as the module `tensorweave.<rel>` itself."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        module = _our_module(fullname[len(_PREFIX):]) if fullname.startswith(_PREFIX) else None
        if module is None:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, self,
                                              is_package=hasattr(module, "__path__"))
        spec.loader_state = (module, module.__spec__)
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module: types.ModuleType = spec.loader_state[0]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system gave our module the alias's __spec__: it keeps its own.
        spec = module.__spec__
        if spec is not None and isinstance(spec.loader_state, tuple):
            module.__spec__ = spec.loader_state[1]


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.append(_AliasFinder())
