"""The image ops that need no codec (no JPEG/PNG decoding) and their wrappers.

Images are [height, width, channels] or batched [batch, height, width, channels], as
in TF. Ops with a TF op behind them keep TF's op names and attrs (ResizeBilinear,
ResizeBilinearGrad, ResizeNearestNeighbor, ResizeNearestNeighborGrad,
AdjustContrastv2); everything else is a composite of existing ops built the way TF's
Python builds it:

- `resize_ops`: `resize_images`, `ResizeMethod` (TF 1.x legacy coordinates).
- `color_ops`: `convert_image_dtype`, `adjust_brightness`, `random_brightness`,
  `adjust_contrast`, `random_contrast`, `rgb_to_grayscale`, `per_image_standardization`.

The flips and crops, built from other families' ops and defining none, are
`tensorweave/image_impl/`; `tensorweave/image.py` (`tf.image`) gathers them all.

Example:
    >>> from tensorweave.ops import image
    >>> x = image.per_image_standardization(image.resize_images(img, [24, 24]))
"""
from tensorweave.ops.image.color_ops import (
    adjust_brightness as adjust_brightness, adjust_contrast as adjust_contrast,
    convert_image_dtype as convert_image_dtype,
    per_image_standardization as per_image_standardization,
    random_brightness as random_brightness, random_contrast as random_contrast,
    rgb_to_grayscale as rgb_to_grayscale)
from tensorweave.ops.image.resize_ops import (
    ResizeMethod as ResizeMethod, resize_images as resize_images)

__all__ = ["ResizeMethod", "resize_images", "convert_image_dtype", "adjust_brightness",
           "random_brightness", "adjust_contrast", "random_contrast", "rgb_to_grayscale",
           "per_image_standardization"]
