"""Structural matrix ops: band parts and diagonals (`tf.matrix_band_part`,
`tf.matrix_diag(_part)`, `tf.matrix_set_diag`, `tf.diag(_part)`). The Python
composites `tf.trace`, `tf.matrix_transpose` and `tf.eye` are in `linalg_ops`.

Every op works on the last two dimensions and is batched over the leading ones, as
TF's. Gradients follow TF's array_grad.py.

Example:
    >>> x = tf.reshape(tf.range(9.0), [3, 3])
    >>> tf.matrix_band_part(x, 0, -1)      # upper triangle
    >>> tf.matrix_diag_part(x)             # [0, 4, 8]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.array.fill_ops import zeros_like


def _need_rank(op_type: str, x: Tensor, least: int) -> None:
    r = x.shape.ndims
    if r is not None and r < least:
        raise ValueError(f"Shape must be at least rank {least} but is rank {r} for "
                         f"'{op_type}' (input {x.name} with shape {x.shape}).")


def _blank(x: np.ndarray) -> np.ndarray:
    """An array like `x` holding the dtype's zero (b'' for strings)."""
    if x.dtype == object:
        return np.full(x.shape, b"", dtype=object)
    return np.zeros_like(x)


# ---- MatrixBandPart ----------------------------------------------------------------
band_part_op = define_op("MatrixBandPart", inputs=("input", "num_lower", "num_upper"))


@band_part_op.shape
def _(x: Tensor, lower: Tensor, upper: Tensor) -> Any:
    _need_rank("MatrixBandPart", x, 2)
    for t in (lower, upper):
        if t.shape.ndims not in (None, 0):
            raise ValueError(f"MatrixBandPart: num_lower and num_upper must be scalars, but "
                             f"{t.name} has shape {t.shape}.")
    return x.dtype.base_dtype, x.shape


@band_part_op.kernel("CPU")
def _(x: Any, lower: Any, upper: Any) -> Any:
    x = np.asarray(x)
    m, n = x.shape[-2:]
    lo, up = int(lower), int(upper)
    # TF rejects bands wider than the matrix rather than clamping them.
    if lo > m:
        raise errors.InvalidArgumentError(
            None, None, f"num_lower must be negative or less or equal to number of rows "
            f"({m}) got: {lo}")
    if up > n:
        raise errors.InvalidArgumentError(
            None, None, f"num_upper must be negative or less or equal to number of columns "
            f"({n}) got: {up}")
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    keep = ((lo < 0) | (i - j <= lo)) & ((up < 0) | (j - i <= up))
    return np.where(keep, x, _blank(x))


@band_part_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [matrix_band_part(grad, op.inputs[1], op.inputs[2]), None, None]


def matrix_band_part(input: Any, num_lower: Any, num_upper: Any,  # noqa: A002
                     name: str | None = None) -> Tensor:
    """`tf.matrix_band_part` / `tf.linalg.band_part`: zero everything outside a band.

    Keeps element (i, j) of each inner matrix where `i - j <= num_lower` and
    `j - i <= num_upper`; a negative bound keeps that whole triangle.

    Args:
        input: [..., M, N] tensor.
        num_lower: subdiagonals to keep (int64 scalar; negative = all).
        num_upper: superdiagonals to keep (int64 scalar; negative = all).

    Example:
        >>> tf.matrix_band_part(tf.ones([3, 3]), -1, 0)   # lower triangle of ones
    """
    x = convert_to_tensor(input, name="input")
    lo = convert_to_tensor(num_lower, dtype=_dt.int64, name="num_lower")
    up = convert_to_tensor(num_upper, dtype=_dt.int64, name="num_upper")
    return create_tensor("MatrixBandPart", [x, lo, up], name=name or "MatrixBandPart")


band_part = matrix_band_part


# ---- MatrixDiag / MatrixDiagPart / MatrixSetDiag -----------------------------------
matrix_diag_op = define_op("MatrixDiag", inputs=("diagonal",))


@matrix_diag_op.shape
def _(d: Tensor) -> Any:
    _need_rank("MatrixDiag", d, 1)
    if d.shape.ndims is None:
        return d.dtype.base_dtype, TensorShape(None)
    return d.dtype.base_dtype, d.shape.concatenate([d.shape.as_list()[-1]])


@matrix_diag_op.kernel("CPU")
def _(d: Any) -> Any:
    d = np.asarray(d)
    n = d.shape[-1]
    out = np.zeros(d.shape + (n,), d.dtype) if d.dtype != object else \
        np.full(d.shape + (n,), b"", object)
    idx = np.arange(n)
    out[..., idx, idx] = d
    return out


@matrix_diag_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [matrix_diag_part(grad)]


matrix_diag_part_op = define_op("MatrixDiagPart", inputs=("input",))


@matrix_diag_part_op.shape
def _(x: Tensor) -> Any:
    _need_rank("MatrixDiagPart", x, 2)
    if x.shape.ndims is None:
        return x.dtype.base_dtype, TensorShape(None)
    *batch, m, n = x.shape.as_list()
    k = None if m is None or n is None else min(m, n)
    return x.dtype.base_dtype, TensorShape(batch + [k])


@matrix_diag_part_op.kernel("CPU")
def _(x: Any) -> Any:
    return np.diagonal(np.asarray(x), axis1=-2, axis2=-1).copy()


@matrix_diag_part_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    dims = op.inputs[0].shape[-2:] if op.inputs[0].shape.ndims is not None else None
    if dims is not None and dims.is_fully_defined() and dims[0] == dims[1]:
        return [matrix_diag(grad)]
    return [matrix_set_diag(zeros_like(op.inputs[0]), grad)]


set_diag_op = define_op("MatrixSetDiag", inputs=("input", "diagonal"))


@set_diag_op.shape
def _(x: Tensor, d: Tensor) -> Any:
    _need_rank("MatrixSetDiag", x, 2)
    _need_rank("MatrixSetDiag", d, 1)
    if x.dtype.base_dtype != d.dtype.base_dtype:
        raise TypeError(f"MatrixSetDiag: input {x.name} is {x.dtype.base_dtype.name} but "
                        f"diagonal {d.name} is {d.dtype.base_dtype.name}; tf.cast one.")
    if x.shape.ndims is not None and d.shape.ndims is not None:
        *batch, m, n = x.shape.as_list()
        k = None if m is None or n is None else min(m, n)
        want = TensorShape(batch + [k])
        if not d.shape.is_compatible_with(want):
            raise ValueError(f"MatrixSetDiag: diagonal {d.name} has shape {d.shape} but input "
                             f"{x.name} of shape {x.shape} needs a diagonal of shape {want}.")
    return x.dtype.base_dtype, x.shape


@set_diag_op.kernel("CPU")
def _(x: Any, d: Any) -> Any:
    x, d = np.asarray(x), np.asarray(d)
    k = min(x.shape[-2:]) if x.ndim >= 2 else 0
    if x.ndim < 2 or d.shape != x.shape[:-2] + (k,):
        raise errors.InvalidArgumentError(
            None, None, f"MatrixSetDiag: diagonal must have shape {list(x.shape[:-2]) + [k]} "
            f"for input of shape {list(x.shape)}, got {list(d.shape)}")
    out = x.copy()
    idx = np.arange(k)
    out[..., idx, idx] = d
    return out


@set_diag_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [matrix_set_diag(grad, zeros_like(op.inputs[1])), matrix_diag_part(grad)]


def matrix_diag(diagonal: Any, name: str | None = None, k: int = 0) -> Tensor:
    """`tf.matrix_diag` / `tf.linalg.diag`: [..., N] -> [..., N, N] with that diagonal.

    Example:
        >>> tf.matrix_diag([[1.0, 2.0]])    # [[[1, 0], [0, 2]]]
    """
    if k != 0:
        raise ValueError("matrix_diag: only the main diagonal (k=0) is supported in "
                         "tensorweave; build off-diagonals with tf.pad.")
    d = convert_to_tensor(diagonal, name="diagonal")
    return create_tensor("MatrixDiag", [d], name=name or "MatrixDiag")


def matrix_diag_part(input: Any, name: str | None = None, k: int = 0) -> Tensor:  # noqa: A002
    """`tf.matrix_diag_part` / `tf.linalg.diag_part`: [..., M, N] -> [..., min(M, N)].

    Example:
        >>> tf.matrix_diag_part(tf.eye(3))   # [1, 1, 1]
    """
    if k != 0:
        raise ValueError("matrix_diag_part: only the main diagonal (k=0) is supported.")
    x = convert_to_tensor(input, name="input")
    return create_tensor("MatrixDiagPart", [x], name=name or "MatrixDiagPart")


def matrix_set_diag(input: Any, diagonal: Any, name: str | None = None,  # noqa: A002
                    k: int = 0) -> Tensor:
    """`tf.matrix_set_diag` / `tf.linalg.set_diag`: replaces the main diagonal.

    Example:
        >>> tf.matrix_set_diag(tf.zeros([2, 2]), [3.0, 4.0])   # [[3, 0], [0, 4]]
    """
    if k != 0:
        raise ValueError("matrix_set_diag: only the main diagonal (k=0) is supported.")
    x = convert_to_tensor(input, name="input")
    d = convert_to_tensor(diagonal, dtype=x.dtype.base_dtype, name="diagonal") \
        if not isinstance(diagonal, Tensor) else diagonal
    return create_tensor("MatrixSetDiag", [x, d], name=name or "MatrixSetDiag")


# ---- Diag / DiagPart (rank k <-> rank 2k) ------------------------------------------
diag_op = define_op("Diag", inputs=("diagonal",))


@diag_op.shape
def _(d: Tensor) -> Any:
    _need_rank("Diag", d, 1)
    return d.dtype.base_dtype, d.shape.concatenate(d.shape) if d.shape.ndims is not None \
        else TensorShape(None)


@diag_op.kernel("CPU")
def _(d: Any) -> Any:
    d = np.asarray(d)
    if d.ndim < 1:
        raise errors.InvalidArgumentError(None, None, "Diag: input must be at least rank 1, "
                                          f"got shape {list(d.shape)}")
    flat = d.reshape(-1)
    out = np.zeros((flat.size, flat.size), d.dtype)
    np.fill_diagonal(out, flat)
    return out.reshape(d.shape + d.shape)


@diag_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [diag_part(grad)]


diag_part_op = define_op("DiagPart", inputs=("input",))


@diag_part_op.shape
def _(x: Tensor) -> Any:
    r = x.shape.ndims
    if r is None:
        return x.dtype.base_dtype, TensorShape(None)
    if r == 0 or r % 2:
        raise ValueError(f"DiagPart: input {x.name} must have an even, non-zero rank, but "
                         f"has shape {x.shape}.")
    dims = x.shape.as_list()
    half = r // 2
    out = []
    for a, b in zip(dims[:half], dims[half:]):
        if a is not None and b is not None and a != b:
            raise ValueError(f"DiagPart: input {x.name} has shape {x.shape}; dimension i must "
                             f"equal dimension i + {half}.")
        out.append(a if a is not None else b)
    return x.dtype.base_dtype, TensorShape(out)


@diag_part_op.kernel("CPU")
def _(x: Any) -> Any:
    x = np.asarray(x)
    half = x.ndim // 2
    if x.ndim == 0 or x.ndim % 2 or x.shape[:half] != x.shape[half:]:
        raise errors.InvalidArgumentError(
            None, None, f"DiagPart: input must have shape [D1..Dk, D1..Dk], got "
            f"{list(x.shape)}")
    n = int(np.prod(x.shape[:half]))
    return np.diagonal(x.reshape(n, n)).reshape(x.shape[:half]).copy()


@diag_part_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [diag(grad)]


def diag(diagonal: Any, name: str | None = None) -> Tensor:
    """`tf.diag`: rank-k `diagonal` -> rank-2k tensor, out[i..., i...] = diagonal[i...].

    Example:
        >>> tf.diag([1.0, 2.0])   # [[1, 0], [0, 2]]
    """
    d = convert_to_tensor(diagonal, name="diagonal")
    return create_tensor("Diag", [d], name=name or "Diag")


def diag_part(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.diag_part`: the inverse of `tf.diag` (rank 2k -> rank k).

    Example:
        >>> tf.diag_part(tf.diag([1.0, 2.0]))   # [1, 2]
    """
    x = convert_to_tensor(input, name="input")
    return create_tensor("DiagPart", [x], name=name or "DiagPart")
