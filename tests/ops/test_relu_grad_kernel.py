"""ReluGrad / Relu6Grad kernels: TF's arithmetic (gradients times the mask), dtype kept."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("fn, mask", [(tf.nn.relu, lambda x: x > 0),
                                      (tf.nn.relu6, lambda x: (x > 0) & (x < 6))])
def test_grad_is_upstream_times_mask(dtype, fn, mask):
    xv = np.array([[-2.0, 0.0, 0.5], [3.0, 6.0, 7.5]], dtype)
    gv = np.array([[1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], dtype)
    x = tf.placeholder(dtype, [2, 3])
    g = tf.placeholder(dtype, [2, 3])
    (dx,) = tf.gradients(fn(x), [x], grad_ys=[g])
    with tf.Session() as sess:
        got = sess.run(dx, {x: xv, g: gv})
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, gv * mask(xv))


def test_nan_gradient_stays_nan_where_inactive_as_in_tf():
    # TF multiplies by the mask: NaN * 0 is NaN (np.where would have hidden it).
    x = tf.constant([-1.0, 2.0])
    (dx,) = tf.gradients(tf.nn.relu(x), [x], grad_ys=[tf.constant([np.nan, 1.0])])
    with tf.Session() as sess:
        got = sess.run(dx)
    assert np.isnan(got[0]) and got[1] == 1.0
