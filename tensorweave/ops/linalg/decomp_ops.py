"""Dense square-matrix ops: MatrixInverse, MatrixDeterminant, Cholesky, MatrixSolve.

Each is batched over leading dimensions like TF's, runs NumPy's LAPACK routines on
CPU, and raises InvalidArgumentError with TF's words when a matrix is singular or
not positive definite. Gradients follow TF's linalg_grad.py.

Example:
    >>> a = tf.constant([[4.0, 2.0], [2.0, 3.0]])
    >>> tf.matrix_inverse(a), tf.matrix_determinant(a), tf.cholesky(a)
    >>> tf.matrix_solve(a, [[1.0], [2.0]])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.array.shape_ops import expand_dims
from tensorweave.ops.linalg.linalg_ops import matrix_transpose
from tensorweave.ops.linalg.matrix_ops import matrix_band_part, matrix_diag_part, matrix_set_diag
from tensorweave.ops.math.binary_ops import multiply
from tensorweave.ops.math.cwise_ops import _is_float, check_dtype
from tensorweave.ops.math.matmul_ops import matmul
from tensorweave.ops.math.unary_ops import negative


def _square_shape(op_type: str, x: Tensor) -> TensorShape:
    """Checks dtype and squareness at build time; returns the static input shape."""
    check_dtype(op_type, x, _is_float)
    r = x.shape.ndims
    if r is None:
        return x.shape
    if r < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {r} for '{op_type}' "
                         f"(input {x.name} with shape {x.shape}); it needs (batches of) "
                         "square matrices.")
    m, n = x.shape.as_list()[-2:]
    if m is not None and n is not None and m != n:
        raise ValueError(f"Dimensions must be equal, but are {m} and {n} for '{op_type}' "
                         f"with input shape {x.shape} ({x.name}): the inner matrices must "
                         "be square.")
    return x.shape


def _check_square(x: np.ndarray) -> None:
    if x.ndim < 2:
        raise errors.InvalidArgumentError(
            None, None, f"Input must have rank >= 2, got {x.ndim}")
    if x.shape[-1] != x.shape[-2]:
        raise errors.InvalidArgumentError(
            None, None, f"Input matrix must be square. Got shape {list(x.shape)}")


def _adjoint(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


# ---- MatrixInverse -----------------------------------------------------------------
inverse_op = define_op("MatrixInverse", inputs=("input",), attrs={"adjoint": False})


@inverse_op.shape
def _(x: Tensor, *, adjoint: bool) -> Any:
    return x.dtype.base_dtype, _square_shape("MatrixInverse", x)


@inverse_op.kernel("CPU")
def _(x: Any, *, adjoint: bool) -> Any:
    x = np.asarray(x)
    _check_square(x)
    if adjoint:
        x = _adjoint(x)
    try:
        return np.linalg.inv(x).astype(x.dtype, copy=False)
    except np.linalg.LinAlgError:
        raise errors.InvalidArgumentError(
            None, None, "Input is not invertible. (MatrixInverse found a singular matrix; "
            "regularize it, e.g. add a small multiple of the identity.)") from None


@inverse_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # y = inv(A): dA = -y^H g y^H. With adjoint, y = inv(A^H), so dA = -y g^H y.
    y = op.outputs[0]
    if op.get_attr("adjoint"):
        return [negative(matmul(y, matmul(grad, y, adjoint_a=True)))]
    return [negative(matmul(y, matmul(grad, y, adjoint_b=True), adjoint_a=True))]


def matrix_inverse(input: Any, adjoint: bool = False,  # noqa: A002
                   name: str | None = None) -> Tensor:
    """`tf.matrix_inverse` / `tf.linalg.inv`: inverse of each [M, M] inner matrix.

    Args:
        input: [..., M, M] float or complex.
        adjoint: invert the conjugate transpose instead.

    Raises:
        ValueError: non-square static shape. At run time InvalidArgumentError
            "Input is not invertible." for a singular matrix.

    Example:
        >>> tf.matrix_inverse([[2.0, 0.0], [0.0, 4.0]])   # [[0.5, 0], [0, 0.25]]
    """
    x = convert_to_tensor(input, name="input")
    return create_tensor("MatrixInverse", [x], {"adjoint": bool(adjoint)},
                   name=name or "MatrixInverse")


# ---- MatrixDeterminant -------------------------------------------------------------
det_op = define_op("MatrixDeterminant", inputs=("input",))


@det_op.shape
def _(x: Tensor) -> Any:
    s = _square_shape("MatrixDeterminant", x)
    return x.dtype.base_dtype, s[:-2] if s.ndims is not None else TensorShape(None)


@det_op.kernel("CPU")
def _(x: Any) -> Any:
    x = np.asarray(x)
    _check_square(x)
    return np.asarray(np.linalg.det(x)).astype(x.dtype, copy=False)


@det_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # d det(A) / dA = det(A) * inv(A)^H, scaled per batch element.
    a_adj_inv = matrix_inverse(op.inputs[0], adjoint=True)
    scale = expand_dims(expand_dims(multiply(grad, op.outputs[0]), -1), -1)
    return [multiply(scale, a_adj_inv)]


def matrix_determinant(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.matrix_determinant` / `tf.linalg.det`: [..., M, M] -> [...] determinants.

    Example:
        >>> tf.matrix_determinant([[1.0, 2.0], [3.0, 4.0]])   # -2.0
    """
    x = convert_to_tensor(input, name="input")
    return create_tensor("MatrixDeterminant", [x], name=name or "MatrixDeterminant")


# ---- Cholesky ----------------------------------------------------------------------
cholesky_op = define_op("Cholesky", inputs=("input",))


@cholesky_op.shape
def _(x: Tensor) -> Any:
    return x.dtype.base_dtype, _square_shape("Cholesky", x)


@cholesky_op.kernel("CPU")
def _(x: Any) -> Any:
    x = np.asarray(x)
    _check_square(x)
    try:
        # Reads only the lower triangle, as TF's kernel does.
        return np.linalg.cholesky(x).astype(x.dtype, copy=False)
    except np.linalg.LinAlgError:
        raise errors.InvalidArgumentError(
            None, None, "Cholesky decomposition was not successful. The input might not be "
            "valid. (It must be symmetric/Hermitian positive definite; add a small "
            "multiple of the identity if it is only semi-definite.)") from None


@cholesky_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # TF's blocked formula (Murray 2016): with L = chol(A),
    #   P = Phi(L^H dL) (lower triangle, diagonal halved),
    #   dA = sym(L^-H P L^-1). TF solves with L; a triangular inverse is the same here.
    l_mat = op.outputs[0]
    l_inv = matrix_inverse(l_mat)
    middle = matmul(l_mat, grad, adjoint_a=True)
    middle = matrix_set_diag(middle, multiply(0.5, matrix_diag_part(middle)))
    middle = matrix_band_part(middle, -1, 0)
    grad_a = matmul(matmul(l_inv, middle, adjoint_a=True), l_inv)
    grad_a = grad_a + matrix_transpose(grad_a, conjugate=True)
    return [multiply(0.5, grad_a)]


def cholesky(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.cholesky` / `tf.linalg.cholesky`: lower-triangular L with A = L L^H.

    Only the lower triangle of the input is read.

    Raises:
        InvalidArgumentError at run time: "Cholesky decomposition was not
            successful..." for an input that is not positive definite.

    Example:
        >>> tf.cholesky([[4.0, 2.0], [2.0, 2.0]])   # [[2, 0], [1, 1]]
    """
    x = convert_to_tensor(input, name="input")
    return create_tensor("Cholesky", [x], name=name or "Cholesky")


# ---- MatrixSolve -------------------------------------------------------------------
solve_op = define_op("MatrixSolve", inputs=("matrix", "rhs"), attrs={"adjoint": False})


@solve_op.shape
def _(a: Tensor, b: Tensor, *, adjoint: bool) -> Any:
    sa = _square_shape("MatrixSolve", a)
    if a.dtype.base_dtype != b.dtype.base_dtype:
        raise TypeError(f"MatrixSolve: matrix {a.name} is {a.dtype.base_dtype.name} but rhs "
                        f"{b.name} is {b.dtype.base_dtype.name}; tf.cast one.")
    if b.shape.ndims is not None and b.shape.ndims < 2:
        raise ValueError(f"MatrixSolve: rhs {b.name} must be a (batch of) matrices [..., M, K] "
                         f"but has shape {b.shape}; add a trailing dimension of 1.")
    if sa.ndims is None or b.shape.ndims is None:
        return a.dtype.base_dtype, TensorShape(None) if b.shape.ndims is None else b.shape
    # TF requires equal batch dims (no broadcasting) and matching row counts.
    lead_a = TensorShape(sa.as_list()[:-1])
    lead_b = TensorShape(b.shape.as_list()[:-1])
    if not lead_a.is_compatible_with(lead_b):
        raise ValueError(f"MatrixSolve: matrix {a.name} of shape {a.shape} and rhs {b.name} "
                         f"of shape {b.shape} must have equal batch dimensions and the same "
                         "number of rows.")
    return a.dtype.base_dtype, lead_a.merge_with(lead_b).concatenate(b.shape[-1:])


@solve_op.kernel("CPU")
def _(a: Any, b: Any, *, adjoint: bool) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    _check_square(a)
    if b.ndim != a.ndim or b.shape[:-1] != a.shape[:-1]:
        raise errors.InvalidArgumentError(
            None, None, f"Input matrix and right-hand side must have the same number of rows "
            f"and batch dimensions: {list(a.shape)} vs. {list(b.shape)}")
    if adjoint:
        a = _adjoint(a)
    try:
        return np.linalg.solve(a, b).astype(b.dtype, copy=False)
    except np.linalg.LinAlgError:
        raise errors.InvalidArgumentError(
            None, None, "Input matrix is not invertible. (MatrixSolve found a singular "
            "matrix; use tf.matrix_solve_ls or regularize it.)") from None


@solve_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # C = op(A)^-1 B: dB = op(A)^-H g, dA = -dB C^H (or -C dB^H for adjoint).
    a = op.inputs[0]
    c = op.outputs[0]
    adjoint = op.get_attr("adjoint")
    grad_b = matrix_solve(a, grad, adjoint=not adjoint)
    if adjoint:
        grad_a = negative(matmul(c, grad_b, adjoint_b=True))
    else:
        grad_a = negative(matmul(grad_b, c, adjoint_b=True))
    return [grad_a, grad_b]


def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False,
                 name: str | None = None) -> Tensor:
    """`tf.matrix_solve` / `tf.linalg.solve`: X with matrix @ X = rhs.

    Args:
        matrix: [..., M, M] float or complex.
        rhs: [..., M, K], same batch dims.
        adjoint: solve with the conjugate transpose of `matrix`.

    Example:
        >>> tf.matrix_solve([[2.0, 0.0], [0.0, 4.0]], [[2.0], [8.0]])   # [[1], [2]]
    """
    with name_scope(name, "MatrixSolve", [matrix, rhs]) as scope:
        a = convert_to_tensor(matrix, name="matrix")
        b = convert_to_tensor(rhs, dtype=a.dtype.base_dtype, name="rhs") \
            if not isinstance(rhs, Tensor) else rhs
        return create_tensor("MatrixSolve", [a, b], {"adjoint": bool(adjoint)}, name=scope)
