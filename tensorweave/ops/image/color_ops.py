"""Pixel-value ops: `convert_image_dtype`, `adjust_brightness`, `random_brightness`,
`adjust_contrast` (the AdjustContrastv2 op), `random_contrast`, `rgb_to_grayscale` and
`per_image_standardization`.

Integer images hold values in [0, dtype.max]; float images in [0, 1]. The adjust ops
work in float32 and convert back to the input dtype with saturation, as TF does.

It also holds the image family's shared helpers (`check_image_dtype`,
`check_at_least_3d`, `invalid_argument`, batching and rank checks), which
resize_ops and `tensorweave/image_impl/` import.

Example:
    >>> f = convert_image_dtype(uint8_image, tf.float32)   # 255 -> 1.0
    >>> brighter = adjust_brightness(f, 0.1)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph_defaults import control_dependencies, name_scope
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import dimension_value
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.array.shape_ops import expand_dims, shape
from tensorweave.ops.control_flow.assert_ops import Assert
from tensorweave.ops.math import math_ops
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.ops.random.random_ops import random_uniform


# ---- shared helpers of the family (formerly image_util.py) ----
def invalid_argument(msg: str) -> errors.InvalidArgumentError:
    """The run-time error of image kernels (TF's InvalidArgumentError)."""
    return errors.InvalidArgumentError(None, None, msg)


def check_image_dtype(images: Tensor, what: str) -> None:
    """Images must be real numbers (TF's resize ops take ints and floats only)."""
    dt = images.dtype.base_dtype
    if not (dt.is_integer or dt.is_floating) or dt == _dt.bool:
        raise TypeError(f"{what}: images must be an integer or float type, but "
                        f"{images.name} has dtype {dt.name}.")


def check_rank_3_or_4(image: Tensor, what: str) -> int | None:
    """The static rank (3, 4 or None); ValueError for any other known rank."""
    r = image.shape.ndims
    if r is not None and r not in (3, 4):
        raise ValueError(f"{what}: 'image' must have either 3 or 4 dimensions "
                         f"([height, width, channels] or [batch, height, width, channels]), "
                         f"but {image.name} has shape {image.shape}.")
    return r


def check_at_least_3d(image: Tensor, what: str) -> None:
    """Rank >= 3 and known, non-zero height/width/channels when static (TF's
    _CheckAtLeast3DImage with require_static=False)."""
    r = image.shape.ndims
    if r is None:
        return
    if r < 3:
        raise ValueError(f"{what}: 'image' (shape {image.shape}, {image.name}) must be at "
                         "least three-dimensional.")
    for d in image.shape.as_list()[-3:]:
        if d == 0:
            raise ValueError(f"{what}: inner 3 dims of 'image' (shape {image.shape}, "
                             f"{image.name}) cannot be 0.")


def as_batch(image: Tensor, what: str) -> tuple[Tensor, bool]:
    """`image` as a 4-D batch, and whether it was one already. An image of unknown
    rank is taken as a single 3-D image, as TF does."""
    r = check_rank_3_or_4(image, what)
    if r == 4:
        return image, True
    out = expand_dims(image, 0)
    if r is None:
        out.set_shape([None] * 4)
    return out, False


def dims4(image: Tensor) -> list[Any]:
    """[batch, height, width, depth]: ints where static, scalar tensors otherwise."""
    static = image.shape.as_list()
    dyn: Tensor | None = None
    out: list[Any] = []
    for i, d in enumerate(static):
        if d is None:
            dyn = shape(image) if dyn is None else dyn
            out.append(dyn[i])
        else:
            out.append(d)
    return out


def is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def assert_(cond: Any, msg: str) -> list[Operation]:
    """TF's image `_assert`: a ValueError now for a false Python condition, an Assert
    op (InvalidArgumentError at run time) for a tensor one, nothing otherwise."""
    if is_tensor(cond):
        return [Assert(cond, [msg])]
    if not cond:
        raise ValueError(msg)
    return []


def with_dependencies(deps: list[Operation], t: Tensor) -> Tensor:
    """`t` that is only available once `deps` have run."""
    if not deps:
        return t
    with control_dependencies(deps):
        return identity(t)


def ge(x: Any, y: Any) -> Any:
    """x >= y for ints and/or scalar tensors (a bool tensor if either is one)."""
    if is_tensor(x) or is_tensor(y):
        return math_ops.greater_equal(x, y)
    return x >= y


def gt(x: Any, y: Any) -> Any:
    if is_tensor(x) or is_tensor(y):
        return math_ops.greater(x, y)
    return x > y


def max_(x: Any, y: Any) -> Any:
    if is_tensor(x) or is_tensor(y):
        return math_ops.maximum(x, y)
    return max(x, y)


def min_(x: Any, y: Any) -> Any:
    if is_tensor(x) or is_tensor(y):
        return math_ops.minimum(x, y)
    return min(x, y)


def static_or_none(x: Any) -> int | None:
    return None if is_tensor(x) else int(x)


# ---- dtype conversion ------------------------------------------------------------------
def _saturate_cast(value: Tensor, dtype: _dt.DType, name: str | None = None) -> Tensor:
    """Clips to `dtype`'s range before casting, so out-of-range values saturate
    instead of wrapping (TF's saturate_cast)."""
    src = value.dtype.base_dtype
    if src.min < dtype.min:
        value = math_ops.maximum(value, convert_to_tensor(np.asarray(dtype.min).astype(
            src.as_numpy_dtype), dtype=src))
    if src.max > dtype.max:
        value = math_ops.minimum(value, convert_to_tensor(np.asarray(dtype.max).astype(
            src.as_numpy_dtype), dtype=src))
    return math_ops.cast(value, dtype, name=name)


def _cast(value: Tensor, dtype: _dt.DType, saturate: bool, name: str | None = None) -> Tensor:
    return _saturate_cast(value, dtype, name) if saturate else math_ops.cast(value, dtype,
                                                                              name=name)


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False,
                        name: str | None = None) -> Tensor:
    """`tf.image.convert_image_dtype`: converts, rescaling values between the
    integer range [0, dtype.max] and the float range [0, 1].

    Integer to integer rescales by the ratio of (max + 1)s (dividing first when
    narrowing, so the result stays in range); integer to float multiplies by
    1 / in.max; float to integer multiplies by out.max + 0.5 and truncates; float to
    float only casts.

    Args:
        image: an image tensor. dtype: the target dtype.
        saturate: clip before casting so out-of-range values do not wrap around.

    Raises:
        AttributeError: `dtype` not an integer or float type (TF's error).

    Example:
        >>> convert_image_dtype(tf.constant([0, 255], tf.uint8), tf.float32)  # [0., 1.]
    """
    image = convert_to_tensor(image, name="image")
    dtype = _dt.as_dtype(dtype).base_dtype
    src = image.dtype.base_dtype
    if dtype == _dt.bool or not (dtype.is_integer or dtype.is_floating):
        raise AttributeError(f"convert_image_dtype: invalid image dtype {dtype.name}; it "
                             "must be an integer or float type.")
    if src == dtype:
        return identity(image, name=name)
    with name_scope(name, "convert_image"):
        if src.is_integer and dtype.is_integer:
            scale_in, scale_out = int(src.max), int(dtype.max)
            if scale_in > scale_out:
                # Divide first: in.max lands just under out.max + 1, so it fits.
                scale = convert_to_tensor(np.asarray((scale_in + 1) // (scale_out + 1),
                                                     src.as_numpy_dtype), dtype=src)
                return _cast(math_ops.floordiv(image, scale), dtype, saturate)
            # Cast first, then multiply: a round trip gives back the input exactly.
            scale = convert_to_tensor(np.asarray((scale_out + 1) // (scale_in + 1),
                                                 dtype.as_numpy_dtype), dtype=dtype)
            return math_ops.multiply(_cast(image, dtype, saturate), scale)
        if src.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype)
        if src.is_integer:
            return math_ops.multiply(math_ops.cast(image, dtype),
                                     convert_to_tensor(1.0 / float(src.max), dtype=dtype))
        # Float to int: +0.5 of headroom so 1.0 maps to max despite rounding.
        scaled = math_ops.multiply(image, convert_to_tensor(float(dtype.max) + 0.5,
                                                            dtype=src))
        return _cast(scaled, dtype, saturate)


def _as_float(image: Tensor) -> Tensor:
    """Float16/32 images as they are; others converted to float32 [0, 1] (TF 1.15)."""
    if image.dtype.base_dtype in (_dt.float16, _dt.float32):
        return image
    return convert_image_dtype(image, _dt.float32)


# ---- brightness --------------------------------------------------------------------------
def adjust_brightness(image: Any, delta: Any) -> Tensor:
    """`tf.image.adjust_brightness`: adds `delta` to every value (in the float
    [0, 1] scale), converting back to the image's dtype with saturation.

    Example:
        >>> adjust_brightness(tf.constant([[[0.2]]]), 0.1)  # -> [[[0.3]]]
    """
    with name_scope(None, "adjust_brightness"):
        image = convert_to_tensor(image, name="image")
        orig = image.dtype.base_dtype
        flt = _as_float(image)
        adjusted = math_ops.add(flt, math_ops.cast(delta, flt.dtype.base_dtype))
        return convert_image_dtype(adjusted, orig, saturate=True)


def random_brightness(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """`tf.image.random_brightness`: `adjust_brightness` by a delta drawn uniformly
    from [-max_delta, max_delta).

    Raises:
        ValueError: `max_delta` negative.

    Example:
        >>> brighter_or_darker = random_brightness(image, 0.25, seed=3)
    """
    if max_delta < 0:
        raise ValueError(f"random_brightness: max_delta must be non-negative, got "
                         f"{max_delta}.")
    delta = random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


# ---- contrast: AdjustContrastv2 ------------------------------------------------------------
contrast_op = define_op("AdjustContrastv2", inputs=("images", "contrast_factor"))


@contrast_op.shape
def _(images: Tensor, factor: Tensor) -> Any:
    if images.dtype.base_dtype not in (_dt.float16, _dt.float32):
        raise TypeError(f"AdjustContrastv2: images must be float16 or float32, but "
                        f"{images.name} has dtype {images.dtype.base_dtype.name}.")
    if images.shape.ndims is not None and images.shape.ndims < 3:
        raise ValueError(f"AdjustContrastv2: images must be at least 3-D, but {images.name} "
                         f"has shape {images.shape}.")
    if factor.shape.ndims not in (None, 0):
        raise ValueError(f"AdjustContrastv2: contrast_factor must be a scalar, but "
                         f"{factor.name} has shape {factor.shape}.")
    return images.dtype.base_dtype, images.shape


@contrast_op.kernel("CPU")
def _(images: Any, factor: Any) -> Any:
    x = np.asarray(images)
    if x.ndim < 3:
        raise invalid_argument(f"AdjustContrastv2: images must be at least 3-D, got shape "
                               f"{list(x.shape)}")
    if np.ndim(factor) != 0:
        raise invalid_argument(f"AdjustContrastv2: contrast_factor must be a scalar, got "
                               f"shape {list(np.shape(factor))}")
    xf = x.astype(np.float32)
    # One mean per image and channel, over its height and width.
    mean = xf.mean(axis=(-3, -2), keepdims=True, dtype=np.float32)
    return ((xf - mean) * np.float32(factor) + mean).astype(x.dtype)


@contrast_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # TF registers no gradient here; the op is linear in the image, so we give the
    # exact one: d/dx = f * g + (1 - f) * mean_hw(g), d/df = sum(g * (x - mean_hw(x))).
    x, f = op.inputs[0], op.inputs[1]
    fx = math_ops.cast(f, x.dtype.base_dtype)
    g_mean = math_ops.reduce_mean(grad, axis=[-3, -2], keepdims=True)
    dx = math_ops.add(math_ops.multiply(grad, fx), math_ops.multiply(1 - fx, g_mean))
    centered = math_ops.subtract(x, math_ops.reduce_mean(x, axis=[-3, -2], keepdims=True))
    df = math_ops.cast(math_ops.reduce_sum(math_ops.multiply(grad, centered)), _dt.float32)
    return [dx, df]


def adjust_contrast(images: Any, contrast_factor: Any) -> Tensor:
    """`tf.image.adjust_contrast`: (x - mean) * contrast_factor + mean per channel of
    each image (the mean over height and width), back in the input dtype (saturated).

    Raises:
        ValueError: images of rank < 3 (InvalidArgumentError if found at run time).

    Example:
        >>> adjust_contrast(tf.constant([[[0.], [1.]]]), 2.0)  # -> [[[-0.5], [1.5]]]
    """
    with name_scope(None, "adjust_contrast"):
        images = convert_to_tensor(images, name="images")
        orig = images.dtype.base_dtype
        flt = _as_float(images)
        factor = convert_to_tensor(contrast_factor, dtype=_dt.float32, name="contrast_factor")
        adjusted = create_op("AdjustContrastv2", [flt, factor], None, None).outputs[0]
        return convert_image_dtype(adjusted, orig, saturate=True)


def random_contrast(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """`tf.image.random_contrast`: `adjust_contrast` by a factor drawn uniformly from
    [lower, upper).

    Raises:
        ValueError: `upper <= lower` or `lower < 0`.

    Example:
        >>> varied = random_contrast(image, 0.2, 1.8, seed=5)
    """
    if upper <= lower:
        raise ValueError(f"random_contrast: upper must be > lower, got lower={lower}, "
                         f"upper={upper}.")
    if lower < 0:
        raise ValueError(f"random_contrast: lower must be non-negative, got {lower}.")
    factor = random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


# ---- grayscale and standardization ---------------------------------------------------------
def rgb_to_grayscale(images: Any, name: str | None = None) -> Tensor:
    """`tf.image.rgb_to_grayscale`: the luma 0.2989 R + 0.5870 G + 0.1140 B, keeping a
    last dimension of size 1 and the input dtype.

    Raises:
        ValueError: a static last dimension other than 3.

    Example:
        >>> rgb_to_grayscale(tf.constant([[[1.0, 1.0, 1.0]]]))  # -> [[[0.9999]]]
    """
    with name_scope(name, "rgb_to_grayscale"):
        images = convert_to_tensor(images, name="images")
        if images.shape.ndims is not None and images.shape.ndims >= 1 \
                and dimension_value(images.shape[-1]) not in (None, 3):
            raise ValueError(f"rgb_to_grayscale: the last dimension must be 3 (RGB), but "
                             f"{images.name} has shape {images.shape}.")
        orig = images.dtype.base_dtype
        flt = convert_image_dtype(images, _dt.float32)
        weights = convert_to_tensor(np.asarray([0.2989, 0.5870, 0.1140], np.float32))
        gray = math_ops.reduce_sum(math_ops.multiply(flt, weights), axis=-1, keepdims=True)
        return convert_image_dtype(gray, orig)


def per_image_standardization(image: Any) -> Tensor:
    """`tf.image.per_image_standardization`: (x - mean) / max(stddev, 1/sqrt(N)) per
    image, N its number of values; always float32. The floor on the stddev keeps a
    uniform image finite (all zeros).

    Raises:
        ValueError: `image` of rank < 3 (or with an empty inner dimension).

    Example:
        >>> per_image_standardization(tf.constant([[[0.], [2.]]]))  # -> [[[-1.], [1.]]]
    """
    with name_scope(None, "per_image_standardization"):
        image = convert_to_tensor(image, name="image")
        check_at_least_3d(image, "per_image_standardization")
        inner = image.shape[-3:] if image.shape.ndims is not None else None
        if inner is not None and inner.is_fully_defined():
            num_pixels: Any = inner.num_elements()
        else:
            num_pixels = math_ops.reduce_prod(shape(image)[-3:])
        x = math_ops.cast(image, _dt.float32)
        axes = [-1, -2, -3]
        mean = math_ops.reduce_mean(x, axis=axes, keepdims=True)
        variance = math_ops.subtract(
            math_ops.reduce_mean(math_ops.square(x), axis=axes, keepdims=True),
            math_ops.square(mean))
        # E[x^2] - E[x]^2 can round below zero for a uniform image: clamp (TF's relu).
        variance = math_ops.maximum(variance, 0.0)
        min_stddev = math_ops.rsqrt(math_ops.cast(num_pixels, _dt.float32))
        scale = math_ops.maximum(math_ops.sqrt(variance), min_stddev)
        return math_ops.truediv(math_ops.subtract(x, mean), scale)


__all__ = ["convert_image_dtype", "adjust_brightness", "random_brightness", "adjust_contrast",
           "random_contrast", "rgb_to_grayscale", "per_image_standardization"]
