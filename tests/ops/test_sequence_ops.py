"""Sequence / set / order array ops: sequence_mask, reverse (ReverseV2), reverse_sequence,
linspace, meshgrid, setdiff1d (ListDiff), unique_with_counts, sort / argsort."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.array import sequence_ops as S
from tensorweave.ops.stats import set_sort_ops as SS
from tensorweave.testing.tf_gradient_checker import compute_gradient_error

pytestmark = pytest.mark.usefixtures("graph")


def run(*fetches, feed=None):
    with tf.Session() as s:
        out = s.run(list(fetches), feed)
    return out[0] if len(fetches) == 1 else out


def grad_err(x_np, fn):
    x = tf.constant(x_np)
    y = fn(x)
    with tf.Session():
        return compute_gradient_error(x, list(x_np.shape), y, y.shape.as_list(),
                                      x_init_value=x_np)


# ---- sequence_mask ------------------------------------------------------------------
def test_sequence_mask_values_and_shapes():
    m = tf.sequence_mask([1, 3, 2], 5)
    assert m.dtype == tf.bool and m.shape.as_list() == [3, 5]
    np.testing.assert_array_equal(run(m), [[1, 0, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
    m = tf.sequence_mask([[0, 1], [3, 2]])  # maxlen = max = 3, rank 2 lengths
    np.testing.assert_array_equal(run(m), [[[0, 0, 0], [1, 0, 0]], [[1, 1, 1], [1, 1, 0]]])
    f = tf.sequence_mask([2, 0], 3, dtype=tf.float32)
    assert f.dtype == tf.float32
    np.testing.assert_array_equal(run(f), [[1, 1, 0], [0, 0, 0]])
    assert run(tf.sequence_mask(np.zeros([0], np.int32))).shape == (0, 0)


def test_sequence_mask_fed_lengths_and_negative_error():
    p = tf.placeholder(tf.int32, [None])
    m = tf.sequence_mask(p)
    np.testing.assert_array_equal(run(m, feed={p: [1, 2]}), [[1, 0], [1, 1]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"lengths \(Placeholder.*>= 0"):
        run(m, feed={p: [1, -2]})
    with pytest.raises(ValueError, match="lengths .* must be >= 0"):
        tf.sequence_mask([1, -1], 3)
    with pytest.raises(ValueError, match="maxlen must be a scalar"):
        tf.sequence_mask([1], [3, 4])
    with pytest.raises(TypeError, match="integers"):
        tf.sequence_mask([1.5])


# ---- ReverseV2 ----------------------------------------------------------------------
def test_reverse_values():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for axes in ([0], [1], [2], [-1], [0, 2], [], [2, 0, 1]):
        y = S.reverse(x, axes)
        assert y.op.type == "ReverseV2" and y.shape.as_list() == [2, 3, 4]
        np.testing.assert_array_equal(run(y), np.flip(x, axes) if axes else x)
    np.testing.assert_array_equal(run(S.reverse([[1, 2], [3, 4]], [1])), [[2, 1], [4, 3]])
    s = run(S.reverse(np.array([b"a", b"b"], object), [0]))
    assert list(s) == [b"b", b"a"]


def test_reverse_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"axis\[0\] = 2 is out of range.*rank 2"):
        S.reverse(x, [2])
    with pytest.raises(ValueError, match="more than once"):
        S.reverse(x, [1, -1])
    a = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"axis\[0\] = -3 is out of range"):
        run(S.reverse(x, a), feed={a: [-3]})


def test_reverse_gradient():
    x = np.random.RandomState(0).randn(2, 3, 2)
    assert grad_err(x, lambda t: S.reverse(t, [0, 2]) * np.arange(12.).reshape(2, 3, 2)) < 1e-6
    assert grad_err(x, lambda t: S.reverse(t, [1])) < 1e-6


# ---- ReverseSequence ------------------------------------------------------------------
def _rev_seq_np(x, lens, seq, batch):
    out = x.copy()
    for i, n in enumerate(lens):
        src = [slice(None)] * x.ndim
        src[batch] = i
        src[seq] = slice(0, n)
        piece = x[tuple(src)]
        ax = seq - (1 if batch < seq else 0)
        out[tuple(src)] = np.flip(piece, ax)
    return out


def test_reverse_sequence_values():
    y = S.reverse_sequence([[1, 2, 3], [4, 5, 6]], [2, 3], 1)
    assert y.op.type == "ReverseSequence"
    np.testing.assert_array_equal(run(y), [[2, 1, 3], [6, 5, 4]])
    x = np.arange(2 * 4 * 3 * 5, dtype=np.float32).reshape(2, 4, 3, 5)
    for seq, batch, lens in ((1, 0, [4, 0]), (3, 2, [5, 1, 3]), (0, 3, [1, 2, 0, 2, 1]),
                             (-1, 1, [2, 5, 1, 0])):
        got = S.reverse_sequence(x, lens, seq_axis=seq, batch_axis=batch)
        assert got.shape.as_list() == [2, 4, 3, 5]
        np.testing.assert_array_equal(run(got), _rev_seq_np(x, lens, seq % 4, batch))
    # TF1's older names
    got = S.reverse_sequence(x, [2, 3], seq_dim=1, batch_dim=0)
    np.testing.assert_array_equal(run(got), _rev_seq_np(x, [2, 3], 1, 0))


def test_reverse_sequence_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"seq_lengths \[2, 4\].*exceed the size 3"):
        S.reverse_sequence(x, [2, 4], 1)
    with pytest.raises(ValueError, match="has 3 entries but input .* has 2"):
        S.reverse_sequence(x, [1, 1, 1], 1)
    with pytest.raises(ValueError, match="must differ"):
        S.reverse_sequence(x, [1, 1], 0, 0)
    with pytest.raises(ValueError, match="seq_dim = 5 is out of range"):
        S.reverse_sequence(x, [1, 1], 5)
    p = tf.placeholder(tf.int32, [2])
    y = S.reverse_sequence(x, p, 1)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"seq_lengths\[1\] = 4 must be in \[0, 3\]"):
        run(y, feed={p: [1, 4]})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"seq_lengths\[0\] = -1"):
        run(y, feed={p: [-1, 2]})


def test_reverse_sequence_gradient():
    x = np.random.RandomState(1).randn(3, 4, 2)
    w = np.arange(24.).reshape(3, 4, 2)
    assert grad_err(x, lambda t: S.reverse_sequence(t, [4, 0, 2], 1) * w) < 1e-6
    assert grad_err(x, lambda t: S.reverse_sequence(t, [3, 1, 2, 0], 0, 1) * w) < 1e-6


# ---- LinSpace -------------------------------------------------------------------------
def test_linspace():
    y = S.linspace(10.0, 12.0, 3)
    assert y.op.type == "LinSpace" and y.dtype == tf.float32 and y.shape.as_list() == [3]
    np.testing.assert_allclose(run(y), [10.0, 11.0, 12.0])
    np.testing.assert_allclose(run(S.linspace(0.0, 1.0, 5)), np.linspace(0, 1, 5), rtol=1e-6)
    np.testing.assert_allclose(run(S.linspace(5.0, -1.0, 4)), [5.0, 3.0, 1.0, -1.0])
    assert run(S.linspace(2.0, 3.0, 1)).tolist() == [2.0]  # num = 1: just start
    d = S.linspace(tf.constant(0.0, tf.float64), 1, 3)
    assert d.dtype == tf.float64
    n = tf.placeholder(tf.int32, [])
    v = S.linspace(0.0, 2.0, n)
    assert v.shape.as_list() == [None]
    np.testing.assert_allclose(run(v, feed={n: 3}), [0.0, 1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="num must be > 0, got 0"):
        run(v, feed={n: 0})
    with pytest.raises(ValueError, match="num must be > 0"):
        S.linspace(0.0, 1.0, 0)
    with pytest.raises(TypeError, match="floating point"):
        S.linspace(tf.constant(0), 1, 3)
    start = tf.constant(0.0)
    assert tf.gradients(S.linspace(start, 1.0, 3), start) == [None]  # no gradient, as TF


# ---- meshgrid -------------------------------------------------------------------------
def test_meshgrid_xy_and_ij_match_numpy():
    a, b, c = np.array([1, 2, 3]), np.array([4, 5]), np.array([6.0, 7.0, 8.0, 9.0])
    for indexing in ("xy", "ij"):
        outs = S.meshgrid(a, b, indexing=indexing)
        expected = np.meshgrid(a, b, indexing=indexing)
        for o, e in zip(outs, expected):
            assert o.shape.as_list() == list(e.shape)
            np.testing.assert_array_equal(run(o), e)
        af, bf = a.astype(np.float64), b.astype(np.float64)
        outs = S.meshgrid(af, bf, c, indexing=indexing)
        for o, e in zip(run(*outs), np.meshgrid(af, bf, c, indexing=indexing)):
            np.testing.assert_array_equal(o, e)
    x, y = run(*S.meshgrid([1, 2, 3], [4, 5]))  # hand-checked: shape [2, 3]
    np.testing.assert_array_equal(x, [[1, 2, 3], [1, 2, 3]])
    np.testing.assert_array_equal(y, [[4, 4, 4], [5, 5, 5]])
    p = tf.placeholder(tf.float32, [None])
    g = S.meshgrid(p, np.ones(2, np.float32))
    assert run(g[0], feed={p: [1, 2, 3]}).shape == (2, 3)


def test_meshgrid_errors():
    with pytest.raises(ValueError, match="indexing must be 'xy' or 'ij'"):
        S.meshgrid([1], [2], indexing="yx")
    with pytest.raises(TypeError, match="unexpected keyword"):
        S.meshgrid([1], [2], sparse=True)


# ---- ListDiff / UniqueWithCounts -------------------------------------------------------
def test_setdiff1d():
    out, idx = pair = SS.setdiff1d([1, 2, 3, 4, 2], [2])
    assert out.op.type == "ListDiff" and idx.dtype == tf.int32
    o, i = run(*pair)
    assert o.tolist() == [1, 3, 4] and i.tolist() == [0, 2, 3]
    o, i = run(*SS.setdiff1d([1, 2, 3, 4, 5, 6], [1, 3, 5], index_dtype=tf.int64))
    assert o.tolist() == [2, 4, 6] and i.tolist() == [1, 3, 5] and i.dtype == np.int64
    o, i = run(*SS.setdiff1d(np.array([b"a", b"b", b"c"], object), np.array([b"b"], object)))
    assert o.tolist() == [b"a", b"c"] and i.tolist() == [0, 2]
    o, i = run(*SS.setdiff1d([1.5, 2.5], [1.5, 2.5]))  # everything removed
    assert o.shape == (0,) and i.shape == (0,)
    o, i = run(*SS.setdiff1d([3, 1], np.zeros([0], np.int32)))
    assert o.tolist() == [3, 1] and i.tolist() == [0, 1]
    with pytest.raises(ValueError, match="y must be a vector"):
        SS.setdiff1d([1, 2], [[1]])
    x = tf.constant([1.0, 2.0])
    assert tf.gradients(SS.setdiff1d(x, [1.0])[0], x) == [None]  # no gradient, as TF


def test_unique_with_counts():
    y, idx, count = SS.unique_with_counts([1, 1, 2, 4, 4, 4, 7, 8, 8])
    assert y.op.type == "UniqueWithCounts"
    y, idx, count = run(y, idx, count)
    assert y.tolist() == [1, 2, 4, 7, 8]
    assert idx.tolist() == [0, 0, 1, 2, 2, 2, 3, 4, 4]
    assert count.tolist() == [2, 1, 3, 1, 2]
    # first-appearance order, not sorted; int64 indices; floats and strings
    y, idx, count = run(*SS.unique_with_counts([3.0, 1.0, 3.0, 2.0, 1.0], out_idx=tf.int64))
    assert y.tolist() == [3.0, 1.0, 2.0] and idx.tolist() == [0, 1, 0, 2, 1]
    assert count.tolist() == [2, 2, 1] and count.dtype == np.int64
    y, idx, count = run(*SS.unique_with_counts(np.array([b"b", b"a", b"b"], object)))
    assert y.tolist() == [b"b", b"a"] and count.tolist() == [2, 1]
    y, idx, count = run(*SS.unique_with_counts(np.zeros([0], np.int32)))
    assert y.size == idx.size == count.size == 0
    with pytest.raises(ValueError, match="x must be a vector"):
        SS.unique_with_counts([[1, 2]])


# ---- sort / argsort ----------------------------------------------------------------
def test_sort_and_argsort_match_numpy():
    x = np.random.RandomState(2).randn(3, 4, 5).astype(np.float32)
    for axis in (0, 1, 2, -1, -3):
        s = SS.sort(x, axis)
        assert s.shape.as_list() == [3, 4, 5]
        np.testing.assert_array_equal(run(s), np.sort(x, axis))
        np.testing.assert_array_equal(run(SS.sort(x, axis, "DESCENDING")), -np.sort(-x, axis))
        a = SS.argsort(x, axis)
        assert a.dtype == tf.int32
        np.testing.assert_array_equal(run(a), np.argsort(x, axis, kind="stable"))
        np.testing.assert_array_equal(run(SS.argsort(x, axis, "DESCENDING")),
                                      np.argsort(-x, axis, kind="stable"))
    assert run(SS.sort([3, 1, 2])).tolist() == [1, 2, 3]
    # ties keep the lower index first, both directions (stable)
    assert run(SS.argsort([2, 1, 2, 1])).tolist() == [1, 3, 0, 2]
    assert run(SS.argsort([2, 1, 2, 1], direction="DESCENDING", stable=True)).tolist() == \
        [0, 2, 1, 3]
    p = tf.placeholder(tf.float32, [None, None])
    np.testing.assert_array_equal(run(SS.sort(p, 0), feed={p: x[0]}), np.sort(x[0], 0))


def test_sort_gradient_and_errors():
    x = np.random.RandomState(3).randn(3, 4)
    assert grad_err(x, lambda t: SS.sort(t, 0) * np.arange(12.).reshape(3, 4)) < 1e-6
    with pytest.raises(ValueError, match="direction must be one of ASCENDING, DESCENDING"):
        SS.sort([1, 2], direction="UP")
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        SS.sort(np.zeros((2, 2)), 2)
    with pytest.raises(ValueError, match="axis must be a constant scalar"):
        SS.sort([1, 2], tf.placeholder(tf.int32, []))
    with pytest.raises(ValueError, match="rank >= 1"):
        SS.sort(3.0)
