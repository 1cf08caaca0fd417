"""`tf.linalg`: matrix ops under their TF 1.13+ names (`tf.linalg.inv`, `det`,
`band_part`, ...); the TF1 top-level names (`tf.matrix_inverse`, `tf.matrix_band_part`,
`tf.einsum`, ...) are the same functions.

Example:
    >>> x = tf.linalg.solve(a, b)                  # a @ x = b
    >>> scores = tf.einsum("bqd,bkd->bqk", q, k)
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.ops.linalg.linalg_ops import (
    eye as eye, matrix_transpose as transpose, trace as trace)
from tensorweave.ops.linalg.decomp_ops import (
    cholesky as cholesky, matrix_determinant as det, matrix_inverse as inv,
    matrix_solve as solve)
from tensorweave.ops.linalg.einsum_ops import einsum as einsum
from tensorweave.ops.linalg.linalg_ops import qr as qr
from tensorweave.ops.linalg.matrix_ops import (
    matrix_band_part as band_part, matrix_diag as diag, matrix_diag_part as diag_part,
    matrix_set_diag as set_diag)
from tensorweave.math_impl.norm_ops import norm as norm
from tensorweave.math_impl.tensordot_ops import tensordot as tensordot
from tensorweave.ops.math.matmul_ops import matmul as matmul
from tensorweave.ops.nn.layer_ops import l2_normalize as l2_normalize
