"""`tf.keras.backend` (graph mode): per-graph layer names, the learning phase, sessions.

Keras layers in TF 1.x graph mode name themselves uniquely per graph ("dense",
"dense_1", ...), read `training` from a boolean placeholder `keras_learning_phase`
(default False) when a call does not say, and move weights in and out through the
default session (or one Keras makes and initializes for the graph).

Example:
    >>> tf.keras.backend.learning_phase()        # placeholder_with_default(False)
    >>> tf.keras.backend.set_learning_phase(1)   # later layers are built for training
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from tensorweave.client.session import Session, get_default_session
from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph import Graph, get_default_graph, reset_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.core_ops import placeholder_with_default
from tensorweave.state.variable_initializers import (
    report_uninitialized_variables, variables_initializer)
from tensorweave.state.variables import global_variables

_LOCK = threading.Lock()


class _GraphState:
    """What Keras keeps per graph: name counters, learning phase, its own session."""

    def __init__(self) -> None:
        self.uids: dict[str, int] = {}
        self.learning_phase: Any = None       # the placeholder, made on first use
        self.fixed_phase: int | None = None   # set_learning_phase(0/1)
        self.session: Session | None = None
        # per session: the variables known to be initialized in it
        self.checked: "weakref.WeakKeyDictionary[Session, set[str]]" = \
            weakref.WeakKeyDictionary()


_STATE: "weakref.WeakKeyDictionary[Graph, _GraphState]" = weakref.WeakKeyDictionary()


def _state(graph: Graph | None = None) -> _GraphState:
    g = graph if graph is not None else get_default_graph()
    with _LOCK:
        st = _STATE.get(g)
        if st is None:
            st = _STATE[g] = _GraphState()
        return st


def unique_object_name(base: str, zero_based: bool = True, graph: Graph | None = None) -> str:
    """`base`, `base_1`, `base_2`, ... unique per graph (zero_based: the first is `base`).

    Example:
        >>> unique_object_name("dense"), unique_object_name("dense")
        ('dense', 'dense_1')
    """
    st = _state(graph)
    with _LOCK:
        n = st.uids.get(base, 0)
        st.uids[base] = n + 1
    if zero_based:
        return base if n == 0 else f"{base}_{n}"
    return f"{base}_{n + 1}"


def get_uid(prefix: str = "") -> int:
    """`tf.keras.backend.get_uid`: 1, 2, 3, ... per prefix and graph."""
    st = _state()
    with _LOCK:
        st.uids[prefix] = st.uids.get(prefix, 0) + 1
        return st.uids[prefix]


def reset_uids() -> None:
    """`tf.keras.backend.reset_uids`: layer names start again at "dense"."""
    _state().uids.clear()


def clear_session() -> None:
    """`tf.keras.backend.clear_session`: closes Keras's session and, as TF 1.x does,
    replaces the default graph by a new one (so layer names start again at "dense").

    Raises:
        AssertionError: inside a `with graph.as_default():` block (as tf.reset_default_graph).
    """
    g = get_default_graph()
    with _LOCK:
        st = _STATE.pop(g, None)
    if st is not None and st.session is not None:
        st.session.close()
    reset_default_graph()


def learning_phase() -> Any:
    """The learning phase: 0/1 if fixed by `set_learning_phase`, else a bool placeholder.

    The placeholder is `keras_learning_phase` (placeholder_with_default(False)):
    feed True to run layers such as Dropout and BatchNormalization in training mode.

    Example:
        >>> sess.run(out, {x: batch, tf.keras.backend.learning_phase(): True})
    """
    st = _state()
    if st.fixed_phase is not None:
        return st.fixed_phase
    if st.learning_phase is None:
        g = get_default_graph()
        with g.name_scope(None):
            st.learning_phase = placeholder_with_default(False, shape=[],
                                                         name="keras_learning_phase")
    return st.learning_phase


def set_learning_phase(value: int) -> None:
    """`tf.keras.backend.set_learning_phase(0 or 1)`: fixes `training` for later calls.

    Raises:
        ValueError: for a value other than 0 or 1.
    """
    if value not in (0, 1, True, False):
        raise ValueError(f"Expected learning phase to be 0 or 1, got {value!r}.")
    _state().fixed_phase = int(value)


def get_session() -> Session:
    """The default session, else a session Keras keeps for the graph.

    As TF 1.x's `tf.keras.backend.get_session`, variables that are still uninitialized
    are initialized on the way out (each variable is checked once, so no ops are
    added to the graph once all are known).
    """
    sess = get_default_session()
    g = get_default_graph()
    st = _state(g)
    if sess is None:
        if st.session is None:
            st.session = Session(graph=g)
        sess = st.session
    _initialize_missing(sess, g, st)
    return sess


def set_session(session: Session) -> None:
    """`tf.keras.backend.set_session`: the session `get_session` hands out."""
    _state(session.graph).session = session


def _initialize_missing(sess: Session, g: Graph, st: _GraphState) -> None:
    checked = st.checked.setdefault(sess, set())
    todo = [v for v in global_variables() if v.name not in checked]
    if not todo or g.finalized:   # a finalized graph (MonitoredSession) is initialized
        return
    with g.as_default():
        names = sess.run(report_uninitialized_variables(todo))
        missing = {n.decode() if isinstance(n, bytes) else str(n) for n in np.ravel(names)}
        fresh = [v for v in todo if v.op.name in missing]
        if fresh:
            sess.run(variables_initializer(fresh))
    checked.update(v.name for v in todo)


def batch_get_value(tensors: list[Any]) -> list[np.ndarray]:
    """The values of variables/tensors, read in one `run` of `get_session()`."""
    if not tensors:
        return []
    return list(get_session().run(list(tensors)))


def get_value(x: Any) -> np.ndarray:
    """`tf.keras.backend.get_value`: one variable's value."""
    return batch_get_value([x])[0]


def batch_set_value(tuples: list[tuple[Any, Any]]) -> None:
    """Loads each (variable, numpy value) through `get_session()`."""
    sess = get_session()
    for var, value in tuples:
        var.load(np.asarray(value), sess)


def set_value(x: Any, value: Any) -> None:
    """`tf.keras.backend.set_value`: loads `value` into variable `x`."""
    batch_set_value([(x, value)])


def floatx() -> str:
    """`tf.keras.backend.floatx`: the default float type, 'float32'."""
    return "float32"


def is_keras_tensor(x: Any) -> bool:
    """True if `x` came out of a Keras layer or `tf.keras.Input`."""
    return isinstance(x, Tensor) and getattr(x, "_keras_history", None) is not None


def int_shape(x: Any) -> tuple[int | None, ...] | None:
    """`tf.keras.backend.int_shape`: the static shape as a tuple (None where unknown)."""
    shape = x.get_shape()
    return None if shape.ndims is None else tuple(shape.as_list())


def dtype(x: Any) -> str:
    """`tf.keras.backend.dtype`: the dtype's name ('float32')."""
    return _dt.as_dtype(x.dtype).base_dtype.name
