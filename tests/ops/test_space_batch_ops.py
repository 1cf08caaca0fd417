"""SpaceToBatchND / BatchToSpaceND / SpaceToBatch / BatchToSpace / SpaceToDepth /
DepthToSpace: values against outputs recorded from TF 2.21 (tf.compat.v1, inputs
arange + 1), round trips, shapes (partially known too), errors, gradients; and
dilated depthwise / atrous / convolution / pool now built as TF builds them
(SpaceToBatchND -> op -> BatchToSpaceND) with the same values and gradients as the
previous `dilations`-attr graphs."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.ops.array import depth_space_ops as ds
from tensorweave.ops.array import space_batch_ops as sb
from tensorweave.nn_impl import conv_wrappers as cw
from tensorweave.nn_impl import depthwise_conv as dc
from tensorweave.ops.nn import depthwise_ops as dw
from tensorweave.nn_impl import space_to_batch_conv as sbc

from nn_helpers import RNG, check_grads, run


def a(*shape):
    return (np.arange(int(np.prod(shape))) + 1).astype(np.float32).reshape(shape)


# Recorded from TF 2.21: (builder, output op type, shape, flat values).
TF_CASES = {
    "s2b_nd_2d": (lambda: sb.space_to_batch_nd(a(2, 3, 4, 1), [2, 2], [[1, 0], [0, 2]]),
                  "SpaceToBatchND", [8, 2, 3, 1],
                  [0, 0, 0, 5, 7, 0, 0, 0, 0, 17, 19, 0, 0, 0, 0, 6, 8, 0, 0, 0, 0, 18, 20, 0,
                   1, 3, 0, 9, 11, 0, 13, 15, 0, 21, 23, 0, 2, 4, 0, 10, 12, 0, 14, 16, 0, 22,
                   24, 0]),
    "s2b_nd_1d_rest": (lambda: sb.space_to_batch_nd(a(2, 4, 3), [2], [[1, 1]]),
                       "SpaceToBatchND", [4, 3, 3],
                       [0, 0, 0, 4, 5, 6, 10, 11, 12, 0, 0, 0, 16, 17, 18, 22, 23, 24, 1, 2,
                        3, 7, 8, 9, 0, 0, 0, 13, 14, 15, 19, 20, 21, 0, 0, 0]),
    "b2s_nd": (lambda: sb.batch_to_space_nd(a(8, 1, 2, 1), [2, 2], [[0, 1], [1, 0]]),
               "BatchToSpaceND", [2, 1, 3, 1], [5, 2, 6, 7, 4, 8]),
    "s2d": (lambda: ds.space_to_depth(a(1, 4, 4, 2), 2), "SpaceToDepth", [1, 2, 2, 8],
            [1, 2, 3, 4, 9, 10, 11, 12, 5, 6, 7, 8, 13, 14, 15, 16, 17, 18, 19, 20, 25, 26,
             27, 28, 21, 22, 23, 24, 29, 30, 31, 32]),
    "d2s": (lambda: ds.depth_to_space(a(1, 2, 2, 8), 2), "DepthToSpace", [1, 4, 4, 2],
            [1, 2, 3, 4, 9, 10, 11, 12, 5, 6, 7, 8, 13, 14, 15, 16, 17, 18, 19, 20, 25, 26,
             27, 28, 21, 22, 23, 24, 29, 30, 31, 32]),
    "s2b_v1": (lambda: sb.space_to_batch(a(1, 2, 4, 1), [[0, 0], [1, 1]], 2),
               "SpaceToBatchND", [4, 1, 3, 1], [0, 2, 4, 1, 3, 0, 0, 6, 8, 5, 7, 0]),
    "b2s_v1": (lambda: sb.batch_to_space(a(4, 1, 2, 1), [[0, 0], [1, 0]], 2),
               "BatchToSpaceND", [1, 2, 3, 1], [3, 2, 4, 7, 6, 8]),
    "s2b_nd_3d": (lambda: sb.space_to_batch_nd(a(1, 2, 2, 2, 1), [1, 2, 2],
                                               [[0, 0], [0, 0], [1, 1]]),
                  "SpaceToBatchND", [4, 2, 1, 2, 1],
                  [0, 2, 0, 6, 1, 0, 5, 0, 0, 4, 0, 8, 3, 0, 7, 0]),
}


@pytest.mark.parametrize("case", sorted(TF_CASES))
def test_values_match_tensorflow(case):
    build, op_type, shape, flat = TF_CASES[case]
    with tf.Graph().as_default():
        t = build()
        assert t.op.type == op_type and t.shape.as_list() == shape
        with tf.Session() as sess:
            out = sess.run(t)
    np.testing.assert_array_equal(out.ravel(), np.array(flat, np.float32))


def test_raw_4d_ops_equal_nd_ops():
    x = a(2, 4, 6, 3)
    with tf.Graph().as_default():
        s = tf.get_default_graph().create_op(
            "SpaceToBatch", [tf.constant(x), tf.constant([[1, 1], [0, 2]])], {"block_size": 2},
            name="s2b").outputs[0]
        b = tf.get_default_graph().create_op(
            "BatchToSpace", [s, tf.constant([[1, 1], [0, 2]])], {"block_size": 2},
            name="b2s").outputs[0]
        nd = sb.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 2]])
        assert s.shape.as_list() == [8, 3, 4, 3] and b.shape.as_list() == list(x.shape)
        with tf.Session() as sess:
            sv, bv, ndv = sess.run([s, b, nd])
    np.testing.assert_array_equal(sv, ndv)
    np.testing.assert_array_equal(bv, x)


@pytest.mark.parametrize("block, pads", [([2, 3], [[1, 1], [0, 3]]), ([1, 2], [[0, 0], [0, 0]]),
                                         ([3], [[1, 2]]), ([], np.zeros([0, 2], np.int32))])
def test_round_trip_recovers_input(block, pads):
    x = RNG.normal(size=(2, 6, 6, 2)).astype(np.float32)
    out = run(lambda t: sb.batch_to_space_nd(sb.space_to_batch_nd(t, block, pads), block, pads),
              x)
    np.testing.assert_array_equal(out, x)


def test_depth_round_trip_and_nchw_is_transposed_nhwc():
    x = RNG.normal(size=(2, 6, 4, 3))
    np.testing.assert_array_equal(run(lambda t: ds.depth_to_space(ds.space_to_depth(t, 2), 2),
                                      x), x)
    nhwc = run(lambda t: ds.space_to_depth(t, 2), x)
    nchw = run(lambda t: ds.space_to_depth(t, 2, data_format="NCHW"), x.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(nchw.transpose(0, 2, 3, 1), nhwc)
    back = run(lambda t: ds.depth_to_space(t, 2, data_format="NCHW"), nchw)
    np.testing.assert_array_equal(back.transpose(0, 2, 3, 1), x)


def test_partially_known_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, None, 6, 3])
        assert sb.space_to_batch_nd(x, [2, 3], [[0, 0], [0, 0]]).shape.as_list() == \
            [None, None, 2, 3]
        assert sb.space_to_batch(x, [[0, 0], [0, 0]], 2).shape.as_list() == \
            [None, None, 3, 3]
        y = tf.placeholder(tf.float32, [8, None, 5, 3])
        assert sb.batch_to_space_nd(y, [2, 2], [[0, 0], [1, 2]]).shape.as_list() == \
            [2, None, 7, 3]
        pads = tf.placeholder(tf.int32, [2, 2])
        assert sb.space_to_batch_nd(y, [2, 2], pads).shape.as_list() == [32, None, None, 3]
        blk = tf.placeholder(tf.int32, [2])
        assert sb.batch_to_space_nd(y, blk, pads).shape.as_list() == [None, None, None, 3]
        assert sb.space_to_batch_nd(tf.placeholder(tf.float32), [2], [[0, 0]]).shape.ndims \
            is None
        assert ds.space_to_depth(x, 3).shape.as_list() == [None, None, 2, 27]
        assert ds.depth_to_space(tf.placeholder(tf.float32, [1, None, 2, 8]), 2
                                 ).shape.as_list() == [1, None, 4, 2]
        # Feeding a dynamic input still computes the full result.
        z = sb.batch_to_space_nd(sb.space_to_batch_nd(x, [2, 3], [[1, 1], [0, 0]]), [2, 3],
                                 [[1, 1], [0, 0]])
        v = RNG.normal(size=(2, 4, 6, 3)).astype(np.float32)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(z, {x: v}), v)


@pytest.mark.parametrize("build, match", [
    (lambda: sb.space_to_batch_nd(tf.zeros([1, 5, 4, 1]), [2, 2], [[0, 0], [0, 0]]),
     r"SpaceToBatchND: padded spatial dimension 0 .*\(5 \+ paddings \[0, 0\] = 5\)"
     r".*block_shape\[0\]=2"),
    (lambda: sb.space_to_batch_nd(tf.zeros([1, 4, 4, 1]), [0, 2], [[0, 0], [0, 0]]),
     r"SpaceToBatchND: all values in block_shape must be positive, got \[0, 2\]"),
    (lambda: sb.space_to_batch_nd(tf.zeros([1, 4, 4, 1]), [2, 2], [[0, -1], [0, 0]]),
     r"SpaceToBatchND: paddings must be non-negative, got \[\[0, -1\], \[0, 0\]\]"),
    (lambda: sb.space_to_batch_nd(tf.zeros([1, 4, 4, 1]), [2, 2], [[0, 0]]),
     r"paddings should have shape \[2, 2\]"),
    (lambda: sb.space_to_batch_nd(tf.zeros([4, 4]), [2, 2], [[0, 0], [0, 0]]),
     r"input rank should be >= 3"),
    (lambda: sb.batch_to_space_nd(tf.zeros([6, 2, 2, 1]), [2, 2], [[0, 0], [0, 0]]),
     r"BatchToSpaceND: input batch dimension \(6\).*product of block sizes \(4"),
    (lambda: sb.batch_to_space_nd(tf.zeros([4, 2, 2, 1]), [2, 2], [[3, 2], [0, 0]]),
     r"BatchToSpaceND: crops \[3, 2\] of spatial dimension 0 exceed its size 2 \* block 2"),
    (lambda: tf.get_default_graph().create_op(
        "SpaceToBatch", [tf.zeros([1, 4, 4, 1]), tf.zeros([2, 2], tf.int32)], {"block_size": 1}),
     r"SpaceToBatch: block_size must be at least 2, got 1"),
    (lambda: ds.space_to_depth(tf.zeros([1, 5, 4, 1]), 2),
     r"SpaceToDepth: image height 5 .*not divisible by block_size 2"),
    (lambda: ds.depth_to_space(tf.zeros([1, 2, 2, 6]), 2),
     r"DepthToSpace: input depth 6 .*block_size \* block_size = 4"),
    (lambda: ds.space_to_depth(tf.zeros([1, 4, 4, 1]), 1),
     r"SpaceToDepth: block_size must be at least 2, got 1"),
    (lambda: ds.space_to_depth(tf.zeros([1, 4, 4, 4]), 2, data_format="NCHW_VECT_C"),
     r"SpaceToDepth: data_format 'NCHW_VECT_C'.*use 'NHWC' or 'NCHW'"),
    (lambda: ds.depth_to_space(tf.zeros([2, 4, 4]), 2), r"DepthToSpace: input must be 4-D"),
])
def test_build_time_errors_name_op_and_value(build, match):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=match):
        build()


def test_run_time_errors_are_invalid_argument():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [1, None, 4, 1])
        s2b = sb.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]])
        y = tf.placeholder(tf.float32, [None, 2, 2, 1])
        b2s = sb.batch_to_space_nd(y, [2, 2], [[0, 0], [0, 0]])
        s2d = ds.space_to_depth(x, 2)
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match=r"padded_shape\[0\]=3"):
                sess.run(s2b, {x: np.zeros([1, 3, 4, 1])})
            with pytest.raises(errors.InvalidArgumentError, match=r"\(3\).*product of block "
                                                                  r"sizes \(4\)"):
                sess.run(b2s, {y: np.zeros([3, 2, 2, 1])})
            with pytest.raises(errors.InvalidArgumentError, match=r"SpaceToDepth: image width "
                                                                  r"4 and height 3"):
                sess.run(s2d, {x: np.zeros([1, 3, 4, 1])})


def test_each_op_is_the_others_gradient():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 4, 4, 4])
        for fwd, inverse in ((sb.space_to_batch_nd(x, [2, 2], [[0, 0], [2, 0]]),
                              "BatchToSpaceND"),
                             (sb.batch_to_space_nd(x, [2, 1], [[1, 1], [0, 0]]),
                              "SpaceToBatchND"),
                             (ds.space_to_depth(x, 2), "DepthToSpace"),
                             (ds.depth_to_space(x, 2), "SpaceToDepth")):
            (gx,) = tf.gradients(fwd, [x])
            assert gx.op.type == inverse and gx.shape.as_list() == [2, 4, 4, 4]


@pytest.mark.parametrize("fn", [
    lambda t: sb.space_to_batch_nd(t, [2, 3], [[1, 1], [0, 1]]),
    lambda t: sb.batch_to_space_nd(t, [2, 2], [[1, 0], [0, 1]]),
    lambda t: sb.space_to_batch(t, [[0, 2], [1, 1]], 2),
    lambda t: sb.batch_to_space(t, [[0, 1], [1, 0]], 2),
    lambda t: tf.get_default_graph().create_op("SpaceToBatch", [t, tf.constant([[0, 2], [1, 1]])],
                                               {"block_size": 2}, name="s").outputs[0],
    lambda t: tf.get_default_graph().create_op("BatchToSpace", [t, tf.constant([[0, 1], [1, 0]])],
                                               {"block_size": 2}, name="b").outputs[0],
    lambda t: ds.space_to_depth(t, 2),
    lambda t: ds.depth_to_space(t, 2, data_format="NCHW"),
])
def test_gradients_match_finite_differences(fn):
    check_grads(fn, RNG.normal(size=(4, 4, 2, 4)))


def test_required_space_to_batch_paddings():
    with tf.Graph().as_default():
        p, c = sbc.required_space_to_batch_paddings([5, 4], [2, 3], [[1, 1], [0, 2]])
        shp = tf.placeholder(tf.int32, [2])
        pd, cd = sbc.required_space_to_batch_paddings(shp, [2, 3], [[1, 1], [0, 2]])
        with tf.Session() as sess:
            pv, cv, pdv, cdv = sess.run([p, c, pd, cd], {shp: [5, 4]})
    assert pv.tolist() == [[1, 2], [0, 2]] and cv.tolist() == [[0, 1], [0, 0]]
    assert pdv.tolist() == pv.tolist() and cdv.tolist() == cv.tolist()


def _dilated_native(x, w, rate, padding, fmt="NHWC"):
    """The previous build: DepthwiseConv2dNative with its dilations attr."""
    d = [1, 1, rate, rate] if fmt == "NCHW" else [1, rate, rate, 1]
    return dw.depthwise_conv2d_native(x, w, [1, 1, 1, 1], padding, data_format=fmt,
                                      dilations=d)


def _values_and_grads(build, x, w):
    g = tf.Graph()
    with g.as_default():
        xt, wt = tf.constant(x), tf.constant(w)
        y = build(xt, wt)
        dy = tf.constant(np.linspace(-1, 1, int(np.prod(y.shape.as_list()))).reshape(
            y.shape.as_list()))
        grads = tf.gradients(y, [xt, wt], grad_ys=dy)
        with tf.Session() as sess:
            return sess.run([y] + grads), {o.type for o in g.get_operations()}


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_depthwise_rate2_built_with_space_to_batch(padding, fmt):
    x, w = RNG.normal(size=(2, 9, 8, 3)), RNG.normal(size=(3, 2, 3, 2))
    if fmt == "NCHW":
        x = x.transpose(0, 3, 1, 2)
    new, types = _values_and_grads(
        lambda a_, b_: dc.depthwise_conv2d(a_, b_, [1, 1, 1, 1], padding, rate=[2, 2],
                                           data_format=fmt), x, w)
    old, _ = _values_and_grads(lambda a_, b_: _dilated_native(a_, b_, 2, padding, fmt), x, w)
    assert {"SpaceToBatchND", "BatchToSpaceND", "DepthwiseConv2dNative"} <= types
    for n, o in zip(new, old):
        np.testing.assert_allclose(n, o, rtol=1e-10, atol=1e-12)


def test_dilated_graphs_carry_no_dilations_attr():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [1, 9, 9, 2])
        sep = dc.separable_conv2d(x, tf.ones([3, 3, 2, 1]), tf.ones([1, 1, 2, 4]), [1, 1, 1, 1],
                                  "SAME", rate=2)
        atr = cw.atrous_conv2d(x, tf.ones([3, 3, 2, 4]), 2, "SAME")
        conv = cw.convolution(x, tf.ones([3, 3, 2, 4]), "VALID", dilation_rate=[2, 3])
        assert sep.shape.as_list() == atr.shape.as_list() == [1, 9, 9, 4]
        assert conv.shape.as_list() == [1, 5, 3, 4]
        assert atr.op.type == conv.op.type == "BatchToSpaceND"
        for op in g.get_operations():
            if op.type in ("Conv2D", "DepthwiseConv2dNative"):
                assert op.get_attr("dilations") == [1, 1, 1, 1], op.name


@pytest.mark.parametrize("build, ref", [
    (lambda x, w: cw.atrous_conv2d(x, w, 2, "SAME"),
     lambda x, w: tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1])),
    (lambda x, w: cw.convolution(x, w, "VALID", dilation_rate=[3, 2]),
     lambda x, w: tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID", dilations=[1, 3, 2, 1])),
    (lambda x, w: cw.convolution(tf.transpose(x, [0, 3, 1, 2]), w, "SAME", dilation_rate=2,
                                 data_format="NCHW"),
     lambda x, w: tf.transpose(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME",
                                            dilations=[1, 2, 2, 1]), [0, 3, 1, 2])),
])
def test_dilated_convolution_equals_dilations_attr(build, ref):
    x, w = RNG.normal(size=(2, 9, 8, 3)), RNG.normal(size=(3, 2, 3, 4))
    new, types = _values_and_grads(build, x, w)
    old, _ = _values_and_grads(ref, x, w)
    assert {"SpaceToBatchND", "BatchToSpaceND"} <= types
    for n, o in zip(new, old):
        np.testing.assert_allclose(n, o, rtol=1e-10, atol=1e-12)


def test_dilated_pool_and_dynamic_spatial_shape():
    x = RNG.normal(size=(2, 7, 6, 3))
    pooled = run(lambda t: cw.pool(t, [2, 2], "MAX", "VALID", dilation_rate=[2, 2]), x)
    want = np.maximum.reduce([x[:, i:i + 5, j:j + 4] for i in (0, 2) for j in (0, 2)])
    np.testing.assert_array_equal(pooled, want)
    w = RNG.normal(size=(3, 3, 3, 2))
    with tf.Graph().as_default():
        ph = tf.placeholder(tf.float64, [None, None, None, 3])
        y = dc.depthwise_conv2d(ph, w, [1, 1, 1, 1], "SAME", rate=[2, 3])
        ref = dw.depthwise_conv2d_native(tf.constant(x), w, [1, 1, 1, 1], "SAME",
                                         dilations=[1, 2, 3, 1])
        assert y.shape.as_list() == [None, None, None, 6]
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(y, {ph: x}), sess.run(ref), rtol=1e-10)


def test_public_names_are_wired():
    from tensorweave.ops.array import depth_space_ops, space_batch_ops
    assert tf.space_to_batch_nd is space_batch_ops.space_to_batch_nd
    assert tf.batch_to_space is space_batch_ops.batch_to_space
    assert tf.nn.space_to_batch is space_batch_ops.space_to_batch
    assert tf.depth_to_space is tf.nn.depth_to_space is depth_space_ops.depth_to_space
    assert tf.space_to_depth is depth_space_ops.space_to_depth
    assert callable(tf.nn.with_space_to_batch) and callable(tf.required_space_to_batch_paddings)
