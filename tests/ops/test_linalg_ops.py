"""Linear-algebra ops: band parts, diagonals, inverse, determinant, Cholesky, solve,
trace, transpose, eye, norm, tensordot and einsum, against NumPy, with gradient
checks (tf.test.compute_gradient_error) and the errors TF raises."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.ops.linalg import linalg_ops as comp
from tensorweave.ops.linalg import decomp_ops as dec
from tensorweave.ops.linalg import matrix_ops as mat
from tensorweave.ops.linalg.einsum_ops import einsum
from tensorweave.math_impl.norm_ops import norm
from tensorweave.math_impl.tensordot_ops import tensordot
from tensorweave.testing.tf_gradient_checker import compute_gradient_error

pytestmark = pytest.mark.usefixtures("fresh_graph")
RNG = np.random.default_rng(7)
DTYPES = [np.float32, np.float64]


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def rand(*shape, dtype=np.float64):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(dtype)


def well_conditioned(*shape, dtype=np.float64):
    """Random square matrices (batched) with a dominant diagonal: invertible."""
    n = shape[-1]
    return (rand(*shape) + n * np.eye(n)).astype(dtype)


def spd(*shape, dtype=np.float64):
    a = rand(*shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def grad_error(fn, x_value, delta=1e-6):
    """Largest Jacobian mismatch of fn at float64 x_value (one placeholder input)."""
    with tf.Session():
        x = tf.placeholder(tf.float64, x_value.shape)
        y = fn(x)
        return compute_gradient_error(x, list(x_value.shape), y, y.shape.as_list(),
                                      x_init_value=x_value, delta=delta)


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


# ---- band part -----------------------------------------------------------------------
def _np_band(x, lo, up):
    m, n = x.shape[-2:]
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    keep = ((lo < 0) | (i - j <= lo)) & ((up < 0) | (j - i <= up))
    return np.where(keep, x, 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 3), (2, 1, 3, 5)])
@pytest.mark.parametrize("lo,up", [(-1, -1), (0, 0), (-1, 0), (0, -1), (1, 2), (2, 0)])
def test_matrix_band_part_matches_numpy(dtype, shape, lo, up):
    x = rand(*shape, dtype=dtype)
    out = mat.matrix_band_part(x, lo, up)
    assert out.op.type == "MatrixBandPart" and out.shape.as_list() == list(shape)
    got = run(out)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, _np_band(x, lo, up))


def test_matrix_band_part_gradient_and_errors():
    assert grad_error(lambda x: mat.matrix_band_part(x, 1, 0), rand(2, 3, 4)) < 1e-8
    assert mat.band_part is mat.matrix_band_part
    with pytest.raises(errors.InvalidArgumentError, match="num_lower must be negative"):
        run(mat.matrix_band_part(rand(2, 2), 5, 0))
    with pytest.raises(ValueError, match="at least rank 2"):
        mat.matrix_band_part(rand(3), 0, 0)


# ---- diagonals -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_diag_ops_match_numpy(dtype):
    d = rand(2, 3, dtype=dtype)
    got = run(mat.matrix_diag(d))
    assert got.shape == (2, 3, 3) and got.dtype == dtype
    np.testing.assert_array_equal(got, np.stack([np.diag(v) for v in d]))
    x = rand(2, 3, 4, dtype=dtype)
    part = mat.matrix_diag_part(x)
    assert part.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(part), np.diagonal(x, axis1=-2, axis2=-1))
    new = rand(2, 3, dtype=dtype)
    ref = x.copy()
    ref[:, range(3), range(3)] = new
    np.testing.assert_array_equal(run(mat.matrix_set_diag(x, new)), ref)


def test_diag_and_diag_part_rank_k():
    d = rand(2, 3)
    out = mat.diag(d)
    assert out.shape.as_list() == [2, 3, 2, 3]
    ref = np.diag(d.ravel()).reshape(2, 3, 2, 3)
    np.testing.assert_array_equal(run(out), ref)
    back = mat.diag_part(out)
    assert back.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(back), d)
    np.testing.assert_array_equal(run(mat.diag([1.0, 2.0])), [[1, 0], [0, 2]])


def test_diagonal_gradients():
    assert grad_error(mat.matrix_diag, rand(2, 3)) < 1e-8
    assert grad_error(mat.matrix_diag_part, rand(2, 3, 3)) < 1e-8
    assert grad_error(mat.matrix_diag_part, rand(2, 3, 4)) < 1e-8   # non-square
    assert grad_error(lambda x: mat.matrix_set_diag(x, np.ones(3)), rand(3, 3)) < 1e-8
    assert grad_error(lambda d: mat.matrix_set_diag(np.ones((2, 3, 4)), d), rand(2, 3)) < 1e-8
    assert grad_error(mat.diag, rand(2, 2)) < 1e-8
    assert grad_error(mat.diag_part, rand(2, 3, 2, 3)) < 1e-8


def test_diagonal_errors():
    with pytest.raises(ValueError, match="diagonal of shape"):
        mat.matrix_set_diag(rand(3, 3), rand(4))
    with pytest.raises(ValueError, match="even, non-zero rank"):
        mat.diag_part(rand(2, 3, 4))
    with pytest.raises(ValueError, match="dimension i must"):
        mat.diag_part(rand(2, 3))
    with pytest.raises(ValueError, match="at least rank 1"):
        mat.matrix_diag(1.0)


# ---- trace, transpose, eye -------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_trace(dtype):
    x = rand(4, 3, 3, dtype=dtype)
    out = comp.trace(x)
    assert out.shape.as_list() == [4]
    np.testing.assert_allclose(run(out), np.trace(x, axis1=-2, axis2=-1), **tol(dtype))
    assert grad_error(comp.trace, rand(2, 3, 3)) < 1e-8


def test_matrix_transpose_static_and_dynamic_rank():
    x = rand(2, 3, 4)
    out = comp.matrix_transpose(x)
    assert out.shape.as_list() == [2, 4, 3]
    np.testing.assert_array_equal(run(out), np.swapaxes(x, -1, -2))
    p = tf.placeholder(tf.float64)
    np.testing.assert_array_equal(run(comp.matrix_transpose(p), {p: x}), np.swapaxes(x, -1, -2))
    with pytest.raises(ValueError, match="rank >= 2"):
        comp.matrix_transpose(rand(3))


def test_eye_forms():
    np.testing.assert_array_equal(run(comp.eye(3)), np.eye(3))
    got = run(comp.eye(2, 3, batch_shape=[4], dtype=tf.float64))
    assert got.shape == (4, 2, 3) and got.dtype == np.float64
    np.testing.assert_array_equal(got[1], np.eye(2, 3))
    n = tf.placeholder(tf.int32, [])
    np.testing.assert_array_equal(run(comp.eye(n), {n: 3}), np.eye(3))
    np.testing.assert_array_equal(run(comp.eye(n, 2, batch_shape=[2]), {n: 3})[0], np.eye(3, 2))


# ---- inverse, determinant, cholesky, solve -------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 2, 2, 2)])
def test_inverse_and_determinant_match_numpy(dtype, shape):
    a = well_conditioned(*shape, dtype=dtype)
    inv = dec.matrix_inverse(a)
    assert inv.shape.as_list() == list(shape)
    got = run(inv)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, np.linalg.inv(a), **tol(dtype))
    np.testing.assert_allclose(run(dec.matrix_inverse(a, adjoint=True)),
                               np.linalg.inv(np.swapaxes(a, -1, -2)), **tol(dtype))
    det = dec.matrix_determinant(a)
    assert det.shape.as_list() == list(shape[:-2])
    np.testing.assert_allclose(run(det), np.linalg.det(a), **tol(dtype))


def test_inverse_and_determinant_gradients():
    a = well_conditioned(2, 3, 3)
    assert grad_error(dec.matrix_inverse, a) < 1e-6
    assert grad_error(lambda x: dec.matrix_inverse(x, adjoint=True), a) < 1e-6
    assert grad_error(dec.matrix_determinant, a) < 1e-6


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_matches_numpy(dtype):
    a = spd(3, 4, 4, dtype=dtype)
    got = run(dec.cholesky(a))
    np.testing.assert_allclose(got, np.linalg.cholesky(a), **tol(dtype))
    # only the lower triangle is read
    junk = a + np.triu(np.ones((4, 4)), 1).astype(dtype)
    np.testing.assert_allclose(run(dec.cholesky(junk)), got, **tol(dtype))


def test_cholesky_gradient():
    # Differentiate through a symmetric construction, as TF's test does: the op
    # reads only one triangle, so a free perturbation of A would not be symmetric.
    def fn(x):
        sym = tf.matmul(x, x, transpose_b=True) + 3.0 * np.eye(3)
        return dec.cholesky(sym)
    assert grad_error(fn, rand(2, 3, 3)) < 1e-6


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("adjoint", [False, True])
def test_matrix_solve_matches_numpy(dtype, adjoint):
    a = well_conditioned(2, 3, 3, dtype=dtype)
    b = rand(2, 3, 2, dtype=dtype)
    out = dec.matrix_solve(a, b, adjoint=adjoint)
    assert out.shape.as_list() == [2, 3, 2]
    ref = np.linalg.solve(np.swapaxes(a, -1, -2) if adjoint else a, b)
    np.testing.assert_allclose(run(out), ref, **tol(dtype))


@pytest.mark.parametrize("adjoint", [False, True])
def test_matrix_solve_gradients(adjoint):
    a, b = well_conditioned(2, 3, 3), rand(2, 3, 2)
    assert grad_error(lambda x: dec.matrix_solve(x, b, adjoint=adjoint), a) < 1e-6
    assert grad_error(lambda y: dec.matrix_solve(a, y, adjoint=adjoint), b) < 1e-6


def test_decomposition_errors():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(errors.InvalidArgumentError, match="Input is not invertible") as e:
        run(dec.matrix_inverse(singular, name="inv"))
    assert "MatrixInverse" in str(e.value) and "inv" in str(e.value)
    with pytest.raises(errors.InvalidArgumentError, match="Input matrix is not invertible"):
        run(dec.matrix_solve(singular, np.ones((2, 1))))
    with pytest.raises(errors.InvalidArgumentError, match="Cholesky decomposition was not "
                       r"successful. The input might not be valid.") as e:
        run(dec.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]])))
    assert "Cholesky" in str(e.value)
    for fn in (dec.matrix_inverse, dec.matrix_determinant, dec.cholesky):
        with pytest.raises(ValueError, match="must be square"):
            fn(rand(2, 3))
    with pytest.raises(ValueError, match="at least rank 2"):
        dec.matrix_inverse(rand(3))
    with pytest.raises(TypeError, match="floating-point"):
        dec.matrix_inverse(np.eye(2, dtype=np.int32))
    with pytest.raises(ValueError, match="same\\s+number of rows"):
        dec.matrix_solve(rand(3, 3), rand(4, 1))
    p = tf.placeholder(tf.float64, [None, None])
    with pytest.raises(errors.InvalidArgumentError, match="must be square"):
        run(dec.matrix_determinant(p), {p: rand(2, 3)})


# ---- norm ------------------------------------------------------------------------------
NORM_CASES = [("euclidean", None), ("fro", None), (1, None), (2, None), (np.inf, None),
              (3, None), (0.5, 1), ("euclidean", -1), (1, 0), (np.inf, 2),
              ("fro", [1, 2]), ("euclidean", [-2, -1]), (1, [1, 2]), (np.inf, [1, 2]),
              (1, [2, 1]), (np.inf, [0, 2])]


def _np_norm(x, ord_, axis):
    if isinstance(axis, list):
        return np.linalg.norm(x, "fro" if ord_ == "euclidean" else ord_, axis=tuple(axis))
    if axis is None:
        x, axis = x.ravel(), 0
    return np.linalg.norm(x, 2 if ord_ in ("euclidean", "fro") else ord_, axis=axis)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord_,axis", NORM_CASES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm_matches_numpy(dtype, ord_, axis, keepdims):
    x = rand(2, 3, 4, dtype=dtype) + (0.1 if ord_ == 0.5 else 0.0)
    out = norm(x, ord=ord_, axis=axis, keepdims=keepdims)
    ref = _np_norm(x.astype(np.float64), ord_, axis)
    if keepdims:
        axes = range(3) if axis is None else ([a % 3 for a in axis] if isinstance(axis, list)
                                              else [axis % 3])
        ref = np.expand_dims(ref, tuple(sorted(axes)))
    assert out.shape.as_list() == list(np.shape(ref))
    got = run(out)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("ord_,axis", [("euclidean", None), (1, 1), (np.inf, 2), (3, 1),
                                       ("fro", [1, 2]), (1, [1, 2]), (np.inf, [1, 2])])
def test_norm_gradients(ord_, axis):
    x = rand(2, 3, 4) + np.sign(rand(2, 3, 4)) * 0.1   # away from |x| kinks at 0
    assert grad_error(lambda t: norm(t, ord=ord_, axis=axis), x) < 1e-6


def test_norm_errors():
    x = rand(2, 3)
    with pytest.raises(ValueError, match="supported vector norm"):
        norm(x, ord=-1)
    with pytest.raises(ValueError, match="supported vector norm"):
        norm(x, ord="nuc")
    with pytest.raises(ValueError, match="supported matrix norm"):
        norm(x, ord=3, axis=[0, 1])
    with pytest.raises(ValueError, match="ord'=2"):
        norm(x, ord=2, axis=[0, 1])
    with pytest.raises(ValueError, match="'axis' must be None"):
        norm(x, axis=[0, 0])
    with pytest.raises(ValueError, match="'axis' must be None"):
        norm(x, axis=[0, 1, 2])
    with pytest.raises(ValueError, match="both"):
        norm(x, keepdims=True, keep_dims=True)


# ---- tensordot -------------------------------------------------------------------------
TD_CASES = [((2, 3, 4), (4, 3, 5), [[1, 2], [1, 0]]), ((2, 3), (3, 4), 1),
            ((3,), (4,), 0), ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (2, 3), [[0, 1], [0, 1]]),
            ((2, 3, 4), (5, 4), [[-1], [-1]]), ((2, 3), (4, 3), [1, 1])]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb,axes", TD_CASES)
def test_tensordot_matches_numpy(dtype, sa, sb, axes):
    a, b = rand(*sa, dtype=dtype), rand(*sb, dtype=dtype)
    out = tensordot(a, b, axes)
    ref = np.tensordot(a, b, axes)
    assert out.shape.as_list() == list(ref.shape)
    np.testing.assert_allclose(run(out), ref, **tol(dtype))


@pytest.mark.parametrize("sa,sb,axes", TD_CASES[:4])
def test_tensordot_gradients(sa, sb, axes):
    a, b = rand(*sa), rand(*sb)
    assert grad_error(lambda x: tensordot(x, b, axes), a) < 1e-8
    assert grad_error(lambda y: tensordot(a, y, axes), b) < 1e-8


def test_tensordot_dynamic_shapes_and_errors():
    a, b = rand(2, 3, 4), rand(4, 3, 5)
    pa = tf.placeholder(tf.float64, [None, 3, 4])
    pb = tf.placeholder(tf.float64, [4, 3, None])
    out = tensordot(pa, pb, [[1, 2], [1, 0]])
    assert out.shape.ndims == 2
    np.testing.assert_allclose(run(out, {pa: a, pb: b}), np.tensordot(a, b, [[1, 2], [1, 0]]))
    with pytest.raises(ValueError, match="at least 0"):
        tensordot(a, b, -1)
    with pytest.raises(ValueError, match="must not be larger"):
        tensordot(a, rand(3), 2)
    with pytest.raises(ValueError, match="Different number of contraction axes"):
        tensordot(a, b, [[1, 2], [1]])
    with pytest.raises(ValueError, match="contracted dimensions must be equal"):
        tensordot(a, b, [[0], [0]])
    with pytest.raises(ValueError, match="integer or have length 2"):
        tensordot(a, b, [[0], [1], [2]])


# ---- einsum ----------------------------------------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),              # matmul
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),     # batch matmul
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (5, 3, 4)]),   # broadcast batch
    ("i,j->ij", [(3,), (4,)]),                    # outer product
    ("ii", [(3, 3)]),                             # trace (implicit output)
    ("ii->i", [(3, 3)]),                          # diagonal
    ("ij->ji", [(2, 3)]),                         # transpose
    ("ij->", [(2, 3)]),                           # full reduction
    ("ij->j", [(2, 3)]),                          # column sums
    ("ij,ij->i", [(2, 3), (2, 3)]),               # row-wise dot
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),   # chain
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),   # attention scores
    ("ij,jk", [(2, 3), (3, 4)]),                  # implicit matmul
    ("i...j,jk->i...k", [(2, 5, 3), (3, 4)]),     # ellipsis in the middle
    ("...ij->ij", [(2, 2, 3)]),                   # ellipsis summed away
    ("iij->j", [(3, 3, 2)]),
]


def _np_einsum(eq, *xs):
    if eq == "...ij->ij":
        return np.einsum("...ij->...ij", *xs).sum(0)
    return np.einsum(eq, *xs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("eq,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_numpy(dtype, eq, shapes):
    xs = [rand(*s, dtype=dtype) for s in shapes]
    out = einsum(eq, *xs)
    assert out.op.type == "Einsum" and out.op.get_attr("equation") == eq
    ref = _np_einsum(eq, *xs)
    assert out.shape.as_list() == list(ref.shape)
    got = run(out)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, ref, **tol(dtype))


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_gradients(eq, shapes):
    xs = [rand(*s) for s in shapes]
    for k in range(len(xs)):
        def fn(x, k=k):
            return einsum(eq, *[x if i == k else v for i, v in enumerate(xs)])
        assert grad_error(fn, xs[k]) < 1e-8, (eq, k)


def test_einsum_unknown_shapes_at_build_time():
    p = tf.placeholder(tf.float64, [None, 3])
    q = tf.placeholder(tf.float64)
    out = einsum("ij,jk->ik", p, q)
    assert out.shape.as_list() == [None, None]
    a, b = rand(2, 3), rand(3, 4)
    np.testing.assert_allclose(run(out, {p: a, q: b}), a @ b)
    with tf.Session():
        assert compute_gradient_error(p, [2, 3], einsum("ij,jk->ik", p, b), [2, 4],
                                      x_init_value=a, delta=1e-6) < 1e-8


def test_einsum_errors_name_the_equation():
    a, b = rand(2, 3), rand(4, 5)
    with pytest.raises(ValueError, match=r"'ij,jk->ik'.*label 'j' has size 3"):
        einsum("ij,jk->ik", a, b)
    with pytest.raises(ValueError, match=r"'ij->ik'.*'k' appears in no input"):
        einsum("ij->ik", a)
    with pytest.raises(ValueError, match=r"'ij,jk->ik'.*names 2 input"):
        einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match=r"'i1->i'.*letters"):
        einsum("i1->i", a)
    with pytest.raises(ValueError, match=r"'ij->ii'.*repeated"):
        einsum("ij->ii", a)
    with pytest.raises(ValueError, match=r"'ijk->i'.*rank 2"):
        einsum("ijk->i", a)
    with pytest.raises(ValueError, match="more than one '->'"):
        einsum("ij->j->i", a)
    p = tf.placeholder(tf.float64)
    with pytest.raises(errors.InvalidArgumentError, match="label 'j' has size"):
        run(einsum("ij,jk->ik", p, b), {p: a})
