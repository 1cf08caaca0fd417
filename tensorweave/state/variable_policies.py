"""`tf.VariableSynchronization` and `tf.VariableAggregation`: how a variable is meant to
be kept in step across replicas, as TF 1.x records it on every variable.

Our replicas share variables on parameter servers, so the modes change no update;
they are kept, checked, saved in the VariableDef and read back as TF does, and an
ON_READ variable is not trainable unless asked (TF 1.x's rule).

Example:
    >>> v = tf.Variable(0.0, synchronization=tf.VariableSynchronization.ON_READ,
    ...                 aggregation=tf.VariableAggregation.SUM)
    >>> v.trainable
    False
"""
from __future__ import annotations

import enum
from typing import Any


class VariableSynchronization(enum.Enum):
    """When a distributed variable's replicas are synchronized."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class _Aggregation(enum.Enum):
    # TF 1.x's VariableAggregation and TF 2's VariableAggregationV2 compare equal by
    # value (TF: `VariableAggregation.SUM == VariableAggregationV2.SUM`).
    def __eq__(self, other: Any) -> bool:
        if isinstance(other, _Aggregation):
            return bool(self.value == other.value)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)


class VariableAggregationV2(_Aggregation):
    """How the values a variable's replicas write are combined."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class VariableAggregation(_Aggregation):
    """TF 1.x's aggregation modes (ONLY_FIRST_TOWER is ONLY_FIRST_REPLICA's old name)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3


def resolve(synchronization: Any, aggregation: Any, trainable: Any,
            name: str | None) -> tuple[VariableSynchronization, Any, bool]:
    """(synchronization, aggregation, trainable) as TF 1.x settles them for a new variable.

    Raises:
        ValueError: a mode that is not one of the enums' values (naming the variable).
    """
    if aggregation is None:
        aggregation = VariableAggregation.NONE
    if not isinstance(aggregation, _Aggregation):
        try:
            aggregation = VariableAggregationV2(aggregation)
        except ValueError:
            raise ValueError(f"Invalid variable aggregation mode: {aggregation} for variable: "
                             f"{name}") from None
    if synchronization is None:
        synchronization = VariableSynchronization.AUTO
    try:
        synchronization = VariableSynchronization(synchronization)
    except ValueError:
        raise ValueError(f"Invalid variable synchronization mode: {synchronization} for "
                         f"variable: {name}") from None
    if trainable is None:
        trainable = synchronization != VariableSynchronization.ON_READ
    return synchronization, aggregation, bool(trainable)


__all__ = ["VariableSynchronization", "VariableAggregation", "VariableAggregationV2",
           "resolve"]
