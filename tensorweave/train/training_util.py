"""The global step: an int64 scalar counting training steps.

Example:
    >>> step = tf.train.get_or_create_global_step()
    >>> train_op = opt.minimize(loss, global_step=step)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.state import init_ops
from tensorweave.ops.state import state_ops
from tensorweave.state import variable_scope


def get_global_step(graph: Any = None) -> Any:
    """The global step variable of `graph` (default graph), or None.

    Looks in the GLOBAL_STEP collection, then for a tensor named "global_step:0".

    Raises:
        TypeError: if the found tensor is not an integer scalar (naming it).

    Example:
        >>> tf.train.get_global_step() is None
        True
    """
    g = graph or get_default_graph()
    found = g.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        raise TypeError(f"There should be only one global step, found {len(found)}: "
                        f"{[v.name for v in found]}")
    if found:
        step = found[0]
    else:
        try:
            step = g.get_tensor_by_name("global_step:0")
        except (KeyError, ValueError):
            return None
    assert_global_step(step)
    return step


def assert_global_step(global_step_tensor: Any) -> None:
    """Raises TypeError unless `global_step_tensor` is an integer scalar Variable/Tensor."""
    if not hasattr(global_step_tensor, "dtype") or not hasattr(global_step_tensor, "op"):
        raise TypeError(f"Existing \"global_step\" must be a Variable or Tensor: "
                        f"{global_step_tensor!r}.")
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f"Existing \"global_step\" does not have integer type: "
                        f"{global_step_tensor.dtype.name} ({global_step_tensor.name})")
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f"Existing \"global_step\" is not scalar: {shape} "
                        f"({global_step_tensor.name})")


def create_global_step(graph: Any = None) -> Any:
    """Creates the int64 scalar "global_step" variable (non-trainable, starts at 0).

    Raises:
        ValueError: if the graph already has a global step.

    Example:
        >>> step = tf.train.create_global_step()
    """
    g = graph or get_default_graph()
    if get_global_step(g) is not None:
        raise ValueError("\"global_step\" already exists.")
    with g.as_default(), g.name_scope(None):
        return variable_scope.get_variable(
            GraphKeys.GLOBAL_STEP, shape=[], dtype=_dt.int64,
            initializer=init_ops.zeros_initializer(), trainable=False,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph: Any = None) -> Any:
    """The graph's global step, created if missing.

    Example:
        >>> step = tf.train.get_or_create_global_step()
        >>> step.name
        'global_step:0'
    """
    g = graph or get_default_graph()
    step = get_global_step(g)
    return step if step is not None else create_global_step(g)


def global_step(sess: Any, global_step_tensor: Any) -> int:
    """The global step's current value in `sess`, as a Python int.

    Example:
        >>> tf.train.global_step(sess, step)
        0
    """
    return int(sess.run(global_step_tensor))


GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def _get_or_create_global_step_read(graph: Any = None) -> Any:
    """One cached tensor reading the global step (None when there is none).

    Ops that must see the step as it was at the start of a run depend on it; it
    reads the initialized value, so it never fails on an uninitialized step.
    """
    g = graph or get_default_graph()
    cached = g.get_collection(GLOBAL_STEP_READ_KEY)
    if cached:
        return cached[0]
    step = get_global_step(g)
    if step is None:
        return None
    with g.as_default(), g.name_scope(None), g.name_scope(step.op.name + "/"):
        value = step.initialized_value() if hasattr(step, "initialized_value") else step
        read = value + 0  # a copy, so later assignments cannot change what was read
    g.add_to_collection(GLOBAL_STEP_READ_KEY, read)
    return read


def _increment_global_step(increment: Any, graph: Any = None) -> Any:
    """An op adding `increment` to the global step after the cached read has run.

    Raises:
        ValueError: if the graph has no global step.
    """
    g = graph or get_default_graph()
    step = get_global_step(g)
    if step is None:
        raise ValueError("Global step tensor should be created by "
                         "tf.train.get_or_create_global_step before calling increment.")
    read = _get_or_create_global_step_read(g)
    with g.as_default(), g.name_scope(None), g.name_scope(step.op.name + "/"), \
            g.control_dependencies([read]):
        return state_ops.assign_add(step, increment)


__all__ = ["get_global_step", "create_global_step", "get_or_create_global_step",
           "global_step", "assert_global_step"]
