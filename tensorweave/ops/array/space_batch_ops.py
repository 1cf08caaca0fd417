"""Moving spatial blocks into the batch and back: SpaceToBatchND, BatchToSpaceND and
their 4-D, square-block forms SpaceToBatch and BatchToSpace. Each op is the other's
gradient, as TF registers them.

SpaceToBatchND zero-pads the M spatial dims of `input` ([batch] + spatial + rest),
cuts each into `block_shape[i]`-sized blocks and moves the offset within the block
to the batch: output batch index `(o_0 * b_1 + o_1 ...) * batch + n`. Atrous
(dilated) convolutions are a plain convolution between the two (`with_space_to_batch`
in ops/nn). The kernels are one pad, reshape and transpose (no element loops).

Like TF 1.x, `tf.space_to_batch` / `tf.batch_to_space` build the ND ops with an int64
block_shape; the 4-D ops exist for graphs that name them.

Example:
    >>> x = tf.reshape(tf.range(16), [1, 4, 4, 1])
    >>> tf.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]).shape.as_list()
    [4, 2, 2, 1]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, unknown_shape, dimension_value
from tensorweave.ops.array.core_ops import _int_tensor

_WHAT = {"SpaceToBatchND": "paddings", "SpaceToBatch": "paddings",
         "BatchToSpaceND": "crops", "BatchToSpace": "crops"}


def _bad(op_type: str, msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, f"{op_type}: {msg}")


def _check_args(op_type: str, block: Any, pads: Any, m: int | None, err: Any) -> None:
    """Validates known block_shape / paddings (crops) values: positive blocks, [M, 2]
    non-negative pads. `err(msg)` builds the exception (ValueError at build time)."""
    what = _WHAT[op_type]
    if block is not None:
        if np.ndim(block) != 1:
            raise err(f"block_shape must be 1-D, got {np.asarray(block).tolist()}; give one "
                      "block size per spatial dimension, e.g. [2, 2].")
        if (np.asarray(block) < 1).any():
            raise err(f"all values in block_shape must be positive, got "
                      f"{np.asarray(block).tolist()}.")
    if pads is not None:
        p = np.asarray(pads)
        if m is not None and p.shape != (m, 2):
            raise err(f"{what} should have shape [{m}, 2] (one [start, end] pair per block "
                      f"dimension), got {p.tolist()} of shape {list(p.shape)}.")
        if (p < 0).any():
            raise err(f"{what} must be non-negative, got {p.tolist()}.")


def _block_rank(block_shape: Tensor, block: Any) -> int | None:
    if block is not None:
        return int(np.size(block))
    return dimension_value(block_shape.shape[0]) if block_shape.shape.ndims == 1 else None


def _nd_op_shape(op_type: str, x: Tensor, block_shape: Tensor, pads_t: Tensor,
                 to_batch: bool) -> Any:
    for t, what in ((block_shape, "block_shape"), (pads_t, _WHAT[op_type])):
        if not t.dtype.base_dtype.is_integer:
            raise TypeError(f"{op_type}: {what} must be int32 or int64, got {t.name} of dtype "
                            f"{t.dtype.name}; cast it first.")
    block = constant_value(block_shape)
    return _nd_shape(op_type, x, block, _block_rank(block_shape, block),
                     constant_value(pads_t), to_batch)


def _nd_shape(op_type: str, x: Tensor, block: Any, m: int | None, pads: Any,
              to_batch: bool) -> Any:
    """Static output shape of SpaceToBatchND (to_batch) or BatchToSpaceND, from
    whatever of the input shape, block_shape (m: its length) and paddings/crops is
    known."""
    _check_args(op_type, block, pads, m, lambda s: ValueError(f"{op_type}: {s}"))
    dt = x.dtype.base_dtype
    if x.shape.ndims is None or m is None:
        return dt, unknown_shape(x.shape.ndims)
    dims = x.shape.as_list()
    if len(dims) < 1 + m:
        raise ValueError(f"{op_type}: input rank should be >= {1 + m} (batch + {m} block "
                         f"dims), but {x.name} has shape {x.shape}.")
    b = None if block is None else [int(v) for v in np.asarray(block)]
    out: list[Any] = [None] * (1 + m) + dims[1 + m:]
    if b is not None and dims[0] is not None:
        prod = int(np.prod(b))
        if not to_batch and dims[0] % prod:
            raise ValueError(f"{op_type}: input batch dimension ({dims[0]}) of {x.name} is "
                             f"not divisible by the product of block sizes ({prod}, "
                             f"block_shape {b}); the batch must be a multiple of it.")
        out[0] = dims[0] * prod if to_batch else dims[0] // prod
    if b is None or pads is None:
        return dt, TensorShape(out)
    p = np.asarray(pads).astype(np.int64)
    for i in range(m):
        d = dims[1 + i]
        if d is None:
            continue
        if to_batch:
            padded = d + int(p[i, 0]) + int(p[i, 1])
            if padded % b[i]:
                raise ValueError(f"{op_type}: padded spatial dimension {i} of {x.name} "
                                 f"({d} + paddings {p[i].tolist()} = {padded}) is not "
                                 f"divisible by block_shape[{i}]={b[i]}; change the "
                                 "paddings so that it is.")
            out[1 + i] = padded // b[i]
        else:
            cropped = d * b[i] - int(p[i, 0]) - int(p[i, 1])
            if cropped < 0:
                raise ValueError(f"{op_type}: crops {p[i].tolist()} of spatial dimension {i} "
                                 f"exceed its size {d} * block {b[i]} = {d * b[i]}; use "
                                 "smaller crops.")
            out[1 + i] = cropped
    return dt, TensorShape(out)


def _kernel_args(op_type: str, x: np.ndarray, block: Any, pads: Any
                 ) -> tuple[list[int], np.ndarray]:
    b = np.asarray(block).astype(np.int64)
    m = int(b.size) if b.ndim == 1 else None
    _check_args(op_type, b, pads, m, lambda s: _bad(op_type, s))
    assert m is not None
    if x.ndim < 1 + m:
        raise _bad(op_type, f"input rank should be >= {1 + m} (batch + {m} block dims), got "
                            f"shape {list(x.shape)}.")
    return [int(v) for v in b], np.asarray(pads).astype(np.int64).reshape(m, 2)


def space_to_batch_nd_np(x: np.ndarray, block: Any, pads: Any,
                         op_type: str = "SpaceToBatchND") -> np.ndarray:
    """SpaceToBatchND on NumPy arrays: pad, split each spatial dim into
    (size / block, block), move the block offsets in front of the batch."""
    b, p = _kernel_args(op_type, x, block, pads)
    m, rest = len(b), list(x.shape[1 + len(b):])
    padded = np.pad(x, [(0, 0)] + [(int(s), int(e)) for s, e in p] + [(0, 0)] * len(rest))
    for i in range(m):
        if padded.shape[1 + i] % b[i]:
            raise _bad(op_type, f"padded_shape[{i}]={padded.shape[1 + i]} (input "
                                f"{x.shape[1 + i]} + paddings {p[i].tolist()}) is not "
                                f"divisible by block_shape[{i}]={b[i]}.")
    n, outer = x.shape[0], [padded.shape[1 + i] // b[i] for i in range(m)]
    split = [n] + [v for i in range(m) for v in (outer[i], b[i])] + rest
    perm = ([2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
            + list(range(1 + 2 * m, 1 + 2 * m + len(rest))))
    out = padded.reshape(split).transpose(perm)
    return np.ascontiguousarray(out.reshape([n * int(np.prod(b, dtype=np.int64))] + outer
                                            + rest))


def batch_to_space_nd_np(x: np.ndarray, block: Any, crops: Any,
                         op_type: str = "BatchToSpaceND") -> np.ndarray:
    """BatchToSpaceND on NumPy arrays: the inverse permutation, then the crop."""
    b, c = _kernel_args(op_type, x, block, crops)
    m, rest = len(b), list(x.shape[1 + len(b):])
    prod = int(np.prod(b, dtype=np.int64))
    if x.shape[0] % prod:
        raise _bad(op_type, f"input batch dimension ({x.shape[0]}) is not divisible by "
                            f"product of block sizes ({prod}).")
    n, inner = x.shape[0] // prod, list(x.shape[1:1 + m])
    full = [inner[i] * b[i] for i in range(m)]
    for i in range(m):
        if c[i].sum() > full[i]:
            raise _bad(op_type, f"crops {c[i].tolist()} of dimension {i} exceed its "
                                f"uncropped size {full[i]} ({inner[i]} * block {b[i]}).")
    perm = ([m] + [v for i in range(m) for v in (m + 1 + i, i)]
            + list(range(1 + 2 * m, 1 + 2 * m + len(rest))))
    out = x.reshape(b + [n] + inner + rest).transpose(perm).reshape([n] + full + rest)
    index = (slice(None),) + tuple(slice(int(c[i, 0]), full[i] - int(c[i, 1]))
                                   for i in range(m))
    return np.ascontiguousarray(out[index])


# ---- SpaceToBatchND / BatchToSpaceND -----------------------------------------------
s2b_nd_op = define_op("SpaceToBatchND", inputs=("input", "block_shape", "paddings"))


@s2b_nd_op.shape
def _(x: Tensor, block_shape: Tensor, paddings: Tensor) -> Any:
    return _nd_op_shape("SpaceToBatchND", x, block_shape, paddings, to_batch=True)


@s2b_nd_op.kernel("CPU")
def _(x: np.ndarray, block_shape: np.ndarray, paddings: np.ndarray) -> np.ndarray:
    return space_to_batch_nd_np(np.asarray(x), block_shape, paddings)


@s2b_nd_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [batch_to_space_nd(grad, op.inputs[1], op.inputs[2]), None, None]


b2s_nd_op = define_op("BatchToSpaceND", inputs=("input", "block_shape", "crops"))


@b2s_nd_op.shape
def _(x: Tensor, block_shape: Tensor, crops: Tensor) -> Any:
    return _nd_op_shape("BatchToSpaceND", x, block_shape, crops, to_batch=False)


@b2s_nd_op.kernel("CPU")
def _(x: np.ndarray, block_shape: np.ndarray, crops: np.ndarray) -> np.ndarray:
    return batch_to_space_nd_np(np.asarray(x), block_shape, crops)


@b2s_nd_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [space_to_batch_nd(grad, op.inputs[1], op.inputs[2]), None, None]


# ---- SpaceToBatch / BatchToSpace (4-D, square blocks) ------------------------------
def _square(op_type: str, x: Tensor, pads: Tensor, block_size: int) -> Any:
    if block_size < 2:
        raise ValueError(f"{op_type}: block_size must be at least 2, got {block_size}; a "
                         "block of 1 would leave the input unchanged.")
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise ValueError(f"{op_type}: input must be 4-D [batch, height, width, depth], but "
                         f"{x.name} has shape {x.shape}.")
    dt, shape = _nd_shape(op_type, x, [block_size] * 2, 2, constant_value(pads),
                          to_batch=op_type == "SpaceToBatch")
    return dt, shape.with_rank(4) if shape.ndims is None else shape


s2b_op = define_op("SpaceToBatch", inputs=("input", "paddings"),
                   attrs={"block_size": REQUIRED})


@s2b_op.shape
def _(x: Tensor, paddings: Tensor, *, block_size: int) -> Any:
    return _square("SpaceToBatch", x, paddings, block_size)


@s2b_op.kernel("CPU")
def _(x: np.ndarray, paddings: np.ndarray, *, block_size: int) -> np.ndarray:
    if np.ndim(x) != 4:
        raise _bad("SpaceToBatch", f"input must be 4-D, got shape {list(np.shape(x))}.")
    return space_to_batch_nd_np(np.asarray(x), [block_size] * 2, paddings, "SpaceToBatch")


@s2b_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    b = op.get_attr("block_size")
    return [create_op("BatchToSpace", [grad, op.inputs[1]], {"block_size": b},
                    "BatchToSpace").outputs[0], None]


b2s_op = define_op("BatchToSpace", inputs=("input", "crops"), attrs={"block_size": REQUIRED})


@b2s_op.shape
def _(x: Tensor, crops: Tensor, *, block_size: int) -> Any:
    return _square("BatchToSpace", x, crops, block_size)


@b2s_op.kernel("CPU")
def _(x: np.ndarray, crops: np.ndarray, *, block_size: int) -> np.ndarray:
    if np.ndim(x) != 4:
        raise _bad("BatchToSpace", f"input must be 4-D, got shape {list(np.shape(x))}.")
    return batch_to_space_nd_np(np.asarray(x), [block_size] * 2, crops, "BatchToSpace")


@b2s_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    b = op.get_attr("block_size")
    return [create_op("SpaceToBatch", [grad, op.inputs[1]], {"block_size": b},
                    "SpaceToBatch").outputs[0], None]


# ---- public API --------------------------------------------------------------------
def space_to_batch_nd(input: Any, block_shape: Any, paddings: Any,
                      name: str | None = None) -> Tensor:
    """`tf.space_to_batch_nd`: zero-pads the spatial dims and moves blocks to the batch.

    Args:
        input: N-D, [batch] + spatial_shape (M dims) + remaining_shape.
        block_shape: M positive ints (int32 or int64).
        paddings: [M, 2] non-negative ints; `input_shape[i + 1] + paddings[i, 0] +
            paddings[i, 1]` must be divisible by `block_shape[i]`.

    Returns:
        [batch * prod(block_shape)] + [padded_shape[i] / block_shape[i]] + remaining.

    Raises:
        ValueError: naming the value, for a non-positive block, bad paddings or a
            padded size not divisible by its block (when known at build time).

    Example:
        >>> x = tf.zeros([1, 4, 4, 1])
        >>> tf.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]).shape.as_list()
        [4, 2, 2, 1]
    """
    x = convert_to_tensor(input, name="input")
    return create_op("SpaceToBatchND", [x, _int_tensor(block_shape, "block_shape"),
                                      _int_tensor(paddings, "paddings")], None,
                   name).outputs[0]


def batch_to_space_nd(input: Any, block_shape: Any, crops: Any,
                      name: str | None = None) -> Tensor:
    """`tf.batch_to_space_nd`: the inverse of `space_to_batch_nd`, then a crop.

    Args:
        input: N-D, [batch] + spatial_shape (M dims) + remaining_shape; batch must be
            divisible by prod(block_shape).
        block_shape: M positive ints.
        crops: [M, 2] non-negative ints cut from the start and end of each dim.

    Raises:
        ValueError: for a batch not divisible by prod(block_shape), bad crops or a
            non-positive block (when known at build time).

    Example:
        >>> y = tf.batch_to_space_nd(tf.zeros([4, 2, 2, 1]), [2, 2], [[0, 0], [0, 1]])
        >>> y.shape.as_list()
        [1, 4, 3, 1]
    """
    x = convert_to_tensor(input, name="input")
    return create_op("BatchToSpaceND", [x, _int_tensor(block_shape, "block_shape"),
                                      _int_tensor(crops, "crops")], None, name).outputs[0]


def _block_size(fn: str, block_size: Any, block_shape: Any) -> int:
    if block_size is not None and block_shape is not None:
        raise ValueError(f"{fn}: give block_size or its alias block_shape, not both.")
    size = block_shape if block_size is None else block_size
    if size is None:
        raise ValueError(f"{fn}: block_size is required, e.g. block_size=2.")
    return int(size)


def space_to_batch(input: Any, paddings: Any, block_size: Any = None,
                   name: str | None = None, block_shape: Any = None) -> Tensor:
    """`tf.space_to_batch` (TF1; also `tf.nn.space_to_batch`): 4-D, square blocks.

    Built, as in TF 1.x, as SpaceToBatchND with block_shape [block_size, block_size]
    (int64).

    Args:
        input: [batch, height, width, depth].
        paddings: [[pad_top, pad_bottom], [pad_left, pad_right]].
        block_size: an int >= 1 (`block_shape` is its alias).

    Raises:
        ValueError: as `space_to_batch_nd`, or if the input is not 4-D.

    Example:
        >>> tf.space_to_batch(tf.zeros([1, 4, 4, 3]), [[0, 0], [0, 0]], 2).shape.as_list()
        [4, 2, 2, 3]
    """
    b = _block_size("space_to_batch", block_size, block_shape)
    out = space_to_batch_nd(input, np.array([b, b], np.int64), paddings, name=name)
    out.set_shape(out.shape.with_rank(4))
    return out


def batch_to_space(input: Any, crops: Any, block_size: Any = None, name: str | None = None,
                   block_shape: Any = None) -> Tensor:
    """`tf.batch_to_space` (TF1): the inverse of `space_to_batch`, 4-D, square blocks.

    Built, as in TF 1.x, as BatchToSpaceND with block_shape [block_size, block_size].

    Raises:
        ValueError: as `batch_to_space_nd`, or if the input is not 4-D.

    Example:
        >>> tf.batch_to_space(tf.zeros([4, 2, 2, 3]), [[0, 0], [0, 0]], 2).shape.as_list()
        [1, 4, 4, 3]
    """
    b = _block_size("batch_to_space", block_size, block_shape)
    out = batch_to_space_nd(input, np.array([b, b], np.int64), crops, name=name)
    out.set_shape(out.shape.with_rank(4))
    return out
