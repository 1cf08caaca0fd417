"""The pieces every Estimator mode builds: input_fn and model_fn calls, the loss
mean, eval summaries.

Calls follow TF 1.x: a function's optional arguments (`mode`, `params`,
`config`, `labels`) are passed only when its signature names them.
"""
from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tensorweave.estimator.model_fn import EstimatorSpec
from tensorweave.framework import dtypes, errors
from tensorweave.framework.graph_defaults import (
    GraphKeys,
    device,
    get_default_graph,
    name_scope,
)
from tensorweave.ops.control_flow import group
from tensorweave.data.dataset import Dataset
from tensorweave.ops.math.math_ops import cast, maximum, truediv
from tensorweave.ops.state.state_ops import assign_add
from tensorweave.state.variables import Variable
from tensorweave.platform import tf_logging as logging
from tensorweave.summary.summary import Summary
from tensorweave.summary.writer import FileWriterCache
from tensorweave.train.checkpoint_management import (latest_checkpoint,
                                                     latest_valid_checkpoint, load_variable)
from tensorweave.train.session_run_hook import SessionRunHook

__all__ = ["fn_args", "verify_model_fn_args", "call_input_fn", "call_model_fn",
           "loss_mean", "write_dict_to_summary", "check_hooks", "extract_keys",
           "batch_length", "checkpoint_global_step", "warn_if_input_never_ends"]


_VALID_MODEL_FN_ARGS = frozenset({"features", "labels", "mode", "params", "self", "config"})
LOSS_METRIC_KEY = "loss"
METRIC_VARIABLES = "metric_variables"


def fn_args(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The names of `fn`'s arguments (partials and callable objects included)."""
    if isinstance(fn, functools.partial):
        bound = set(fn.keywords or {})
        names = fn_args(fn.func)[len(fn.args):]
        return tuple(n for n in names if n not in bound)
    # signature() leaves out a bound method's self and reads a callable object's __call__.
    params = inspect.signature(fn).parameters.values()
    return tuple(p.name for p in params
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


def verify_model_fn_args(model_fn: Callable[..., Any], params: Any) -> None:
    """Checks model_fn's signature as TF's Estimator does.

    Raises:
        ValueError: no `features` argument, `params` given but not taken, or an
            argument the Estimator cannot fill.
    """
    args = set(fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(f"model_fn ({model_fn}) does not include params argument, but "
                         f"params ({params}) is passed to Estimator.")
    if params is None and "params" in args:
        logging.warning("Estimator's model_fn (%s) includes params argument, but params are "
                    "not passed to Estimator.", model_fn)
    unknown = sorted(args - _VALID_MODEL_FN_ARGS)
    if unknown:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unknown}; "
                         f"it may take only {sorted(_VALID_MODEL_FN_ARGS - {'self'})}.")


def call_input_fn(input_fn: Callable[..., Any], mode: str, params: Any, config: Any
                  ) -> tuple[Any, Any, list[SessionRunHook]]:
    """Calls input_fn on the CPU and returns (features, labels, input hooks).

    A `tf.data.Dataset` result is read through an initializable iterator that a
    hook initializes in each new session; its elements (and a plain result) are
    `(features, labels)` pairs or features alone.

    Raises:
        TypeError: input_fn is not callable.
        ValueError: a list or tuple that is not (features, labels).
    """
    if not callable(input_fn):
        raise TypeError(f"input_fn must be callable, given: {input_fn!r}.")
    args = fn_args(input_fn)
    kwargs = {k: v for k, v in (("mode", mode), ("params", params), ("config", config))
              if k in args}
    with device("/cpu:0"):
        result = input_fn(**kwargs)
    hooks: list[SessionRunHook] = []
    if isinstance(result, Dataset):
        iterator = result.make_initializable_iterator()
        hooks.append(_DatasetInitializerHook(iterator))
        result = iterator.get_next()
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError(f"input_fn should return (features, labels) as a len 2 tuple, "
                             f"got {len(result)} elements: {result!r}.")
        return result[0], result[1], hooks
    return result, None, hooks


class _DatasetInitializerHook(SessionRunHook):
    """Initializes the input iterator in every session the Estimator creates."""

    def __init__(self, iterator: Any) -> None:
        self._iterator = iterator

    def after_create_session(self, session: Any, coord: Any) -> None:
        session.run(self._iterator.initializer)


def call_model_fn(model_fn: Callable[..., Any], features: Any, labels: Any, mode: str,
                  params: Any, config: Any) -> EstimatorSpec:
    """Calls model_fn with the arguments its signature names.

    Raises:
        ValueError: labels from input_fn but no `labels` argument, or a result
            that is not an EstimatorSpec.
    """
    args = fn_args(model_fn)
    kwargs: dict[str, Any] = {}
    if "labels" in args:
        kwargs["labels"] = labels
    elif labels is not None:
        raise ValueError("model_fn does not take labels, but input_fn returns labels; add "
                         "a labels argument or return features only.")
    for key, value in (("mode", mode), ("params", params), ("config", config)):
        if key in args:
            kwargs[key] = value
    spec = model_fn(features=features, **kwargs)
    if not isinstance(spec, EstimatorSpec):
        raise ValueError(f"model_fn should return an EstimatorSpec, got {spec!r}.")
    return spec


def loss_mean(loss: Any) -> tuple[Any, Any]:
    """(mean, update_op): the running mean of `loss` over an evaluation's batches.

    The total and count are local variables (restarted by each evaluation's
    local init op, never saved in checkpoints).
    """
    with name_scope("mean"):
        collections = [GraphKeys.LOCAL_VARIABLES, METRIC_VARIABLES]
        total = Variable(np.float64(0.0), trainable=False, collections=collections,
                         name="total", dtype=dtypes.float64)
        count = Variable(np.float64(0.0), trainable=False, collections=collections,
                         name="count", dtype=dtypes.float64)
        update = group(assign_add(total, cast(loss, dtypes.float64)),
                       assign_add(count, np.float64(1.0)))
        value = cast(truediv(total.value(), maximum(count.value(), np.float64(1.0))),
                     dtypes.float32, name="value")
    return value, update


def write_dict_to_summary(output_dir: str, values: Mapping[str, Any], step: int) -> None:
    """Writes the scalar entries of `values` as one Summary at `step`.

    Non-scalar values are skipped (with a log line) as in TF.
    """
    os.makedirs(output_dir, exist_ok=True)
    summary = Summary()
    for key, value in values.items():
        if key == GraphKeys.GLOBAL_STEP:
            continue
        array = np.asarray(value)
        if array.ndim == 0 and array.dtype.kind in "biuf":
            summary.value.add(tag=key, simple_value=float(array))
        else:
            logging.info("Skipping summary for %s: must be a float or int scalar, got %r.",
                     key, value)
    writer = FileWriterCache.get(output_dir)
    writer.add_summary(summary, step)
    writer.flush()


def check_hooks(hooks: Any, what: str = "hooks") -> list[SessionRunHook]:
    """`hooks` as a list, each checked to be a SessionRunHook.

    Raises:
        TypeError: an element that is not a SessionRunHook.
    """
    hooks = list(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All {what} must be SessionRunHook instances, given: {hook!r}.")
    return hooks


def warn_if_input_never_ends() -> None:
    """Warns (as TF 1.x) when predict's input has no end: no Dataset iterator and no
    queue runner in the graph, so predict would yield forever."""
    graph = get_default_graph()
    if graph.get_collection(GraphKeys.QUEUE_RUNNERS):
        return
    if any(op.type == "IteratorGetNext" for op in graph.get_operations()):
        return
    logging.warning("Input graph does not use tf.data.Dataset or contain a QueueRunner. "
                    "That means predict yields forever. This is probably a mistake.")


def extract_keys(predictions: Any, predict_keys: Any) -> Any:
    """The predictions named by `predict_keys` (all of them when it is None).

    Raises:
        ValueError: predict_keys with non-dict predictions, or naming none of them.
    """
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError(f"predict_keys argument is not valid in case of non-dict "
                         f"predictions: {predictions!r}.")
    keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
    kept = {k: v for k, v in predictions.items() if k in keys}
    if not kept:
        raise ValueError(f"Expected to run at least one output from {sorted(predictions)}, "
                         f"provided {keys}.")
    return kept


def batch_length(batch: Mapping[str, Any]) -> int:
    """The common first dimension of a dict of predicted arrays.

    Raises:
        ValueError: the arrays disagree on it (or one is a scalar).
    """
    lengths = {}
    for key, value in batch.items():
        shape = np.shape(value)
        if not shape:
            raise ValueError(f"Prediction {key!r} is a scalar ({value!r}); with "
                             "yield_single_examples=True every prediction needs the batch "
                             "as its first dimension (or pass yield_single_examples=False).")
        lengths[key] = shape[0]
    if len(set(lengths.values())) > 1:
        raise ValueError(f"Batch length of predictions should be same. {lengths}; every "
                         "prediction must have the batch as its first dimension.")
    return next(iter(lengths.values()))


def checkpoint_global_step(model_dir: str) -> int | None:
    """The global step of model_dir's latest checkpoint (None: no checkpoint yet)."""
    path = latest_checkpoint(model_dir)
    if not path:
        return None
    try:
        return int(load_variable(path, GraphKeys.GLOBAL_STEP))
    except (errors.DataLossError, errors.NotFoundError):
        # Damaged: training restores the newest intact one instead (issue 13), so ask it.
        path = latest_valid_checkpoint(model_dir)
        return None if path is None else int(load_variable(path, GraphKeys.GLOBAL_STEP))
