"""`tf.contrib.framework` variable helpers (TF 1.x's contrib/framework variables.py).

`variable` / `model_variable` create variables through `get_variable` (so variable
scopes, reuse and arg_scope apply); `get_variables*` select them by scope prefix and
name suffix; `get_variables_to_restore` and `assign_from_checkpoint_fn` restore part of
a model from a checkpoint (fine-tuning).

Example:
    >>> w = model_variable("weights", shape=[784, 10])
    >>> keep = get_variables_to_restore(exclude=["logits"])
    >>> init_fn = assign_from_checkpoint_fn("/tmp/pretrained/model.ckpt", keep)
    >>> init_fn(sess)
"""
from __future__ import annotations

import contextlib
import functools
import logging
from typing import Any, Callable

import numpy as np

from tensorweave.contrib.arg_scope import add_arg_scope
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.ops.array.core_ops import placeholder
from tensorweave.ops.control_flow.assert_ops import group
from tensorweave.state.variable_scope import VariableScope, get_variable, \
    get_variable_scope
from tensorweave.state.variables import Variable
from tensorweave.train.checkpoint_management import load_checkpoint
from tensorweave.train.saver import Saver

_log = logging.getLogger(__name__)


@add_arg_scope
def variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
             regularizer: Any = None, trainable: bool = True, collections: Any = None,
             caching_device: Any = None, device: Any = None, partitioner: Any = None,
             custom_getter: Any = None, use_resource: Any = None, **_unused: Any) -> Variable:
    """Gets or creates a variable through `get_variable`, optionally on `device`.

    Args:
        collections: defaults to [GLOBAL_VARIABLES].
        custom_getter: called instead of get_variable, as
            `custom_getter(name, shape=..., ..., reuse=<the scope's reuse>)`.

    Example:
        >>> with tf.contrib.framework.arg_scope([variable], device="/cpu:0"):
        ...     v = variable("v", shape=[3], initializer=tf.zeros_initializer())
    """
    cols = list(dict.fromkeys(collections or [GraphKeys.GLOBAL_VARIABLES]))
    getter: Callable[..., Any] = get_variable
    if custom_getter is not None:
        getter = functools.partial(custom_getter, reuse=get_variable_scope().reuse)
    ctx = get_default_graph().device(device) if device else contextlib.nullcontext()
    with ctx:
        return getter(name, shape=shape, dtype=dtype, initializer=initializer,
                      regularizer=regularizer, trainable=trainable, collections=cols,
                      caching_device=caching_device, partitioner=partitioner,
                      use_resource=use_resource)


@add_arg_scope
def model_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                   regularizer: Any = None, trainable: bool = True, collections: Any = None,
                   caching_device: Any = None, device: Any = None, partitioner: Any = None,
                   custom_getter: Any = None, use_resource: Any = None,
                   **_unused: Any) -> Variable:
    """A `variable` also in MODEL_VARIABLES (what `get_model_variables` returns).

    Example:
        >>> w = model_variable("weights", shape=[3, 3, 1, 32],
        ...                    regularizer=tf.contrib.layers.l2_regularizer(1e-4))
    """
    cols = list(collections or []) + [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
    return variable(name, shape=shape, dtype=dtype, initializer=initializer,
                    regularizer=regularizer, trainable=trainable, collections=cols,
                    caching_device=caching_device, device=device, partitioner=partitioner,
                    custom_getter=custom_getter, use_resource=use_resource)


def add_model_variable(var: Any) -> None:
    """Adds `var` to MODEL_VARIABLES (once).

    Example:
        >>> add_model_variable(tf.Variable(0.0, name="scale"))
    """
    g = get_default_graph()
    if var not in g.get_collection(GraphKeys.MODEL_VARIABLES):
        g.add_to_collection(GraphKeys.MODEL_VARIABLES, var)


def local_variable(initial_value: Any, validate_shape: bool = True, name: str | None = None,
                   use_resource: Any = None) -> Variable:
    """A non-trainable variable in LOCAL_VARIABLES (initialized by local_variables_initializer).

    Example:
        >>> count = local_variable(0, name="count")
    """
    return Variable(initial_value, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                    validate_shape=validate_shape, name=name)


def global_variable(initial_value: Any, validate_shape: bool = True, name: str | None = None,
                    use_resource: Any = None) -> Variable:
    """A non-trainable variable in GLOBAL_VARIABLES.

    Example:
        >>> step = global_variable(0, name="my_step")
    """
    return Variable(initial_value, trainable=False, collections=[GraphKeys.GLOBAL_VARIABLES],
                    validate_shape=validate_shape, name=name)


# ---- selection ------------------------------------------------------------------------
def get_variables(scope: Any = None, suffix: str | None = None,
                  collection: str = GraphKeys.GLOBAL_VARIABLES) -> list[Any]:
    """The variables of `collection` whose name starts with `scope` (a regex prefix, or a
    VariableScope) and, with `suffix`, ends with it (before the ":0").

    Example:
        >>> get_variables("conv1")                  # conv1/weights, conv1/biases, ...
        >>> get_variables(suffix="biases")
    """
    if isinstance(scope, VariableScope):
        scope = scope.name
    if suffix is not None:
        if ":" not in suffix:
            suffix += ":"
        scope = (scope or "") + ".*" + suffix
    return get_default_graph().get_collection(collection, scope)


def get_model_variables(scope: Any = None, suffix: str | None = None) -> list[Any]:
    """`get_variables` over MODEL_VARIABLES.

    Example:
        >>> weights = get_model_variables(suffix="weights")
    """
    return get_variables(scope, suffix, GraphKeys.MODEL_VARIABLES)


def get_local_variables(scope: Any = None, suffix: str | None = None) -> list[Any]:
    """`get_variables` over LOCAL_VARIABLES.

    Example:
        >>> get_local_variables("eval")
    """
    return get_variables(scope, suffix, GraphKeys.LOCAL_VARIABLES)


def get_trainable_variables(scope: Any = None, suffix: str | None = None) -> list[Any]:
    """`get_variables` over TRAINABLE_VARIABLES.

    Example:
        >>> head_vars = get_trainable_variables("logits")
    """
    return get_variables(scope, suffix, GraphKeys.TRAINABLE_VARIABLES)


def _scopes(arg: Any, what: str) -> list[Any]:
    if not isinstance(arg, (list, tuple)):
        raise TypeError(f"{what} is provided but is not a list or a tuple (got {arg!r}).")
    return list(arg)


def get_variables_to_restore(include: Any = None, exclude: Any = None) -> list[Any]:
    """Global variables under the scopes of `include` (all if None), minus those under the
    scopes of `exclude`: what to give a Saver that restores part of a model.

    Raises:
        TypeError: `include` or `exclude` is given but is not a list or tuple.

    Example:
        >>> saver = tf.train.Saver(get_variables_to_restore(exclude=["logits"]))
    """
    if include is None:
        chosen = get_variables()
    else:
        chosen = [v for scope in _scopes(include, "include") for v in get_variables(scope)]
    dropped: set[int] = set()
    if exclude is not None:
        dropped = {id(v) for scope in _scopes(exclude, "exclude") for v in get_variables(scope)}
    return [v for v in chosen if id(v) not in dropped]


def get_variables_by_suffix(suffix: str, scope: Any = None) -> list[Any]:
    """Global variables whose name ends with `suffix`.

    Example:
        >>> get_variables_by_suffix("weights")
    """
    return get_variables(scope=scope, suffix=suffix)


def get_variables_by_name(given_name: str, scope: Any = None) -> list[Any]:
    """Global variables whose last name component is `given_name`.

    Example:
        >>> get_variables_by_name("weights")       # conv1/weights, fc/weights, ...
    """
    return get_variables(scope=scope, suffix=f"/{given_name}:|^{given_name}:")


def get_unique_variable(var_op_name: str) -> Any:
    """The one global variable whose op name is exactly `var_op_name`.

    Raises:
        ValueError: no variable has that name.

    Example:
        >>> w = get_unique_variable("conv1/weights")
    """
    for candidate in get_variables(scope=var_op_name):
        if candidate.op.name == var_op_name:
            return candidate
    raise ValueError(f"Couldn't find variable {var_op_name}; the global variables are "
                     f"{[v.op.name for v in get_variables()][:20]}.")


# ---- assignment from values and checkpoints ---------------------------------------------
def assign_from_values(var_names_to_values: dict[str, Any]) -> tuple[Any, dict[Any, Any]]:
    """(assign op, feed dict) setting each named variable to its value.

    Raises:
        ValueError: a name matches no variable.

    Example:
        >>> op, feed = assign_from_values({"conv1/weights": w0})
        >>> sess.run(op, feed)
    """
    assigns, feed = [], {}
    for name, value in var_names_to_values.items():
        var = get_unique_variable(name)
        value = np.asarray(value)
        ph = placeholder(var.dtype.base_dtype, value.shape,
                         name=f"placeholder/{var.op.name}")
        assigns.append(var.assign(ph))
        feed[ph] = value.reshape(var.get_shape().as_list())
    return group(*assigns, name="assign_from_values"), feed


def assign_from_values_fn(var_names_to_values: dict[str, Any]) -> Callable[[Any], Any]:
    """A function of a session that runs `assign_from_values`.

    Example:
        >>> init_fn = assign_from_values_fn({"conv1/weights": w0}); init_fn(sess)
    """
    op, feed = assign_from_values(var_names_to_values)

    def callback(session: Any) -> Any:
        return session.run(op, feed)
    return callback


def _names_to_vars(var_list: Any) -> dict[str, Any]:
    if isinstance(var_list, dict):
        return dict(var_list)
    return {v.op.name: v for v in var_list}


def assign_from_checkpoint(model_path: str, var_list: Any,
                           ignore_missing_vars: bool = False) -> tuple[Any, dict[Any, Any]]:
    """(assign op, feed dict) loading `var_list` (a list, or checkpoint name -> variable)
    from the checkpoint `model_path` (a file prefix or a directory).

    Raises:
        ValueError: a variable is missing from the checkpoint and not `ignore_missing_vars`.

    Example:
        >>> op, feed = assign_from_checkpoint(path, get_variables_to_restore())
        >>> sess.run(op, feed)
    """
    reader = load_checkpoint(model_path)
    assigns, feed = [], {}
    for ckpt_name, var in _names_to_vars(var_list).items():
        if not reader.has_tensor(ckpt_name):
            if ignore_missing_vars:
                _log.warning("Variable %s missing in checkpoint %s", ckpt_name, model_path)
                continue
            raise ValueError(f"Checkpoint is missing variable [{ckpt_name}] ({model_path}); "
                             "pass ignore_missing_vars=True to skip it.")
        value = np.asarray(reader.get_tensor(ckpt_name))
        ph = placeholder(var.dtype.base_dtype, value.shape, name=f"placeholder/{var.op.name}")
        assigns.append(var.assign(ph))
        feed[ph] = value
    return group(*assigns, name="assign_from_checkpoint"), feed


def assign_from_checkpoint_fn(model_path: str, var_list: Any,
                              ignore_missing_vars: bool = False,
                              reshape_variables: bool = False) -> Callable[[Any], Any] | None:
    """A function of a session restoring `var_list` from `model_path` with a Saver
    (None, with a warning, when nothing is left to restore).

    Raises:
        ValueError: `var_list` is empty.

    Example:
        >>> init_fn = assign_from_checkpoint_fn(path, get_variables_to_restore(
        ...     exclude=["logits"]), ignore_missing_vars=True)
        >>> init_fn(sess)
    """
    if not var_list:
        raise ValueError("var_list cannot be empty")
    if ignore_missing_vars:
        reader = load_checkpoint(model_path)
        available = {}
        for name, var in _names_to_vars(var_list).items():
            if reader.has_tensor(name):
                available[name] = var
            else:
                _log.warning("Variable %s missing in checkpoint %s", name, model_path)
        var_list = available
    if not var_list:
        _log.warning("No Variables to restore")
        return None
    saver = Saver(var_list, reshape=reshape_variables)

    def callback(session: Any) -> None:
        saver.restore(session, model_path)
    return callback


__all__ = ["add_model_variable", "assign_from_checkpoint", "assign_from_checkpoint_fn",
           "assign_from_values", "assign_from_values_fn", "get_local_variables",
           "get_model_variables", "get_trainable_variables", "get_unique_variable",
           "get_variables", "get_variables_by_name", "get_variables_by_suffix",
           "get_variables_to_restore", "global_variable", "local_variable", "model_variable",
           "variable"]
