"""The variable collections as lists: `tf.global_variables()`, `tf.trainable_variables()`...

Example:
    >>> [v.name for v in tf.trainable_variables()]
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.graph import GraphKeys, get_default_graph


def global_variables(scope: str | None = None) -> list[Any]:
    """Variables in GLOBAL_VARIABLES (shared across replicas; saved by Savers).

    Example:
        >>> [v.name for v in tf.global_variables()]
    """
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope: str | None = None) -> list[Any]:
    """Variables in TRAINABLE_VARIABLES (what optimizers update by default)."""
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list[Any]:
    """Variables in LOCAL_VARIABLES (per-process, e.g. epoch counters)."""
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope: str | None = None) -> list[Any]:
    """Variables in MODEL_VARIABLES."""
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope: str | None = None) -> list[Any]:
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


__all__ = ["global_variables", "all_variables", "trainable_variables", "local_variables",
           "model_variables", "moving_average_variables"]
