"""Flips, transposes and rotations: `flip_left_right`, `flip_up_down`,
`random_flip_left_right`, `random_flip_up_down`, `transpose_image` and `rot90`.

All are composites of ReverseV2 and Transpose, as TF's Python builds them. The axes
are counted from the end (width is -2, height -3), so one graph serves a 3-D image, a
4-D batch and an image of unknown rank.

Example:
    >>> mirrored = flip_left_right(image)          # [h, w, c] or [n, h, w, c]
    >>> maybe = random_flip_left_right(image, seed=7)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.fill_ops import transpose
from tensorweave.ops.array.sequence_ops import reverse
from tensorweave.ops.array.shape_ops import shape
from tensorweave.ops.control_flow.cond_ops import case, cond
from tensorweave.ops.image.color_ops import check_at_least_3d, check_rank_3_or_4
from tensorweave.ops.math import math_ops
from tensorweave.ops.math.cwise_ops import select
from tensorweave.ops.random.random_ops import random_uniform

_WIDTH, _HEIGHT = -2, -3  # axes from the end: the same for [h, w, c] and [n, h, w, c]


def _image(image: Any, what: str) -> Tensor:
    t = convert_to_tensor(image, name="image")
    check_at_least_3d(t, what)
    check_rank_3_or_4(t, what)
    return t


def flip_left_right(image: Any, name: str | None = None) -> Tensor:
    """`tf.image.flip_left_right`: mirrors the width dimension.

    Raises:
        ValueError: `image` not of rank 3 or 4.

    Example:
        >>> flip_left_right([[[1], [2], [3]]])  # -> [[[3], [2], [1]]]
    """
    with name_scope(name, "flip_left_right"):
        return reverse(_image(image, "flip_left_right"), [_WIDTH])


def flip_up_down(image: Any, name: str | None = None) -> Tensor:
    """`tf.image.flip_up_down`: mirrors the height dimension.

    Example:
        >>> flip_up_down([[[1]], [[2]]])  # -> [[[2]], [[1]]]
    """
    with name_scope(name, "flip_up_down"):
        return reverse(_image(image, "flip_up_down"), [_HEIGHT])


def _random_flip(image: Any, axis: int, seed: int | None, what: str) -> Tensor:
    img = _image(image, what)
    if img.shape.ndims == 4:
        # One coin per image of the batch: a vector condition selects whole images.
        n = shape(img)[0]
        coins = math_ops.less(random_uniform([n], 0, 1.0, seed=seed), 0.5)
        return select(coins, reverse(img, [axis]), img)
    # A single image (or unknown rank, taken as one image as TF does).
    coin = math_ops.less(random_uniform([], 0, 1.0, seed=seed), 0.5)
    out = cond(coin, lambda: reverse(img, [axis]), lambda: img)
    out.set_shape(img.shape)
    return out


def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """`tf.image.random_flip_left_right`: mirrors the width with probability 1/2
    (each image of a 4-D batch independently).

    Args:
        image: [height, width, channels] or [batch, height, width, channels].
        seed: the op seed; with it (or a graph seed) the flips are deterministic.

    Example:
        >>> augmented = random_flip_left_right(image, seed=1)
    """
    with name_scope(None, "random_flip_left_right"):
        return _random_flip(image, _WIDTH, seed, "random_flip_left_right")


def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """`tf.image.random_flip_up_down`: mirrors the height with probability 1/2.

    Example:
        >>> augmented = random_flip_up_down(image, seed=1)
    """
    with name_scope(None, "random_flip_up_down"):
        return _random_flip(image, _HEIGHT, seed, "random_flip_up_down")


def _swap_hw(img: Tensor) -> Tensor:
    r = img.shape.ndims
    return transpose(img, [0, 2, 1, 3] if r == 4 else [1, 0, 2])


def transpose_image(image: Any, name: str | None = None) -> Tensor:
    """`tf.image.transpose_image`: swaps height and width.

    Raises:
        ValueError: `image` not of static rank 3 or 4.

    Example:
        >>> transpose_image(tf.zeros([2, 5, 3])).shape.as_list()  # [5, 2, 3]
    """
    with name_scope(name, "transpose_image"):
        img = _image(image, "transpose_image")
        if img.shape.ndims is None:
            raise ValueError(f"transpose_image: 'image' ({img.name}) needs a static rank "
                             "(3 or 4) to pick the transpose permutation.")
        return _swap_hw(img)


def _rot(img: Tensor, k: int) -> Tensor:
    """Counter-clockwise rotation by k * 90 degrees, k in 0..3 (numpy's rot90)."""
    if k == 1:
        return _swap_hw(reverse(img, [_WIDTH]))
    if k == 2:
        return reverse(img, [_HEIGHT, _WIDTH])
    if k == 3:
        return reverse(_swap_hw(img), [_WIDTH])
    return img


def rot90(image: Any, k: Any = 1, name: str | None = None) -> Tensor:
    """`tf.image.rot90`: rotates counter-clockwise by `k` times 90 degrees.

    A Python `k` builds just that rotation; a tensor `k` builds TF's `case` over the
    four rotations (height and width then become unknown statically).

    Args:
        image: [height, width, channels] or [batch, height, width, channels].
        k: a scalar int (any value; taken modulo 4).

    Raises:
        ValueError: `image` not of rank 3 or 4, or `k` not a scalar.

    Example:
        >>> rot90([[[1], [2]], [[3], [4]]])  # -> [[[2], [4]], [[1], [3]]]
    """
    with name_scope(name, "rot90"):
        img = _image(image, "rot90")
        if img.shape.ndims is None:
            raise ValueError(f"rot90: 'image' ({img.name}) needs a static rank (3 or 4).")
        k_t = convert_to_tensor(k, dtype=_dt.int32, name="k")
        if k_t.shape.ndims not in (None, 0):
            raise ValueError(f"rot90: k must be a scalar, got shape {k_t.shape} ({k_t.name}).")
        kv = constant_value(k_t)
        if kv is not None:
            return _rot(img, int(np.asarray(kv)) % 4)
        k_t = math_ops.floormod(k_t, 4)
        pairs = [(math_ops.equal(k_t, i), lambda i=i: _rot(img, i)) for i in (1, 2, 3)]
        out = case(pairs, default=lambda: img, exclusive=True)
        dims = img.shape.as_list()
        out.set_shape(dims[:-3] + [None, None, dims[-1]])
        return out


__all__ = ["flip_left_right", "flip_up_down", "random_flip_left_right", "random_flip_up_down",
           "transpose_image", "rot90"]
