"""`tf.qr` / `tf.linalg.qr`: the QR decomposition of (batches of) matrices.

Keras's orthogonal initializer (recurrent kernels) is built on it.

Example:
    >>> q, r = tf.qr(tf.random_normal([4, 3]))     # q: [4, 3] orthonormal columns, r: [3, 3]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import get_default_graph
from tensorweave.ops.op_author import define_op
from tensorweave.framework.op_outputs import op_result
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape

qr_op = define_op("Qr", inputs=("input",), attrs={"full_matrices": False})


@qr_op.shape
def _(x: Tensor, *, full_matrices: bool) -> Any:
    dt = x.dtype.base_dtype
    if not dt.is_floating:
        raise TypeError(f"qr needs a floating-point input, but {x.name} has dtype {dt.name}.")
    if x.shape.ndims is None:
        return [(dt, TensorShape(None)), (dt, TensorShape(None))]
    if x.shape.ndims < 2:
        raise ValueError(f"qr needs a matrix (rank >= 2), but {x.name} has shape {x.shape}.")
    *batch, m, n = x.shape.as_list()
    k = None if m is None or n is None else min(m, n)
    q_cols, r_rows = (m, m) if full_matrices else (k, k)
    return [(dt, TensorShape(batch + [m, q_cols])), (dt, TensorShape(batch + [r_rows, n]))]


@qr_op.kernel("CPU")
def _(x: np.ndarray, *, full_matrices: bool) -> Any:
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return q.astype(x.dtype), r.astype(x.dtype)


# TF 1.x differentiates Qr; tensorweave does not yet (it is used for initial values).
qr_op.no_gradient()


def qr(input: Any, full_matrices: bool = False, name: str | None = None
       ) -> tuple[Tensor, Tensor]:
    """`tf.qr`: q, r with input = q @ r, q's columns orthonormal, r upper triangular.

    Args:
        input: [..., M, N] floating point.
        full_matrices: q is [..., M, M] (else [..., M, min(M, N)]).

    Raises:
        ValueError: for an input of rank < 2.
    """
    x = convert_to_tensor(input, name="input")
    op = get_default_graph().create_op("Qr", [x], {"full_matrices": bool(full_matrices)},
                                       name=name or "Qr")
    return op_result(op)
