"""`tf.multinomial` / `tf.random.categorical`: class indices drawn from logits.

One op, "Multinomial" (TF's name and attrs): logits [batch, classes] and a scalar
num_samples give [batch, num_samples] indices, each row drawn from
softmax(logits[row]). A logit of -inf is a class never drawn. Seeded like the other
random ops (random_ops.py): a fresh session replays the same draws.

Example:
    >>> ids = tf.random.categorical(tf.log([[0.5, 0.5]]), 5, seed=1)  # [1, 5] of 0/1
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value

from tensorweave.ops.random.random_ops import _rng, _seed_attrs

multinomial_op = define_op("Multinomial", inputs=("logits", "num_samples"),
                           attrs={"seed": None, "seed2": None, "output_dtype": _dt.int64},
                           stateful=True)


@multinomial_op.shape
def _(logits: Tensor, num_samples: Tensor, *, seed: Any, seed2: Any, output_dtype: Any) -> Any:
    if not logits.dtype.base_dtype.is_floating:
        raise TypeError(f"multinomial: logits {logits.name} must be floating point, got "
                        f"{logits.dtype.name}")
    if logits.shape.ndims not in (None, 2):
        raise ValueError(f"multinomial: logits {logits.name} must be a matrix [batch, "
                         f"num_classes], got shape {logits.shape}")
    out_dt = _dt.as_dtype(output_dtype).base_dtype
    if out_dt not in (_dt.int32, _dt.int64):
        raise TypeError(f"multinomial: output_dtype must be int32 or int64, got {out_dt.name}")
    n = constant_value(num_samples)
    batch = dimension_value(logits.shape[0]) if logits.shape.ndims == 2 else None
    return out_dt, TensorShape([batch, None if n is None else int(n)])


@multinomial_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, logits: Any, num_samples: Any, *, seed: Any, seed2: Any,
      output_dtype: Any) -> Any:
    x = np.asarray(logits, dtype=np.float64)
    n = int(np.asarray(num_samples))
    if n < 0:
        raise errors.InvalidArgumentError(None, None, f"multinomial: num_samples must be >= "
                                          f"0, got {n}")
    if x.ndim != 2 or x.shape[1] == 0:
        raise errors.InvalidArgumentError(None, None, f"multinomial: logits must be "
                                          f"[batch, num_classes > 0], got {list(x.shape)}")
    top = x.max(axis=1, keepdims=True)
    bad = np.flatnonzero(~np.isfinite(top[:, 0]))
    if bad.size:
        raise errors.InvalidArgumentError(None, None, f"multinomial: row {int(bad[0])} of "
                                          f"the logits has no finite maximum "
                                          f"({x[bad[0]].max()}): nothing to draw from")
    cdf = np.cumsum(np.exp(x - top), axis=1)  # -inf logits add 0: never drawn
    rng, lock = _rng(ctx, seed, seed2)
    with lock:
        u = rng.random((x.shape[0], n))
    # All rows in one search: row r's normalised cumulative sums lie in (r, r + 1], so
    # the rows laid end to end are one sorted array; side="right" sends a draw equal to
    # a sum to the next class, so a class of probability 0 is never returned.
    batch, classes = x.shape
    rows = np.arange(batch, dtype=np.float64)[:, None]
    flat = (cdf / cdf[:, -1:] + rows).reshape(-1)
    found = np.searchsorted(flat, (u + rows).reshape(-1), side="right").reshape(batch, n)
    found -= (rows * classes).astype(np.int64)
    out = np.minimum(found, classes - 1).astype(_dt.as_dtype(output_dtype).as_numpy_dtype)
    return out


multinomial_op.no_gradient()


def multinomial(logits: Any, num_samples: Any, seed: int | None = None,
                name: str | None = None, output_dtype: Any = None) -> Tensor:
    """`tf.multinomial`: `num_samples` class indices per row of `logits` (int64).

    Example:
        >>> tf.multinomial([[0.0, 1.0, 2.0]], num_samples=4, seed=3)
    """
    attrs = {**_seed_attrs(seed), "output_dtype": _dt.as_dtype(output_dtype or _dt.int64)}
    # TF 1.x's layout: multinomial/logits, multinomial/Multinomial/num_samples and the op
    # multinomial/Multinomial (the op wrapper's own scope converts num_samples).
    with name_scope(name, "multinomial", [logits]):
        logits = convert_to_tensor(logits, name="logits")
        with name_scope(None, "Multinomial", [logits, num_samples]) as scope:
            n = convert_to_tensor(num_samples, dtype=_dt.int32, name="num_samples")
            return create_op("Multinomial", [logits, n], attrs, scope).outputs[0]


def categorical(logits: Any, num_samples: Any, dtype: Any = None, seed: int | None = None,
                name: str | None = None) -> Tensor:
    """`tf.random.categorical`: `tf.multinomial` with TF 1.13's argument names.

    Example:
        >>> tf.random.categorical(tf.log([[0.1, 0.9]]), 10, seed=1)
    """
    return multinomial(logits, num_samples, seed, name or "categorical", dtype)
