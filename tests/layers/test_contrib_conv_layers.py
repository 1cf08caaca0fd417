"""tf.contrib.layers: conv2d, conv2d_transpose, separable_conv2d, max_pool2d, avg_pool2d,
repeat, stack, layer_norm, unit_norm, one_hot_encoding, bias_add.

Specification: TF 1.x tensorflow/contrib/layers/python/layers/layers_test.py
(Convolution2d, Pool, Repeat, Stack, LayerNorm cases); op and variable names as
contrib makes them; values computed by hand / numpy here.
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
layers = tf.contrib.layers
fw = tf.contrib.framework
ONES = tf.ones_initializer()


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def _names(scope=None):
    return [v.op.name for v in fw.get_variables(scope)]


# ---- conv2d -----------------------------------------------------------------------
def test_conv2d_names_shapes_and_uniquified_scopes():
    images = tf.random_uniform([5, 3, 3, 4], seed=1)
    out = layers.conv2d(images, 32, [3, 3])
    assert out.op.name == "Conv/Relu"
    assert out.get_shape().as_list() == [5, 3, 3, 32]
    assert fw.get_variables("Conv/weights")[0].get_shape().as_list() == [3, 3, 4, 32]
    assert fw.get_variables("Conv/biases")[0].get_shape().as_list() == [32]
    layers.conv2d(images, 8, 3)
    assert _names() == ["Conv/weights", "Conv/biases", "Conv_1/weights", "Conv_1/biases"]
    assert len(tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)) == 4
    assert layers.conv2d(images, 4, [3, 3], activation_fn=None,
                         scope="conv7").op.name == "conv7/BiasAdd"
    assert layers.convolution2d is layers.conv2d and layers.conv2d.__name__ == "convolution2d"


def test_conv2d_values_hand_computed():
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4, 1)
    same = layers.conv2d(x, 1, [3, 3], weights_initializer=ONES,
                         biases_initializer=tf.constant_initializer(-1.0), activation_fn=None)
    valid = layers.conv2d(x, 2, [2, 2], stride=2, padding="VALID",
                          weights_initializer=ONES)
    got_same, got_valid = _run([same, valid])
    pad = np.pad(x[0, :, :, 0], 1)
    want = np.array([[pad[i:i + 3, j:j + 3].sum() for j in range(4)] for i in range(4)]) - 1
    np.testing.assert_allclose(got_same[0, :, :, 0], want)
    np.testing.assert_allclose(got_valid[0, :, :, 0], [[14, 22], [46, 54]])
    np.testing.assert_allclose(got_valid[..., 0], got_valid[..., 1])


def test_conv2d_shapes_stride_rate_nchw_and_dynamic():
    images = tf.random_uniform([5, 10, 12, 3], seed=1)
    assert layers.conv2d(images, 32, [3, 3], stride=2).get_shape().as_list() == [5, 5, 6, 32]
    assert layers.conv2d(images, 32, [3, 3], rate=2).get_shape().as_list() == [5, 10, 12, 32]
    assert layers.conv2d(images, 32, [3, 3], rate=2, padding="VALID"
                         ).get_shape().as_list() == [5, 6, 8, 32]
    assert layers.conv2d(images, 32, [3, 3], rate=[2, 3], padding="VALID"
                         ).get_shape().as_list() == [5, 6, 6, 32]
    assert layers.conv2d(images, 7, images.get_shape()[1:3], padding="VALID"
                         ).get_shape().as_list() == [5, 1, 1, 7]
    nchw = layers.conv2d(tf.ones([5, 4, 3, 3]), 32, [3, 3], data_format="NCHW", scope="nc")
    assert nchw.get_shape().as_list() == [5, 32, 3, 3]
    assert fw.get_variables("nc/weights")[0].get_shape().as_list() == [3, 3, 4, 32]
    ph = tf.placeholder(tf.float32, [None, None, None, 3])
    dyn = layers.conv2d(ph, 32, [3, 3], padding="VALID")
    assert dyn.get_shape().as_list()[-1] == 32
    assert _run(dyn, {ph: np.ones([5, 10, 12, 3])}).shape == (5, 8, 10, 32)
    dyn2 = layers.conv2d(ph, 32, [3, 3], rate=2, padding="VALID")
    assert _run(dyn2, {ph: np.ones([5, 10, 12, 3])}).shape == (5, 6, 8, 32)


def test_conv2d_with_rate_matches_dilated_numpy():
    x = np.random.RandomState(1).randn(1, 7, 7, 1).astype(np.float32)
    out = layers.conv2d(x, 1, [2, 2], rate=2, padding="VALID", weights_initializer=ONES,
                        activation_fn=None)
    got = _run(out)[0, :, :, 0]
    want = [[x[0, i, j, 0] + x[0, i + 2, j, 0] + x[0, i, j + 2, 0] + x[0, i + 2, j + 2, 0]
             for j in range(5)] for i in range(5)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    grads = tf.gradients(tf.reduce_sum(out), tf.trainable_variables())
    assert all(g is not None for g in grads)
    assert _run(grads[0]).ravel().tolist() == pytest.approx([x[0, :5, :5].sum(),
                                                            x[0, :5, 2:].sum(),
                                                            x[0, 2:, :5].sum(),
                                                            x[0, 2:, 2:].sum()], rel=1e-4)


def test_conv2d_errors():
    with pytest.raises(ValueError, match="rank 4, got 5"):
        layers.conv2d(tf.ones([1, 2, 3, 4, 5]), 3, [3, 3])
    with pytest.raises(ValueError, match="data_format"):
        layers.conv2d(tf.ones([1, 3, 3, 3]), 3, [3, 3], data_format="CHWN")
    with pytest.raises(ValueError, match="rate"):
        layers.conv2d(tf.ones([1, 8, 8, 3]), 3, [3, 3], stride=2, rate=2)
    with pytest.raises(ValueError, match="kernel_size"):
        layers.conv2d(tf.ones([1, 8, 8, 3]), 3, [3, 3, 3])


@pytest.mark.transports()
def test_conv2d_reuse_regularizer_and_batch_norm():
    images = tf.ones([2, 5, 5, 3])
    layers.conv2d(images, 4, [3, 3], scope="conv1",
                  weights_regularizer=layers.l2_regularizer(0.01))
    layers.conv2d(images, 4, [3, 3], scope="conv1", reuse=True,
                  weights_regularizer=layers.l2_regularizer(0.01))
    assert _names() == ["conv1/weights", "conv1/biases"]
    assert len(tf.losses.get_regularization_losses()) == 1
    with fw.arg_scope([layers.conv2d], normalizer_fn=layers.batch_norm,
                      normalizer_params={"decay": 0.9}):
        net = layers.conv2d(images, 4, [3, 3])
        layers.conv2d(net, 4, [3, 3])
    assert _names("Conv/") == ["Conv/weights", "Conv/BatchNorm/beta",
                               "Conv/BatchNorm/moving_mean", "Conv/BatchNorm/moving_variance"]
    assert len(fw.get_variables("Conv_1/BatchNorm")) == 3
    layers.conv2d(images, 2, [1, 1], scope="col", variables_collections="my_vars")
    assert [v.op.name for v in tf.get_collection("my_vars")] == ["col/weights", "col/biases"]


# ---- transpose, separable, pools, bias_add ------------------------------------------
def test_conv2d_transpose_shapes_and_values():
    x = tf.ones([1, 2, 2, 1])
    same = layers.conv2d_transpose(x, 1, [3, 3], stride=2, weights_initializer=ONES,
                                   activation_fn=None)
    valid = layers.conv2d_transpose(tf.ones([5, 3, 3, 2]), 4, [3, 3], stride=2,
                                    padding="VALID")
    assert same.op.name == "Conv2d_transpose/BiasAdd"
    assert same.get_shape().as_list() == [1, 4, 4, 1]
    assert valid.get_shape().as_list() == [5, 7, 7, 4]
    assert fw.get_variables("Conv2d_transpose_1/weights")[0].get_shape().as_list() == \
        [3, 3, 4, 2]
    # SAME, 2 -> 4 with k=3, s=2 pads 0 before and 1 after: the forward windows are rows
    # 0-2 and 2-4, so output rows 0, 1, 3 get one tap and row 2 two (columns alike).
    got = _run(same)[0, :, :, 0]
    np.testing.assert_allclose(got, np.outer([1, 1, 2, 1], [1, 1, 2, 1]))
    ph = tf.placeholder(tf.float32, [None, None, None, 2])
    dyn = layers.conv2d_transpose(ph, 3, [3, 3], stride=2)
    assert _run(dyn, {ph: np.ones([2, 3, 5, 2])}).shape == (2, 6, 10, 3)


def test_separable_conv2d_variables_and_values():
    x = np.arange(2 * 4 * 4 * 2, dtype=np.float32).reshape(2, 4, 4, 2)
    out = layers.separable_conv2d(x, 3, [3, 3], depth_multiplier=2,
                                  weights_initializer=ONES, activation_fn=None)
    dw_only = layers.separable_conv2d(x, None, [3, 3], depth_multiplier=2, scope="dw")
    assert _names() == ["SeparableConv2d/depthwise_weights",
                        "SeparableConv2d/pointwise_weights", "SeparableConv2d/biases",
                        "dw/depthwise_weights", "dw/biases"]
    assert fw.get_variables("SeparableConv2d/pointwise_weights")[0].get_shape().as_list() \
        == [1, 1, 4, 3]
    assert dw_only.get_shape().as_list() == [2, 4, 4, 4]
    got = _run(out)
    pad = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    box = sum(pad[:, i:i + 4, j:j + 4, :] for i in range(3) for j in range(3))
    want = 2 * box.sum(-1, keepdims=True).repeat(3, -1)  # 2 = depth multiplier
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_pools_names_shapes_values():
    images = tf.random_uniform([5, 3, 3, 3], seed=1)
    avg = layers.avg_pool2d(images, [3, 3])
    assert avg.op.name == "AvgPool2D/AvgPool" and avg.get_shape().as_list() == [5, 1, 1, 3]
    mx = layers.max_pool2d(images, 3, scope="pool1")
    assert mx.op.name == "pool1/MaxPool"
    assert layers.max_pool2d(images, [3, 3], padding="SAME").get_shape().as_list() == \
        [5, 2, 2, 3]
    assert layers.avg_pool2d(images, [3, 3], stride=1, padding="SAME"
                             ).get_shape().as_list() == [5, 3, 3, 3]
    assert layers.avg_pool2d(tf.ones([5, 2, 3, 3]), [3, 3], data_format="NCHW"
                             ).get_shape().as_list() == [5, 2, 1, 1]
    glob = layers.avg_pool2d(images, images.get_shape()[1:3], stride=1,
                             outputs_collections="outs")
    assert tf.get_collection("outs") == [glob]
    with pytest.raises(ValueError, match="data_format"):
        layers.max_pool2d(images, [3, 3], data_format="CHWN")
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    got_max, got_avg = _run([layers.max_pool2d(x, [2, 2]), layers.avg_pool2d(x, [2, 2])])
    np.testing.assert_allclose(got_max[0, :, :, 0], [[5, 7], [13, 15]])
    np.testing.assert_allclose(got_avg[0, :, :, 0], [[2.5, 4.5], [10.5, 12.5]])


def test_bias_add():
    out = layers.bias_add(tf.ones([2, 3]), initializer=tf.constant_initializer(2.0),
                          activation_fn=tf.nn.relu)
    assert _names() == ["BiasAdd/biases"]
    nchw = layers.bias_add(tf.ones([1, 2, 2, 2]), data_format="NCHW",
                           initializer=tf.constant_initializer(1.0))
    assert fw.get_variables("BiasAdd_1/biases")[0].get_shape().as_list() == [2]
    a, b = _run([out, nchw])
    assert a.tolist() == [[3.0] * 3] * 2 and (b == 2.0).all()


# ---- repeat, stack ----------------------------------------------------------------
def test_repeat_scopes():
    images = tf.random_uniform([5, 3, 3, 3], seed=1)
    out = layers.repeat(images, 3, layers.conv2d, 32, [3, 3])
    assert out.op.name == "Repeat/convolution2d_3/Relu"
    assert out.get_shape().as_list() == [5, 3, 3, 32]
    out = layers.repeat(images, 2, layers.conv2d, 8, [3, 3], scope="conv1")
    assert out.op.name == "conv1/conv1_2/Relu"
    assert "conv1/conv1_1/weights" in _names() and "conv1/conv1_2/biases" in _names()


def test_stack_scopes_and_reuse_failure():
    x = tf.random_uniform([5, 12], seed=1)
    out = layers.stack(x, layers.fully_connected, [10, 20, 30])
    assert out.op.name == "Stack/fully_connected_3/Relu"
    assert out.get_shape().as_list() == [5, 30]
    assert layers.stack(x, layers.relu, [10, 20]).op.name == "Stack_1/fully_connected_2/Relu"
    conv = layers.stack(tf.ones([5, 3, 3, 3]), layers.conv2d, [10, 20, 30],
                        kernel_size=[3, 3], padding="SAME", scope="conv1")
    assert conv.op.name == "conv1/conv1_3/Relu" and conv.get_shape().as_list() == [5, 3, 3, 30]
    with pytest.raises(ValueError):
        layers.stack(x, layers.fully_connected, 10)
    with tf.variable_scope("test", reuse=True):
        with pytest.raises(ValueError):
            layers.stack(x, layers.fully_connected, [10, 20])


# ---- layer_norm, unit_norm, one_hot ---------------------------------------------------
def test_layer_norm_variables_values_and_errors():
    x = np.random.RandomState(0).randn(4, 3, 5).astype(np.float32)
    out = layers.layer_norm(x)
    assert out.op.name.startswith("LayerNorm/batchnorm")
    assert _names() == ["LayerNorm/beta", "LayerNorm/gamma"]
    assert fw.get_variables("LayerNorm/beta")[0].get_shape().as_list() == [5]
    last = layers.layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1, center=False,
                             activation_fn=tf.nn.relu)
    assert _names("LayerNorm_1") == ["LayerNorm_1/gamma"]
    layers.layer_norm(x, scope="LayerNorm", reuse=True)
    assert len(fw.get_variables()) == 3
    got, got_last = _run([out, last])
    flat = x.reshape(4, -1)
    want = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-12)
    np.testing.assert_allclose(got, want.reshape(x.shape), atol=1e-5)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
    np.testing.assert_allclose(got_last, np.maximum(want, 0), atol=1e-5)
    with pytest.raises(ValueError, match="undefined rank"):
        layers.layer_norm(tf.placeholder(tf.float32))
    with pytest.raises(ValueError, match="not fully defined"):
        layers.layer_norm(tf.placeholder(tf.float32, [4, None]))
    with pytest.raises(ValueError, match="must be < rank"):
        layers.layer_norm(x, begin_norm_axis=3)


def test_unit_norm_and_one_hot_encoding():
    x = np.array([[3.0, 4.0], [0.0, 2.0]], np.float32)
    normed = layers.unit_norm(x, dim=1)
    onehot = layers.one_hot_encoding(tf.constant([0, 2]), 3, outputs_collections="oh")
    assert onehot.op.name.startswith("OneHotEncoding/")
    assert tf.get_collection("oh") == [onehot]
    a, b = _run([normed, onehot])
    np.testing.assert_allclose(a, [[0.6, 0.8], [0.0, 1.0]], rtol=1e-5)
    assert b.tolist() == [[1, 0, 0], [0, 0, 1]] and b.dtype == np.float32
    with pytest.raises(ValueError, match="dim"):
        layers.unit_norm(x, dim=2)
