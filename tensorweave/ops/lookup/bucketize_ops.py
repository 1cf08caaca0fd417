"""Bucketize stanza: the bucket index of each value among sorted boundaries.

Example:
    >>> bucketize(tf.constant([-1., 0., 5.]), boundaries=[0., 2.])   # [0, 1, 2]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import REQUIRED, create_tensor, define_op
from tensorweave.framework.tensor import Tensor

bucketize_op = define_op("Bucketize", inputs=("input",), attrs={"boundaries": REQUIRED})


@bucketize_op.shape
def _(x: Tensor, *, boundaries: list[float]) -> Any:
    dt = x.dtype.base_dtype
    if not (dt.is_integer or dt.is_floating):
        raise TypeError(f"Bucketize: input {x.name} must be numeric, got {dt.name}")
    if list(boundaries) != sorted(boundaries):
        raise ValueError(f"Bucketize: boundaries must be sorted, got {list(boundaries)}")
    return _dt.int32, x.shape


@bucketize_op.kernel("CPU")
def _(x: Any, *, boundaries: list[float]) -> Any:
    # A value equal to a boundary goes to the bucket above it (TF: upper_bound).
    edges = np.asarray(boundaries, dtype=np.float64)
    return np.searchsorted(edges, np.asarray(x, dtype=np.float64), side="right").astype(np.int32)


bucketize_op.no_gradient()


def bucketize(input: Any, boundaries: list[float],  # noqa: A002 (TF's name)
              name: str | None = None) -> Tensor:
    """Bucket index of each value: i where boundaries[i-1] <= value < boundaries[i].

    Example:
        >>> bucketize([1.5], boundaries=[0., 1., 2.])   # [2]
    """
    x = convert_to_tensor(input)
    return create_tensor(
        "Bucketize", [x], {"boundaries": [float(b) for b in boundaries]},
        name=name or "Bucketize")
