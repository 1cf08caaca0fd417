"""Depthwise and separable convolution, atrous_conv2d, conv1d and tf.nn.convolution/pool:
values against per-pixel NumPy loops, shapes with SAME/VALID, strides and rates, NCHW,
errors, first- and second-order gradients, speed, and the Keras / tf.layers layers."""
from __future__ import annotations


import numpy as np
import pytest

import tensorweave as tf
from tensorweave.keras.layers.convolutional_depthwise import DepthwiseConv2D
from tensorweave.layers.convolutional_separable import SeparableConv2D, separable_conv2d
from tensorweave.nn_impl import conv_wrappers as cw
from tensorweave.nn_impl import depthwise_conv as dc
from tensorweave.ops.nn import depthwise_ops as dw

from nn_helpers import RNG, check_grads, ref_conv2d, run


def ref_depthwise(x, w, s, padding, d=1):
    """Per channel, the naive conv2d of that channel with its multiplier filters."""
    return np.concatenate([ref_conv2d(x[..., c:c + 1], w[:, :, c:c + 1, :], s, padding, d)
                           for c in range(x.shape[3])], axis=-1)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride, rate", [(1, 1), (2, 1), (3, 1), (1, 2), (1, 3)])
def test_depthwise_forward_matches_naive(padding, stride, rate):
    x, w = RNG.normal(size=(2, 9, 8, 3)), RNG.normal(size=(3, 2, 3, 2))
    out = run(lambda a, b: dc.depthwise_conv2d(a, b, [1, stride, stride, 1], padding,
                                               rate=[rate, rate]), x, w)
    np.testing.assert_allclose(out, ref_depthwise(x, w, stride, padding, rate), rtol=1e-10,
                               atol=1e-12)


def test_depthwise_channel_order_is_channel_major():
    # Output channel c * multiplier + m is filter m of input channel c (TF's layout).
    x = np.zeros((1, 1, 1, 2))
    x[..., 1] = 1.0
    w = np.arange(2 * 3, dtype=np.float64).reshape(1, 1, 2, 3)
    out = run(lambda a, b: dc.depthwise_conv2d(a, b, [1, 1, 1, 1], "VALID"), x, w)
    assert out.ravel().tolist() == [0, 0, 0, 3, 4, 5]


def test_depthwise_nchw_equals_nhwc_and_dilations_alias():
    x, w = RNG.normal(size=(2, 7, 6, 3)), RNG.normal(size=(3, 3, 3, 2))
    nhwc = run(lambda a, b: dc.depthwise_conv2d(a, b, [1, 2, 2, 1], "SAME"), x, w)
    nchw = run(lambda a, b: dc.depthwise_conv2d(a, b, [1, 1, 2, 2], "SAME",
                                                data_format="NCHW"), x.transpose(0, 3, 1, 2), w)
    np.testing.assert_allclose(nchw.transpose(0, 2, 3, 1), nhwc, rtol=1e-12)
    a = run(lambda a, b: dc.depthwise_conv2d(a, b, [1, 1, 1, 1], "SAME", dilations=[2, 2]), x, w)
    np.testing.assert_allclose(a, ref_depthwise(x, w, 1, "SAME", 2), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride, rate, fmt", [(1, 1, "NHWC"), (2, 1, "NHWC"),
                                               (1, 2, "NHWC"), (2, 1, "NCHW")])
def test_depthwise_gradients(padding, stride, rate, fmt):
    x, w = RNG.normal(size=(2, 6, 5, 2)), RNG.normal(size=(3, 2, 2, 3))
    if fmt == "NCHW":
        x = x.transpose(0, 3, 1, 2)
    s = [1, stride, stride, 1] if fmt == "NHWC" else [1, 1, stride, stride]
    check_grads(lambda a, b: dc.depthwise_conv2d(a, b, s, padding, rate=[rate, rate],
                                                 data_format=fmt), x, w)


def test_depthwise_second_order_gradients():
    # d/d(filter) of the input gradient and d/d(dy) of both backprop ops (TF's grads).
    x, w = RNG.normal(size=(1, 5, 5, 2)), RNG.normal(size=(3, 3, 2, 1))
    dy = RNG.normal(size=(1, 3, 3, 2))
    check_grads(lambda f, g: dw.depthwise_conv2d_native_backprop_input(
        [1, 5, 5, 2], f, g, [1, 2, 2, 1], "SAME"), w, dy)
    check_grads(lambda a, g: dw.depthwise_conv2d_native_backprop_filter(
        a, [3, 3, 2, 1], g, [1, 2, 2, 1], "SAME"), x, dy)


def test_depthwise_graph_and_shapes():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 32, 32, 16])
        w = tf.placeholder(tf.float32, [3, 3, 16, 2])
        y = dc.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
        assert y.shape.as_list() == [None, 32, 32, 32]
        assert y.op.type == "DepthwiseConv2dNative" and y.op.name == "depthwise"
        assert dc.depthwise_conv2d(x, w, [1, 2, 2, 1], "VALID").shape.as_list() == \
            [None, 15, 15, 32]
        assert dc.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", rate=[2, 3]).shape.as_list() \
            == [None, 28, 26, 32]
        gx, gw = tf.gradients(tf.reduce_sum(y), [x, w])
        assert gx.op.type == "DepthwiseConv2dNativeBackpropInput"
        assert gw.op.type == "DepthwiseConv2dNativeBackpropFilter"
        assert gw.shape.as_list() == [3, 3, 16, 2]
        sep = dc.separable_conv2d(x, w, tf.ones([1, 1, 32, 8]), [1, 1, 1, 1], "SAME")
        assert sep.shape.as_list() == [None, 32, 32, 8] and sep.op.type == "Conv2D"
        assert g.get_operation_by_name("separable_conv2d/depthwise").type == \
            "DepthwiseConv2dNative"


def test_depthwise_errors_name_the_problem():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [8, 16, 16, 3], name="images")
        with pytest.raises(ValueError, match=r"input channels \(3\).*in_channels \(4\)"):
            dc.depthwise_conv2d(x, tf.ones([3, 3, 4, 1]), [1, 1, 1, 1], "SAME")
        with pytest.raises(ValueError, match="strides > 1 not supported in conjunction with "
                                             "rate > 1"):
            dc.depthwise_conv2d(x, tf.ones([3, 3, 3, 1]), [1, 2, 2, 1], "SAME", rate=[2, 2])
        with pytest.raises(ValueError, match="EXPLICIT.*tf.pad"):
            dc.depthwise_conv2d(x, tf.ones([3, 3, 3, 1]), [1, 1, 1, 1], "EXPLICIT")
        with pytest.raises(ValueError, match=r"pointwise_filter .* \[1, 1, in_channels"):
            dc.separable_conv2d(x, tf.ones([3, 3, 3, 1]), tf.ones([3, 3, 3, 4]), [1, 1, 1, 1],
                                "SAME")
        with pytest.raises(ValueError, match="window .* larger than the input"):
            dc.depthwise_conv2d(x, tf.ones([17, 3, 3, 1]), [1, 1, 1, 1], "VALID")


def test_separable_conv2d_equals_depthwise_then_pointwise():
    x, d, p = RNG.normal(size=(2, 8, 7, 3)), RNG.normal(size=(3, 3, 3, 2)), \
        RNG.normal(size=(1, 1, 6, 4))
    out = run(lambda a, b, c: dc.separable_conv2d(a, b, c, [1, 2, 2, 1], "SAME"), x, d, p)
    want = ref_depthwise(x, d, 2, "SAME") @ p[0, 0]
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12)
    check_grads(lambda a, b, c: dc.separable_conv2d(a, b, c, [1, 1, 1, 1], "VALID",
                                                    rate=[2, 2]), x[:1, :6, :6], d, p)


def test_atrous_conv2d_conv1d_and_convolution():
    x, w = RNG.normal(size=(2, 9, 8, 3)), RNG.normal(size=(3, 3, 3, 4))
    out = run(lambda a, b: cw.atrous_conv2d(a, b, 2, "SAME"), x, w)
    np.testing.assert_allclose(out, ref_conv2d(x, w, 1, "SAME", d=2), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="rate 0 cannot be less than one"):
        run(lambda a, b: cw.atrous_conv2d(a, b, 0, "SAME"), x, w)
    s, f = RNG.normal(size=(2, 11, 3)), RNG.normal(size=(4, 3, 5))
    for stride, pad in ((1, "SAME"), (2, "VALID"), (3, "SAME")):
        got = run(lambda a, b, st=stride, p=pad: cw.conv1d(a, b, st, p), s, f)
        want = ref_conv2d(s[:, None], f[None], 1, pad)[:, 0] if stride == 1 else \
            _ref_conv1d(s, f, stride, pad)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    ncw = run(lambda a, b: cw.conv1d(a, b, 2, "VALID", data_format="NCW"),
              s.transpose(0, 2, 1), f)
    np.testing.assert_allclose(ncw.transpose(0, 2, 1), _ref_conv1d(s, f, 2, "VALID"),
                               rtol=1e-10, atol=1e-12)
    check_grads(lambda a, b: cw.conv1d(a, b, 2, "SAME", dilations=2), s, f)
    nd = run(lambda a, b: cw.convolution(a, b, "VALID", dilation_rate=[1, 2]), x, w)
    np.testing.assert_allclose(nd, _ref_dilated(x, w, 1, 2), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match='data_format must be "NWC" or "NCW"'):
        run(lambda a, b: cw.conv1d(a, b, 1, "SAME", data_format="NHCW"), s, f)


def _ref_conv1d(s, f, stride, pad):
    # A 1-D conv is the 2-D one over a unit height, subsampled along the width.
    full = ref_conv2d(s[:, None], f[None], 1, pad)[:, 0]
    if pad == "VALID":
        return full[:, ::stride]
    out = -(-s.shape[1] // stride)
    total = max((out - 1) * stride + f.shape[0] - s.shape[1], 0)
    offset = total // 2 - (f.shape[0] - 1) // 2   # SAME at stride s vs stride 1
    return full[:, offset::stride][:, :out]


def _ref_dilated(x, w, dh, dwid):
    n, h, wd, _ = x.shape
    kh, kw, _, o = w.shape
    oh, ow = h - (kh - 1) * dh, wd - (kw - 1) * dwid
    out = np.zeros((n, oh, ow, o))
    for p in range(kh):
        for q in range(kw):
            out += x[:, p * dh:p * dh + oh, q * dwid:q * dwid + ow] @ w[p, q]
    return out


def test_pool_dispatches_by_rank_and_refuses_dilation_with_strides():
    x = RNG.normal(size=(2, 6, 6, 3))
    got = run(lambda a: cw.pool(a, [2, 2], "MAX", "VALID", strides=[2, 2]), x)
    np.testing.assert_allclose(got, x.reshape(2, 3, 2, 3, 2, 3).max(axis=(2, 4)))
    seq = RNG.normal(size=(2, 8, 3))
    got = run(lambda a: cw.pool(a, [2], "AVG", "VALID", strides=[2]), seq)
    np.testing.assert_allclose(got, seq.reshape(2, 4, 2, 3).mean(axis=2))
    # Dilation is built with space_to_batch (tests/ops/test_space_batch_ops.py), which
    # cannot also stride, as in TF.
    with pytest.raises(ValueError, match=r"strides \[2, 2\] > 1 not supported in "
                                         r"conjunction with dilation_rate \[2, 2\]"):
        run(lambda a: cw.pool(a, [2, 2], "MAX", "SAME", strides=[2, 2], dilation_rate=[2, 2]),
            x)
    with pytest.raises(ValueError, match="pooling_type must be 'MAX' or 'AVG'"):
        run(lambda a: cw.pool(a, [2, 2], "L2", "SAME"), x)


def test_keras_depthwise_and_tf_layers_separable():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 3])
        layer = DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2)
        y = layer(x)
        assert y.shape.as_list() == [None, 4, 4, 6]
        assert [tuple(v.shape.as_list()) for v in layer.weights] == [(3, 3, 3, 2), (6,)]
        z = separable_conv2d(x, 5, 3, padding="same", depth_multiplier=2, name="sep1",
                             activation=tf.nn.relu)
        names = sorted(v.op.name for v in tf.trainable_variables() if "sep1" in v.op.name)
        assert names == ["sep1/bias", "sep1/depthwise_kernel", "sep1/pointwise_kernel"]
        assert z.shape.as_list() == [None, 8, 8, 5]
        again = separable_conv2d(x, 5, 3, padding="same", depth_multiplier=2, name="sep1",
                                 reuse=True)
        assert len([v for v in tf.trainable_variables() if "sep1" in v.op.name]) == 3
        assert isinstance(SeparableConv2D(4, 3), SeparableConv2D)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            a, b = sess.run([tf.nn.relu(again), z], {x: RNG.normal(size=(2, 8, 8, 3))})
    np.testing.assert_allclose(a, b)
