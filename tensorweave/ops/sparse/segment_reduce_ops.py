"""Segment reductions beyond sums: SegmentMean/Max/Min/Prod (sorted ids) and
UnsortedSegmentMax/Min/Prod, plus the composites unsorted_segment_mean / _sqrt_n.

Sorted ops: ids are a sorted vector over data's rows, the output has ids[-1] + 1 rows,
empty segments are 0 (1 for SegmentProd). Unsorted ops: ids have a prefix of data's
shape, negatives are dropped, empty segments hold the dtype's lowest (max) / highest
(min) value, or 1 (prod). All as TF; gradients as TF 1.x's math_grad.py.

Example:
    >>> tf.segment_max([[1., 5.], [3., 2.], [4., 4.]], [0, 0, 2])   # [[3, 5], [0, 0], [4, 4]]
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.sparse.segment_ops import _check_ids, _segment_shape, segment_sum
from tensorweave.ops.sparse.conversion_ops import create

_UFUNCS = {"Mean": np.add, "Max": np.maximum, "Min": np.minimum, "Prod": np.multiply}


# ---- NumPy kernels -----------------------------------------------------------------------
def _grouped(ufunc: np.ufunc, rows: np.ndarray, ids: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(id, reduced row, length) of each run of equal adjacent ids: one reduceat, no loop."""
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
    lengths = np.diff(np.append(starts, ids.size))
    return ids[starts], ufunc.reduceat(rows, starts, axis=0), lengths


def _mean(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    n = counts.reshape((-1,) + (1,) * (sums.ndim - 1))
    if np.issubdtype(sums.dtype, np.integer):
        # TF divides integer sums in C++, truncating toward zero; floor division rounds
        # negative non-multiples down, so step those back up by one.
        q = sums // n
        return (q + ((sums % n != 0) & (sums < 0))).astype(sums.dtype)
    return (sums / n).astype(sums.dtype)


def _sorted_kernel(kind: str, data: Any, ids: Any) -> np.ndarray:
    op = f"Segment{kind}"
    data, ids = np.asarray(data), np.asarray(ids).astype(np.int64)
    rows = _check_ids(op, ids)  # vector, non-negative, sorted; names the offending id
    if data.ndim == 0 or data.shape[0] != ids.size:
        raise errors.InvalidArgumentError(
            None, None, f"{op}: segment_ids has {ids.size} entries but data has shape "
            f"{list(data.shape)}; give one segment id per row of data")
    out = np.full((rows,) + data.shape[1:], 1 if kind == "Prod" else 0, dtype=data.dtype)
    if ids.size:
        seg, red, counts = _grouped(_UFUNCS[kind], data, ids)
        out[seg] = _mean(red, counts) if kind == "Mean" else red
    return out


def _empty_value(kind: str, dtype: np.dtype) -> Any:
    """TF's identity for an empty unsorted segment: lowest for max, highest for min."""
    if kind == "Prod":
        return 1
    info: Any = np.finfo(dtype) if np.issubdtype(dtype, np.floating) else np.iinfo(dtype)
    return info.min if kind == "Max" else info.max


def _unsorted_kernel(kind: str, data: Any, ids: Any, num: Any) -> np.ndarray:
    op = f"UnsortedSegment{kind}"
    data, ids, n = np.asarray(data), np.asarray(ids).astype(np.int64), int(num)
    if data.shape[:ids.ndim] != ids.shape:
        raise errors.InvalidArgumentError(
            None, None, f"{op}: segment_ids shape {list(ids.shape)} must be a prefix of data "
            f"shape {list(data.shape)}; give one segment id per leading element of data")
    if n < 0:
        raise errors.InvalidArgumentError(None, None, f"{op}: num_segments = {n} is < 0")
    bad = ids >= n
    if bad.any():
        where = ",".join(str(int(i)) for i in np.unravel_index(np.argmax(bad), ids.shape))
        raise errors.InvalidArgumentError(
            None, None, f"{op}: segment_ids[{where}] = {int(ids[bad].flat[0])} is out of "
            f"range [0, {n}); raise num_segments or fix the id (negative ids are dropped)")
    out = np.full((n,) + data.shape[ids.ndim:], _empty_value(kind, data.dtype),
                  dtype=data.dtype)
    flat = ids.reshape(-1)
    # A stable sort groups each segment's rows (in their original order, so products
    # multiply as a sequential loop would) for one reduceat; the negative ids sort
    # first and are cut off: TF drops them.
    order = np.argsort(flat, kind="stable")
    order = order[np.searchsorted(flat[order], 0):]
    if order.size:
        rows = data.reshape((flat.size,) + out.shape[1:])
        seg, red, _ = _grouped(_UFUNCS[kind], rows[order], flat[order])
        out[seg] = red
    return out


# ---- Gradients (TF 1.x math_grad.py) -----------------------------------------------------
def _per_row(vec: Tensor, like: Tensor, ids: Tensor) -> Tensor:
    """Reshapes a [segments] vector to [segments, 1, ...] to broadcast over the segment
    rows of `like` (whose leading dims are those of `ids`)."""
    r, lead = like.shape.ndims, ids.shape.ndims
    if r is not None and lead is not None:
        return array_ops.reshape(vec, [-1] + [1] * (r - lead))
    ones = array_ops.fill(array_ops.expand_dims(array_ops.rank(like) - array_ops.rank(ids),
                                                0), 1)
    return array_ops.reshape(vec, array_ops.concat([[-1], ones], 0))


def _gather_drop_negatives(params: Tensor, ids: Tensor, num: Tensor) -> Tensor:
    # params[ids] with the rows of negative (dropped) ids zero: TF's _GatherDropNegatives,
    # which UnsortedSegmentSumGrad (math_ops) already computes.
    return create("UnsortedSegmentSumGrad", [params, ids, num]).outputs[0]


def _segment_mean_grad(op: Operation, grad: Tensor) -> list[Any]:
    data, ids = op.inputs
    counts = segment_sum(array_ops.ones(array_ops.shape(ids), grad.dtype), ids)
    # Empty segments count 0 but are never gathered; max(., 1) only avoids 0/0 there.
    scaled = grad / _per_row(math_ops.maximum(counts, 1), data, ids)
    return [array_ops.gather(scaled, ids), None]


def _helpers(op: Operation) -> tuple[Callable[[Tensor], Tensor], Callable[[Tensor], Tensor]]:
    """(gather rows by segment id, sum rows into segments) for op's sorted/unsorted ids."""
    ids, rest = op.inputs[1], list(op.inputs[2:])
    if rest:  # unsorted: num_segments given, and negative ids are dropped both ways
        return (lambda t: _gather_drop_negatives(t, ids, rest[0]),
                lambda t: math_ops.unsorted_segment_sum(t, ids, rest[0]))
    return lambda t: array_ops.gather(t, ids), lambda t: segment_sum(t, ids)


def _min_or_max_grad(op: Operation, grad: Tensor) -> list[Any]:
    """The output's gradient goes to the elements equal to it, split evenly among ties."""
    gather, seg_sum = _helpers(op)
    is_selected = math_ops.equal(op.inputs[0], gather(op.outputs[0]))
    num_selected = seg_sum(math_ops.cast(is_selected, grad.dtype))
    # A segment selecting nothing (empty, or NaN) gets none of its gradient gathered;
    # max(., 1) keeps its 0/0 out of the graph.
    shared = gather(grad / math_ops.maximum(num_selected, 1))
    # A dropped (negative-id) row may equal its zero gather; its gathered gradient is 0.
    return [math_ops.select(is_selected, shared, array_ops.zeros_like(shared))] + \
        [None] * (len(op.inputs) - 1)


def _prod_grad(op: Operation, grad: Tensor) -> list[Any]:
    """d prod / d x = prod / x, except in segments with zeros: with one zero only that
    element gets the product of the others; with two or more, all get 0."""
    data, gather, seg_sum = op.inputs[0], *_helpers(op)
    is_zero = math_ops.equal(data, array_ops.zeros_like(data))
    num_zeros = seg_sum(math_ops.cast(is_zero, _dt.int32))
    grad = math_ops.select(math_ops.greater(num_zeros, 1), array_ops.zeros_like(grad), grad)
    non_zero = math_ops.select(is_zero, array_ops.ones_like(data), data)
    non_zero_prod = create(op.type, [non_zero] + list(op.inputs[1:])).outputs[0]
    # Divides by non_zero, not data (TF divides by data, then discards the inf/nan).
    partial = math_ops.select(is_zero, gather(non_zero_prod),
                              gather(op.outputs[0]) / non_zero)
    return [gather(grad) * partial] + [None] * (len(op.inputs) - 1)


_GRADS: dict[str, Callable[[Operation, Tensor], list[Any]]] = {
    "Mean": _segment_mean_grad, "Max": _min_or_max_grad, "Min": _min_or_max_grad,
    "Prod": _prod_grad}


# ---- Op stanzas --------------------------------------------------------------------------
def _check_dtypes(op: str, data: Tensor, ids: Tensor) -> None:
    d, ordered = data.dtype.base_dtype, op.endswith(("Max", "Min"))
    if not (d.is_integer or d.is_floating or (d.is_complex and not ordered)):
        raise TypeError(f"{op}: data {data.name} must be a real number type"
                        f"{'' if ordered else ' or complex'}, got {d.name}")
    if ids.dtype.base_dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{op}: segment_ids {ids.name} must be int32 or int64, got "
                        f"{ids.dtype.base_dtype.name}")


def _define_sorted(kind: str) -> None:
    op_def = define_op(f"Segment{kind}", inputs=("data", "segment_ids"))

    @op_def.shape
    def _(data: Tensor, ids: Tensor) -> Any:
        _check_dtypes(op_def.name, data, ids)
        if ids.shape.ndims not in (None, 1) or data.shape.ndims == 0:
            raise ValueError(f"{op_def.name}: segment_ids must be a vector over the rows of "
                             f"data, got {ids.name} with shape {ids.shape} and data "
                             f"{data.name} with shape {data.shape}")
        if data.shape.ndims is not None and ids.shape.ndims == 1 and \
                not data.shape[:1].is_compatible_with(ids.shape):
            raise ValueError(f"{op_def.name}: segment_ids {ids.name} has shape {ids.shape} but "
                             f"data has {data.shape[0]} rows; give one segment id per row")
        return data.dtype.base_dtype, _segment_shape(data, ids)

    @op_def.kernel("CPU")
    def _(data: Any, ids: Any) -> Any:
        return _sorted_kernel(kind, data, ids)

    op_def.gradient(_GRADS[kind])


def _define_unsorted(kind: str) -> None:
    op_def = define_op(f"UnsortedSegment{kind}",
                       inputs=("data", "segment_ids", "num_segments"))

    @op_def.shape
    def _(data: Tensor, ids: Tensor, num: Tensor) -> Any:
        _check_dtypes(op_def.name, data, ids)
        return data.dtype.base_dtype, math_ops._segment_shape(op_def.name, data, ids, num)

    @op_def.kernel("CPU")
    def _(data: Any, ids: Any, num: Any) -> Any:
        return _unsorted_kernel(kind, data, ids, num)

    op_def.gradient(_GRADS[kind])


for _kind in ("Mean", "Max", "Min", "Prod"):
    _define_sorted(_kind)
    if _kind != "Mean":  # TF has no UnsortedSegmentMean op: unsorted_segment_mean composes
        _define_unsorted(_kind)


# ---- Public wrappers ---------------------------------------------------------------------
def _build(op_type: str, name: str | None, **inputs: Any) -> Tensor:
    tensors = [convert_to_tensor(v, name=k) for k, v in inputs.items()]
    return create(op_type, tensors, None, name).outputs[0]


def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """`tf.segment_mean`: [segment_ids[-1] + 1] rows, each the mean of its segment's rows
    (empty: 0; integer means truncate toward zero).

    Args:
        data: a numeric Tensor of rank >= 1.
        segment_ids: sorted int32/int64 vector, one id per row of `data`.
        name: the op name.

    Example:
        >>> tf.segment_mean([1., 3., 5.], [0, 0, 2])   # [2, 0, 5]
    """
    return _build("SegmentMean", name, data=data, segment_ids=segment_ids)


def segment_max(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """`tf.segment_max`: [segment_ids[-1] + 1] rows, each the element-wise maximum of its
    segment's rows (empty: 0).

    Args:
        data: a real-valued Tensor of rank >= 1.
        segment_ids: sorted int32/int64 vector, one id per row of `data`.
        name: the op name.

    Example:
        >>> tf.segment_max([1, 7, 5], [0, 0, 1])   # [7, 5]
    """
    return _build("SegmentMax", name, data=data, segment_ids=segment_ids)


def segment_min(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """`tf.segment_min`: [segment_ids[-1] + 1] rows, each the element-wise minimum of its
    segment's rows (empty: 0).

    Args:
        data: a real-valued Tensor of rank >= 1.
        segment_ids: sorted int32/int64 vector, one id per row of `data`.
        name: the op name.

    Example:
        >>> tf.segment_min([1, 7, 5], [0, 0, 1])   # [1, 5]
    """
    return _build("SegmentMin", name, data=data, segment_ids=segment_ids)


def segment_prod(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """`tf.segment_prod`: [segment_ids[-1] + 1] rows, each the element-wise product of its
    segment's rows (empty: 1).

    Args:
        data: a numeric Tensor of rank >= 1.
        segment_ids: sorted int32/int64 vector, one id per row of `data`.
        name: the op name.

    Example:
        >>> tf.segment_prod([2, 3, 5], [0, 0, 2])   # [6, 1, 5]
    """
    return _build("SegmentProd", name, data=data, segment_ids=segment_ids)


def unsorted_segment_max(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    """`tf.unsorted_segment_max`: out[i] = max of data[j...] with segment_ids[j...] == i;
    empty segments hold the dtype's lowest value.

    Args:
        data: a real-valued Tensor.
        segment_ids: int32/int64 ids with a prefix of data's shape; negatives are dropped.
        num_segments: scalar int, the output's row count (ids must be below it).
        name: the op name.

    Example:
        >>> tf.unsorted_segment_max([1, 7, 5], [1, 0, 1], 2)   # [7, 5]
    """
    return _build("UnsortedSegmentMax", name, data=data, segment_ids=segment_ids,
                  num_segments=num_segments)


def unsorted_segment_min(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    """`tf.unsorted_segment_min`: out[i] = min of data[j...] with segment_ids[j...] == i;
    empty segments hold the dtype's highest value.

    Args:
        data: a real-valued Tensor.
        segment_ids: int32/int64 ids with a prefix of data's shape; negatives are dropped.
        num_segments: scalar int, the output's row count (ids must be below it).
        name: the op name.

    Example:
        >>> tf.unsorted_segment_min([1, 7, 5], [1, 0, 1], 2)   # [7, 1]
    """
    return _build("UnsortedSegmentMin", name, data=data, segment_ids=segment_ids,
                  num_segments=num_segments)


def unsorted_segment_prod(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None) -> Tensor:
    """`tf.unsorted_segment_prod`: out[i] = product of data[j...] with segment_ids[j...]
    == i; empty segments are 1.

    Args:
        data: a numeric Tensor.
        segment_ids: int32/int64 ids with a prefix of data's shape; negatives are dropped.
        num_segments: scalar int, the output's row count (ids must be below it).
        name: the op name.

    Example:
        >>> tf.unsorted_segment_prod([2, 3, 5], [1, 0, 1], 3)   # [3, 10, 1]
    """
    return _build("UnsortedSegmentProd", name, data=data, segment_ids=segment_ids,
                  num_segments=num_segments)


def _segment_counts(data: Tensor, ids: Tensor, num: Tensor) -> Tensor:
    """Rows per segment (at least 1), shaped to broadcast over the segment sums."""
    ones = array_ops.ones(array_ops.shape(ids), data.dtype)
    counts = math_ops.unsorted_segment_sum(ones, ids, num)
    return math_ops.maximum(_per_row(counts, data, ids), 1)


def unsorted_segment_mean(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None) -> Tensor:
    """`tf.unsorted_segment_mean`: unsorted_segment_sum divided by each segment's size
    (empty segments: 0).

    Args:
        data: a numeric Tensor (integer data gives a float64 mean, as `/` does).
        segment_ids: int32/int64 ids with a prefix of data's shape; negatives are dropped.
        num_segments: scalar int, the output's row count.
        name: the name scope.

    Example:
        >>> tf.unsorted_segment_mean([1., 3., 5.], [1, 0, 1], 2)   # [3, 3]
    """
    with name_scope(name, "UnsortedSegmentMean", [data, segment_ids]):
        data = convert_to_tensor(data, name="data")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        num = convert_to_tensor(num_segments, name="num_segments")
        return math_ops.unsorted_segment_sum(data, ids, num) / \
            _segment_counts(data, ids, num)


def unsorted_segment_sqrt_n(data: Any, segment_ids: Any, num_segments: Any,
                            name: str | None = None) -> Tensor:
    """`tf.unsorted_segment_sqrt_n`: the segment sums divided by sqrt(segment size)
    (empty segments: 0).

    Args:
        data: a floating-point Tensor.
        segment_ids: int32/int64 ids with a prefix of data's shape; negatives are dropped.
        num_segments: scalar int, the output's row count.
        name: the name scope.

    Raises:
        TypeError: if data is not floating point (TF's rsqrt takes no integers).

    Example:
        >>> tf.unsorted_segment_sqrt_n([3., 1.], [0, 0], 1)   # [4 / sqrt(2)]
    """
    with name_scope(name, "UnsortedSegmentSqrtN", [data, segment_ids]):
        data = convert_to_tensor(data, name="data")
        if not data.dtype.base_dtype.is_floating:
            raise TypeError(f"unsorted_segment_sqrt_n: data {data.name} must be floating "
                            f"point, got {data.dtype.base_dtype.name}")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        num = convert_to_tensor(num_segments, name="num_segments")
        return math_ops.unsorted_segment_sum(data, ids, num) * \
            math_ops.rsqrt(_segment_counts(data, ids, num))
