"""`tf.image`: resizing, dtype conversion, flips and rotations, crops and pads, and
colour adjustments of [height, width, channels] images or [batch, ...] batches
(no JPEG/PNG codecs: decode images in the input pipeline's Python, e.g. py_func).

Example:
    >>> img = tf.image.random_flip_left_right(tf.random_crop(img, [24, 24, 3]), seed=1)
    >>> img = tf.image.per_image_standardization(img)
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.image_impl.crop_ops import (
    central_crop as central_crop, crop_to_bounding_box as crop_to_bounding_box,
    pad_to_bounding_box as pad_to_bounding_box, random_crop as random_crop,
    resize_image_with_crop_or_pad as resize_image_with_crop_or_pad)
from tensorweave.image_impl.flip_ops import (
    flip_left_right as flip_left_right, flip_up_down as flip_up_down,
    random_flip_left_right as random_flip_left_right,
    random_flip_up_down as random_flip_up_down, rot90 as rot90,
    transpose_image as transpose_image)
from tensorweave.ops.image import (
    ResizeMethod as ResizeMethod, adjust_brightness as adjust_brightness,
    adjust_contrast as adjust_contrast, convert_image_dtype as convert_image_dtype,
    per_image_standardization as per_image_standardization,
    random_brightness as random_brightness, random_contrast as random_contrast,
    resize_images as resize_images, rgb_to_grayscale as rgb_to_grayscale)
from tensorweave.ops.image.codec_ops import (
    decode_and_crop_jpeg as decode_and_crop_jpeg, decode_bmp as decode_bmp,
    decode_gif as decode_gif, decode_jpeg as decode_jpeg, decode_png as decode_png,
    extract_jpeg_shape as extract_jpeg_shape)
from tensorweave.image_impl.decode_image_ops import decode_image as decode_image, is_jpeg as is_jpeg
from tensorweave.ops.image.encode_ops import encode_jpeg as encode_jpeg, encode_png as encode_png
