"""tf.layers (TF 1.x): functional layers and classes on variable scopes.

Covers what tensorflow/python/layers/{core,convolutional,pooling,normalization}_test.py
check, in our own tests: variable names and uniquing, reuse through `reuse=` and
enclosing scopes, trainable flags, regularization losses in REGULARIZATION_LOSSES,
batch normalization updates in UPDATE_OPS, training flags as bools and tensors.
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def _names(variables):
    return [v.name for v in variables]


def _eval(*tensors, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(list(tensors), feed)


def test_dense_names_auto_unique_and_in_scope():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.dense(x, 2, activation=tf.nn.relu, name="my_dense")
    assert y.op.name == "my_dense/Relu"
    tf.layers.dense(x, 2)
    tf.layers.dense(x, 2)
    with tf.variable_scope("test"):
        tf.layers.dense(x, 2)
    assert _names(tf.trainable_variables()) == [
        "my_dense/kernel:0", "my_dense/bias:0", "dense/kernel:0", "dense/bias:0",
        "dense_1/kernel:0", "dense_1/bias:0", "test/dense/kernel:0", "test/dense/bias:0"]


def test_dense_class_properties_and_auto_naming():
    layer = tf.layers.Dense(2, activation=tf.nn.relu, name="my_dense")
    assert (layer.units, layer.activation, layer.use_bias) == (2, tf.nn.relu, True)
    out = layer(tf.random_uniform((5, 4), seed=1))
    assert out.shape.as_list() == [5, 2]
    assert layer.variables == [layer.kernel, layer.bias] == layer.trainable_variables
    assert layer.non_trainable_variables == []
    assert (layer.kernel.name, layer.bias.name) == ("my_dense/kernel:0", "my_dense/bias:0")
    second = tf.layers.Dense(2)
    second.apply(tf.ones([1, 2]))
    third = tf.layers.Dense(2)
    third.apply(tf.ones([1, 2]))
    assert (second.name, third.name) == ("dense", "dense_1")


def test_dense_on_higher_rank_inputs_and_shape_errors():
    layer = tf.layers.Dense(7)
    assert layer(tf.ones([5, 2, 3])).shape.as_list() == [5, 2, 7]
    assert layer(tf.ones([1, 2, 4, 3])).shape.as_list() == [1, 2, 4, 7]
    for shape in (None, [None, None], [None, None, None]):
        with pytest.raises(ValueError, match="last dimension"):
            tf.layers.Dense(4)(tf.placeholder(tf.float32, shape))


def test_dense_no_bias_and_non_trainable():
    nb = tf.layers.Dense(2, use_bias=False)
    nb(tf.ones([1, 2]))
    assert nb.bias is None and nb.variables == [nb.kernel]
    frozen = tf.layers.Dense(2, trainable=False, name="frozen")
    frozen(tf.ones([1, 2]))
    assert frozen.trainable_variables == []
    assert frozen.non_trainable_variables == [frozen.kernel, frozen.bias]
    assert _names(tf.trainable_variables()) == ["dense/kernel:0"]


def test_dense_reuse_by_argument_and_by_scope():
    x = tf.ones([5, 3])
    tf.layers.dense(x, 2, name="my_dense")
    before = tf.trainable_variables()
    tf.layers.dense(x, 2, name="my_dense", reuse=True)
    assert tf.trainable_variables() == before
    with tf.variable_scope("scope"):
        tf.layers.dense(x, 2, name="d")
    with tf.variable_scope("scope", reuse=True):
        tf.layers.dense(x, 2, name="d")
    with tf.variable_scope("scope", reuse=tf.AUTO_REUSE):
        tf.layers.dense(x, 2, name="d")
        tf.layers.dense(x, 2, name="e")
    assert len(tf.trainable_variables()) == 6
    with pytest.raises(ValueError, match="already exists"):
        tf.layers.dense(x, 2, name="my_dense")
    with pytest.raises(ValueError, match="does not exist"):
        tf.layers.dense(x, 2, name="never_made", reuse=True)


def test_dense_takes_a_variable_scope_as_name_and_the_scope_initializer():
    with tf.variable_scope("test1") as scope:
        tf.layers.dense(tf.ones([1, 3]), 2, name=scope)
    assert "test1/kernel:0" in _names(tf.global_variables())
    with tf.variable_scope("init", initializer=tf.ones_initializer()):
        y = tf.layers.dense(tf.ones([1, 3]), 2)
    assert _eval(y)[0].tolist() == [[3.0, 3.0]]   # kernel ones (from scope), bias zeros


def test_kernel_bias_and_activity_regularizers_are_regularization_losses():
    reg = lambda w: tf.reduce_sum(w) * 1e-3  # noqa: E731
    k = tf.layers.Dense(2, kernel_regularizer=reg, kernel_initializer=tf.ones_initializer())
    k(tf.ones([5, 3]))
    b = tf.layers.Dense(2, bias_regularizer=reg, name="b")
    b(tf.ones([5, 3]))
    a = tf.layers.Dense(2, activity_regularizer=reg, name="a")
    a(tf.ones([5, 3]))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 3 and losses == k.losses + b.losses + a.losses
    assert _eval(losses[0])[0] == pytest.approx(6e-3)
    tf.layers.dense(tf.ones([5, 3]), 2, name="dense", kernel_regularizer=reg, reuse=True)
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 3


def test_dropout_bool_tensor_and_default_training_false():
    x = tf.ones([50, 50])
    train = tf.layers.dropout(x, 0.5, training=True, seed=1)
    infer = tf.layers.dropout(x, 0.5, seed=1)
    flag = tf.placeholder(tf.bool)
    dynamic = tf.layers.Dropout(0.5, seed=1).apply(x, training=flag)
    t, i = _eval(train, infer)
    assert t.min() == 0.0 and t.max() == 2.0 and np.all(i == 1.0)
    on, off = _eval(dynamic, feed={flag: True})[0], _eval(dynamic, feed={flag: False})[0]
    assert on.min() == 0.0 and np.all(off == 1.0)


def test_dropout_noise_shape_and_rate_tensor():
    x = tf.ones([5, 3, 2])
    y = tf.layers.Dropout(0.5, noise_shape=[None, 1, None], seed=1).apply(x, training=True)
    out = _eval(y)[0]
    np.testing.assert_array_equal(out[:, 0, :], out[:, 1, :])
    rate = tf.placeholder(tf.float32, [])
    z = tf.layers.Dropout(rate).apply(tf.ones([5, 5]), training=True)
    assert np.all(_eval(z, feed={rate: 0.0})[0] == 1.0)
    assert _eval(z, feed={rate: 0.5})[0].min() == 0.0


def test_flatten_shapes_and_channels_first():
    x = tf.placeholder(tf.float32, (None, 2, 3))
    assert tf.layers.flatten(x).shape.as_list() == [None, 6]
    assert tf.layers.Flatten()(tf.placeholder(tf.float32, (None,))).shape.as_list() == [None, 1]
    unknown = tf.layers.Flatten()(tf.placeholder(tf.float32, (5, None, None)))
    assert unknown.shape.as_list() == [5, None]
    value = np.arange(24, dtype=np.float32).reshape([1, 4, 3, 2])
    last = tf.layers.Flatten(data_format="channels_last")(tf.constant(value))
    first = tf.layers.Flatten(data_format="channels_first")(
        tf.constant(value.transpose([0, 3, 1, 2])))
    a, b = _eval(last, first)
    np.testing.assert_array_equal(a, b)
    assert _eval(unknown, feed={x: np.zeros((3, 2, 3)),
                                unknown.op.inputs[0]: np.zeros((5, 2, 3))})[0].shape == (5, 6)


def test_conv2d_pooling_names_shapes_and_values():
    images = tf.placeholder(tf.float32, [None, 6, 6, 1])
    conv = tf.layers.conv2d(images, 2, 3, padding="same", activation=tf.nn.relu,
                            kernel_initializer=tf.ones_initializer())
    assert _names(tf.global_variables()) == ["conv2d/kernel:0", "conv2d/bias:0"]
    assert tf.global_variables()[0].shape.as_list() == [3, 3, 1, 2]
    valid = tf.layers.conv2d(images, 4, [3, 2], strides=(1, 2))
    assert valid.shape.as_list() == [None, 4, 3, 4]
    pooled = tf.layers.max_pooling2d(conv, pool_size=2, strides=2)
    avg = tf.layers.average_pooling2d(conv, pool_size=[2, 2], strides=2, padding="same")
    assert pooled.shape.as_list() == avg.shape.as_list() == [None, 3, 3, 2]
    value = np.arange(36, dtype=np.float32).reshape(1, 6, 6, 1)
    c, p, a = _eval(conv, pooled, avg, feed={images: value})
    # centre pixel (2, 2): the sum of its 3x3 neighbourhood
    assert c[0, 2, 2, 0] == value[0, 1:4, 1:4, 0].sum()
    assert p[0, 0, 0, 0] == c[0, :2, :2, 0].max()
    assert a[0, 0, 0, 0] == pytest.approx(c[0, :2, :2, 0].mean())


def test_conv2d_reuse_and_class_form():
    x = tf.ones([1, 5, 5, 3])
    tf.layers.conv2d(x, 4, 3, name="conv")
    tf.layers.conv2d(x, 4, 3, name="conv", reuse=True)
    layer = tf.layers.Conv2D(2, (3, 3), data_format="channels_first", name="cf")
    assert layer(tf.ones([1, 3, 5, 5])).shape.as_list() == [1, 2, 3, 3]
    assert _names(tf.global_variables()) == ["conv/kernel:0", "conv/bias:0",
                                             "cf/kernel:0", "cf/bias:0"]
    with pytest.raises(ValueError, match="expected ndim=4"):
        tf.layers.conv2d(tf.ones([3, 5]), 2, 3)


def test_batch_normalization_updates_in_update_ops_and_variables():
    flag = tf.placeholder(tf.bool)
    bn = tf.layers.BatchNormalization(axis=1)
    out = bn.apply(tf.random_uniform((5, 4, 3), seed=1), training=flag)
    assert out.shape.as_list() == [5, 4, 3]
    assert len(bn.updates) == 2 and tf.get_collection(tf.GraphKeys.UPDATE_OPS) == bn.updates
    assert len(bn.variables) == 4 and len(bn.non_trainable_variables) == 2
    assert tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES) == bn.trainable_variables
    assert _names(bn.variables) == [
        "batch_normalization/gamma:0", "batch_normalization/beta:0",
        "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]


@pytest.mark.parametrize("axis,shape", [(1, (5, 4, 3)), (2, (5, 4, 3)), (1, (5, 4, 3, 6)),
                                        (-1, (5, 4, 3, 6))])
def test_batch_normalization_normalizes_and_learns_moving_statistics(axis, shape):
    rng = np.random.RandomState(0)
    value = (rng.random_sample(shape) + 100).astype(np.float32)
    flag = tf.placeholder(tf.bool)
    bn = tf.layers.BatchNormalization(axis=axis, momentum=0.9)
    out = bn.apply(tf.constant(value), training=flag)
    reduce = tuple(i for i in range(len(shape)) if i != axis % len(shape))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(100):
            y = sess.run([out] + bn.updates, {flag: True})[0]
            assert abs(y.mean()) < 0.05 and abs(y.std() - 1.0) < 0.05
        mean, var = sess.run([bn.moving_mean, bn.moving_variance])
        inferred = sess.run(out, {flag: False})
    np.testing.assert_allclose(mean, value.mean(axis=reduce), atol=1e-2)
    np.testing.assert_allclose(var, value.var(axis=reduce), atol=1e-2)
    assert abs(inferred.mean()) < 0.05 and abs(inferred.std() - 1.0) < 0.05


def test_batch_normalization_moving_statistics_match_tf_exactly():
    # TF 1.x: 4-D inputs use the fused kernel (unbiased moving variance), 2-D the plain
    # formula (biased). Figures from TF 2.21 compat.v1, momentum 0.5, one update.
    x4 = tf.constant(np.arange(36, dtype=np.float32).reshape(2, 3, 3, 2) ** 1.5)
    x2 = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3) ** 2)
    y4 = tf.layers.batch_normalization(x4, training=True, momentum=0.5)
    y2 = tf.layers.batch_normalization(x2, training=True, momentum=0.5)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out4, out2 = sess.run([y4, y2])
        sess.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
        stats = sess.run([v for v in tf.global_variables() if "moving" in v.name])
    np.testing.assert_allclose(stats[0], [40.239666, 43.18046], rtol=1e-5)
    np.testing.assert_allclose(stats[1], [2079.541, 2217.566], rtol=1e-5)
    np.testing.assert_allclose(stats[2], [15.75, 20.75, 26.75], rtol=1e-6)
    np.testing.assert_allclose(stats[3], [496.625, 721.625, 991.625], rtol=1e-6)
    np.testing.assert_allclose(out4[0, 0, 0], [-1.28425, -1.319066], rtol=1e-5)
    np.testing.assert_allclose(out2[0], [-0.99999946, -1.0664355, -1.111798], rtol=1e-5)


def test_batch_normalization_inference_by_default_and_reuse():
    x = tf.ones([4, 3])
    y = tf.layers.batch_normalization(x, name="bn")
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    # moving mean 0, variance 1: y = x / sqrt(1 + eps)
    np.testing.assert_allclose(_eval(y)[0], np.ones([4, 3]) / np.sqrt(1.001), rtol=1e-6)
    tf.layers.batch_normalization(x, name="bn", reuse=True, training=True)
    assert len(tf.global_variables()) == 4
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2


def test_batch_normalization_trains_with_update_ops_as_control_dependencies():
    x = tf.placeholder(tf.float32, [None, 2])
    h = tf.layers.batch_normalization(tf.layers.dense(x, 4), training=True)
    loss = tf.reduce_mean(tf.square(tf.layers.dense(h, 1) - 1.0))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    moving_mean = [v for v in tf.global_variables() if "moving_mean" in v.name][0]
    feed = {x: np.random.RandomState(0).normal(3.0, 1.0, (16, 2))}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, feed)
        for _ in range(30):
            sess.run(train, feed)
        assert sess.run(loss, feed) < first
        assert np.any(sess.run(moving_mean) != 0.0)


def test_custom_tf_layers_layer_uses_get_variable_in_its_scope():
    class Affine(tf.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_variable("w", [int(input_shape[-1]), 2],
                                       initializer=tf.ones_initializer())
            self.b = self.add_weight("b", [2], initializer=tf.zeros_initializer(),
                                     trainable=False)
            super().build(input_shape)

        def call(self, inputs):
            return tf.matmul(inputs, self.w) + self.b

    layer = Affine(name="aff")
    y = layer(tf.ones([1, 3]))
    assert [v.name for v in layer.variables] == ["aff/w:0", "aff/b:0"]
    assert tf.trainable_variables() == [layer.w]
    assert _eval(y)[0].tolist() == [[3.0, 3.0]]
    with tf.variable_scope("", reuse=True):
        assert tf.get_variable("aff/w") is layer.w


def test_batch_normalization_under_a_partitioner_keeps_its_moving_statistics_whole():
    # DeepRec's modelzoo builds its DNN layers under min_max_variable_partitioner: TF's
    # layer leaves the moving mean/variance unpartitioned (they are assigned whole).
    with tf.Graph().as_default():
        x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
        part = tf.min_max_variable_partitioner(max_partitions=2, min_slice_size=4)
        with tf.variable_scope("dnn", partitioner=part):
            y = tf.layers.batch_normalization(x, training=True)
        names = {v.op.name: v for v in tf.global_variables()}
        assert "dnn/batch_normalization/moving_mean" in names
        assert not any("moving_mean/part" in n for n in names)
        assert tf.get_variable_scope().partitioner is None
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            y = tf.identity(y)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(y)
            mean = sess.run(names["dnn/batch_normalization/moving_mean"])
        np.testing.assert_allclose(mean, 0.01 * np.array([4.5, 5.5, 6.5]), rtol=1e-5)
