"""Array ops: forward values vs NumPy, static shapes, errors, gradients."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.convert import constant_value
from tensorweave.ops import array as A

pytestmark = pytest.mark.usefixtures("graph")

RTOL, ATOL = 1e-6, 1e-6


def run(*fetches, feed=None):
    with tf.Session() as s:
        out = s.run(list(fetches), feed)
    return out[0] if len(fetches) == 1 else out


def X(*shape, dtype=np.float32):
    return np.arange(np.prod(shape), dtype=dtype).reshape(shape)


def check(t, expected, shape=None):
    """Runs t, compares with NumPy and checks the static shape is compatible / exact."""
    got = run(t)
    expected = np.asarray(expected)
    assert np.shape(got) == expected.shape
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
    assert t.shape.is_compatible_with(expected.shape)
    if shape is not None:
        assert t.shape.as_list() == shape


# ---- forward ---------------------------------------------------------------------
def test_reshape_with_minus_one_and_static_shape():
    x = X(2, 3, 4)
    check(A.reshape(x, [4, -1]), x.reshape(4, -1), [4, 6])
    check(A.reshape(x, [-1]), x.reshape(-1), [24])
    p = tf.placeholder(tf.float32, [None, 4])
    assert A.reshape(p, [-1, 2, 2]).shape.as_list() == [None, 2, 2]


def test_reshape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"6 elements.*\[4\].*\(2, 3\)"):
        A.reshape(np.zeros((2, 3), np.float32), [4])
    with pytest.raises(ValueError, match="at most one"):
        A.reshape(np.zeros((2, 3), np.float32), [-1, -1])


def test_reshape_runtime_mismatch():
    p = tf.placeholder(tf.float32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="3 values"):
        run(A.reshape(p, [2, 2]), feed={p: [1, 2, 3]})


def test_reshape_with_stacked_and_shape_of_tensors():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    assert A.reshape(x, A.stack([-1, 4])).shape.as_list() == [None, 4]
    y = A.reshape(x, A.stack([A.shape(x)[0], 12]))
    assert y.shape.as_list() == [None, 12]
    z = tf.constant(X(2, 3))
    assert A.reshape(z, A.stack([3, -1])).shape.as_list() == [3, 2]
    assert A.zeros(A.shape(z)).shape.as_list() == [2, 3]
    assert A.zeros([A.shape(x)[1], 2]).shape.as_list() == [3, 2]
    out = run(y, feed={x: X(2, 3, 4)})
    np.testing.assert_array_equal(out, X(2, 12))


def test_transpose():
    x = X(2, 3, 4)
    check(A.transpose(x), x.T, [4, 3, 2])
    check(A.transpose(x, [1, 0, 2]), x.transpose(1, 0, 2), [3, 2, 4])
    with pytest.raises(ValueError, match="not a permutation"):
        A.transpose(x, [0, 0, 1])
    p = tf.placeholder(tf.float32)  # unknown rank: perm computed at run time
    np.testing.assert_array_equal(run(A.transpose(p), feed={p: x}), x.T)


def test_concat_stack_unstack():
    a, b = X(2, 3), X(2, 3) + 10
    check(A.concat([a, b], 0), np.concatenate([a, b], 0), [4, 3])
    check(A.concat([a, b], -1), np.concatenate([a, b], -1), [2, 6])
    check(A.stack([a, b], axis=1), np.stack([a, b], 1), [2, 2, 3])
    check(A.stack([a, b], axis=-1), np.stack([a, b], -1), [2, 3, 2])
    parts = A.unstack(a, axis=1)
    assert len(parts) == 3
    for i, p in enumerate(parts):
        check(p, a[:, i], [2])
    p = tf.placeholder(tf.float32, [None, 3])
    assert A.concat([p, a], 0).shape.as_list() == [None, 3]
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(2, 4\)|dimension 1"):
        A.concat([a, X(2, 4)], 0)
    with pytest.raises(ValueError, match="shape"):
        A.stack([a, X(3, 2)])
    with pytest.raises(ValueError, match="num="):
        A.unstack(tf.placeholder(tf.float32, [None]))


def test_split():
    x = X(4, 6)
    outs = A.split(x, 3, axis=1)
    for o, e in zip(outs, np.split(x, 3, axis=1)):
        check(o, e, [4, 2])
    outs = A.split(x, [1, -1, 2], axis=-1)
    assert [o.shape.as_list() for o in outs] == [[4, 1], [4, 3], [4, 2]]
    for o, e in zip(outs, np.split(x, [1, 4], axis=1)):
        check(o, e)
    with pytest.raises(ValueError, match="divisible"):
        A.split(x, 4, axis=1)
    with pytest.raises(ValueError, match="add up"):
        A.split(x, [1, 2], axis=1)


def test_expand_dims_squeeze():
    x = X(2, 3)
    check(A.expand_dims(x, 0), x[None], [1, 2, 3])
    check(A.expand_dims(x, -1), x[..., None], [2, 3, 1])
    y = X(1, 2, 1)
    check(A.squeeze(y), y.squeeze(), [2])
    check(A.squeeze(y, axis=[-1]), y.squeeze(-1), [1, 2])
    with pytest.raises(ValueError, match="squeeze dim"):
        A.squeeze(y, axis=[1])
    assert A.squeeze(tf.placeholder(tf.float32, [None, 1])).shape.ndims is None
    assert A.squeeze(tf.placeholder(tf.float32, [None, 1]), [1]).shape.as_list() == [None]


def test_slice_and_strided_slice():
    x = X(3, 4, 5)
    check(A.slice(x, [1, 0, 2], [2, -1, 2]), x[1:3, :, 2:4], [2, 4, 2])
    with pytest.raises(ValueError, match="out of bounds"):
        A.slice(x, [2, 0, 0], [2, 1, 1])
    check(A.strided_slice(x, [0, 1], [3, 4], [2, 2]), x[0:3:2, 1:4:2], [2, 2, 5])
    check(A.strided_slice(x, [0, 0, 0], [0, 0, 1], [1, 1, 1], begin_mask=3, end_mask=3,
                          shrink_axis_mask=4), x[:, :, 0], [3, 4])
    check(A.strided_slice(x, [0, 1], [0, 2], [1, 1], ellipsis_mask=1, new_axis_mask=0),
          x[..., 1:2], [3, 4, 1])
    check(A.strided_slice(x, [0, 0], [0, 0], [1, 1], new_axis_mask=1, begin_mask=2,
                          end_mask=2), x[None, :], [1, 3, 4, 5])


@pytest.mark.parametrize("key", [
    1, -1, np.s_[::-1], np.s_[1:], np.s_[-2:], np.s_[::2], np.s_[3:0:-2], np.s_[..., 0],
    np.s_[:, None, 1], np.s_[None], np.s_[..., None], np.s_[1, ..., ::-1], np.s_[-1, -1, -1],
    np.s_[:, 1:3, ::-2], np.s_[0:100], np.s_[-100:2], np.s_[1, None, ..., None, 2],
])
def test_getitem_matches_numpy(key):
    x = X(3, 4, 5)
    t = tf.constant(x)
    check(t[key], x[key], list(x[key].shape))


def test_getitem_with_tensors_and_errors():
    x = X(3, 4)
    t = tf.constant(x)
    i = tf.placeholder(tf.int32, [])
    y = t[i, 1:]
    assert y.shape.as_list() == [3]
    with tf.Session() as s:
        np.testing.assert_array_equal(s.run(y, {i: 2}), x[2, 1:])
        np.testing.assert_array_equal(s.run(t[1:i], {i: 3}), x[1:3])
        with pytest.raises(tf.errors.InvalidArgumentError):
            s.run(y, {i: 5})
    with pytest.raises(ValueError, match="out of bounds"):
        t[5]
    with pytest.raises(TypeError, match="Unsupported index"):
        t[[0, 1]]
    with pytest.raises(ValueError, match="stride"):
        t[::0]
    a, b, c = t  # __iter__ goes through __getitem__
    check(c, x[2])


def test_gather_and_one_hot():
    x = X(4, 3)
    idx = np.array([[3, 0], [1, 1]])
    check(A.gather(x, idx), x[idx], [2, 2, 3])
    check(A.gather(x, [2, 0], axis=1), x[:, [2, 0]], [4, 2])
    check(A.gather(x, [2, 0], axis=-1), x[:, [2, 0]], [4, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in"):
        run(A.gather(x, [4]))
    oh = A.one_hot([0, 2, 5, -1], 3)
    check(oh, np.eye(3, dtype=np.float32)[[0, 2]].tolist() + [[0, 0, 0]] * 2, [4, 3])
    assert oh.dtype == tf.float32
    oh2 = A.one_hot([[1], [0]], 2, on_value=5, off_value=-1, axis=0)
    e = np.where(np.arange(2)[:, None, None] == np.array([[1], [0]])[None], 5, -1)
    check(oh2, e, [2, 2, 1])
    assert oh2.dtype == tf.int32


def test_shape_size_rank_and_folding():
    x = X(2, 3, 4)
    check(A.shape(x), [2, 3, 4], [3])
    check(A.size(x), 24, [])
    check(A.rank(x), 3, [])
    assert A.shape(x, out_type=tf.int64).dtype == tf.int64
    np.testing.assert_array_equal(constant_value(A.shape(x)), [2, 3, 4])
    assert constant_value(A.size(x)) == 24
    assert constant_value(A.rank(tf.placeholder(tf.float32, [None, 2]))) == 2
    assert constant_value(A.shape(tf.placeholder(tf.float32, [None, 2]))) is None
    np.testing.assert_array_equal(constant_value(A.concat([[1], [2, 3]], 0)), [1, 2, 3])
    np.testing.assert_array_equal(constant_value(A.range(2, 8, 2)), [2, 4, 6])
    np.testing.assert_array_equal(constant_value(A.fill([2], 7)), [7, 7])
    np.testing.assert_array_equal(constant_value(tf.identity(A.reshape([1, 2], [2, 1]))),
                                  [[1], [2]])
    p = tf.placeholder(tf.float32, [None, 5])
    check_shape = run(A.shape(p), feed={p: np.zeros((3, 5))})
    np.testing.assert_array_equal(check_shape, [3, 5])


def test_tile_pad():
    x = X(2, 3)
    check(A.tile(x, [2, 3]), np.tile(x, [2, 3]), [4, 9])
    pads = [[1, 0], [2, 1]]
    check(A.pad(x, pads), np.pad(x, pads), [3, 6])
    check(A.pad(x, pads, constant_values=-1), np.pad(x, pads, constant_values=-1))
    check(A.pad(x, [[1, 1], [2, 2]], "REFLECT"), np.pad(x, [[1, 1], [2, 2]], "reflect"))
    check(A.pad(x, [[2, 1], [3, 0]], "symmetric"), np.pad(x, [[2, 1], [3, 0]], "symmetric"))
    with pytest.raises(ValueError, match="too large"):
        A.pad(x, [[2, 0], [0, 0]], "REFLECT")
    with pytest.raises(ValueError, match="unknown mode"):
        A.pad(x, pads, "WRAP")


def test_fill_zeros_ones_like_range_stop_gradient():
    check(A.zeros([2, 3]), np.zeros((2, 3)), [2, 3])
    assert A.zeros([2], tf.int64).dtype == tf.int64
    check(A.ones((3,), tf.int32), np.ones(3), [3])
    check(A.fill([2, 2], 7), np.full((2, 2), 7), [2, 2])
    x = X(2, 3)
    check(A.zeros_like(x), np.zeros_like(x), [2, 3])
    o = A.ones_like(x, dtype=tf.int32)
    assert o.dtype == tf.int32
    check(o, np.ones((2, 3)), [2, 3])
    check(A.range(5), np.arange(5), [5])
    check(A.range(3, 18, 3), np.arange(3, 18, 3), [5])
    check(A.range(10, 0, -3), np.arange(10, 0, -3), [4])
    r = A.range(0.0, 1.0, 0.25)
    assert r.dtype == tf.float32
    check(r, np.arange(0, 1, .25))
    assert A.range(5, dtype=tf.float64).dtype == tf.float64
    n = tf.placeholder(tf.int32, [])
    assert A.range(n).shape.as_list() == [None]
    check(A.stop_gradient(x), x, [2, 3])


def test_boolean_mask():
    x = X(3, 2, 2)
    m = np.array([True, False, True])
    check(A.boolean_mask(x, m), x[m], [2, 2, 2])
    m2 = np.array([[True, False], [False, True]])
    check(A.boolean_mask(x, m2, axis=1), x[:, m2], [3, 2])
    pm = tf.placeholder(tf.bool, [3])
    y = A.boolean_mask(x, pm)
    assert y.shape.as_list() == [None, 2, 2]
    np.testing.assert_array_equal(run(y, feed={pm: m}), x[m])


# ---- gradients -------------------------------------------------------------------
def _cg():
    from tensorweave.testing.gradient_checker import check_gradients
    return check_gradients


def R(*shape):
    return np.random.default_rng(sum(shape) + len(shape)).standard_normal(shape)


@pytest.mark.parametrize("name,fn,shapes", [
    ("reshape", lambda x: A.reshape(x, [3, -1]), [(2, 3)]),
    ("transpose", lambda x: A.transpose(x, [2, 0, 1]), [(2, 3, 2)]),
    ("concat", lambda x, y: A.concat([x, y], -1), [(2, 1), (2, 3)]),
    ("stack", lambda x, y: A.stack([x, y], 1), [(2, 3), (2, 3)]),
    ("unstack", lambda x: A.unstack(x, axis=1)[1] * 2.0, [(2, 3)]),
    ("unstack_all", lambda x: A.unstack(x), [(2, 3)]),
    ("split", lambda x: A.split(x, [1, 2], 1)[1], [(2, 3)]),
    ("split_even", lambda x: A.split(x, 2, 0), [(4, 2)]),
    ("expand_squeeze", lambda x: A.squeeze(A.expand_dims(x, 1)), [(3, 1)]),
    ("slice", lambda x: A.slice(x, [1, 0], [1, 2]), [(3, 3)]),
    ("getitem", lambda x: x[::-2, None, 1:], [(3, 3)]),
    ("getitem_int", lambda x: x[1, ...], [(3, 2)]),
    ("gather_axis1", lambda x: A.gather(x, [[2, 0], [2, 2]], axis=1), [(2, 3)]),
    ("tile", lambda x: A.tile(x, [2, 3]), [(2, 2)]),
    ("pad", lambda x: A.pad(x, [[1, 0], [0, 2]]), [(2, 2)]),
    ("pad_reflect", lambda x: A.pad(x, [[1, 1], [2, 1]], "REFLECT"), [(3, 3)]),
    ("pad_symmetric", lambda x: A.pad(x, [[2, 0], [1, 2]], "SYMMETRIC"), [(2, 3)]),
    ("boolean_mask", lambda x: A.boolean_mask(x, [True, False, True]), [(3, 2)]),
    ("fill", lambda x: A.fill([2, 3], x), [()]),
])
def test_gradients_match_finite_differences(name, fn, shapes):
    _cg()(fn, [R(*s) for s in shapes], rtol=1e-5, atol=1e-6)


def test_second_order_through_slice_grad():
    # SliceGrad/StridedSliceGrad/TileGrad have gradients too (hessians of sliced ops)
    def f(x):
        return tf.gradients(tf.reduce_sum(A.tile(x[1:], [2]) ** 3), [x])[0]
    _cg()(f, [R(3)], rtol=1e-5, atol=1e-6)


def test_gather_gradient_is_indexed_slices():
    params = tf.placeholder(tf.float64, [4, 2])
    out = A.gather(params, [[3, 1], [3, 0]])
    w = np.arange(8.0).reshape(2, 2, 2)
    (g,) = tf.gradients(tf.reduce_sum(out * w), [params])
    assert isinstance(g, tf.IndexedSlices)
    with tf.Session() as s:
        v = s.run(g, {params: np.zeros((4, 2))})
        dense = s.run(tf.convert_to_tensor(g), {params: np.zeros((4, 2))})
    expected = np.zeros((4, 2))
    np.add.at(expected, np.array([3, 1, 3, 0]), w.reshape(4, 2))
    got = np.zeros((4, 2))
    np.add.at(got, v.indices, v.values)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_array_equal(v.dense_shape, [4, 2])
    np.testing.assert_allclose(dense, expected, rtol=1e-12)
    _cg()(lambda p: A.gather(p, [[3, 1], [3, 0]]), [R(4, 2)], rtol=1e-5, atol=1e-6)


def test_stop_gradient_blocks_and_no_gradient_ops():
    x = tf.placeholder(tf.float32, [3])
    y = A.stop_gradient(x) * x
    (g,) = tf.gradients(tf.reduce_sum(y), [x])
    np.testing.assert_allclose(run(g, feed={x: [1, 2, 3]}), [1, 2, 3], rtol=RTOL)
    assert tf.gradients(tf.reduce_sum(A.stop_gradient(x)), [x]) == [None]
    assert tf.gradients(A.shape(x), [x]) == [None]


def test_gradients_with_dynamic_shapes():
    # unknown static shapes take the ConcatOffset / SliceGrad / TileGrad / dynamic
    # IndexedSlices paths instead of constant-folded ones
    p = tf.placeholder(tf.float64, [None, 2])
    i = tf.placeholder(tf.int32, [None])
    q = tf.placeholder(tf.float64, [None, None])
    y = (tf.reduce_sum(A.gather(p, i) * 3.0) + tf.reduce_sum(A.concat([p, q], 1) ** 2)
         + tf.reduce_sum(A.tile(q, [2, 1])) + tf.reduce_sum(A.pad(q, [[1, 0], [0, 1]],
                                                                   "SYMMETRIC"))
         + tf.reduce_sum(q[1:, ::-1] * 2.0))
    gp, gq = tf.gradients(y, [p, q])
    with tf.Session() as s:
        vp, vq = s.run([tf.convert_to_tensor(gp), gq],
                       {p: np.ones((3, 2)), i: [0, 2, 2], q: np.ones((3, 1))})
    np.testing.assert_allclose(vp, [[5, 5], [2, 2], [8, 8]], rtol=1e-12)
    np.testing.assert_allclose(vq, [[8], [8], [8]], rtol=1e-12)
