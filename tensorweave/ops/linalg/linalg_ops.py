"""`tf.qr` / `tf.linalg.qr`: the QR decomposition of (batches of) matrices.

Keras's orthogonal initializer (recurrent kernels) is built on it. The linalg
functions composed from other ops (trace, matrix_transpose, eye) follow its section.

Example:
    >>> q, r = tf.qr(tf.random_normal([4, 3]))     # q: [4, 3] orthonormal columns, r: [3, 3]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.op_outputs import op_result
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.array.fill_ops import fill, transpose, zeros
from tensorweave.ops.array.fill_ops import range as _tf_range
from tensorweave.ops.array.join_ops import concat
from tensorweave.ops.array.shape_ops import rank as _tf_rank
from tensorweave.ops.array.shape_ops import reshape
from tensorweave.ops.linalg.matrix_ops import matrix_diag, matrix_diag_part, matrix_set_diag
from tensorweave.ops.math.binary_ops import minimum
from tensorweave.ops.math.reduce_ops import reduce_sum
from tensorweave.ops.op_author import create_op, define_op


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
    op = create_op("Qr", [x], {"full_matrices": bool(full_matrices)},
                   name=name or "Qr")
    return op_result(op)


# ---- composites (tf.trace, tf.matrix_transpose, tf.eye): other ops, no op of their own ----
def trace(x: Any, name: str | None = None) -> Tensor:
    """`tf.trace` / `tf.linalg.trace`: sum of each inner matrix's main diagonal.

    Built as TF's: reduce_sum(matrix_diag_part(x), axis=-1).

    Example:
        >>> tf.trace(tf.ones([5, 3, 3]))   # [3, 3, 3, 3, 3]
    """
    with name_scope(name, "Trace", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return reduce_sum(matrix_diag_part(x), [-1], name=scope)


def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False
                     ) -> Tensor:
    """`tf.matrix_transpose` / `tf.linalg.transpose`: swaps the last two dimensions.

    Args:
        a: [..., M, N] tensor.
        conjugate: also complex-conjugate (the adjoint).

    Raises:
        ValueError: if `a` has a known rank below 2.

    Example:
        >>> tf.matrix_transpose(tf.zeros([4, 2, 3])).shape.as_list()
        [4, 3, 2]
    """
    with name_scope(name, "matrix_transpose", [a]):
        a = convert_to_tensor(a, name="a")
        r = a.shape.ndims
        if r is not None:
            if r < 2:
                raise ValueError("Argument 'a' should be a (batch) matrix, with rank >= 2. "
                                 f"Found: {a.shape}")
            perm: Any = list(range(r - 2)) + [r - 1, r - 2]
        else:  # unknown rank: perm = [0 .. rank-3, rank-1, rank-2] built at run time
            n = _tf_rank(a)
            perm = concat([_tf_range(n - 2), reshape(n - 1, [1]), reshape(n - 2, [1])], 0)
        return transpose(a, perm, conjugate=conjugate)


def eye(num_rows: Any, num_columns: Any = None, batch_shape: Any = None,
        dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """`tf.eye` / `tf.linalg.eye`: identity matrices, optionally batched.

    Args:
        num_rows: rows (int or int32 scalar tensor).
        num_columns: columns; defaults to `num_rows`.
        batch_shape: leading dims (list of ints), output [*batch_shape, rows, cols].
        dtype: element type.

    Example:
        >>> tf.eye(2, batch_shape=[3]).shape.as_list()
        [3, 2, 2]
    """
    dt = _dt.as_dtype(dtype).base_dtype
    batch = list(batch_shape) if batch_shape is not None else []
    with name_scope(name, "eye", [num_rows, num_columns]):
        static = all(isinstance(v, (int, np.integer)) for v in
                     [num_rows] + ([num_columns] if num_columns is not None else []) + batch)
        if static:
            rows = int(num_rows)
            cols = rows if num_columns is None else int(num_columns)
            value = np.broadcast_to(np.eye(rows, cols, dtype=dt.as_numpy_dtype),
                                    batch + [rows, cols])
            return convert_to_tensor(np.ascontiguousarray(value), dtype=dt)
        # Some size is a tensor: TF's construction, matrix_diag of ones (+ set_diag).
        rows_t = convert_to_tensor(num_rows, dtype=_dt.int32, name="num_rows")
        batch_t = convert_to_tensor(np.asarray(batch, np.int32)) if not any(
            isinstance(b, Tensor) for b in batch) else convert_to_tensor(batch, _dt.int32)
        one = convert_to_tensor(np.ones((), dt.as_numpy_dtype))
        if num_columns is None:
            diag_t = fill(concat([batch_t, reshape(rows_t, [1])], 0), one)
            return matrix_diag(diag_t)
        cols_t = convert_to_tensor(num_columns, dtype=_dt.int32, name="num_columns")
        size = minimum(rows_t, cols_t)
        diag_t = fill(concat([batch_t, reshape(size, [1])], 0), one)
        base = zeros(concat([batch_t, reshape(rows_t, [1]), reshape(cols_t, [1])], 0), dt)
        return matrix_set_diag(base, diag_t)
