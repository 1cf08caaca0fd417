"""map_fn / scan / foldl / foldr (the FunctionalScan op): values, nesting, shapes,
gradients and errors, against numpy and hand-computed results."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.higher_order import foldl, foldr, map_fn, scan
from tensorweave.testing.tf_gradient_checker import compute_gradient_error


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


NUMS = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)


# ---- map_fn --------------------------------------------------------------------
def test_map_fn_single_tensor(graph):
    r = map_fn(lambda x: (x + 3) * 2, tf.constant(NUMS))
    np.testing.assert_allclose(run(r), (NUMS + 3) * 2)
    assert r.shape.as_list() == [6]


def test_map_fn_rows_of_a_matrix_and_captured_tensor(graph):
    m = np.arange(12, dtype=np.float32).reshape(4, 3)
    scale = tf.constant([1.0, 10.0, 100.0])
    r = map_fn(lambda row: tf.reduce_sum(row * scale), tf.constant(m))
    np.testing.assert_allclose(run(r), m @ np.array([1, 10, 100], np.float32))
    assert r.shape.as_list() == [4]


def test_map_fn_nested_elems_and_dtype_override(graph):
    a = tf.constant([1, 2, 3])
    b = tf.constant([-1, 1, -1])
    prod = map_fn(lambda x: x[0] * x[1], (a, b), dtype=tf.int32)
    pos, neg = map_fn(lambda x: (x, -x), a, dtype=(tf.int32, tf.int32))
    nested = map_fn(lambda x: {"s": x[0] + x[1][0], "f": tf.cast(x[1][1], tf.float32) / 2},
                    (a, (b, a)), dtype={"s": tf.int32, "f": tf.float32})
    got = run([prod, pos, neg, nested])
    assert got[0].tolist() == [-1, 2, -3]
    assert got[1].tolist() == [1, 2, 3] and got[2].tolist() == [-1, -2, -3]
    assert got[3]["s"].tolist() == [0, 3, 2]
    np.testing.assert_allclose(got[3]["f"], [0.5, 1.0, 1.5])


def test_map_fn_dtype_change_and_int_to_float(graph):
    r = map_fn(lambda x: tf.cast(x, tf.float32) * 0.5, tf.constant([2, 4, 6]),
               dtype=tf.float32)
    np.testing.assert_allclose(run(r), [1.0, 2.0, 3.0])
    assert r.dtype == tf.float32


def test_map_fn_per_example_preprocessing(graph):
    """TF1 style: flip each image of a batch horizontally, then per-image standardize."""
    imgs = np.random.RandomState(0).rand(5, 4, 3, 2).astype(np.float32)
    batch = tf.placeholder(tf.float32, [None, 4, 3, 2])

    def prep(img):
        flipped = tf.reverse(img, [1])
        return (flipped - tf.reduce_mean(flipped)) * 2.0

    out = map_fn(prep, batch)
    assert out.shape.as_list() == [None, 4, 3, 2]
    got = run(out, {batch: imgs})
    flipped = imgs[:, :, ::-1, :]
    want = (flipped - flipped.mean(axis=(1, 2, 3), keepdims=True)) * 2.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # reverse along the image's first axis (rows) too
    rows = map_fn(lambda img: tf.reverse(img, [0]), batch)
    np.testing.assert_allclose(run(rows, {batch: imgs}), imgs[:, ::-1])


def test_map_fn_shape_inference(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    r = map_fn(lambda row: tf.stack([row, row * 2]), x)
    assert r.shape.as_list() == [None, 2, 3]
    r2 = map_fn(lambda row: row, tf.zeros([7, 2]), infer_shape=False)
    assert r2.shape.ndims is None
    assert run(r2).shape == (7, 2)
    got = run(r, {x: np.ones((2, 3), np.float32)})
    assert got.shape == (2, 2, 3)


def test_map_fn_empty_elems_with_dtype(graph):
    r = map_fn(lambda x: tf.zeros([3, 2]) + tf.reduce_sum(x), tf.zeros([0, 2]),
               dtype=tf.float32)
    assert r.shape.as_list() == [0, 3, 2]
    got = run(r)
    assert got.shape == (0, 3, 2) and got.dtype == np.float32
    x = tf.placeholder(tf.int64, [None])
    r2 = map_fn(lambda v: tf.cast(v, tf.float32), x, dtype=tf.float32)
    got2 = run(r2, {x: np.zeros([0], np.int64)})
    assert got2.shape == (0,) and got2.dtype == np.float32


def test_map_fn_strings(graph):
    r = map_fn(lambda s: s, tf.constant(["a", "bbbbbb", "cc"]))
    assert [v.decode() if isinstance(v, bytes) else v for v in run(r)] == ["a", "bbbbbb", "cc"]


def test_map_fn_nested_map_fn_and_gradient(graph):
    m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    r = map_fn(lambda row: map_fn(lambda v: v * v * v, row), m)
    g = tf.gradients(tf.reduce_sum(r), m)[0]
    got_r, got_g = run([r, g])
    np.testing.assert_allclose(got_r, [[1, 8], [27, 64]])
    np.testing.assert_allclose(got_g, [[3, 12], [27, 48]])


def test_map_fn_inside_while_loop_with_gradient(graph):
    x = tf.constant([1.0, 2.0])

    def body(i, acc):
        return i + 1, map_fn(lambda v: v * 2.0, acc)

    _, out = tf.while_loop(lambda i, acc: i < 3, body, [tf.constant(0), x])
    g = tf.gradients(tf.reduce_sum(out), x)[0]
    got_out, got_g = run([out, g])
    np.testing.assert_allclose(got_out, [8.0, 16.0])
    np.testing.assert_allclose(got_g, [8.0, 8.0])


# ---- scan ----------------------------------------------------------------------
def test_scan_with_and_without_initializer(graph):
    elems = tf.constant(NUMS)
    r = scan(lambda a, x: a * x, elems)
    r_init = scan(lambda a, x: a * x, elems, initializer=tf.constant(2.0))
    got = run([r, r_init])
    np.testing.assert_allclose(got[0], np.cumprod(NUMS))
    np.testing.assert_allclose(got[1], 2 * np.cumprod(NUMS))
    assert r.shape.as_list() == [6] and r_init.shape.as_list() == [6]


def test_scan_reverse(graph):
    elems = tf.constant(NUMS)
    r = scan(lambda a, x: a + x, elems, reverse=True)
    r_init = scan(lambda a, x: a + x, elems, initializer=tf.constant(10.0), reverse=True)
    got = run([r, r_init])
    np.testing.assert_allclose(got[0], np.cumsum(NUMS[::-1])[::-1])
    np.testing.assert_allclose(got[1], 10 + np.cumsum(NUMS[::-1])[::-1])


def test_scan_nested_structures(graph):
    elems = tf.constant(NUMS)
    r = scan(lambda a, x: (a[0] + x[0], a[1] + x[1]), (elems, -elems))
    got = run(r)
    assert isinstance(r, tuple)
    np.testing.assert_allclose(got[0], np.cumsum(NUMS))
    np.testing.assert_allclose(got[1], -np.cumsum(NUMS))
    # accumulator structure differs from elems': (sum, count) with a dict element
    init = (tf.constant(0.0), tf.constant(0))
    r2 = scan(lambda a, x: (a[0] + x["v"] * tf.cast(x["w"], tf.float32), a[1] + x["w"]),
              {"v": elems, "w": tf.constant([1, 0, 1, 0, 1, 0])}, initializer=init)
    s, c = run(r2)
    np.testing.assert_allclose(s, np.cumsum(NUMS * np.array([1, 0, 1, 0, 1, 0])))
    assert c.tolist() == [1, 1, 2, 2, 3, 3]


def test_scan_matrix_accumulator_shapes(graph):
    elems = tf.placeholder(tf.float32, [None, 2])
    r = scan(lambda a, x: a + tf.reshape(x, [1, 2]), elems, initializer=tf.zeros([1, 2]))
    assert r.shape.as_list() == [None, 1, 2]
    data = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.testing.assert_allclose(run(r, {elems: data}), np.cumsum(data, 0)[:, None, :])
    # without an initializer and unknown n, the result keeps its element shape
    r2 = scan(lambda a, x: a + x, elems)
    assert r2.shape.as_list() == [None, 2]
    np.testing.assert_allclose(run(r2, {elems: data}), np.cumsum(data, 0))


# ---- foldl / foldr -------------------------------------------------------------
def test_foldl_foldr_values(graph):
    elems = tf.constant([1, 2, 3, 4, 5, 6])
    got = run([foldl(lambda a, x: a + x, elems),
               foldl(lambda a, x: 2 * a + x, elems, initializer=10),
               foldr(lambda a, x: a + x, elems),
               foldr(lambda a, x: 2 * a + x, elems, initializer=10),
               foldl(lambda a, x: a - x, elems),
               foldr(lambda a, x: a - x, elems)])
    want_l = 10
    for v in [1, 2, 3, 4, 5, 6]:
        want_l = 2 * want_l + v
    want_r = 10
    for v in [6, 5, 4, 3, 2, 1]:
        want_r = 2 * want_r + v
    assert [int(v) for v in got] == [21, want_l, 21, want_r, 1 - 20, 6 - 15]


def test_fold_nested(graph):
    x = tf.constant(NUMS)
    s, p = foldl(lambda a, e: (a[0] + e[0], a[1] * e[1]), (x, x))
    s2, m = foldr(lambda a, e: (a[0] + e, tf.maximum(a[1], e)), x,
                  initializer=(tf.constant(0.0), tf.constant(-1.0)))
    got = run([s, p, s2, m])
    np.testing.assert_allclose(got, [21.0, 720.0, 21.0, 6.0])


def test_fold_with_empty_elems(graph):
    with pytest.raises(ValueError, match="at least one element when no initializer"):
        foldl(lambda a, x: a + x, tf.zeros([0]))
    with pytest.raises(ValueError, match="at least one element when no initializer"):
        foldr(lambda a, x: a + x, tf.zeros([0, 3]))
    with pytest.raises(ValueError, match="at least one element when no initializer"):
        scan(lambda a, x: a + x, tf.zeros([0]))
    x = tf.placeholder(tf.float32, [None])
    dyn = foldl(lambda a, x: a + x, x)
    with pytest.raises(errors.InvalidArgumentError, match="at least one element"):
        run(dyn, {x: np.zeros([0], np.float32)})
    assert float(run(dyn, {x: np.array([1.0, 2.0], np.float32)})) == 3.0
    # with an initializer, zero elements give the initializer back
    assert float(run(foldl(lambda a, x: a + x, x, initializer=5.0),
                     {x: np.zeros([0], np.float32)})) == 5.0


# ---- gradients -----------------------------------------------------------------
def _grad_err(x, shape, y, y_shape, value):
    with tf.Session() as sess, sess.as_default():
        return compute_gradient_error(x, shape, y, y_shape, x_init_value=value)


def test_map_fn_gradient_check(graph):
    x = tf.placeholder(tf.float64, [3, 2])
    y = map_fn(lambda row: tf.tanh(row) * tf.reduce_sum(row * row), x)
    value = np.random.RandomState(1).randn(3, 2)
    assert _grad_err(x, [3, 2], y, [3, 2], value) < 1e-4


def test_scan_gradient_check_with_initializer_and_reverse(graph):
    x = tf.placeholder(tf.float64, [4])
    init = tf.placeholder(tf.float64, [])
    y = scan(lambda a, e: a * e + tf.sin(a), x, initializer=init, reverse=True)
    value = np.array([0.5, -1.0, 0.3, 0.8])
    feed_init = np.float64(0.7)
    with tf.Session() as sess, sess.as_default():
        ex = compute_gradient_error(x, [4], y, [4], x_init_value=value,
                                    extra_feed_dict={init: feed_init})
        ei = compute_gradient_error(init, [], y, [4], x_init_value=feed_init,
                                    extra_feed_dict={x: value})
    assert ex < 1e-4 and ei < 1e-4


def test_scan_gradient_without_initializer(graph):
    x = tf.constant(NUMS)
    r = scan(lambda a, e: a * e, x)
    g = tf.gradients(tf.reduce_sum(r), x)[0]
    # d/dx_k sum_i prod_{j<=i} x_j = sum_{i>=k} prod_{j<=i, j!=k} x_j
    cp = np.cumprod(NUMS)
    want = [sum(cp[i] / NUMS[k] for i in range(k, 6)) for k in range(6)]
    np.testing.assert_allclose(run(g), want, rtol=1e-5)


def test_fold_gradients(graph):
    x = tf.placeholder(tf.float64, [5])
    y = foldl(lambda a, e: a * 0.5 + e * e, x)
    yr = foldr(lambda a, e: tf.sin(a) + e, x, initializer=tf.constant(0.3, tf.float64))
    value = np.linspace(-1, 1, 5)
    assert _grad_err(x, [5], y, [], value) < 1e-4
    assert _grad_err(x, [5], yr, [], value) < 1e-4


def test_gradient_through_nested_elems(graph):
    a = tf.constant([1.0, 2.0, 3.0])
    b = tf.constant([4.0, 5.0, 6.0])
    r = map_fn(lambda e: e[0] * e[1], (a, b), dtype=tf.float32)
    ga, gb = tf.gradients(tf.reduce_sum(r), [a, b])
    got = run([ga, gb])
    np.testing.assert_allclose(got[0], [4, 5, 6])
    np.testing.assert_allclose(got[1], [1, 2, 3])


def test_gradient_of_scan_over_a_variable_read_twice(graph):
    x = tf.Variable([1.0, 2.0, 3.0])
    r = scan(lambda a, e: a * e, x)
    g = tf.gradients(tf.reduce_sum(r), x)[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(r), [1, 2, 6])
        np.testing.assert_allclose(sess.run(g), [1 + 2 + 6, 1 + 3, 2])
        np.testing.assert_allclose(sess.run(g), [1 + 2 + 6, 1 + 3, 2])


def test_captured_variable_is_trained_through_map_fn(graph):
    rng = np.random.RandomState(0)
    xs = rng.randn(16, 3).astype(np.float32)
    true_w = np.array([1.5, -2.0, 0.5], np.float32)
    ys = xs @ true_w
    w = tf.Variable(tf.zeros([3]), name="w")
    x = tf.constant(xs)
    pred = map_fn(lambda row: tf.reduce_sum(row * w), x)
    loss = tf.reduce_mean(tf.square(pred - ys))
    gw = tf.gradients(loss, w)[0]
    train = tf.train.GradientDescentOptimizer(0.3).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g0 = sess.run(gw)
        np.testing.assert_allclose(g0, 2 * (xs.T @ (0 - ys)) / 16, rtol=1e-4, atol=1e-5)
        first = sess.run(loss)
        for _ in range(100):
            sess.run(train)
        last, w_val = sess.run([loss, w])
    assert last < first * 1e-3
    np.testing.assert_allclose(w_val, true_w, atol=1e-2)


def test_captured_variable_gradient_in_scan(graph):
    w = tf.Variable(2.0)
    r = scan(lambda a, e: a * w + e, tf.constant([1.0, 1.0, 1.0]),
             initializer=tf.constant(1.0))
    # r = [w + 1, w^2 + w + 1, w^3 + w^2 + w + 1]; d/dw sum at w=2
    g = tf.gradients(tf.reduce_sum(r), w)[0]
    np.testing.assert_allclose(run(g), 1 + (2 * 2 + 1) + (3 * 4 + 2 * 2 + 1))


def test_back_prop_false_stops_gradient(graph):
    x = tf.constant([1.0, 2.0])
    r = map_fn(lambda v: v * v, x, back_prop=False)
    assert tf.gradients(tf.reduce_sum(r), x)[0] is None


def test_gradient_reuses_random_draws_of_the_forward(graph):
    tf.set_random_seed(3)
    x = tf.constant([1.0, 2.0, 3.0])
    r = map_fn(lambda v: v * tf.random_uniform([]), x)
    g = tf.gradients(tf.reduce_sum(r), x)[0]
    with tf.Session() as sess:
        got_r, got_g = sess.run([r, g])
    np.testing.assert_allclose(got_g * np.array([1, 2, 3]), got_r, rtol=1e-6)


def test_int_elems_have_no_gradient_but_float_capture_does(graph):
    w = tf.constant(3.0)
    idx = tf.constant([0, 1, 2])
    r = map_fn(lambda i: tf.cast(i, tf.float32) * w, idx, dtype=tf.float32)
    gi, gw = tf.gradients(tf.reduce_sum(r), [idx, w])
    assert gi is None
    assert float(run(gw)) == 3.0


# ---- errors --------------------------------------------------------------------
def test_errors(graph):
    with pytest.raises(ValueError, match=r"same first dimension.*a:0: 3.*b:0: 4"):
        map_fn(lambda x: x[0], (tf.zeros([3], name="a"), tf.zeros([4], name="b")),
               dtype=tf.float32)
    with pytest.raises(ValueError, match="1\\+ dimensional"):
        map_fn(lambda x: x, tf.constant(1.0))
    with pytest.raises(TypeError, match="callable"):
        map_fn(3, tf.zeros([2]))
    with pytest.raises(ValueError, match="same nested structure"):
        map_fn(lambda x: (x, x), tf.zeros([2]))
    with pytest.raises(TypeError, match="int32.*float32|dtype"):
        map_fn(lambda x: tf.cast(x, tf.int32), tf.zeros([2]))
    with pytest.raises(ValueError, match="same nested structure"):
        scan(lambda a, x: (a, a), tf.zeros([2]))
    with pytest.raises(TypeError, match="accumulator"):
        scan(lambda a, x: tf.cast(a, tf.int32), tf.zeros([2]))
    with pytest.raises(ValueError, match="shape"):
        foldl(lambda a, x: tf.stack([a, x]), tf.zeros([2]), initializer=tf.constant(0.0))


def test_runtime_errors(graph):
    a = tf.placeholder(tf.float32, [None])
    b = tf.placeholder(tf.float32, [None])
    r = map_fn(lambda e: e[0] + e[1], (a, b), dtype=tf.float32)
    with pytest.raises(errors.InvalidArgumentError, match="same first dimension"):
        run(r, {a: np.zeros(2, np.float32), b: np.zeros(3, np.float32)})
    x = tf.placeholder(tf.int32, [None])
    ragged = map_fn(lambda n: tf.zeros(tf.reshape(n, [1])), x, dtype=tf.float32)
    with pytest.raises(errors.InvalidArgumentError, match="same shape"):
        run(ragged, {x: np.array([1, 2], np.int32)})
