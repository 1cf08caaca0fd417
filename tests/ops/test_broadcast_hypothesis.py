"""Property tests: broadcasting binary math ops agree with NumPy on random shapes, and
their gradients come back in each input's own shape (summed over broadcast axes)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tf
from tensorweave.testing import check_gradients

OPS = {
    "add": (tf.add, np.add),
    "subtract": (tf.subtract, np.subtract),
    "multiply": (tf.multiply, np.multiply),
    "maximum": (tf.maximum, np.maximum),
    "minimum": (tf.minimum, np.minimum),
    "squared_difference": (tf.squared_difference, lambda a, b: (a - b) ** 2),
    "truediv": (tf.truediv, np.true_divide),
}
SHAPES = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3)


def _values(shapes, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, size=shapes.input_shapes[0])
    y = rng.uniform(0.5, 2, size=shapes.input_shapes[1]) * rng.choice([-1, 1],
                                                                      size=shapes.input_shapes[1])
    return np.asarray(x), np.asarray(y)


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(sorted(OPS)), shapes=SHAPES, seed=st.integers(0, 2**16))
def test_forward_matches_numpy(op, shapes, seed):
    fn, ref = OPS[op]
    x, y = _values(shapes, seed)
    g = tf.Graph()
    with g.as_default():
        px = tf.placeholder(tf.float64, x.shape)
        py = tf.placeholder(tf.float64, [None] * y.ndim)  # dynamic dims: run-time broadcast
        out = fn(px, py)
        assert out.shape.ndims == len(shapes.result_shape)
        with tf.Session() as sess:
            got = sess.run(out, {px: x, py: y})
    np.testing.assert_allclose(got, ref(x, y), rtol=1e-12, atol=1e-12)
    assert np.shape(got) == shapes.result_shape


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(sorted(OPS)), shapes=SHAPES, seed=st.integers(0, 2**16))
def test_gradients_reduce_to_input_shapes(op, shapes, seed):
    fn, _ = OPS[op]
    x, y = _values(shapes, seed)
    if op in ("maximum", "minimum"):
        # keep |x - y| > 0.05 everywhere so finite differences never straddle the kink
        xb = np.broadcast_to(x, shapes.result_shape)
        yb = np.broadcast_to(y, shapes.result_shape)
        if np.any(np.abs(xb - yb) < 0.05):
            x = x + 5.0
    check_gradients(fn, [x, y], rtol=1e-5, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(shapes=SHAPES)
def test_gradient_shapes_with_unknown_static_dims(shapes):
    xs, ys = shapes.input_shapes
    g = tf.Graph()
    with g.as_default():
        px = tf.placeholder(tf.float64, [None] * len(xs))
        py = tf.placeholder(tf.float64, [None] * len(ys))
        gx, gy = tf.gradients(tf.reduce_sum(px * py + px), [px, py])
        with tf.Session() as sess:
            vx, vy = sess.run([gx, gy], {px: np.ones(xs), py: np.full(ys, 2.0)})
    assert vx.shape == xs and vy.shape == ys
    n = int(np.prod(shapes.result_shape))
    np.testing.assert_allclose(np.sum(vy), n * 1.0)  # d/dy sum(x*y) with x=1
    np.testing.assert_allclose(np.sum(vx), n * 3.0)  # d/dx sum(x*y + x) with y=2


def test_error_message_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(2,\)"):
        tf.maximum(tf.constant(np.zeros((2, 3))),
                   tf.constant([1.0, 2.0], tf.float64))
