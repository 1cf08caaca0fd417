"""TF's fused ClipByValue op (tf.raw_ops.ClipByValue): what it computes, its shape rules and
its gradient, and that a GraphDef holding it imports and runs."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops.op_author import create_tensor


def _clip(t, lo, hi):
    return create_tensor("ClipByValue", [tf.convert_to_tensor(v, tf.float32)
                                         for v in (t, lo, hi)])


def test_clips_to_scalar_or_elementwise_bounds():
    t = [[-2.0, 0.5, 3.0], [1.0, -1.0, 9.0]]
    with tf.Session() as sess:
        got = sess.run([_clip(t, 0.0, 1.0),
                        _clip(t, [[-1.0, 1.0, 0.0], [0.0, 0.0, 5.0]], 2.0)])
    np.testing.assert_array_equal(got[0], [[0.0, 0.5, 1.0], [1.0, 0.0, 1.0]])
    np.testing.assert_array_equal(got[1], [[-1.0, 1.0, 2.0], [1.0, 0.0, 5.0]])


def test_a_min_above_the_max_gives_the_min_as_tf():
    with tf.Session() as sess:
        assert sess.run(_clip([0.0, 10.0], 3.0, 1.0)).tolist() == [3.0, 3.0]


def test_a_bound_of_another_shape_is_refused_naming_it():
    with pytest.raises(ValueError, match="a clip bound is a scalar or has the shape"):
        _clip([1.0, 2.0, 3.0], [0.0, 1.0], 5.0)
    lo = tf.placeholder(tf.float32)  # unknown shape: checked when it runs
    out = create_tensor("ClipByValue", [tf.constant([1.0, 2.0, 3.0]), lo, tf.constant(5.0)])
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="clip_value_min must be a scalar"):
        sess.run(out, {lo: [0.0, 1.0]})


def test_gradient_goes_to_t_inside_the_bounds_and_to_the_clipping_bound_outside():
    t = tf.constant([-2.0, 0.5, 3.0, 0.7])
    lo, hi = tf.constant(0.0), tf.constant([1.0, 1.0, 1.0, 0.6])
    y = create_tensor("ClipByValue", [t, lo, hi])
    gt, glo, ghi = tf.gradients(tf.reduce_sum(y * [1.0, 2.0, 3.0, 4.0]), [t, lo, hi])
    with tf.Session() as sess:
        gt, glo, ghi = sess.run([gt, glo, ghi])
    np.testing.assert_array_equal(gt, [0.0, 2.0, 0.0, 0.0])
    assert glo == 1.0                                   # summed to the scalar bound
    np.testing.assert_array_equal(ghi, [0.0, 0.0, 3.0, 4.0])


def test_a_graph_def_holding_it_imports_and_runs():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [3], name="x")
        create_tensor("ClipByValue", [x, tf.constant(-1.0), tf.constant(1.0)], name="clipped")
    with tf.Graph().as_default():
        tf.import_graph_def(g.as_graph_def(), name="")
        with tf.Session() as sess:
            out = sess.run("clipped:0", {"x:0": [-5.0, 0.25, 5.0]})
    np.testing.assert_array_equal(out, [-1.0, 0.25, 1.0])
