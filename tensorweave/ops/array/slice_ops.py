"""Slicing array ops: Slice, StridedSlice and `Tensor.__getitem__` (installed on
import), with their gradient ops SliceGrad and StridedSliceGrad.

Public functions are re-exported by the package, `tensorweave.ops.array`.

Example:
    >>> x = tf.zeros([4, 5, 6])
    >>> x[1:, ..., ::-2].shape.as_list()
    [3, 5, 3]
"""
from __future__ import annotations

import builtins
from typing import Any, cast

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import (
    Dimension, TensorShape, dimension_value, unknown_shape)
from tensorweave.ops.array.core_ops import _fold_if_known, _int_tensor
from tensorweave.ops.array.shape_ops import shape
from tensorweave.ops.array.core_ops import shape_from_tensor
from tensorweave.kernels import slice_specs

_pyslice = builtins.slice  # this module defines tf's `slice`
_pyslice_type = builtins.slice


class _Unknown:
    """An index entry whose value is not known at graph-build time."""


# ---- Slice -------------------------------------------------------------------------
slice_op = define_op("Slice", inputs=("input", "begin", "size"))


def _slice_bounds(dims: list[Any], begin: list[int], sz: list[int], where: str) -> list[Any]:
    out = []
    for i, (d, b, s) in enumerate(zip(dims, begin, sz)):
        if b < 0 or s < -1:
            raise ValueError(f"slice: begin {begin} must be >= 0 and size {sz} >= -1 "
                             f"({where})")
        if d is None:
            out.append(None if s == -1 else s)
            continue
        e = d if s == -1 else b + s
        if b > d or e > d:
            raise ValueError(f"slice: begin {begin} + size {sz} is out of bounds for "
                             f"dimension {i} of size {d} ({where})")
        out.append(e - b)
    return out


@slice_op.shape
def _(x: Tensor, begin: Tensor, sz: Tensor) -> Any:
    b: Any = constant_value(begin)
    s: Any = constant_value(sz)
    r = x.shape.ndims
    if r is None:
        r = begin.shape[0] if begin.shape.ndims == 1 else None
    if r is None or b is None or s is None:
        return x.dtype.base_dtype, unknown_shape(r)
    b, s = [int(v) for v in np.ravel(b)], [int(v) for v in np.ravel(s)]
    if len(b) != r or len(s) != r:
        raise ValueError(f"slice: begin {b} and size {s} must have one entry per dimension "
                         f"of input shape {x.shape}")
    dims: list[Any] = x.shape.as_list() if x.shape.ndims is not None else [None] * r
    return x.dtype.base_dtype, TensorShape(_slice_bounds(dims, b, s, f"input shape {x.shape}"))


def _slice_index(shape_: tuple[int, ...], begin: Any, sz: Any) -> tuple[builtins.slice, ...]:
    b, s = [int(v) for v in np.ravel(begin)], [int(v) for v in np.ravel(sz)]
    if len(b) != len(shape_) or len(s) != len(shape_):
        raise errors.InvalidArgumentError(None, None, f"slice: begin {b} and size {s} need "
                                          f"{len(shape_)} entries for shape {list(shape_)}")
    ends = _slice_bounds(list(shape_), b, s, f"input shape {list(shape_)}")
    return tuple(_pyslice(bi, bi + n) for bi, n in zip(b, ends))


@slice_op.kernel("CPU")
def _(x: Any, begin: Any, sz: Any) -> Any:
    x = np.asarray(x)
    key = (x.shape, id(begin), id(sz))
    hit = slice_specs.BY_ID.get(key)
    if hit is not None and hit[0] is begin and hit[1] is sz:
        return x[hit[2]]
    return x[slice_specs.remember(key, (begin, sz), _slice_spec(x.shape, np.asarray(begin),
                                                     np.asarray(sz)))]


def _slice_spec(shape_: tuple, b: np.ndarray, s: np.ndarray) -> tuple:
    return slice_specs.memo_spec(("Slice", shape_) + slice_specs.spec_key(b, s),
                                 lambda: _slice_index(shape_, b, s))


slice_grad_op = define_op("SliceGrad", inputs=("input_shape", "begin", "grad"))


@slice_grad_op.shape
def _(in_shape: Tensor, begin: Tensor, g: Tensor) -> Any:
    return g.dtype.base_dtype, shape_from_tensor(in_shape)


@slice_grad_op.kernel("CPU")
def _(in_shape: Any, begin: Any, g: Any) -> Any:
    g = np.asarray(g)
    out = np.zeros([int(d) for d in np.ravel(in_shape)], dtype=g.dtype)
    out[_slice_index(out.shape, begin, g.shape)] = g
    return out


@slice_grad_op.gradient
def _(op: Operation, grad: Any) -> Any:
    return [None, None, slice(grad, op.inputs[1], shape(op.inputs[2]))]


@slice_op.gradient
def _(op: Operation, grad: Any) -> Any:
    g = create_op("SliceGrad", [shape(op.inputs[0]), op.inputs[1], grad], None,
                "SliceGrad").outputs[0]
    return [g, None, None]


_fold_if_known("Slice")


def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """`tf.slice`: the block starting at `begin` of extent `size` (-1 = to the end).

    Example:
        >>> tf.slice(tf.zeros([3, 4]), [1, 0], [2, -1]).shape.as_list()
        [2, 4]
    """
    with name_scope(name, "Slice", [input_, begin, size]) as scope:  # Slice/begin, /size
        return create_op("Slice", [convert_to_tensor(input_, name="input"),
                                 _int_tensor(begin, name="begin"),
                                 _int_tensor(size, name="size")], None, scope).outputs[0]


# ---- StridedSlice ------------------------------------------------------------------
_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _sparse_spec(n: int, rank: int | None, begin: Any, end: Any, strides: Any,
                 masks: dict[str, int]) -> list[Any]:
    """The StridedSlice spec as a NumPy-style index: ints, slices, None, Ellipsis.

    `begin`, `end`, `strides` may be None (unknown); then slices hold "?" markers
    and ints are replaced by 0 (only positions matter for shape inference).
    """
    bm, em, elm, nm, sm = (masks[k] for k in _MASKS)
    begin, end, strides = ([None] * n if v is None else list(v) for v in (begin, end, strides))
    idx: list[Any] = []
    seen_ellipsis = False
    for i in range(n):
        bit = 1 << i
        if elm & bit:
            if seen_ellipsis:
                raise ValueError("strided_slice: only one ellipsis is allowed in an index")
            seen_ellipsis = True
            idx.append(Ellipsis)
        elif nm & bit:
            idx.append(None)
        elif sm & bit:
            idx.append(_Unknown() if begin[i] is None else int(begin[i]))
        else:
            b = None if bm & bit or begin[i] is None else int(begin[i])
            e = None if em & bit or end[i] is None else int(end[i])
            s = None if strides[i] is None else int(strides[i])
            if s == 0:
                raise ValueError(f"strided_slice: stride {i} must be non-zero, got strides "
                                 f"{strides}")
            unknown = (begin[i] is None and not bm & bit) or \
                (end[i] is None and not em & bit) or s is None
            idx.append(("?", b, e, s) if unknown else _pyslice(b, e, s))
    return idx


def _spec_shape(x_shape: TensorShape, spec: list[Any]) -> TensorShape:
    r = x_shape.ndims
    n_real = sum(1 for s in spec if s is not None and s is not Ellipsis)
    if r is None:
        return TensorShape(None)  # trailing dims (or the ellipsis) have unknown count
    if n_real > r:
        raise ValueError(f"strided_slice: index has {n_real} entries for a tensor of shape "
                         f"{x_shape} (rank {r})")
    full = []
    for s in spec:
        if s is Ellipsis:
            full.extend([_pyslice(None, None, 1)] * (r - n_real))
        else:
            full.append(s)
    if Ellipsis not in spec:
        full.extend([_pyslice(None, None, 1)] * (r - n_real))
    dims = x_shape.as_list()
    out: list[Any] = []
    k = 0
    for s in full:
        if s is None:
            out.append(1)
            continue
        d = dims[k]
        k += 1
        if isinstance(s, _Unknown):
            continue
        if isinstance(s, int):
            if d is not None and not -d <= s < d:
                raise ValueError(f"strided_slice: index {s} is out of bounds for dimension "
                                 f"{k - 1} of size {d} (input shape {x_shape})")
            continue
        if isinstance(s, tuple) or d is None:
            out.append(None)
        else:
            out.append(len(range(*s.indices(d))))
    return TensorShape(out)


strided_slice_op = define_op("StridedSlice", inputs=("input", "begin", "end", "strides"),
                             attrs={k: 0 for k in _MASKS})


def _spec_from(begin: Tensor, end: Tensor, strides: Tensor, r: int | None,
               masks: dict[str, int]) -> list[Any]:
    n = dimension_value(begin.shape[0]) if begin.shape.ndims == 1 else None
    vals = [_partial_vector(t) for t in (begin, end, strides)]
    for v in vals:
        if v is not None:
            n = len(v)
    if n is None:
        raise ValueError("strided_slice: begin must be a 1-D tensor of known length")
    b, e, s = vals
    return _sparse_spec(n, r, b, e, s, masks)


def _partial_vector(t: Tensor) -> list[Any] | None:
    """A 1-D int tensor's value with None for unknown entries (sees through Pack)."""
    v = constant_value(t)
    if v is not None:
        return [int(x) for x in np.ravel(v)]
    if t.op.type == "Pack":
        out = []
        for x in t.op.inputs:
            xv = constant_value(x)
            out.append(None if xv is None else int(np.asarray(xv).reshape(())))
        return out
    return None


@strided_slice_op.shape
def _(x: Tensor, begin: Tensor, end: Tensor, strides: Tensor, **masks: int) -> Any:
    for nm_, t in (("begin", begin), ("end", end), ("strides", strides)):
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"strided_slice: {nm_} must be 1-D, got shape {t.shape}")
    spec = _spec_from(begin, end, strides, x.shape.ndims, masks)
    return x.dtype.base_dtype, _spec_shape(x.shape, spec)


def _np_index(x_ndim: int, begin: Any, end: Any, strides: Any, masks: dict[str, int]) -> tuple:
    spec = _sparse_spec(np.size(begin), x_ndim, np.ravel(begin), np.ravel(end),
                        np.ravel(strides), masks)
    return tuple(spec)


def _cached_index(x_ndim: int, begin: Any, end: Any, strides: Any,
                  masks: dict[str, int]) -> tuple:
    key = (x_ndim, id(begin), id(end), id(strides), *masks.items())
    hit = slice_specs.BY_ID.get(key)
    if hit is not None and hit[0] is begin and hit[1] is end and hit[2] is strides:
        return hit[3]
    return slice_specs.remember(key, (begin, end, strides),
                     _index_by_value(x_ndim, begin, end, strides, masks))


def _index_by_value(x_ndim: int, begin: Any, end: Any, strides: Any,
                    masks: dict[str, int]) -> tuple:
    b, e, s = np.asarray(begin), np.asarray(end), np.asarray(strides)
    key = ("StridedSlice", x_ndim, *(masks[k] for k in _MASKS)) + slice_specs.spec_key(b, e, s)
    return slice_specs.memo_spec(key, lambda: _np_index(x_ndim, b, e, s, masks))


@strided_slice_op.kernel("CPU")
def _(x: Any, begin: Any, end: Any, strides: Any, **masks: int) -> Any:
    x = np.asarray(x)
    idx = _cached_index(x.ndim, begin, end, strides, masks)
    try:
        out = x[idx]
    except IndexError as e:
        raise errors.InvalidArgumentError(None, None, f"strided_slice: index {idx} is invalid "
                                          f"for a tensor of shape {list(x.shape)}: {e}") from None
    if not isinstance(out, np.ndarray):  # one element of a string (object) array: the bytes
        return np.array(out, dtype=x.dtype)
    return np.array(out) if out.base is not None or out.ndim == 0 else out


ss_grad_op = define_op("StridedSliceGrad", inputs=("shape", "begin", "end", "strides", "dy"),
                       attrs={k: 0 for k in _MASKS})


@ss_grad_op.shape
def _(shp: Tensor, begin: Tensor, end: Tensor, strides: Tensor, dy: Tensor,
      **masks: int) -> Any:
    return dy.dtype.base_dtype, shape_from_tensor(shp)


@ss_grad_op.kernel("CPU")
def _(shp: Any, begin: Any, end: Any, strides: Any, dy: Any, **masks: int) -> Any:
    dy = np.asarray(dy)
    out = np.zeros([int(d) for d in np.ravel(shp)], dtype=dy.dtype)
    out[_np_index(out.ndim, begin, end, strides, masks)] = dy
    return out


@ss_grad_op.gradient
def _(op: Operation, grad: Any) -> Any:
    masks = {k: op.get_attr(k) for k in _MASKS}
    begin, end, strides = op.inputs[1:4]
    return [None, None, None, None, strided_slice(grad, begin, end, strides, **masks)]


@strided_slice_op.gradient
def _(op: Operation, grad: Any) -> Any:
    masks = {k: op.get_attr(k) for k in _MASKS}
    g = create_op("StridedSliceGrad", [shape(op.inputs[0])] + list(op.inputs[1:4]) + [grad],
                masks, "StridedSliceGrad").outputs[0]
    g.set_shape(op.inputs[0].shape)
    return [g, None, None, None]


_fold_if_known("StridedSlice")


def strided_slice(input_: Any, begin: Any, end: Any, strides: Any = None, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0, var: Any = None, name: str | None = None,
                  ) -> Tensor:
    """`tf.strided_slice`: NumPy-style basic indexing from begin/end/strides vectors.

    Bit i of a mask refers to entry i of `begin`/`end`/`strides`: begin_mask/end_mask
    ignore that bound, ellipsis_mask makes the entry `...`, new_axis_mask inserts a
    size-1 dimension, shrink_axis_mask takes the single element `begin[i]`.

    Example:
        >>> tf.strided_slice(tf.zeros([4, 6]), [0, 1], [4, 6], [2, 2]).shape.as_list()
        [2, 3]
    """
    b = _int_tensor(begin)
    e = _int_tensor(end)
    n_begin = int(np.size(cast(Any, constant_value(b))))
    s = _int_tensor(strides if strides is not None else [1] * n_begin)
    return create_op("StridedSlice", [convert_to_tensor(input_), b, e, s],
                   {"begin_mask": begin_mask, "end_mask": end_mask,
                    "ellipsis_mask": ellipsis_mask, "new_axis_mask": new_axis_mask,
                    "shrink_axis_mask": shrink_axis_mask}, name).outputs[0]


def _is_int_index(v: Any) -> bool:
    if isinstance(v, Tensor):
        if v.shape.ndims not in (None, 0) or not v.dtype.base_dtype.is_integer:
            raise TypeError(f"Only scalar integer tensors can index a tensor, got {v.name} "
                            f"with shape {v.shape} and dtype {v.dtype.name}")
        return True
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _plain_index(k: Any) -> Any:
    """An index with its Dimensions (`x[:, :x.shape[1] - 1]`, as TF 1.x takes) as ints."""
    if isinstance(k, Dimension):
        return int(k)
    if isinstance(k, _pyslice_type) and any(
            isinstance(p, Dimension) for p in (k.start, k.stop, k.step)):
        return _pyslice(*(int(p) if isinstance(p, Dimension) else p
                          for p in (k.start, k.stop, k.step)))
    return k


def _getitem(tensor: Tensor, key: Any) -> Tensor:
    """`tensor[key]` with ints, slices (any step), `...`, `tf.newaxis` and scalar tensors."""
    if not isinstance(key, tuple):
        key = (key,)
    key = tuple(_plain_index(k) for k in key)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, k in enumerate(key):
        bit = 1 << i
        if k is Ellipsis:
            masks["ellipsis_mask"] |= bit
            begin.append(0)
            end.append(0)
            strides.append(1)
        elif k is None:
            masks["new_axis_mask"] |= bit
            begin.append(0)
            end.append(0)
            strides.append(1)
        elif isinstance(k, _pyslice_type):
            for part, mask in ((k.start, "begin_mask"), (k.stop, "end_mask")):
                if part is not None and not _is_int_index(part):
                    raise TypeError(f"Slice bounds must be ints or scalar int tensors, got "
                                    f"{part!r} in {k!r}")
                if part is None:
                    masks[mask] |= bit
            if k.step is not None and not _is_int_index(k.step):
                raise TypeError(f"Slice steps must be ints or scalar int tensors, got {k!r}")
            begin.append(0 if k.start is None else k.start)
            end.append(0 if k.stop is None else k.stop)
            strides.append(1 if k.step is None else k.step)
        elif _is_int_index(k):
            masks["shrink_axis_mask"] |= bit
            begin.append(k)
            # the kernel ignores end for shrunk axes; keep it static when begin is a tensor
            end.append(k + 1 if not isinstance(k, Tensor) and k != -1 else 0)
            strides.append(1)
        else:
            raise TypeError(f"Unsupported index {k!r} for tensor {tensor.name}: only ints, "
                            "slices, `...`, tf.newaxis and scalar int tensors are supported "
                            "(use tf.gather or tf.boolean_mask for lists and masks).")
    if masks["shrink_axis_mask"]:
        for i, k in enumerate(key):
            if masks["shrink_axis_mask"] & (1 << i) and not isinstance(k, Tensor) and k == -1:
                masks["end_mask"] |= 1 << i
    # As TF's _slice_helper: one "strided_slice" scope holds the packed begin/end/strides
    # ("strided_slice/stack", "stack_1", "stack_2") and names the op itself.
    with name_scope(None, "strided_slice", [tensor]) as scope:
        b, e, s = (_int_tensor(v, name="stack") for v in (begin, end, strides))
        return strided_slice(tensor, b, e, s, name=scope, **masks)


Tensor._override_operator("__getitem__", _getitem)


__all__ = ["slice", "strided_slice"]
