"""A TF1-style CNN as the CIFAR-10 / MobileNet tutorials write it (conv -> lrn ->
max_pool -> separable conv -> fused batch norm -> dense) trains: the loss falls."""
from __future__ import annotations

import numpy as np

import tensorweave as tf
from tensorweave.nn_impl import depthwise_conv
from tensorweave.ops.nn import norm_ops


def _data(rng, n):
    """Two classes: bright top half or bright bottom half, plus noise."""
    y = rng.integers(0, 2, n)
    x = rng.normal(0, 0.3, (n, 12, 12, 3)).astype(np.float32)
    x[y == 0, :6] += 1.0
    x[y == 1, 6:] += 1.0
    return x, y.astype(np.int32)


def _model(images, is_training):
    with tf.variable_scope("conv1"):
        k = tf.get_variable("weights", [5, 5, 3, 16],
                            initializer=tf.truncated_normal_initializer(stddev=0.05))
        b = tf.get_variable("biases", [16], initializer=tf.constant_initializer(0.0))
        conv1 = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(images, k, [1, 1, 1, 1], "SAME"), b))
    norm1 = norm_ops.lrn(conv1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name="norm1")
    pool1 = tf.nn.max_pool(norm1, [1, 3, 3, 1], [1, 2, 2, 1], "SAME", name="pool1")
    with tf.variable_scope("sep2"):
        dwk = tf.get_variable("depthwise", [3, 3, 16, 1],
                              initializer=tf.truncated_normal_initializer(stddev=0.1))
        pwk = tf.get_variable("pointwise", [1, 1, 16, 32],
                              initializer=tf.truncated_normal_initializer(stddev=0.1))
        sep = depthwise_conv.separable_conv2d(pool1, dwk, pwk, [1, 1, 1, 1], "SAME")
        gamma = tf.get_variable("gamma", [32], initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [32], initializer=tf.zeros_initializer())
        bn, _, _ = norm_ops.fused_batch_norm(sep, gamma, beta, is_training=is_training)
        h = tf.nn.relu(bn)
    flat = tf.reshape(h, [-1, 6 * 6 * 32])
    return tf.layers.dense(flat, 2, name="logits")


def test_cnn_loss_falls():
    rng = np.random.default_rng(0)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        images = tf.placeholder(tf.float32, [None, 12, 12, 3])
        labels = tf.placeholder(tf.int32, [None])
        logits = _model(images, is_training=True)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))
        train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss)
        xv, yv = _data(rng, 64)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss, {images: xv, labels: yv})
            for _ in range(25):
                sess.run(train, {images: xv, labels: yv})
            last = sess.run(loss, {images: xv, labels: yv})
    assert np.isfinite(first) and last < 0.5 * first, (first, last)


def test_public_names_are_wired():
    import tensorweave as tf
    from tensorweave.nn_impl import depthwise_conv
    from tensorweave.ops.nn import norm_ops, pool_argmax_ops
    assert tf.nn.depthwise_conv2d is depthwise_conv.depthwise_conv2d
    assert tf.nn.lrn is norm_ops.lrn and tf.nn.fused_batch_norm is norm_ops.fused_batch_norm
    assert tf.nn.max_pool_with_argmax is pool_argmax_ops.max_pool_with_argmax
    for name in ("conv1d", "conv3d", "atrous_conv2d", "separable_conv2d", "max_pool3d",
                 "avg_pool3d", "convolution", "pool", "local_response_normalization"):
        assert callable(getattr(tf.nn, name)), name
    assert callable(tf.layers.separable_conv2d) and tf.layers.SeparableConv2D
    assert tf.keras.layers.DepthwiseConv2D and tf.keras.layers.SeparableConv2D
