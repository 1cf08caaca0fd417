"""`tf.estimator.WarmStartSettings` and warm-starting a fresh model from a checkpoint.

Only a fresh model is warm-started: when model_dir already has a checkpoint, the
session restores it instead and the scaffold's init_fn does not run (as TF 1.x).

Example:
    >>> ws = tf.estimator.WarmStartSettings("/tmp/pretrained", vars_to_warm_start="dense.*")
    >>> est = tf.estimator.Estimator(model_fn, warm_start_from=ws)
"""
from __future__ import annotations

import os
import re
from typing import Any, NamedTuple

from tensorweave.estimator.model_fn import EstimatorSpec
from tensorweave.framework.graph_defaults import GraphKeys, get_collection
from tensorweave.platform import tf_logging as logging
from tensorweave.train import saver as saver_lib
from tensorweave.train.embedding_variable import EmbeddingVariable
from tensorweave.train.checkpoint_management import (
    checkpoint_exists,
    latest_checkpoint,
    list_variables,
)
from tensorweave.train.scaffold import Scaffold

__all__ = ["WarmStartSettings", "warm_start"]


class WarmStartSettings(NamedTuple):
    """Which variables to start from which checkpoint.

    Attributes:
        ckpt_to_initialize_from: a checkpoint directory or file prefix.
        vars_to_warm_start: a regex over the trainable variables' names (default
            all of them), a list of regexes over all global variables, or a list
            of variables; None warm-starts nothing.
        var_name_to_vocab_info: not offered (vocabulary remapping); must be None.
        var_name_to_prev_var_name: variable name -> its name in the checkpoint.
    """

    ckpt_to_initialize_from: str
    vars_to_warm_start: Any = ".*"
    var_name_to_vocab_info: Any = None
    var_name_to_prev_var_name: Any = None


def _full_name(v: Any) -> str:
    """The name a variable is checkpointed under: a partitioned variable's parts
    ("emb/part_0") are slices of their full name ("emb"), as TF saves them."""
    info = getattr(v, "_save_slice_info", None)
    return info.full_name if info is not None else v.op.name


def _selected(vars_to_warm_start: Any) -> list[Any]:
    if vars_to_warm_start is None:
        return []
    if isinstance(vars_to_warm_start, str):
        pattern = re.compile(vars_to_warm_start)
        return [v for v in get_collection(GraphKeys.TRAINABLE_VARIABLES)
                if pattern.match(_full_name(v))]
    chosen = []
    for item in vars_to_warm_start:
        if isinstance(item, str):
            pattern = re.compile(item)
            chosen += [v for v in get_collection(GraphKeys.GLOBAL_VARIABLES)
                       if pattern.match(_full_name(v)) and v not in chosen]
        else:
            chosen.append(item)
    return chosen


def _ev_base(v: Any) -> str | None:
    """An EmbeddingVariable's name without its part (`emb` of `emb/part_1`): it is saved
    as `<name>[/part_<k>]-keys`, `-values`, ...; None for another variable."""
    if not isinstance(v, EmbeddingVariable):
        return None
    return re.sub(r"/part_\d+$", "", v.op.name)


def _plan(selected: list[Any], renames: dict[str, str], path: str
          ) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """(the warm Saver's var_list, the checkpoint names missing, what the checkpoint
    holds) for the selected variables.

    Raises:
        ValueError: an EmbeddingVariable renamed (its restore reads its own name).
    """
    stored = dict(list_variables(path))
    var_list: dict[str, Any] = {}
    wanted: set[str] = set()  # the checkpoint names the selected variables need
    for v in selected:
        base = _ev_base(v)
        if base is not None:
            if renames.get(base, base) != base:
                raise ValueError(f"Warm-starting EmbeddingVariable {base} from "
                                 f"{renames[base]} is not offered: it restores from its "
                                 "own name; rename the variable in the model instead.")
            # Restored through its own saveable: the table saved under this name, from
            # any number of parts, this part's ids.
            wanted.add(base + "-keys")
            var_list[v.op.name] = v
            continue
        name = _full_name(v)
        prev = renames.get(name, name)
        wanted.add(prev)
        # A part is keyed "<prev>/part_<k>": the Saver restores it as its slice of <prev>.
        var_list[prev + v.op.name[len(name):]] = v
    held = set(stored) | {re.sub(r"/part_\d+-keys$", "-keys", n) for n in stored}
    return var_list, sorted(n for n in wanted if n not in held), stored


def warm_start(spec: EstimatorSpec, settings: str | WarmStartSettings) -> EstimatorSpec:
    """`spec` with a scaffold whose init_fn restores the selected variables.

    Raises:
        ValueError: no checkpoint there, a selected variable it lacks (named),
            or vocabulary remapping asked for.
    """
    if isinstance(settings, (str, os.PathLike)):
        settings = WarmStartSettings(os.fspath(settings))
    if settings.var_name_to_vocab_info:
        raise ValueError("WarmStartSettings.var_name_to_vocab_info (vocabulary remapping) is "
                         "not offered; warm-start those variables by name instead.")
    ckpt = settings.ckpt_to_initialize_from
    if os.path.isdir(ckpt):
        path = latest_checkpoint(ckpt)
    else:
        path = ckpt if checkpoint_exists(ckpt) else None
    if not path:
        raise ValueError(f"warm_start_from={ckpt!r} has no checkpoint; give a checkpoint "
                         "file prefix or a directory with a 'checkpoint' file.")
    var_list, missing, stored = _plan(_selected(settings.vars_to_warm_start),
                                      dict(settings.var_name_to_prev_var_name or {}), path)
    if missing:
        raise ValueError(f"Warm-starting from {path}: variables {missing} are not in the "
                         f"checkpoint (it has {sorted(stored)}); narrow vars_to_warm_start "
                         "or map names with var_name_to_prev_var_name.")
    if not var_list:
        return spec
    warm_saver = saver_lib.Saver(var_list=var_list)
    user_init_fn = spec.scaffold.init_fn

    def init_fn(scaffold: Any, session: Any) -> None:
        if user_init_fn is not None:
            user_init_fn(session)
        logging.info("Warm-starting %d variables from %s.", len(var_list), path)
        warm_saver.restore(session, path)
    return spec._replace(scaffold=Scaffold(init_fn=init_fn, copy_from_scaffold=spec.scaffold))
