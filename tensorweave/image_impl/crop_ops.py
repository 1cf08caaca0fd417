"""Cropping and padding: `crop_to_bounding_box`, `pad_to_bounding_box`,
`resize_image_with_crop_or_pad`, `central_crop` and `random_crop` (`tf.random_crop`).

Composites of Slice and Pad, as TF's Python builds them. Offsets and sizes may be
Python ints or scalar int32 tensors: what is known when the graph is built is checked
then (ValueError); the rest is checked by Assert ops when the graph runs
(InvalidArgumentError naming the bad value).

Example:
    >>> patch = crop_to_bounding_box(image, 2, 3, 16, 16)
    >>> framed = resize_image_with_crop_or_pad(image, 36, 36)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.core_ops import shape_from_tensor
from tensorweave.ops.array.join_ops import stack
from tensorweave.ops.array.pad_ops import pad
from tensorweave.ops.array.shape_ops import reshape, shape, squeeze
from tensorweave.ops.array.slice_ops import slice as slice_
from tensorweave.ops.control_flow.assert_ops import Assert
from tensorweave.ops.image.color_ops import (as_batch, assert_, check_at_least_3d, dims4, ge,
                                              gt, is_tensor, max_, min_, static_or_none,
                                              with_dependencies)
from tensorweave.ops.math import math_ops
from tensorweave.ops.random.random_ops import random_uniform


def _scalar(x: Any, what: str) -> Any:
    """A Python int, or a scalar int32 tensor (a constant tensor becomes its int)."""
    if is_tensor(x):
        v = constant_value(x)
        if v is not None and np.asarray(v).ndim == 0:
            return int(v)
        if x.shape.ndims not in (None, 0):
            raise ValueError(f"{what} must be a scalar, got {x.name} of shape {x.shape}.")
        return x
    return int(x)


def _box_args(fn: str, image: Any, *box: Any) -> tuple[Tensor, bool, list[Any], Any]:
    """The image as a batch, whether it was one, the box's (offset_height, offset_width,
    target_height, target_width) as scalars, and the batch's four dimensions."""
    img, is_batch = as_batch(convert_to_tensor(image, name="image"), fn)
    check_at_least_3d(img, fn)
    names = ("offset_height", "offset_width", "target_height", "target_width")
    return img, is_batch, [_scalar(v, n) for v, n in zip(box, names)], dims4(img)


def crop_to_bounding_box(image: Any, offset_height: Any, offset_width: Any,
                         target_height: Any, target_width: Any) -> Tensor:
    """`tf.image.crop_to_bounding_box`: the [target_height, target_width] window whose
    top-left corner is at (offset_height, offset_width).

    Raises:
        ValueError: rank not 3 or 4, negative offsets, non-positive targets or a box
            past the image, when known statically (else InvalidArgumentError at run time).

    Example:
        >>> crop_to_bounding_box(tf.zeros([10, 10, 3]), 2, 2, 4, 5).shape.as_list()
        [4, 5, 3]
    """
    with name_scope(None, "crop_to_bounding_box"):
        img, is_batch, (oh, ow, th, tw), (batch, height, width, depth) = _box_args(
            "crop_to_bounding_box", image, offset_height, offset_width, target_height, target_width)
        checks = assert_(ge(ow, 0), f"offset_width must be >= 0, got {ow}.")
        checks += assert_(ge(oh, 0), f"offset_height must be >= 0, got {oh}.")
        checks += assert_(gt(tw, 0), f"target_width must be > 0, got {tw}.")
        checks += assert_(gt(th, 0), f"target_height must be > 0, got {th}.")
        checks += assert_(ge(width, tw + ow), f"width must be >= target + offset: "
                          f"width {width}, target_width {tw}, offset_width {ow}.")
        checks += assert_(ge(height, th + oh), f"height must be >= target + offset: "
                          f"height {height}, target_height {th}, offset_height {oh}.")
        img = with_dependencies(checks, img)
        out = slice_(img, stack([0, oh, ow, 0]), stack([-1, th, tw, -1]))
        out.set_shape([static_or_none(d) for d in (batch, th, tw, depth)])
        return out if is_batch else squeeze(out, [0])


def pad_to_bounding_box(image: Any, offset_height: Any, offset_width: Any,
                        target_height: Any, target_width: Any) -> Tensor:
    """`tf.image.pad_to_bounding_box`: zero-pads to [target_height, target_width] with
    the image's top-left corner at (offset_height, offset_width).

    Raises:
        ValueError: rank not 3 or 4, negative offsets, or an image that does not fit,
            when known statically (else InvalidArgumentError at run time).

    Example:
        >>> pad_to_bounding_box(tf.ones([2, 2, 1]), 1, 1, 4, 4).shape.as_list()
        [4, 4, 1]
    """
    with name_scope(None, "pad_to_bounding_box"):
        img, is_batch, (oh, ow, th, tw), (batch, height, width, depth) = _box_args(
            "pad_to_bounding_box", image, offset_height, offset_width, target_height, target_width)
        after_w = tw - ow - width
        after_h = th - oh - height
        checks = assert_(ge(oh, 0), f"offset_height must be >= 0, got {oh}.")
        checks += assert_(ge(ow, 0), f"offset_width must be >= 0, got {ow}.")
        checks += assert_(ge(after_w, 0), f"width must be <= target - offset: width "
                          f"{width}, target_width {tw}, offset_width {ow}.")
        checks += assert_(ge(after_h, 0), f"height must be <= target - offset: height "
                          f"{height}, target_height {th}, offset_height {oh}.")
        img = with_dependencies(checks, img)
        paddings = reshape(stack([0, 0, oh, after_h, ow, after_w, 0, 0]), [4, 2])
        out = pad(img, paddings)
        out.set_shape([static_or_none(d) for d in (batch, th, tw, depth)])
        return out if is_batch else squeeze(out, [0])


def resize_image_with_crop_or_pad(image: Any, target_height: Any,
                                  target_width: Any) -> Tensor:
    """`tf.image.resize_image_with_crop_or_pad`: centrally crops and/or zero-pads
    each dimension to the target size (an odd difference puts the extra row/column
    at the bottom/right, as TF).

    Raises:
        ValueError: rank not 3 or 4, or a non-positive target known statically.

    Example:
        >>> resize_image_with_crop_or_pad(tf.zeros([5, 8, 3]), 7, 4).shape.as_list()
        [7, 4, 3]
    """
    with name_scope(None, "resize_image_with_crop_or_pad"):
        img, is_batch = as_batch(convert_to_tensor(image, name="image"),
                                 "resize_image_with_crop_or_pad")
        check_at_least_3d(img, "resize_image_with_crop_or_pad")
        th = _scalar(target_height, "target_height")
        tw = _scalar(target_width, "target_width")
        checks = assert_(gt(tw, 0), f"target_width must be > 0, got {tw}.")
        checks += assert_(gt(th, 0), f"target_height must be > 0, got {th}.")
        # Our checks run first, so their messages win over crop/pad's.
        img = with_dependencies(checks, img)
        if is_tensor(th):
            th = with_dependencies(checks, th)
        if is_tensor(tw):
            tw = with_dependencies(checks, tw)
        _, height, width, _ = dims4(img)
        w_diff = tw - width
        h_diff = th - height
        cropped = crop_to_bounding_box(img, max_(-h_diff // 2, 0), max_(-w_diff // 2, 0),
                                       min_(th, height), min_(tw, width))
        out = pad_to_bounding_box(cropped, max_(h_diff // 2, 0), max_(w_diff // 2, 0), th, tw)
        return out if is_batch else squeeze(out, [0])


def central_crop(image: Any, central_fraction: float) -> Tensor:
    """`tf.image.central_crop`: the central `central_fraction` of height and width.

    The crop starts at int((size - size * fraction) / 2) and is symmetric, as TF.

    Raises:
        ValueError: `central_fraction` not in (0, 1], or rank not 3 or 4.

    Example:
        >>> central_crop(tf.zeros([4, 8, 1]), 0.5).shape.as_list()  # [2, 4, 1]
    """
    with name_scope(None, "central_crop"):
        img = convert_to_tensor(image, name="image")
        if not 0.0 < central_fraction <= 1.0:
            raise ValueError(f"central_crop: central_fraction must be within (0, 1], got "
                             f"{central_fraction}.")
        if central_fraction == 1.0:
            return img
        check_at_least_3d(img, "central_crop")
        rank = img.shape.ndims
        if rank not in (3, 4):
            raise ValueError(f"central_crop: 'image' should be a tensor of rank 3 or 4, but "
                             f"{img.name} has shape {img.shape}.")
        h, w = dims4(img)[-3:-1]

        def start(d: Any) -> Any:
            if is_tensor(d):
                dd = math_ops.cast(d, _dt.float64)
                return math_ops.cast((dd - dd * central_fraction) / 2, _dt.int32)
            return int((float(d) - float(d) * central_fraction) / 2)
        hs, ws = start(h), start(w)
        return crop_to_bounding_box(img, hs, ws, h - hs * 2, w - ws * 2)


def random_crop(value: Any, size: Any, seed: int | None = None,
                name: str | None = None) -> Tensor:
    """`tf.random_crop`: a random `size`-shaped slice of `value` (any rank).

    Each dimension's offset is uniform in [0, value_dim - size_dim].

    Raises:
        ValueError: `size` of the wrong length or larger than `value`, when static
            (InvalidArgumentError "Need value.shape >= size" at run time otherwise).

    Example:
        >>> patch = random_crop(image, [24, 24, 3], seed=1)
    """
    with name_scope(name, "random_crop"):
        v = convert_to_tensor(value, name="value")
        sz = convert_to_tensor(size, dtype=_dt.int32, name="size")
        sv = constant_value(sz)
        if sv is not None and v.shape.ndims is not None:
            want = [int(s) for s in np.asarray(sv).reshape(-1)]
            if len(want) != v.shape.ndims:
                raise ValueError(f"random_crop: size {want} must have one entry per "
                                 f"dimension of value {v.name} (shape {v.shape}).")
            for i, (d, s) in enumerate(zip(v.shape.as_list(), want)):
                if d is not None and s > d:
                    raise ValueError(f"random_crop: size {want} is larger than value "
                                     f"{v.name} (shape {v.shape}) in dimension {i}.")
        shp = shape(v)
        check = Assert(math_ops.reduce_all(math_ops.greater_equal(shp, sz)),
                       ["Need value.shape >= size, got ", shp, sz], summarize=1000)
        shp = with_dependencies([check], shp)
        limit = shp - sz + 1
        offset = math_ops.floormod(random_uniform(shape(shp), dtype=_dt.int32,
                                                  maxval=_dt.int32.max, seed=seed), limit)
        out = slice_(v, offset, sz)
        # Slice infers no shape from a random offset; the crop's shape is `size`.
        out.set_shape(shape_from_tensor(sz) if sz.shape.ndims == 1 else None)
        return out


__all__ = ["crop_to_bounding_box", "pad_to_bounding_box", "resize_image_with_crop_or_pad",
           "central_crop", "random_crop"]
