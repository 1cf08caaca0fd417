"""Helpers shared by the SavedModel tests: a small dense model and its input batch."""
import numpy as np

import tensorweave as tf


def dense_model(seed=0):
    """Placeholder x [None, 4] -> dense 5 (relu) -> dense 3 -> softmax "probs"."""
    rng = np.random.RandomState(seed)
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w1 = tf.Variable(rng.randn(4, 5).astype(np.float32), name="dense/kernel")
    b1 = tf.Variable(rng.randn(5).astype(np.float32), name="dense/bias")
    w2 = tf.Variable(rng.randn(5, 3).astype(np.float32), name="out/kernel")
    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
    probs = tf.nn.softmax(tf.matmul(h, w2), name="probs")
    return x, probs


def batch():
    """A fixed [6, 4] float32 input for dense_model."""
    return np.random.RandomState(7).randn(6, 4).astype(np.float32)
