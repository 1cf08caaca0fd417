"""Repeating and padding array ops: Tile, Pad (PadV2) and MirrorPad, with their
gradient ops TileGrad and MirrorPadGrad.

Public functions are re-exported by the package, `tensorweave.ops.array`.

Example:
    >>> tf.pad(tf.zeros([2, 3]), [[1, 1], [0, 2]]).shape.as_list()
    [4, 5]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, unknown_shape
from tensorweave.ops.array.core_ops import _fold_if_known, _int_tensor
from tensorweave.ops.array.shape_ops import shape
from tensorweave.ops.array.slice_ops import slice as _slice, strided_slice


# ---- Tile --------------------------------------------------------------------------
tile_op = define_op("Tile", inputs=("input", "multiples"))


@tile_op.shape
def _(x: Tensor, multiples: Tensor) -> Any:
    m: Any = constant_value(multiples)
    if x.shape.ndims is None:
        return x.dtype.base_dtype, unknown_shape(multiples.shape[0]
                                                 if multiples.shape.ndims == 1 else None)
    if m is None:
        return x.dtype.base_dtype, unknown_shape(x.shape.ndims)
    m = [int(v) for v in np.asarray(m).reshape(-1)]
    if len(m) != x.shape.ndims:
        raise ValueError(f"tile: multiples {m} must have one entry per dimension of input "
                         f"shape {x.shape}")
    return x.dtype.base_dtype, TensorShape([None if d is None else d * k
                                            for d, k in zip(x.shape.as_list(), m)])


@tile_op.kernel("CPU")
def _(x: Any, multiples: Any) -> Any:
    x = np.asarray(x)
    m = [int(v) for v in np.asarray(multiples).reshape(-1)]
    if len(m) != x.ndim or any(v < 0 for v in m):
        raise errors.InvalidArgumentError(None, None, f"tile: multiples {m} must be >= 0 with "
                                          f"one entry per dimension of shape {list(x.shape)}")
    return np.tile(x, m)


tile_grad_op = define_op("TileGrad", inputs=("grad", "multiples"))


@tile_grad_op.shape
def _(g: Tensor, multiples: Tensor) -> Any:
    m: Any = constant_value(multiples)
    if g.shape.ndims is None or m is None:
        return g.dtype.base_dtype, unknown_shape(g.shape.ndims)
    m = [int(v) for v in np.asarray(m).reshape(-1)]
    return g.dtype.base_dtype, TensorShape([None if d is None or k == 0 else d // k
                                            for d, k in zip(g.shape.as_list(), m)])


@tile_grad_op.kernel("CPU")
def _(g: Any, multiples: Any) -> Any:
    # Tiled layout is [m0, d0, m1, d1, ...]: sum over every m axis.
    g = np.asarray(g)
    m = [int(v) for v in np.asarray(multiples).reshape(-1)]
    if any(k == 0 for k in m):
        raise errors.InvalidArgumentError(None, None, "tile gradient with a zero multiple "
                                          "needs the input shape; not supported")
    inter = [v for k, d in zip(m, g.shape) for v in (k, d // k)]
    return g.reshape(inter).sum(axis=tuple(range(0, 2 * len(m), 2)))


@tile_grad_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [tile(grad, op.inputs[1]), None]


@tile_op.gradient
def _(op: Operation, grad: Any) -> Any:
    g = create_op("TileGrad", [grad, op.inputs[1]], None, "TileGrad").outputs[0]
    g.set_shape(op.inputs[0].shape)
    return [g, None]


_fold_if_known("Tile")


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:
    """`tf.tile`: repeats `input` `multiples[i]` times along dimension i.

    Example:
        >>> tf.tile([[1, 2]], [2, 2])  # [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    with name_scope(name, "Tile", [input, multiples]) as scope:  # TF's "Tile/multiples"
        return create_op("Tile", [convert_to_tensor(input, name="input"),
                                _int_tensor(multiples, name="multiples")], None,
                       scope).outputs[0]


# ---- Pad / MirrorPad ---------------------------------------------------------------
def _pad_shape(x: Tensor, paddings: Tensor, what: str) -> TensorShape:
    p = constant_value(paddings)
    r = x.shape.ndims
    if r is None and paddings.shape.ndims == 2:
        r = paddings.shape[0]
    if p is None or r is None:
        return unknown_shape(r)
    p = np.asarray(p)
    if p.shape != (r, 2):
        raise ValueError(f"{what}: paddings must have shape [{r}, 2] for input shape "
                         f"{x.shape}, got {list(p.shape)}")
    if (p < 0).any():
        raise ValueError(f"{what}: paddings must be >= 0, got {p.tolist()}")
    dims: list[Any] = x.shape.as_list() if x.shape.ndims is not None else [None] * r
    return TensorShape([None if d is None else d + int(a) + int(b) for d, (a, b) in zip(dims, p)])


pad_op = define_op("PadV2", inputs=("input", "paddings", "constant_values"))


@pad_op.shape
def _(x: Tensor, paddings: Tensor, cval: Tensor) -> Any:
    return x.dtype.base_dtype, _pad_shape(x, paddings, "pad")


@pad_op.kernel("CPU")
def _(x: Any, paddings: Any, cval: Any) -> Any:
    p = np.asarray(paddings)
    if p.shape != (np.ndim(x), 2) or (p < 0).any():
        raise errors.InvalidArgumentError(None, None, f"pad: paddings {p.tolist()} must be a "
                                          f"[{np.ndim(x)}, 2] array of values >= 0")
    return np.pad(x, p.astype(np.int64), mode="constant", constant_values=cval)


@pad_op.gradient
def _(op: Operation, grad: Any) -> Any:
    x, paddings = op.inputs[0], op.inputs[1]
    begin = strided_slice(paddings, [0, 0], [0, 1], [1, 1], begin_mask=1, end_mask=1,
                          shrink_axis_mask=2)
    return [_slice(grad, begin, shape(x)), None, None]


mirror_pad_op = define_op("MirrorPad", inputs=("input", "paddings"), attrs={"mode": REQUIRED})


@mirror_pad_op.shape
def _(x: Tensor, paddings: Tensor, *, mode: str) -> Any:
    out = _pad_shape(x, paddings, f"pad(mode={mode})")
    p = constant_value(paddings)
    if p is not None and x.shape.ndims is not None:
        limit = 0 if mode == "REFLECT" else 1
        for d, (a, b) in zip(x.shape.as_list(), np.asarray(p)):
            if d is not None and max(a, b) > d - 1 + limit:
                raise ValueError(f"pad(mode={mode}): paddings {np.asarray(p).tolist()} are too "
                                 f"large for input shape {x.shape}")
    return x.dtype.base_dtype, out


@mirror_pad_op.kernel("CPU")
def _(x: Any, paddings: Any, *, mode: str) -> Any:
    p = np.asarray(paddings).astype(np.int64)
    x = np.asarray(x)
    limit = 0 if mode == "REFLECT" else 1
    for d, (a, b) in zip(x.shape, p):
        if a < 0 or b < 0 or max(a, b) > d - 1 + limit:
            raise errors.InvalidArgumentError(None, None, f"pad(mode={mode}): paddings "
                                              f"{p.tolist()} invalid for shape {list(x.shape)}")
    return np.pad(x, p, mode="reflect" if mode == "REFLECT" else "symmetric")


mirror_pad_grad_op = define_op("MirrorPadGrad", inputs=("input", "paddings"),
                               attrs={"mode": REQUIRED})


@mirror_pad_grad_op.shape
def _(g: Tensor, paddings: Tensor, *, mode: str) -> Any:
    p = constant_value(paddings)
    if p is None or g.shape.ndims is None:
        return g.dtype.base_dtype, unknown_shape(g.shape.ndims)
    return g.dtype.base_dtype, TensorShape([None if d is None else d - int(a) - int(b)
                                            for d, (a, b) in zip(g.shape.as_list(), np.asarray(p))])


@mirror_pad_grad_op.kernel("CPU")
def _(g: Any, paddings: Any, *, mode: str) -> Any:
    # Fold each padded border back onto the input positions it mirrored, axis by axis.
    out = np.asarray(g)
    shift = 1 if mode == "REFLECT" else 0
    for ax, (a, b) in enumerate(np.asarray(paddings).astype(np.int64)):
        n = out.shape[ax] - a - b
        core = np.take(out, np.arange(a, a + n), axis=ax).copy()
        moved = np.moveaxis(core, ax, 0)
        left = np.moveaxis(np.take(out, np.arange(a), axis=ax), ax, 0)
        np.add.at(moved, a - 1 - np.arange(a) + shift, left)
        right = np.moveaxis(np.take(out, np.arange(a + n, a + n + b), axis=ax), ax, 0)
        np.add.at(moved, n - 1 - np.arange(b) - shift, right)
        out = np.moveaxis(moved, 0, ax)
    return out


@mirror_pad_grad_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [pad(grad, op.inputs[1], mode=op.get_attr("mode")), None]


@mirror_pad_op.gradient
def _(op: Operation, grad: Any) -> Any:
    g = create_op("MirrorPadGrad", [grad, op.inputs[1]], {"mode": op.get_attr("mode")},
                "MirrorPadGrad").outputs[0]
    g.set_shape(op.inputs[0].shape)
    return [g, None]


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", name: str | None = None,
        constant_values: Any = 0) -> Tensor:
    """`tf.pad`: pads `tensor` with `paddings[i] = [before, after]` along dimension i.

    Args:
        mode: "CONSTANT" (fill with `constant_values`), "REFLECT" (mirror without the
            edge) or "SYMMETRIC" (mirror including the edge); case-insensitive.

    Example:
        >>> tf.pad([[1, 2]], [[1, 0], [0, 1]])  # [[0, 0, 0], [1, 2, 0]]
    """
    mode_u = str(mode).upper()
    if mode_u in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        # TF's op-wrapper scope: "Pad/paddings" ("MirrorPad/paddings"), op named after it.
        with name_scope(name, "Pad" if mode_u == "CONSTANT" else "MirrorPad",
                        [tensor, paddings]) as scope:
            t = convert_to_tensor(tensor, name="input")
            p = _int_tensor(paddings, name="paddings")
            if mode_u != "CONSTANT":
                return create_op("MirrorPad", [t, p], {"mode": mode_u}, scope).outputs[0]
            cval = convert_to_tensor(constant_values, dtype=t.dtype.base_dtype,
                                     name="constant_values")
            return create_op("PadV2", [t, p, cval], None, scope).outputs[0]
    raise ValueError(f"pad: unknown mode {mode!r}; use 'CONSTANT', 'REFLECT' or 'SYMMETRIC'")


__all__ = ["tile", "pad"]
