"""`tf.version` / `tf.VERSION` / `tf.__version__`, and the execution-mode switches of
TF 1.13+ (`tf.executing_eagerly`, `tf.disable_eager_execution`, ...).

`__version__` (= `VERSION`) is the TF API level tensorweave implements (1.15), not
the package's own version, because programs compare it to choose an API path
(`if tf.__version__ < "1.13": ...`); tensorweave's own version is
`tf.version.TENSORWEAVE_VERSION` (and `tf.GIT_VERSION`/`tf.__git_version__` say
"tensorweave-<it>"). There is one execution mode, graphs run by
sessions: switching eager execution off (or TF 2 behaviour off) is a no-op; asking
for eager execution is an error that says so.

Example:
    >>> tf.__version__, tf.version.TENSORWEAVE_VERSION
    ('1.15.0', '0.1.0')
    >>> tf.compat.v1.disable_eager_execution()   # as TF 2 programs run TF1 code
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.graph_def_writer import (GRAPH_DEF_VERSION,
                                                    GRAPH_DEF_VERSION_MIN_CONSUMER)

VERSION = "1.15.0"
# The package's own version, in one place: pyproject.toml reads it from here (asking the
# installed metadata instead cost every process ~20 ms of its start).
TENSORWEAVE_VERSION = "0.1.0"
GIT_VERSION = f"tensorweave-{TENSORWEAVE_VERSION}"
COMPILER_VERSION = "python"  # TF's is its C++ compiler's; nothing here is compiled
# TF's build flags (ints, as TF's): no C++ library is built, so neither the C++11 ABI nor
# a monolithic build applies.
CXX11_ABI_FLAG = 0
MONOLITHIC_BUILD = 0
# The GraphDef versions every graph we export carries: TF 1.15's.
GRAPH_DEF_VERSION_MIN_PRODUCER = 0

__all__ = ["COMPILER_VERSION", "CXX11_ABI_FLAG", "GIT_VERSION", "GRAPH_DEF_VERSION",
           "GRAPH_DEF_VERSION_MIN_CONSUMER", "GRAPH_DEF_VERSION_MIN_PRODUCER",
           "MONOLITHIC_BUILD", "TENSORWEAVE_VERSION", "VERSION"]


def executing_eagerly() -> bool:
    """False: ops build graphs, sessions run them (the only mode here)."""
    return False


def disable_eager_execution() -> None:
    """A no-op: graph mode is the only mode (TF 2 programs call it to get TF1 graphs)."""


def disable_v2_behavior() -> None:
    """TF 1.x behaviour (the only one here): it undoes `tf.enable_v2_tensorshape()`, as
    TF's does."""
    from tensorweave.framework.tensor_shape import disable_v2_tensorshape
    disable_v2_tensorshape()


def enable_eager_execution(config: Any = None, device_policy: Any = None,
                           execution_mode: Any = None) -> None:
    """Raises: tensorweave has graphs and sessions only.

    Raises:
        ValueError: always, saying what to use instead.
    """
    raise ValueError("tensorweave runs TF 1.x graphs in sessions and has no eager "
                     "execution: build the ops, then run them with tf.Session().run(...) "
                     "(remove the tf.enable_eager_execution() call).")


def enable_v2_behavior() -> None:
    """Raises: TF 2 behaviour (eager execution, resource variables) is not offered.

    Raises:
        ValueError: always, saying what to use instead.
    """
    raise ValueError("tensorweave implements the TF 1.x API only; remove the "
                     "tf.enable_v2_behavior() call (graphs and sessions are the default).")
