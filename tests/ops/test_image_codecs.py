"""Image codecs (DecodeJpeg, DecodePng, DecodeGif, DecodeBmp, DecodeAndCropJpeg,
EncodeJpeg, EncodePng, ExtractJpegShape; is_jpeg and decode_image composites).
Expected values were recorded from TF 2.21 (tf.compat.v1, graph mode) on the same
inputs, built here with Pillow: md5 prefixes of the decoded pixels or encoded bytes."""
import base64
import hashlib
import io
import zlib

import numpy as np
import pytest
from PIL import Image

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.ops.image.codec_ops import (
    decode_and_crop_jpeg, decode_bmp, decode_gif, decode_jpeg, decode_png, extract_jpeg_shape)
from tensorweave.image_impl.decode_image_ops import decode_image, is_jpeg
from tensorweave.ops.image.encode_ops import encode_jpeg, encode_png


def rgb(h=16, w=24):
    y, x = np.mgrid[0:h, 0:w]
    r = x * 255 // (w - 1)
    g = y * 255 // (h - 1)
    b = ((x * 7 + y * 13) % 32) * 8
    return np.stack([r, g, b], -1).astype(np.uint8)


def save(a, fmt, **kw):
    b = io.BytesIO()
    Image.fromarray(a).save(b, fmt, **kw)
    return b.getvalue()


def gif():
    a = rgb()
    frames = [Image.fromarray(a), Image.fromarray(255 - a)]
    b = io.BytesIO()
    frames[0].save(b, "GIF", save_all=True, append_images=frames[1:])
    return b.getvalue()


F = {"jpeg": save(rgb(), "JPEG", quality=90),
     "gray_jpeg": save(rgb()[..., 1], "JPEG", quality=90),
     "png": save(rgb(), "PNG"),
     "rgba_png": save(np.concatenate([rgb(), rgb()[..., :1]], -1), "PNG"),
     "gif": gif(), "bmp": save(rgb(), "BMP")}

# TF 2.21's outputs: md5 prefix of the pixels, shape.
TF = {
    "jpeg_accurate": ("2d5be20b67eefccf", [16, 24, 3]),
    "jpeg_fast_nofancy": ("b7a18b09da3b75ff", [16, 24, 3]),
    "jpeg_ratio2": ("89648d08372d5fb6", [8, 12, 3]),
    "jpeg_ratio4": ("4d6b7e7fa7dcb2c0", [4, 6, 3]),
    "jpeg_gray1": ("ee6f84825803332b", [16, 24, 1]),
    "gray_jpeg_rgb": ("b748962457562993", [16, 24, 3]),
    "png": ("b30c7fb072231ead", [16, 24, 3]),
    "png_gray": ("61a318e7b860e213", [16, 24, 1]),
    "png_rgba": ("0fb4f8277188e2fa", [16, 24, 4]),
    "png16": ("393c0f8f90339860", [16, 24, 3]),
    "rgba_png_3": ("b30c7fb072231ead", [16, 24, 3]),
    "rgba_png_1": ("61a318e7b860e213", [16, 24, 1]),
    "gif": ("d28d45d52783d837", [2, 16, 24, 3]),
    "bmp": ("b30c7fb072231ead", [16, 24, 3]),
    "png_via_jpeg": ("b30c7fb072231ead", [16, 24, 3]),
}
# TF's decode_jpeg with default flags (IFAST DCT, fancy upsampling), zlib+base64.
TF_DEFAULT = (
    "eNoBgAR/+wAAOwACRgwHWxsKai8TeSsAdjIAi0UAl1cJkGYRil4AbmsAaooReI8NbYQAUpwHZagEd7sJhcwRhsMA"
    "bNcBcegFbvoPbu0AVgQUUBAaXx4edhUJayIMbjENeUUTllocpUsEhmITiGoTdIEeeHcFZIoPapkVaacYdLwfkrML"
    "hb0KgNASgOsehdsEYeUDWfcSZAsoYgMaYA4YeSQjiTYsgz8rgjkZekcZhmAmnmIfiWEaXnUkXnkXZJgrfqYwfJgY"
    "baIVhbcims4todYrkdAZa+gmbP8ydf8xcwMuZRU7ehcxhSg4jx0jbzYzekE0fFI3hl02k1wrfGw3ZX49Z5NAhIcp"
    "dY8obaU1f7g9mMI+o7Mii880j9cybvFBb+EnWfEwZQhFdBJKeQg4aB5DdydBfDtJhklOhUQ9cFlJeGdMdXRRcmIy"
    "XH06f5JEj5lDgq9RhqQ8b7NAe8NAkNpMlM04WOZHW/RJa/5LdQBHbQNObhJWbSVeeTdijSdHdkFXgEhVd1hZd1BI"
    "YGJPZX5deoZXg5ddj45KeaFVfKdQcMRiiNJhmcVKed5aZ+1eZPZZdO5McQZlexFsfh1yeRNdaCZifi9ggUluiVp1"
    "kk5cg11igm1qdYV3dnNaVYhkZphmf6NoiL12lqtaer1jf9BrfeV1c9ldX+tifPVkjQx6iQNueA1ybh14czOAhkWE"
    "kzJnd0lyhFl4jWl8il9raXJ1Yn95V5WDa6eGj5RogaZuh7t7jMV8g8VybM5uXuJ4a/V+hP+CkAB7iwmCihmNhC2Y"
    "hiJ/bC9/ckqNk1OLjEx+Y1qDYWyHdHyLdpKZb4yHZ5F+gqSEmbqQnMGNj76Ddc+JcOCPdO2QceyGYPKIXg6bkhWf"
    "kAeLcxuUdSiWc0Ojh1ChmEOMeVabYmaiZneihnCOdn+VZoyXbZ+dkbSkpaSGhsWej8aZcNmhcNaOZueWa/GYYP+l"
    "ZgCeYQmobhOpeSy1izi0jy2ce0CjhlOug1yxbVijYmeggH6qj5C0hpm0gZKie56hhrmnmcqskL+eV8uiUN2iaPix"
    "g/2sffaicwC3XBDDcSLIig6odC66iz+/jkrAjDunaVO4aGvGeW26hoHAk3WrcY+8e5i8fKnAiLu9lbewesu+YNzG"
    "Ye7GfuOvde2ueP26gxTeewDAaBLLiBrGijPSjz7SiD7Ie0vLeFnQdGfVdl7AaXfMeYHKeZTTgqHYhJrHcrTTg7jP"
    "dc7bb77CVM/Aa+jOg/bTgv7YhQDYbwLVdBzmlCrmmSHRgDrehTnWb1boe0vTZVvXaWvdbn7lepDpi4DPdJnggKDe"
    "ebDjeqbQYLnYYdTpdN3ifO3nh+TUcvTgfQzzgxP1hRPsexzpgCTgiz7wkD3pY0jsWFrxbmr0enj5e2/ibYHnhIvl"
    "i6H1k7L9lKnldLzveMjwc938e9LiZuPocvDpfv7yjADreQ32gBf4eCz/i0j/szbujEL2X1j/YGf/d2LzcG31cX75"
    "fZX/nqX/q5DqiKj3jLz/jMn/hsDtbNP3ceL4cvb/gf//mPXuhpSCMn8=")


def md5(x, n=16):
    return hashlib.md5(np.ascontiguousarray(x).tobytes()).hexdigest()[:n]


def run(t):
    with tf.Session() as s:
        return s.run(t)


CASES = {
    "jpeg_accurate": lambda: decode_jpeg(F["jpeg"], dct_method="INTEGER_ACCURATE"),
    "jpeg_fast_nofancy": lambda: decode_jpeg(F["jpeg"], fancy_upscaling=False),
    "jpeg_ratio2": lambda: decode_jpeg(F["jpeg"], ratio=2),
    "jpeg_ratio4": lambda: decode_jpeg(F["jpeg"], ratio=4, dct_method="INTEGER_ACCURATE"),
    "jpeg_gray1": lambda: decode_jpeg(F["jpeg"], channels=1),
    "gray_jpeg_rgb": lambda: decode_jpeg(F["gray_jpeg"], channels=3),
    "png": lambda: decode_png(F["png"]),
    "png_gray": lambda: decode_png(F["png"], channels=1),
    "png_rgba": lambda: decode_png(F["png"], channels=4),
    "png16": lambda: decode_png(F["png"], dtype=tf.uint16),
    "rgba_png_3": lambda: decode_png(F["rgba_png"], channels=3),
    "rgba_png_1": lambda: decode_png(F["rgba_png"], channels=1),
    "gif": lambda: decode_gif(F["gif"]),
    "bmp": lambda: decode_bmp(F["bmp"]),
    "png_via_jpeg": lambda: decode_jpeg(F["png"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_decoded_pixels_equal_tensorflows(case):
    with tf.Graph().as_default():
        out = run(CASES[case]())
    assert (md5(out), list(out.shape)) == TF[case]


def test_jpeg_default_flags_within_three_levels_of_tensorflow():
    """TF's default DCT is IFAST with fancy upsampling, which Pillow cannot combine."""
    want = np.frombuffer(zlib.decompress(base64.b64decode(TF_DEFAULT)), np.uint8)
    got = run(decode_jpeg(F["jpeg"])).reshape(-1).astype(int)
    assert 0 < np.abs(got - want).max() <= 3


def test_encoders_write_tensorflows_bytes():
    assert hashlib.md5(run(encode_jpeg(rgb(), quality=90))).hexdigest() == \
        "61e6aa06cdbcae23f1ece30313332b6a"
    assert hashlib.md5(run(encode_jpeg(rgb()))).hexdigest() == "9bb00074331cae1bf0bdc9ebdc03231a"
    assert hashlib.md5(run(encode_jpeg(rgb(), quality=80, progressive=True,
                                       chroma_downsampling=False))).hexdigest() == \
        "e08f677d0f9e071806ca286e8ccec044"


def test_round_trips():
    img = rgb()
    assert (run(decode_png(encode_png(img, compression=9))) == img).all()
    wide = (np.arange(4 * 5 * 3).reshape(4, 5, 3) * 1000).astype(np.uint16)
    assert (run(decode_png(encode_png(wide), dtype=tf.uint16)) == wide).all()
    gray16 = wide[..., :1]
    assert (run(decode_png(encode_png(gray16), dtype=tf.uint16)) == gray16).all()
    smooth = np.repeat(np.repeat(rgb(4, 6), 4, 0), 4, 1)
    back = run(decode_jpeg(encode_jpeg(smooth, quality=100, chroma_downsampling=False),
                           dct_method="INTEGER_ACCURATE"))
    diff = np.abs(back.astype(int) - smooth)
    assert diff.max() <= 16 and diff.mean() < 2
    assert run(decode_jpeg(encode_jpeg(smooth[..., :1]))).shape == (16, 24, 1)


def test_static_shapes():
    c = tf.placeholder(tf.string, [])
    assert decode_jpeg(c).shape.as_list() == [None, None, None]
    assert decode_jpeg(c, channels=3).shape.as_list() == [None, None, 3]
    assert decode_png(c, channels=4, dtype=tf.uint16).shape.as_list() == [None, None, 4]
    assert decode_png(c, dtype=tf.uint16).dtype == tf.uint16
    assert decode_gif(c).shape.as_list() == [None, None, None, 3]
    assert decode_bmp(c, channels=1).shape.as_list() == [None, None, 1]
    assert extract_jpeg_shape(c).shape.as_list() == [3]
    assert decode_and_crop_jpeg(c, [1, 2, 3, 4], channels=3).shape.as_list() == [3, 4, 3]
    assert encode_jpeg(tf.placeholder(tf.uint8, [None, None, 3])).shape.as_list() == []
    assert decode_image(c, channels=3, expand_animations=False).shape.as_list() == [None, None, 3]
    assert decode_image(c).shape.ndims is None
    with pytest.raises(ValueError, match="scalar"):
        decode_jpeg(tf.placeholder(tf.string, [2]))
    with pytest.raises(ValueError, match="ratio"):
        decode_jpeg(c, ratio=3)
    with pytest.raises(ValueError, match="channels"):
        decode_jpeg(c, channels=4)


def test_jpeg_helpers():
    assert run(extract_jpeg_shape(F["jpeg"])).tolist() == [16, 24, 3]
    assert run(extract_jpeg_shape(F["gray_jpeg"], tf.int64)).tolist() == [16, 24, 1]
    assert run(is_jpeg(F["jpeg"])) and not run(is_jpeg(F["png"]))
    full = run(decode_jpeg(F["jpeg"], dct_method="INTEGER_ACCURATE"))
    crop = run(decode_and_crop_jpeg(F["jpeg"], [2, 3, 5, 7], dct_method="INTEGER_ACCURATE"))
    assert (crop == full[2:7, 3:10]).all()


def test_decode_image_sniffs_every_format():
    c = tf.placeholder(tf.string, [])
    img = decode_image(c)
    flat = decode_image(c, channels=3, expand_animations=False, dtype=tf.float32)
    with tf.Session() as s:
        assert s.run(img, {c: F["png"]}).shape == (16, 24, 3)
        assert s.run(img, {c: F["gif"]}).shape == (2, 16, 24, 3)
        assert s.run(img, {c: F["bmp"]}).shape == (16, 24, 3)
        assert s.run(img, {c: F["gray_jpeg"]}).shape == (16, 24, 1)
        f = s.run(flat, {c: F["gif"]})
        assert f.shape == (16, 24, 3) and f.dtype == np.float32 and f.max() <= 1.0
        with pytest.raises(errors.InvalidArgumentError, match="JPEG, PNG, GIF, or BMP"):
            s.run(img, {c: b"hello world"})


@pytest.mark.parametrize("data,match", [
    (b"", "empty file"), (b"hello world", "unknown format"),
    (F["jpeg"][:20], "Invalid JPEG data"), (F["jpeg"][:300], "Invalid JPEG data or crop window"),
])
def test_corrupt_jpeg_is_invalid_argument(data, match):
    with pytest.raises(errors.InvalidArgumentError, match=match) as e:
        run(decode_jpeg(data))
    assert "DecodeJpeg" in str(e.value)


def test_other_errors():
    with pytest.raises(errors.InvalidArgumentError, match="Invalid PNG data"):
        run(decode_png(F["png"][:len(F["png"]) // 2]))
    with pytest.raises(errors.InvalidArgumentError, match="DecodeBmp"):
        run(decode_bmp(F["png"]))
    with pytest.raises(errors.InvalidArgumentError, match="animated gifs"):
        run(decode_jpeg(F["gif"]))
    with pytest.raises(errors.InvalidArgumentError, match="uint16"):
        run(decode_png(F["jpeg"], dtype=tf.uint16))
    with pytest.raises(errors.InvalidArgumentError, match="ExtractJpegShape"):
        run(extract_jpeg_shape(F["png"]))
    with pytest.raises(errors.InvalidArgumentError, match="crop window"):
        run(decode_and_crop_jpeg(F["jpeg"], [2, 3, 50, 7]))
    with pytest.raises(ValueError, match="channels"):
        encode_jpeg(np.zeros((4, 4, 2), np.uint8))
    unknown = tf.placeholder(tf.uint8)
    with pytest.raises(errors.InvalidArgumentError, match="EncodeJpeg: image must have 1 or 3"):
        with tf.Session() as s:
            s.run(encode_jpeg(unknown), {unknown: np.zeros((4, 4, 2), np.uint8)})
    truncated = F["jpeg"][:len(F["jpeg"]) * 9 // 10]  # cut inside the pixel data
    with pytest.raises(errors.InvalidArgumentError, match="Invalid JPEG data"):
        run(decode_jpeg(truncated))
    assert run(decode_jpeg(truncated, try_recover_truncated=True)).shape == (16, 24, 3)


def test_no_gradients():
    x = tf.placeholder(tf.uint8, [4, 4, 3])
    assert tf.gradients(tf.cast(decode_png(encode_png(x)), tf.float32), x) == [None]


def test_input_pipeline_trains_a_classifier(tmp_path):
    """TF1 style: list_files -> map(read_file + decode_jpeg + resize) -> batch -> model."""
    rng = np.random.RandomState(0)
    for i in range(16):
        label = i % 2
        img = np.full((20, 20, 3), 40, np.uint8)
        img[..., label * 2] = 210  # class 0 reddish, class 1 bluish
        img = np.clip(img + rng.randint(0, 20, img.shape), 0, 255).astype(np.uint8)
        (tmp_path / f"c{label}_{i}.jpg").write_bytes(save(img, "JPEG", quality=95))

    def load(path):
        image = decode_jpeg(tf.read_file(path), channels=3)
        image = tf.image.resize_images(tf.cast(image, tf.float32) / 255.0, [8, 8])
        label = tf.cast(tf.strings.regex_full_match(path, ".*c1_.*"), tf.int64)
        return image, label

    ds = tf.data.Dataset.list_files(str(tmp_path / "*.jpg"), shuffle=False)
    images, labels = ds.map(load).repeat().batch(8).make_one_shot_iterator().get_next()
    assert images.shape.as_list() == [None, 8, 8, 3]
    logits = tf.layers.dense(tf.reshape(images, [-1, 8 * 8 * 3]), 2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        losses = [s.run([loss, train])[0] for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]


def test_public_names_are_wired():
    from tensorweave.image_impl import decode_image_ops
    from tensorweave.ops.image import codec_ops, encode_ops
    assert tf.image.decode_jpeg is tf.io.decode_jpeg is codec_ops.decode_jpeg
    assert tf.image.decode_png is codec_ops.decode_png
    assert tf.image.decode_image is decode_image_ops.decode_image
    assert tf.image.encode_png is tf.io.encode_png is encode_ops.encode_png
