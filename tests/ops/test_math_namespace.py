"""tf.math: the TF 1.13+ names resolve to the same functions as the TF1 top-level ones,
and TF1-style code that uses them builds, runs and differentiates."""
import numpy as np
import pytest

import tensorweave as tf

# TF1 top-level name -> its tf.math name (TF kept both).
SAME = {"log": "log", "exp": "exp", "cumsum": "cumsum", "cumprod": "cumprod",
        "count_nonzero": "count_nonzero", "segment_mean": "segment_mean",
        "unsorted_segment_max": "unsorted_segment_max", "floormod": "floormod",
        "div_no_nan": "divide_no_nan", "lgamma": "lgamma", "erf": "erf", "atan2": "atan2",
        "is_nan": "is_nan", "reduce_sum": "reduce_sum", "add_n": "add_n",
        "confusion_matrix": "confusion_matrix", "bincount": "bincount",
        "log_sigmoid": "log_sigmoid", "invert_permutation": "invert_permutation"}


@pytest.mark.parametrize("top,in_math", sorted(SAME.items()))
def test_tf1_and_math_names_are_one_function(top, in_math):
    assert getattr(tf, top) is getattr(tf.math, in_math)


def test_nn_names():
    assert tf.nn.zero_fraction is tf.math.zero_fraction
    assert tf.nn.softsign is tf.math.softsign


def test_tf1_style_model_code_runs_and_trains(graph):
    # The idioms of TF1 model code: a zero-fraction summary, a log-sigmoid loss,
    # a discounted cumulative sum, per-segment means of rows.
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(tf.ones([3, 2]) * 0.1, name="w")
    h = tf.nn.relu(tf.matmul(x, w) - 0.2)
    tf.summary.scalar("fraction_of_zero_values", tf.nn.zero_fraction(h))
    returns = tf.cumsum(tf.reduce_sum(h, axis=1), reverse=True)
    seg = tf.math.unsorted_segment_mean(h, tf.constant([0, 1, 0]), num_segments=2)
    loss = -tf.reduce_mean(tf.math.log_sigmoid(returns)) + tf.reduce_sum(tf.square(seg))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    summaries = tf.summary.merge_all()
    xv = np.array([[1.0, 2.0, 3.0], [0.5, 0.0, 1.0], [3.0, 1.0, 0.0]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(loss, {x: xv})
        for _ in range(5):
            sess.run(train, {x: xv})
        after, summary = sess.run([loss, summaries], {x: xv})
    assert after < before
    assert summary  # the zero-fraction scalar serialized


def test_new_ops_survive_a_graph_def_round_trip(graph):
    x = tf.constant([[1.0, -2.0], [3.0, 0.5]], name="x")
    ys = [tf.math.cumsum(x, axis=1, exclusive=True, name="cs"),
          tf.math.atan2(x, 2.0, name="a2"), tf.math.lgamma(tf.abs(x) + 1.0, name="lg"),
          tf.math.segment_max(x, [0, 0], name="sm"),
          tf.math.unsorted_segment_prod(x, [1, 0], 2, name="up")]
    with tf.Session() as sess:
        want = sess.run(ys)
    gd = graph.as_graph_def()
    with tf.Graph().as_default():
        got = tf.import_graph_def(gd, return_elements=["cs:0", "a2:0", "lg:0", "sm:0", "up:0"],
                                  name="")
        with tf.Session() as sess:
            for a, b in zip(sess.run(got), want):
                np.testing.assert_allclose(a, b, rtol=1e-6)
