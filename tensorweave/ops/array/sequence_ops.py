"""Sequence and ordering array ops: reverse (ReverseV2), reverse_sequence
(ReverseSequence), linspace (LinSpace) and meshgrid.

ReverseV2, ReverseSequence and LinSpace are ops as in TF (one stanza each); meshgrid
is a composite, as TF's Python builds it. sequence_mask (which checks its lengths
with an assert op) is in `ops.nn.nn_extra_ops`; the set and sort functions
(setdiff1d, unique_with_counts, sort, argsort) in `ops.stats.set_sort_ops`.

Example:
    >>> tf.reverse_sequence(x, seq_lengths=[2, 3], seq_axis=1, batch_axis=0)
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.ops.array.core_ops import _fold_if_known, _int_tensor, kernel_int
from tensorweave.ops.array.fill_ops import ones
from tensorweave.ops.array.shape_ops import reshape, size
from tensorweave.ops.math import math_ops


# ---- ReverseV2 -----------------------------------------------------------------------
reverse_op = define_op("ReverseV2", inputs=("tensor", "axis"))


def _check_axes(axes: Sequence[int], rank: int, what: str, err: Any) -> list[int]:
    """`axes` made non-negative; `err(msg)` builds the exception (graph or run time)."""
    out: list[int] = []
    for i, a in enumerate(axes):
        if not -rank <= a < rank:
            raise err(f"reverse: axis[{i}] = {a} is out of range for {what} of rank {rank}; "
                      f"it must be in [{-rank}, {rank}).")
        a %= rank
        if a in out:
            raise err(f"reverse: axis {a} is given more than once in axis {list(axes)} "
                      f"(for {what}).")
        out.append(a)
    return out


@reverse_op.shape
def _(x: Tensor, axis: Tensor) -> Any:
    if axis.shape.ndims not in (None, 1):
        raise ValueError(f"reverse: axis must be a vector, got shape {axis.shape} "
                         f"({axis.name}).")
    av = constant_value(axis)
    if av is not None and x.shape.ndims is not None:
        _check_axes([int(a) for a in np.asarray(av).reshape(-1)], x.shape.ndims,
                    f"tensor {x.name}", ValueError)
    return x.dtype.base_dtype, x.shape


@reverse_op.kernel("CPU")
def _(x: Any, axis: Any) -> Any:
    x = np.asarray(x)
    axes = _check_axes([int(a) for a in np.asarray(axis).reshape(-1)], x.ndim, "the tensor",
                       lambda m: errors.InvalidArgumentError(None, None, m))
    # np.flip is a view; copy so no later in-place kernel writes through to the input.
    return np.flip(x, tuple(axes)).copy() if axes else x


@reverse_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [reverse(grad, op.inputs[1]), None]  # reversing is its own inverse


_fold_if_known("ReverseV2")


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """`tf.reverse` (ReverseV2): `tensor` with the dimensions in `axis` reversed.

    Raises:
        ValueError: an axis out of range or repeated (InvalidArgumentError at run time).

    Example:
        >>> tf.reverse([[1, 2], [3, 4]], [1])  # -> [[2, 1], [4, 3]]
    """
    with name_scope(name, "ReverseV2", [tensor, axis]) as scope:  # TF's "ReverseV2/axis"
        x = convert_to_tensor(tensor, name="tensor")
        return create_op("ReverseV2", [x, _int_tensor(axis, name="axis")], None,
                       scope).outputs[0]


# ---- ReverseSequence -----------------------------------------------------------------
reverse_sequence_op = define_op("ReverseSequence", inputs=("input", "seq_lengths"),
                                attrs={"seq_dim": REQUIRED, "batch_dim": 0})


def _check_dims(rank: int, seq_dim: int, batch_dim: int, err: Any) -> None:
    for nm, d in (("seq_dim", seq_dim), ("batch_dim", batch_dim)):
        if not 0 <= d < rank:
            raise err(f"reverse_sequence: {nm} = {d} is out of range for an input of rank "
                      f"{rank}; it must be in [0, {rank}).")
    if seq_dim == batch_dim:
        raise err(f"reverse_sequence: seq_dim and batch_dim must differ, both are {seq_dim}.")


@reverse_sequence_op.shape
def _(x: Tensor, lens: Tensor, *, seq_dim: int, batch_dim: int) -> Any:
    if lens.shape.ndims not in (None, 1):
        raise ValueError(f"reverse_sequence: seq_lengths must be a vector, got shape "
                         f"{lens.shape} ({lens.name}).")
    if not lens.dtype.base_dtype.is_integer:
        raise TypeError(f"reverse_sequence: seq_lengths must be int32/int64, but {lens.name} "
                        f"has dtype {lens.dtype.base_dtype.name}.")
    if x.shape.ndims is None:
        return x.dtype.base_dtype, x.shape
    _check_dims(x.shape.ndims, seq_dim, batch_dim, ValueError)
    n = dimension_value(lens.shape[0]) if lens.shape.ndims == 1 else None
    b = dimension_value(x.shape[batch_dim])
    if n is not None and b is not None and n != b:
        raise ValueError(f"reverse_sequence: seq_lengths ({lens.name}) has {n} entries but "
                         f"input {x.name} has {b} along batch_dim {batch_dim}.")
    dims = x.shape.as_list()
    dims[batch_dim] = b if b is not None else n
    lv = constant_value(lens)
    t = dimension_value(x.shape[seq_dim])
    if lv is not None and t is not None and np.any(np.asarray(lv) > t):
        raise ValueError(f"reverse_sequence: seq_lengths {np.asarray(lv).tolist()} "
                         f"({lens.name}) exceed the size {t} of seq_dim {seq_dim} of input "
                         f"{x.name}.")
    return x.dtype.base_dtype, TensorShape(dims)


@reverse_sequence_op.kernel("CPU")
def _(x: Any, lens: Any, *, seq_dim: int, batch_dim: int) -> Any:
    x = np.asarray(x)
    lens = np.asarray(lens).reshape(-1)

    def err(m: str) -> Exception:
        return errors.InvalidArgumentError(None, None, m)
    _check_dims(x.ndim, seq_dim, batch_dim, err)
    b, t = x.shape[batch_dim], x.shape[seq_dim]
    if lens.size != b:
        raise err(f"reverse_sequence: seq_lengths has {lens.size} entries but the input has "
                  f"{b} along batch_dim {batch_dim} (input shape {list(x.shape)}).")
    for i, n in enumerate(lens.tolist()):
        if not 0 <= n <= t:
            raise err(f"reverse_sequence: seq_lengths[{i}] = {n} must be in [0, {t}], the "
                      f"size of seq_dim {seq_dim} (input shape {list(x.shape)}).")
    # One gather: with batch at 0 and time at 1, position j of row i reads position
    # lens[i] - 1 - j inside the prefix, and j itself past it.
    moved = np.moveaxis(x, (batch_dim, seq_dim), (0, 1))
    j = np.arange(t)[None, :]
    n = lens.astype(np.int64)[:, None]
    src = np.where(j < n, n - 1 - j, j)
    src = src.reshape(src.shape + (1,) * (moved.ndim - 2))
    out = np.take_along_axis(moved, np.broadcast_to(src, moved.shape), axis=1)
    return np.ascontiguousarray(np.moveaxis(out, (0, 1), (batch_dim, seq_dim)))


@reverse_sequence_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # Reversing each prefix again is the inverse permutation (as TF's array_grad).
    attrs = {"seq_dim": op.get_attr("seq_dim"), "batch_dim": op.get_attr("batch_dim")}
    return [create_op("ReverseSequence", [grad, op.inputs[1]], attrs,
                    "ReverseSequenceGrad").outputs[0], None]


def reverse_sequence(input: Any, seq_lengths: Any, seq_axis: int | None = None,  # noqa: A002
                     batch_axis: int | None = None, name: str | None = None,
                     seq_dim: int | None = None, batch_dim: int | None = None) -> Tensor:
    """`tf.reverse_sequence`: reverses the first `seq_lengths[i]` entries along
    `seq_axis` of each slice `i` along `batch_axis`; the rest stay in place.

    `seq_dim`/`batch_dim` are TF1's older names for `seq_axis`/`batch_axis`.

    Raises:
        ValueError: bad axes, or a constant length past the sequence dimension
            (InvalidArgumentError when found at run time).

    Example:
        >>> tf.reverse_sequence([[1, 2, 3], [4, 5, 6]], [2, 3], 1)  # [[2,1,3], [6,5,4]]
    """
    s = seq_axis if seq_axis is not None else seq_dim
    b = batch_axis if batch_axis is not None else batch_dim
    if s is None:
        raise TypeError("reverse_sequence: seq_axis (or seq_dim) is required.")
    x = convert_to_tensor(input, name="input")
    lens = convert_to_tensor(seq_lengths, name="seq_lengths")
    r = x.shape.ndims
    # Negative axes are normalised here, as TF's kernel would reject them.
    s, b = int(s), int(b or 0)
    if r is not None:
        s, b = (s + r if s < 0 else s), (b + r if b < 0 else b)
    return create_op("ReverseSequence", [x, lens], {"seq_dim": s, "batch_dim": b},
                   name).outputs[0]


# ---- LinSpace ------------------------------------------------------------------------
linspace_op = define_op("LinSpace", inputs=("start", "stop", "num"))


@linspace_op.shape
def _(start: Tensor, stop: Tensor, num: Tensor) -> Any:
    for nm, t in (("start", start), ("stop", stop), ("num", num)):
        if t.shape.ndims not in (None, 0):
            raise ValueError(f"linspace: {nm} must be a scalar, got shape {t.shape} "
                             f"({t.name}).")
    if not start.dtype.base_dtype.is_floating:
        raise TypeError(f"linspace: start must be floating point, but {start.name} has "
                        f"dtype {start.dtype.base_dtype.name}.")
    n = constant_value(num)
    if n is not None and int(n) <= 0:
        raise ValueError(f"linspace: num must be > 0, got {int(n)} ({num.name}).")
    return start.dtype.base_dtype, TensorShape([None if n is None else int(n)])


@linspace_op.kernel("CPU")
def _(start: Any, stop: Any, num: Any) -> Any:
    n = kernel_int(num)
    if n <= 0:
        raise errors.InvalidArgumentError(None, None, f"linspace: num must be > 0, got {n}")
    dt = np.asarray(start).dtype
    # float64 steps then one cast, so float32 outputs round once (and end at `stop`).
    return np.linspace(float(start), float(stop), n).astype(dt)


linspace_op.no_gradient()
_fold_if_known("LinSpace")


def linspace(start: Any, stop: Any, num: Any, name: str | None = None) -> Tensor:
    """`tf.linspace` (`tf.lin_space`): `num` evenly spaced values from start to stop,
    both included.

    Python numbers become float32 (TF1 rejects ints; a float tensor's dtype is kept).

    Example:
        >>> tf.linspace(10.0, 12.0, 3)  # -> [10., 11., 12.]
    """
    if isinstance(start, Tensor):
        s = start
    else:
        s = convert_to_tensor(start, name="start")
        if not s.dtype.base_dtype.is_floating:
            s = convert_to_tensor(np.float32(start), name="start")
    e = convert_to_tensor(stop, dtype=s.dtype.base_dtype, name="stop") \
        if not isinstance(stop, Tensor) else stop
    if e.dtype.base_dtype != s.dtype.base_dtype:
        raise TypeError(f"linspace: start ({s.name}, {s.dtype.base_dtype.name}) and stop "
                        f"({e.name}, {e.dtype.base_dtype.name}) must have one dtype.")
    n = _int_tensor(num, name="num") if not isinstance(num, Tensor) else num
    return create_op("LinSpace", [s, e, n], None, name).outputs[0]


# ---- meshgrid ------------------------------------------------------------------------
def meshgrid(*args: Any, **kwargs: Any) -> list[Tensor]:
    """`tf.meshgrid`: N-D coordinate grids from N 1-D coordinate tensors.

    Each input becomes a reshaped "axis" times ones of the full grid shape. With the
    default `indexing='xy'` (Cartesian) the first two output dimensions are swapped,
    as NumPy's `meshgrid` does; `indexing='ij'` (matrix) keeps input order.

    Args:
        *args: 1-D tensors (higher-rank ones are flattened).
        indexing: 'xy' or 'ij'. name: the name scope (default "meshgrid").

    Raises:
        TypeError: an unknown keyword argument. ValueError: a bad `indexing`.

    Example:
        >>> X, Y = tf.meshgrid([1, 2, 3], [4, 5])  # X, Y have shape [2, 3]
    """
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword argument(s) {sorted(kwargs)}; only "
                        "'indexing' and 'name' are accepted.")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}.")
    with name_scope(name, "meshgrid") as _:
        ts = [convert_to_tensor(a) for a in args]
        n = len(ts)
        if n == 0:
            return []
        # Each axis shaped [1, .., -1, .., 1] broadcasts against ones(grid shape).
        outs = [reshape(t, [1] * i + [-1] + [1] * (n - i - 1)) for i, t in enumerate(ts)]
        sizes: list[Any] = [size(t) for t in ts]
        if indexing == "xy" and n > 1:
            outs[0] = reshape(outs[0], [1, -1] + [1] * (n - 2))
            outs[1] = reshape(outs[1], [-1, 1] + [1] * (n - 2))
            sizes[0], sizes[1] = sizes[1], sizes[0]
        known = [t.shape.num_elements() for t in ts]
        if indexing == "xy" and n > 1:
            known[0], known[1] = known[1], known[0]
        grid_shape = known if all(k is not None for k in known) else sizes
        grid = ones(grid_shape, ts[0].dtype.base_dtype)
        return [math_ops.multiply(o, grid) for o in outs]


__all__ = ["reverse", "reverse_sequence", "linspace", "meshgrid"]
