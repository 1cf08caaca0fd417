"""CountUpTo: increments an integer variable, failing with OutOfRangeError at a limit.

Input pipelines use it to count epochs (`tf.train.limit_epochs`): once the
counter reaches `num_epochs` the enqueue fails with OutOfRangeError, which the
QueueRunner treats as the normal end of input. Defined here only if the state
ops module does not already define it.

Example:
    >>> epochs = tf.Variable(0, dtype=tf.int64, trainable=False)
    >>> n = count_up_to(epochs, 2)     # 0, then 1, then OutOfRangeError
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.op_def import registered_ops
from tensorweave.ops.op_author import REQUIRED, create_tensor, define_op
from tensorweave.framework.tensor import Tensor

if "CountUpTo" not in registered_ops():
    count_up_to_op = define_op("CountUpTo", inputs=("&ref",), attrs={"limit": REQUIRED},
                               stateful=True)

    @count_up_to_op.shape
    def _(ref: Tensor, *, limit: int) -> Any:
        if not (ref.dtype.is_ref_dtype and ref.dtype.base_dtype.is_integer):
            raise TypeError(f"CountUpTo needs an integer variable reference, got {ref.name} "
                            f"of dtype {ref.dtype.name}.")
        return ref.dtype.base_dtype, ref.shape

    @count_up_to_op.kernel("CPU")
    def _(ref: Any, *, limit: int) -> np.ndarray:
        with ref.lock:  # read-check-increment must be atomic across enqueue threads
            cur = ref.read()
            if cur >= limit:
                raise errors.OutOfRangeError(None, None, f"Reached limit of {limit}")
            ref.value = np.asarray(cur + 1, dtype=cur.dtype)
            return np.array(cur, copy=True)

    count_up_to_op.no_gradient()


def count_up_to(ref: Any, limit: int, name: str | None = None) -> Tensor:
    """Increments variable `ref` and returns its old value; OutOfRangeError at `limit`.

    Args:
        ref: an integer tf.Variable (or its reference tensor).
        limit: the value at which counting stops.

    Example:
        >>> count_up_to(counter, 3)
    """
    ref_t = ref._ref() if hasattr(ref, "_ref") else ref
    return create_tensor("CountUpTo", [ref_t], {"limit": int(limit)},
                         name=name or "CountUpTo")
