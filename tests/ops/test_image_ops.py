"""tf.image ops without codecs: resize (values from TF's ResizeImagesTest, computed by
hand with TF's legacy coordinates), gradients, dtype conversion, flips/rotations,
crops/pads, brightness/contrast, standardization and a CIFAR-style input pipeline."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave import image as I
from tensorweave.testing.tf_gradient_checker import compute_gradient_error

pytestmark = pytest.mark.usefixtures("graph")


def run(*fetches, feed=None):
    with tf.Session() as s:
        out = s.run(list(fetches), feed)
    return out[0] if len(fetches) == 1 else out


def img(data, shape, dtype=np.float32):
    return np.asarray(data, dtype=dtype).reshape(shape)


# ---- resize ------------------------------------------------------------------------------
def test_resize_up_bilinear_and_nearest_legacy():
    # TF's testResizeUp: [3, 2] -> [6, 4], half_pixel_centers=False.
    x = img([64, 32, 32, 64, 50, 100], [1, 3, 2, 1])
    bil = I.resize_images(x, [6, 4])
    nn = I.resize_images(x, [6, 4], I.ResizeMethod.NEAREST_NEIGHBOR)
    assert bil.op.type == "ResizeBilinear" and nn.op.type == "ResizeNearestNeighbor"
    assert bil.shape.as_list() == [1, 6, 4, 1] and bil.dtype == tf.float32
    b, n = run(bil, nn)
    np.testing.assert_allclose(b.reshape(-1), [
        64, 48, 32, 32, 48, 48, 48, 48, 32, 48, 64, 64,
        41, 61.5, 82, 82, 50, 75, 100, 100, 50, 75, 100, 100])
    np.testing.assert_array_equal(n.reshape(-1), [
        64, 64, 32, 32, 64, 64, 32, 32, 32, 32, 64, 64,
        32, 32, 64, 64, 50, 50, 100, 100, 50, 50, 100, 100])


def test_resize_up_align_corners():
    # TF's testResizeUpAlignCornersTrue: [3, 2] -> [5, 4].
    x = img([6, 3, 3, 6, 6, 9], [1, 3, 2, 1])
    b, n = run(I.resize_images(x, [5, 4], align_corners=True),
               I.resize_images(x, [5, 4], I.ResizeMethod.NEAREST_NEIGHBOR, align_corners=True))
    np.testing.assert_allclose(b.reshape(-1), [
        6, 5, 4, 3, 4.5, 4.5, 4.5, 4.5, 3, 4, 5, 6, 4.5, 5.5, 6.5, 7.5, 6, 7, 8, 9])
    np.testing.assert_array_equal(n.reshape(-1), [
        6, 6, 3, 3, 3, 3, 6, 6, 3, 3, 6, 6, 6, 6, 9, 9, 6, 6, 9, 9])


def test_resize_align_corners_false_3x3_to_6x6():
    x = img(range(1, 10), [3, 3, 1])  # a single 3-D image: the result is 3-D too
    out = I.resize_images(x, [6, 6])
    assert out.shape.as_list() == [6, 6, 1]
    np.testing.assert_allclose(run(out)[:, :, 0], [
        [1, 1.5, 2, 2.5, 3, 3], [2.5, 3, 3.5, 4, 4.5, 4.5], [4, 4.5, 5, 5.5, 6, 6],
        [5.5, 6, 6.5, 7, 7.5, 7.5], [7, 7.5, 8, 8.5, 9, 9], [7, 7.5, 8, 8.5, 9, 9]])


def test_resize_down_batched_multichannel_and_dtypes():
    x = np.arange(2 * 4 * 4 * 2, dtype=np.uint8).reshape(2, 4, 4, 2)
    b, n = run(I.resize_images(x, [2, 2]),
               I.resize_images(x, [2, 2], I.ResizeMethod.NEAREST_NEIGHBOR))
    # Legacy downscale by 2 samples the even rows and columns in both methods.
    np.testing.assert_array_equal(b, x[:, ::2, ::2].astype(np.float32))
    assert b.dtype == np.float32 and n.dtype == np.uint8
    np.testing.assert_array_equal(n, x[:, ::2, ::2])


def test_resize_same_size_is_a_no_op_and_dynamic_size():
    x = tf.constant(np.ones([4, 4, 3], np.uint8))
    assert I.resize_images(x, [4, 4]).dtype == tf.uint8  # returned as it is
    size = tf.placeholder(tf.int32, [2])
    out = I.resize_images(tf.constant(img(range(4), [1, 2, 2, 1])), size)
    assert out.shape.as_list() == [1, None, None, 1]
    got = run(out, feed={size: [3, 3]})
    np.testing.assert_allclose(got[0, :, :, 0], [[0, 2 / 3, 1], [4 / 3, 2, 7 / 3], [2, 8 / 3, 3]],
                               rtol=1e-6)


def test_resize_preserve_aspect_ratio():
    out = I.resize_images(tf.zeros([10, 20, 3]), [10, 10], preserve_aspect_ratio=True)
    assert out.shape.as_list() == [5, 10, 3]
    assert run(out).shape == (5, 10, 3)


def test_resize_half_pixel_centers_op_attr():
    x = img([0, 10], [1, 1, 2, 1])
    op = tf.get_default_graph().create_op(
        "ResizeBilinear", [tf.constant(x), tf.constant([1, 4])],
        {"align_corners": False, "half_pixel_centers": True})
    # Half-pixel sources: -0.25 (clamped to 0), 0.25, 0.75, 1.25 (upper clamped).
    np.testing.assert_allclose(run(op.outputs[0]).reshape(-1), [0, 2.5, 7.5, 10])


def test_resize_errors():
    with pytest.raises(ValueError, match="3 or 4 dimensions"):
        I.resize_images(tf.zeros([2, 2]), [1, 1])
    with pytest.raises(ValueError, match="size"):
        I.resize_images(tf.zeros([2, 2, 1]), [1, 1, 1])
    with pytest.raises(ValueError, match="not supported"):
        I.resize_images(tf.zeros([2, 2, 1]), [3, 3], method=I.ResizeMethod.AREA)
    with pytest.raises(ValueError, match="positive"):
        I.resize_images(tf.zeros([2, 2, 1]), [0, 3])
    size = tf.placeholder(tf.int32, [2])
    out = I.resize_images(tf.zeros([1, 2, 2, 1]), size)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"positive.*\[0, 3\]"):
        run(out, feed={size: [0, 3]})


# ---- resize gradients ----------------------------------------------------------------------
@pytest.mark.parametrize("in_shape,out_hw,align", [
    ([1, 2, 3, 1], [4, 6], False), ([1, 4, 6, 1], [2, 3], False),
    ([2, 3, 3, 2], [5, 4], True), ([1, 2, 2, 1], [3, 5], False)])
def test_resize_bilinear_gradient(in_shape, out_hw, align):
    x = tf.constant(np.arange(np.prod(in_shape), dtype=np.float32).reshape(in_shape))
    y = I.resize_images(x, out_hw, align_corners=align)
    assert tf.gradients(y, x)[0].op.type == "ResizeBilinearGrad"
    with tf.Session():
        err = compute_gradient_error(x, in_shape, y, [in_shape[0]] + out_hw + [in_shape[3]],
                                     x_init_value=x_value(in_shape))
    assert err < 1e-3


def x_value(shape):
    return np.random.RandomState(0).rand(*shape).astype(np.float32)


@pytest.mark.parametrize("in_shape,out_hw,align", [
    ([1, 2, 3, 1], [4, 6], False), ([1, 4, 6, 1], [2, 3], False), ([2, 3, 2, 2], [5, 4], True)])
def test_resize_nearest_gradient(in_shape, out_hw, align):
    x = tf.constant(x_value(in_shape).astype(np.float64))
    y = I.resize_images(x, out_hw, I.ResizeMethod.NEAREST_NEIGHBOR, align_corners=align)
    assert tf.gradients(y, x)[0].op.type == "ResizeNearestNeighborGrad"
    with tf.Session():
        err = compute_gradient_error(x, in_shape, y, [in_shape[0]] + out_hw + [in_shape[3]],
                                     x_init_value=x_value(in_shape).astype(np.float64))
    assert err < 1e-6


def test_resize_gradient_values_by_hand():
    x = tf.placeholder(tf.float32, [1, 2, 2, 1])
    gb = tf.gradients(I.resize_images(x, [4, 4]), x)[0]
    gn = tf.gradients(I.resize_images(x, [4, 4], I.ResizeMethod.NEAREST_NEIGHBOR), x)[0]
    b, n = run(gb, gn, feed={x: np.zeros([1, 2, 2, 1])})
    # Sources 0, .5, 1, 1.5 (clamped): pixel 0 gets 1 + .5, pixel 1 gets .5 + 1 + 1.
    np.testing.assert_allclose(b[0, :, :, 0], np.outer([1.5, 2.5], [1.5, 2.5]))
    np.testing.assert_array_equal(n[0, :, :, 0], [[4, 4], [4, 4]])
    z = tf.placeholder(tf.float32, [1, 3, 3, 1])  # 3 -> 2 reads rows/cols 0 and 1
    g = run(tf.gradients(I.resize_images(z, [2, 2], 1), z)[0], feed={z: np.zeros([1, 3, 3, 1])})
    np.testing.assert_array_equal(g[0, :, :, 0], [[1, 1, 0], [1, 1, 0], [0, 0, 0]])


# ---- convert_image_dtype ---------------------------------------------------------------------
@pytest.mark.parametrize("x,src,dst,expected", [
    ([0, 255], tf.uint8, tf.int16, [0, 255 * 128]),
    ([0, 32767], tf.int16, tf.uint8, [0, 255]),
    ([0, 2 ** 32], tf.int64, tf.int32, [0, 1]),
    ([0, 1], tf.int32, tf.int64, [0, 2 ** 32]),
    ([0, 1, 255], tf.uint8, tf.float32, [0, 1 / 255, 1]),
    ([0, 1.1 / 255, 1], tf.float32, tf.uint8, [0, 1, 255]),
    ([0.0, 0.5, 1.0], tf.float32, tf.float64, [0.0, 0.5, 1.0])])
def test_convert_image_dtype_values(x, src, dst, expected):
    out = I.convert_image_dtype(tf.constant(x, dtype=src), dst)
    assert out.dtype == dst
    np.testing.assert_allclose(run(out), expected, rtol=1e-6)


def test_convert_image_dtype_round_trips_and_saturate():
    u8 = np.arange(256, dtype=np.uint8)
    for mid in (tf.float32, tf.float64, tf.int16, tf.int32):
        back = I.convert_image_dtype(I.convert_image_dtype(u8, mid), tf.uint8)
        np.testing.assert_array_equal(run(back), u8)
    f = tf.constant([-0.5, 0.5, 1.5])
    np.testing.assert_array_equal(run(I.convert_image_dtype(f, tf.uint8, saturate=True)),
                                  [0, 127, 255])
    same = tf.constant(u8)
    assert I.convert_image_dtype(same, tf.uint8).op.type == "Identity"
    with pytest.raises(AttributeError, match="string"):
        I.convert_image_dtype(same, tf.string)


# ---- flips, transpose, rot90 ------------------------------------------------------------------
def test_flips_and_transpose_3d_and_4d():
    x = img(range(6), [2, 3, 1])
    lr, ud, tr = run(I.flip_left_right(x), I.flip_up_down(x), I.transpose_image(x))
    np.testing.assert_array_equal(lr[:, :, 0], [[2, 1, 0], [5, 4, 3]])
    np.testing.assert_array_equal(ud[:, :, 0], [[3, 4, 5], [0, 1, 2]])
    np.testing.assert_array_equal(tr[:, :, 0], [[0, 3], [1, 4], [2, 5]])
    b = np.stack([x, x + 10])
    lr4, tr4 = run(I.flip_left_right(b), I.transpose_image(b))
    np.testing.assert_array_equal(lr4, b[:, :, ::-1])
    np.testing.assert_array_equal(tr4, b.transpose(0, 2, 1, 3))
    with pytest.raises(ValueError, match="at least three-dimensional"):
        I.flip_left_right(tf.zeros([2, 2]))
    with pytest.raises(ValueError, match="3 or 4 dimensions"):
        I.flip_up_down(tf.zeros([1, 2, 2, 2, 1]))


def test_rot90_matches_numpy_for_static_and_dynamic_k():
    x = img(range(24), [3, 4, 2])
    k = tf.placeholder(tf.int32, [])
    dyn = I.rot90(x, k)
    with tf.Session() as s:
        for kv in range(-2, 6):
            np.testing.assert_array_equal(s.run(I.rot90(x, kv)), np.rot90(x, kv))
            np.testing.assert_array_equal(s.run(dyn, {k: kv}), np.rot90(x, kv))
    b = np.stack([x, x * 2])
    np.testing.assert_array_equal(run(I.rot90(b, 1)), np.rot90(b, 1, axes=(1, 2)))
    assert I.rot90(x, 1).shape.as_list() == [4, 3, 2]
    with pytest.raises(ValueError, match="scalar"):
        I.rot90(x, [1, 2])


def _outcomes(t, runs=40):
    with tf.Session() as s:
        return [s.run(t) for _ in range(runs)]


@pytest.mark.parametrize("fn,flipped", [
    (I.random_flip_left_right, lambda a: a[..., ::-1, :]),
    (I.random_flip_up_down, lambda a: a[..., ::-1, :, :])])
def test_random_flips_are_seeded_and_cover_both_outcomes(fn, flipped):
    x = img(range(12), [2, 3, 2])
    t = fn(x, seed=7)
    first, second = _outcomes(t), _outcomes(t)  # a fresh session replays the sequence
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    flips = [bool(np.array_equal(o, flipped(x))) for o in first]
    assert all(f or np.array_equal(o, x) for f, o in zip(flips, first))
    assert any(flips) and not all(flips)
    # A batch flips each image independently.
    b = np.stack([x] * 8)
    outs = run(fn(b, seed=3))
    per = [np.array_equal(o, flipped(x)) for o in outs]
    assert any(per) and not all(per)
    assert all(p or np.array_equal(o, x) for p, o in zip(per, outs))


# ---- crop / pad ----------------------------------------------------------------------------------
def test_crop_and_pad_to_bounding_box():
    x = img(range(1, 10), [3, 3, 1])
    c = I.crop_to_bounding_box(x, 1, 0, 2, 2)
    p = I.pad_to_bounding_box(x, 1, 2, 5, 6)
    assert c.shape.as_list() == [2, 2, 1] and p.shape.as_list() == [5, 6, 1]
    cv, pv = run(c, p)
    np.testing.assert_array_equal(cv[:, :, 0], [[4, 5], [7, 8]])
    expected = np.zeros([5, 6])
    expected[1:4, 2:5] = x[:, :, 0]
    np.testing.assert_array_equal(pv[:, :, 0], expected)
    b = np.stack([x, -x])
    assert run(I.crop_to_bounding_box(b, 0, 1, 3, 2)).shape == (2, 3, 2, 1)


@pytest.mark.parametrize("call,match", [
    (lambda x: I.crop_to_bounding_box(x, 0, 0, 4, 3), "height must be >= target"),
    (lambda x: I.crop_to_bounding_box(x, 0, 2, 3, 2), "width must be >= target"),
    (lambda x: I.crop_to_bounding_box(x, -1, 0, 1, 1), "offset_height must be >= 0"),
    (lambda x: I.crop_to_bounding_box(x, 0, 0, 0, 1), "target_height must be > 0"),
    (lambda x: I.pad_to_bounding_box(x, 0, 0, 2, 3), "height must be <= target"),
    (lambda x: I.pad_to_bounding_box(x, 0, 1, 3, 3), "width must be <= target"),
    (lambda x: I.resize_image_with_crop_or_pad(x, 0, 2), "target_height must be > 0"),
    (lambda x: I.crop_to_bounding_box(tf.zeros([3, 3]), 0, 0, 1, 1), "3 or 4 dimensions")])
def test_crop_pad_static_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call(tf.zeros([3, 3, 1]))


def test_crop_pad_runtime_errors_name_the_values():
    x = tf.placeholder(tf.float32, [None, None, 1])
    oh = tf.placeholder(tf.int32, [])
    crop = I.crop_to_bounding_box(x, oh, 0, 2, 2)
    pad = I.pad_to_bounding_box(x, 0, 0, 3, 3)
    assert crop.shape.as_list() == [2, 2, 1]
    with tf.Session() as s:
        assert s.run(crop, {x: np.ones([3, 2, 1]), oh: 1}).shape == (2, 2, 1)
        with pytest.raises(tf.errors.InvalidArgumentError, match="height must be >= target"):
            s.run(crop, {x: np.ones([3, 2, 1]), oh: 2})
        with pytest.raises(tf.errors.InvalidArgumentError, match="width must be <= target"):
            s.run(pad, {x: np.ones([2, 4, 1])})


def test_resize_image_with_crop_or_pad():
    x = img(range(1, 9), [2, 4, 1])
    out = I.resize_image_with_crop_or_pad(x, 4, 2)  # pad height 2 -> 4, crop width 4 -> 2
    assert out.shape.as_list() == [4, 2, 1]
    np.testing.assert_array_equal(run(out)[:, :, 0], [[0, 0], [2, 3], [6, 7], [0, 0]])
    odd = run(I.resize_image_with_crop_or_pad(x, 5, 3))[:, :, 0]
    np.testing.assert_array_equal(odd, [[0, 0, 0], [1, 2, 3], [5, 6, 7], [0, 0, 0], [0, 0, 0]])
    ph = tf.placeholder(tf.float32, [None, None, None, 1])
    dyn = I.resize_image_with_crop_or_pad(ph, 3, 3)
    got = run(dyn, feed={ph: np.ones([2, 5, 1, 1])})
    assert got.shape == (2, 3, 3, 1) and got[:, :, 1].sum() == 6 and got.sum() == 6


def test_central_crop():
    x = img(range(32), [4, 8, 1])
    out = I.central_crop(x, 0.5)
    assert out.shape.as_list() == [2, 4, 1]
    np.testing.assert_array_equal(run(out), x[1:3, 2:6])
    assert run(I.central_crop(np.stack([x, x]), 0.5)).shape == (2, 2, 4, 1)
    ph = tf.placeholder(tf.float32, [None, None, 1])
    np.testing.assert_array_equal(run(I.central_crop(ph, 0.5), feed={ph: x}), x[1:3, 2:6])
    assert I.central_crop(x, 1.0).shape.as_list() == [4, 8, 1]
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="central_fraction"):
            I.central_crop(x, bad)


def test_random_crop_seeded_in_bounds_and_errors():
    x = img(range(5 * 6), [5, 6, 1])
    t = I.random_crop(x, [2, 3, 1], seed=11)
    assert t.shape.as_list() == [2, 3, 1]
    first, second = _outcomes(t, 20), _outcomes(t, 20)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    corners = {(int(o[0, 0, 0]) // 6, int(o[0, 0, 0]) % 6) for o in first}
    assert len(corners) > 3 and all(r <= 3 and c <= 3 for r, c in corners)
    for o in first:
        r, c = int(o[0, 0, 0]) // 6, int(o[0, 0, 0]) % 6
        np.testing.assert_array_equal(o, x[r:r + 2, c:c + 3])
    with pytest.raises(ValueError, match="larger than value"):
        I.random_crop(x, [6, 3, 1])
    ph = tf.placeholder(tf.float32, [None, None, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need value.shape >= size"):
        run(I.random_crop(ph, [3, 3, 1]), feed={ph: np.ones([2, 5, 1])})


# ---- brightness, contrast, grayscale, standardization -------------------------------------------
def test_adjust_brightness_float_and_uint8():
    f = img([0.1, 0.5, 0.95], [1, 3, 1])
    np.testing.assert_allclose(run(I.adjust_brightness(f, 0.1)).reshape(-1), [0.2, 0.6, 1.05],
                               rtol=1e-6)
    u = np.asarray([0, 100, 250], np.uint8).reshape(1, 3, 1)
    out = I.adjust_brightness(u, 10 / 255)
    assert out.dtype == tf.uint8
    np.testing.assert_array_equal(run(out).reshape(-1), [10, 110, 255])  # saturated
    with pytest.raises(ValueError, match="max_delta"):
        I.random_brightness(f, -0.1)


def test_random_brightness_seeded_within_range():
    x = np.full([2, 2, 1], 0.5, np.float32)
    t = I.random_brightness(x, 0.2, seed=5)
    first, second = _outcomes(t, 20), _outcomes(t, 20)
    deltas = [float(o[0, 0, 0]) - 0.5 for o in first]
    assert all(-0.2 <= d < 0.2 for d in deltas) and min(deltas) < 0 < max(deltas)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_adjust_contrast_and_gradient():
    x = img([0, 1, 2, 3, 10, 20, 30, 40], [2, 2, 2])  # channel means 8 and 16
    out = I.adjust_contrast(x, 2.0)
    assert out.op.inputs[0].op.type == "AdjustContrastv2"  # float32 in: then an Identity
    mean = x.mean(axis=(0, 1), keepdims=True)
    np.testing.assert_allclose(run(out), (x - mean) * 2 + mean, rtol=1e-6)
    u = np.asarray([[[0], [100]], [[200], [250]]], np.uint8)
    np.testing.assert_array_equal(run(I.adjust_contrast(u, 2.0)).reshape(-1), [0, 62, 255, 255])
    v = tf.constant(x_value([2, 3, 2, 2]))
    with tf.Session():
        assert compute_gradient_error(v, [2, 3, 2, 2], I.adjust_contrast(v, 1.7),
                                      [2, 3, 2, 2]) < 1e-3
    with pytest.raises(ValueError, match="upper must be > lower"):
        I.random_contrast(x, 0.5, 0.5)
    t = I.random_contrast(x, 0.5, 1.5, seed=2)
    a, b = _outcomes(t, 5), _outcomes(t, 5)
    np.testing.assert_array_equal(a, b)


def test_rgb_to_grayscale():
    x = np.asarray([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]],
                   np.float32)
    out = I.rgb_to_grayscale(x)
    assert out.shape.as_list() == [2, 2, 1]
    np.testing.assert_allclose(run(out)[:, :, 0], [[0.2989, 0.5870], [0.1140, 0.9999]],
                               rtol=1e-5)
    u = run(I.rgb_to_grayscale(np.asarray([[[255, 255, 255], [10, 20, 30]]], np.uint8)))
    assert u.dtype == np.uint8 and u[0, 0, 0] == 255 and u[0, 1, 0] == 18
    with pytest.raises(ValueError, match="last dimension must be 3"):
        I.rgb_to_grayscale(tf.zeros([2, 2, 4]))


def test_per_image_standardization():
    shape = [13, 9, 3]
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    y = run(I.per_image_standardization(x))
    stddev = max(np.sqrt(np.mean(x.astype(np.float64) ** 2) - np.mean(x) ** 2),
                 1 / np.sqrt(x.size))
    np.testing.assert_allclose(y, (x - x.mean()) / stddev, rtol=1e-4, atol=1e-4)
    flat = run(I.per_image_standardization(np.full([19, 19, 3], 249.0, np.float32)))
    assert not np.isnan(flat).any() and np.allclose(flat, 0)
    batch = np.stack([x, 2 * x + 5]).astype(np.float32)
    yb = run(I.per_image_standardization(batch))
    np.testing.assert_allclose(yb[0], yb[1], atol=1e-4)  # each image on its own
    with pytest.raises(ValueError, match="three-dimensional"):
        I.per_image_standardization(tf.zeros([3, 3]))


# ---- a TF1 CIFAR-style distortion pipeline ------------------------------------------------
def test_cifar_distort_pipeline_in_dataset_map():
    images = np.random.RandomState(1).randint(0, 256, size=[6, 32, 32, 3]).astype(np.uint8)
    labels = np.arange(6, dtype=np.int32)

    def distort(image, label):
        x = tf.cast(image, tf.float32)
        x = I.resize_image_with_crop_or_pad(x, 36, 36)
        x = I.random_crop(x, [24, 24, 3], seed=1)  # tf.random_crop
        x = I.random_flip_left_right(x, seed=2)
        x = I.random_brightness(x, max_delta=63, seed=3)
        return I.per_image_standardization(x), label

    def epoch():
        tf.set_random_seed(0)
        ds = tf.data.Dataset.from_tensor_slices((images, labels)).map(distort).batch(3)
        x, y = ds.make_one_shot_iterator().get_next()
        assert x.shape.as_list() == [None, 24, 24, 3]
        with tf.Session() as s:
            return [s.run([x, y]) for _ in range(2)]

    with tf.Graph().as_default():
        a = epoch()
    with tf.Graph().as_default():
        b = epoch()
    for (xa, ya), (xb, yb) in zip(a, b):
        assert xa.shape == (3, 24, 24, 3) and xa.dtype == np.float32
        np.testing.assert_array_equal(xa, xb)  # seeded: identical across graphs
        np.testing.assert_array_equal(ya, yb)
        np.testing.assert_allclose(xa.mean(axis=(1, 2, 3)), 0, atol=1e-4)
        np.testing.assert_allclose(xa.std(axis=(1, 2, 3)), 1, atol=1e-3)
