"""More graph-mode Keras layers: Conv1D, Conv2DTranspose, 1-D pooling, activation and
reshaping layers, checked on hand-computed values and against their 2-D equivalents."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
L = tf.keras.layers


def _eval(*tensors, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(list(tensors), feed)


def test_conv1d_kernel_shape_and_values():
    layer = L.Conv1D(2, 3, kernel_initializer="ones", bias_initializer="ones")
    x = tf.constant(np.arange(10, dtype=np.float32).reshape(1, 5, 2))
    y = layer(x)
    assert layer.kernel.shape.as_list() == [3, 2, 2] and layer.kernel.name == "conv1d/kernel:0"
    assert y.shape.as_list() == [1, 3, 2]
    out = _eval(y)[0]
    # window t..t+2 over both channels, plus 1
    want = [np.arange(10).reshape(5, 2)[t:t + 3].sum() + 1 for t in range(3)]
    assert out[0, :, 0].tolist() == want and out[0, :, 1].tolist() == want
    same = L.Conv1D(4, 2, strides=2, padding="same")
    assert same(tf.ones([2, 7, 3])).shape.as_list() == [2, 4, 4]
    assert same.compute_output_shape((2, 7, 3)).as_list() == [2, 4, 4]
    with pytest.raises(ValueError, match="causal"):
        L.Conv1D(2, 3, padding="causal")


def test_conv2d_transpose_shapes_values_and_gradient():
    layer = L.Conv2DTranspose(1, 2, strides=2, kernel_initializer="ones", use_bias=False)
    x = tf.constant([[[[1.0], [2.0]], [[3.0], [4.0]]]])        # 1x2x2x1
    y = layer(x)
    assert layer.kernel.shape.as_list() == [2, 2, 1, 1] and y.shape.as_list() == [1, 4, 4, 1]
    out = _eval(y)[0][0, :, :, 0]
    # each input pixel becomes a 2x2 block of itself
    assert out.tolist() == [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]
    valid = L.Conv2DTranspose(3, 3, strides=1)
    placeholder = tf.placeholder(tf.float32, [None, None, 5, 2])
    z = valid(placeholder)
    assert z.shape.as_list() == [None, None, 7, 3]
    grads = tf.gradients(tf.reduce_sum(z), valid.trainable_weights)
    got = _eval(z, *grads, feed={placeholder: np.ones((2, 4, 5, 2), np.float32)})
    assert got[0].shape == (2, 6, 7, 3) and all(np.all(np.isfinite(g)) for g in got[1:])


def test_pooling_1d():
    x = tf.constant(np.array([[[1.0], [5.0], [2.0], [0.0], [7.0]]], np.float32))
    mx, avg = L.MaxPooling1D()(x), L.AveragePooling1D(2, strides=1)(x)
    gmax, gavg = L.GlobalMaxPooling1D()(x), L.GlobalAveragePooling1D()(x)
    assert mx.shape.as_list() == [1, 2, 1] and avg.shape.as_list() == [1, 4, 1]
    m, a, gm, ga = _eval(mx, avg, gmax, gavg)
    assert m.ravel().tolist() == [5.0, 2.0] and a.ravel().tolist() == [3.0, 3.5, 1.0, 3.5]
    assert gm.tolist() == [[7.0]] and ga.tolist() == [[3.0]]


def test_activation_layers():
    x = tf.constant([-2.0, 0.5, 8.0])
    got = _eval(L.ReLU(max_value=6.0)(x), L.LeakyReLU()(x), L.ELU(alpha=0.5)(x),
                L.Softmax()(tf.constant([[0.0, 0.0]])))
    np.testing.assert_allclose(got[0], [0.0, 0.5, 6.0])
    np.testing.assert_allclose(got[1], [-0.6, 0.5, 8.0], rtol=1e-6)
    np.testing.assert_allclose(got[2], [0.5 * (np.exp(-2.0) - 1), 0.5, 8.0], rtol=1e-6)
    np.testing.assert_allclose(got[3], [[0.5, 0.5]])


def test_reshaping_layers():
    x = tf.constant(np.arange(4, dtype=np.float32).reshape(1, 2, 2, 1))
    pad = L.ZeroPadding2D(((1, 0), (0, 2)))(x)
    up = L.UpSampling2D(2)(x)
    perm = L.Permute((2, 1))(tf.constant([[[1.0, 2.0, 3.0]]]))
    rep = L.RepeatVector(3)(tf.constant([[1.0, 2.0]]))
    assert pad.shape.as_list() == [1, 3, 4, 1] and up.shape.as_list() == [1, 4, 4, 1]
    p, u, pe, r = _eval(pad, up, perm, rep)
    assert p[0, :, :, 0].tolist() == [[0, 0, 0, 0], [0, 1, 0, 0], [2, 3, 0, 0]]
    assert u[0, :, :, 0].tolist() == [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]]
    assert pe.shape == (1, 3, 1) and r.tolist() == [[[1.0, 2.0]] * 3]
    with pytest.raises(ValueError, match="Permute"):
        L.Permute((0, 1))


def test_upsampling_with_unknown_sizes_and_gradient():
    x = tf.placeholder(tf.float32, [None, None, None, 2])
    y = L.UpSampling2D((2, 3))(x)
    g = tf.gradients(tf.reduce_sum(y), x)[0]
    out, grad = _eval(y, g, feed={x: np.ones((1, 2, 2, 2), np.float32)})
    assert out.shape == (1, 4, 6, 2) and np.all(grad == 6.0)


def test_tf_layers_conv1d_and_conv2d_transpose_and_pooling1d():
    seq = tf.ones([2, 8, 3])
    h = tf.layers.conv1d(seq, 4, 3, padding="same", name="c1")
    h = tf.layers.max_pooling1d(h, 2, 2)
    h = tf.layers.average_pooling1d(h, 2, 1)
    img = tf.ones([1, 4, 4, 2])
    up = tf.layers.conv2d_transpose(img, 3, 3, strides=2, padding="same")
    assert h.shape.as_list() == [2, 3, 4] and up.shape.as_list() == [1, 8, 8, 3]
    assert [v.name for v in tf.global_variables()] == [
        "c1/kernel:0", "c1/bias:0", "conv2d_transpose/kernel:0", "conv2d_transpose/bias:0"]
    tf.layers.conv1d(seq, 4, 3, padding="same", name="c1", reuse=True)
    assert len(tf.global_variables()) == 4
