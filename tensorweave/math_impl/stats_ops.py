"""Statistics and counting helpers built from existing ops (no new op types).

`count_nonzero`, `zero_fraction` (tf.nn), `reduce_variance`, `reduce_std`,
`reduce_euclidean_norm`, `scalar_mul`, `is_non_decreasing`,
`is_strictly_increasing`, `bincount` and `confusion_matrix`, with TF 1.x's
signatures and semantics. Axis/keepdims handling is `reduce_ops`' (through the
reduce_* wrappers), so the deprecated `reduction_indices`/`keep_dims` behave
the same everywhere.

Example:
    >>> tf.count_nonzero([[0, 1], [2, 0]], axis=1)   # [1, 1] as int64
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph_defaults import control_dependencies, name_scope
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.control_flow import assert_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.op_author import create_tensor
from tensorweave.ops.stats.count_ops import bincount_op  # noqa: F401 - registers Bincount

from tensorweave.ops.math.reduce_ops import _reduced_shape, _reduction_axis
from tensorweave.framework.tensor_shape import dimension_value


# ---- counting ------------------------------------------------------------------------
def count_nonzero(input_tensor: Any = None, axis: Any = None, keepdims: bool | None = None,
                  dtype: Any = _dt.int64, name: str | None = None,
                  reduction_indices: Any = None, keep_dims: bool | None = None,
                  input: Any = None) -> Tensor:  # noqa: A002 - TF's deprecated alias
    """`tf.count_nonzero` / `tf.math.count_nonzero`: the number of nonzero elements.

    Zero means 0 for numbers, False for bools and "" for strings.

    Args:
        input_tensor: the tensor to count in (`input` is TF1's deprecated alias).
        axis: the axes to reduce (None: all); `reduction_indices` is the old name.
        keepdims: keep reduced axes with length 1; `keep_dims` is the old name.
        dtype: the output dtype (int64 by default).
        name: a name scope for the ops.

    Returns:
        The counts, of `dtype`.

    Example:
        >>> tf.count_nonzero(["", "a", "b"])   # 2
    """
    if input_tensor is not None and input is not None:
        raise ValueError("count_nonzero: pass input_tensor or the deprecated input, not both.")
    input_tensor = input if input_tensor is None else input_tensor
    if input_tensor is None:
        raise ValueError("count_nonzero needs input_tensor.")
    with name_scope(name, "count_nonzero", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        zero: Any = "" if x.dtype.base_dtype == _dt.string else \
            np.zeros((), x.dtype.base_dtype.as_numpy_dtype)
        if axis is not None and reduction_indices is not None:
            raise ValueError(f"count_nonzero of {x.name}: pass axis or reduction_indices, "
                             f"not both (got {axis!r} and {reduction_indices!r}).")
        axis = reduction_indices if axis is None else axis
        axis_t = None if axis is None else _reduction_axis(x, axis)
        if axis_t is not None:
            # Validate against the input itself, so a bad axis names it (not the Cast).
            _reduced_shape("count_nonzero", x, axis_t, False)
        nonzero = math_ops.cast(math_ops.not_equal(x, zero), _dt.int64)
        counts = math_ops.reduce_sum(nonzero, axis=axis_t, keepdims=keepdims,
                                     keep_dims=keep_dims)
        return math_ops.cast(counts, dtype)


def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """`tf.nn.zero_fraction`: the float32 fraction of elements of `value` that are zero.

    An empty `value` gives NaN (0 / 0), as in TF.

    Example:
        >>> tf.nn.zero_fraction([[0.0, 1.0], [0.0, 0.0]])   # 0.75
    """
    with name_scope(name, "zero_fraction", [value]):
        v = convert_to_tensor(value, name="value")
        size = array_ops.size(v, out_type=_dt.int64)
        zeros = math_ops.subtract(size, count_nonzero(v, dtype=_dt.int64))
        fraction = math_ops.truediv(math_ops.cast(zeros, _dt.float32),
                                    math_ops.cast(size, _dt.float32))
        return identity(fraction, name="fraction")


# ---- moments and norms ---------------------------------------------------------------
def _float_input(fn: str, input_tensor: Any) -> Tensor:
    x = convert_to_tensor(input_tensor, name="input_tensor")
    if not x.dtype.base_dtype.is_floating:
        raise TypeError(f"{fn} needs a floating-point input, but {x.name} has dtype "
                        f"{x.dtype.base_dtype.name} (an integer mean would truncate). "
                        "Use tf.cast(x, tf.float32) first.")
    return x


def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                    name: str | None = None) -> Tensor:
    """`tf.math.reduce_variance`: the (population) variance over `axis`.

    Args:
        input_tensor: a floating-point tensor.
        axis: the axes to reduce (None: all; negative ints count from the end).
        keepdims: keep reduced axes with length 1.
        name: a name scope for the ops.

    Raises:
        TypeError: naming the input if it is not floating-point.

    Example:
        >>> tf.math.reduce_variance([[1.0, 2.0], [3.0, 4.0]])   # 1.25
    """
    with name_scope(name or "reduce_variance"):
        x = _float_input("reduce_variance", input_tensor)
        means = math_ops.reduce_mean(x, axis=axis, keepdims=True)
        squared = math_ops.square(math_ops.subtract(x, means))
        return math_ops.reduce_mean(squared, axis=axis, keepdims=keepdims)


def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """`tf.math.reduce_std`: the (population) standard deviation over `axis`.

    Example:
        >>> tf.math.reduce_std([[1.0, 2.0], [3.0, 4.0]], axis=0)   # [1.0, 1.0]
    """
    with name_scope(name or "reduce_std"):
        x = _float_input("reduce_std", input_tensor)
        return math_ops.sqrt(reduce_variance(x, axis=axis, keepdims=keepdims))


def reduce_euclidean_norm(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                          name: str | None = None) -> Tensor:
    """`tf.math.reduce_euclidean_norm`: sqrt(sum(x ** 2)) over `axis`.

    Integer inputs give the truncated integer norm, as TF's EuclideanNorm kernel.

    Example:
        >>> tf.math.reduce_euclidean_norm([[1, 2, 3], [1, 1, 1]], axis=1)   # [3, 1]
    """
    with name_scope(name, "reduce_euclidean_norm", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        dtype = x.dtype.base_dtype
        if not (dtype.is_floating or dtype.is_integer):
            raise TypeError(f"reduce_euclidean_norm needs a real numeric input, but {x.name} "
                            f"has dtype {dtype.name}.")
        # Integers are squared and summed in float64 so large values do not overflow.
        work = x if dtype.is_floating else math_ops.cast(x, _dt.float64)
        norm = math_ops.sqrt(math_ops.reduce_sum(math_ops.square(work), axis=axis,
                                                 keepdims=keepdims))
        return norm if dtype.is_floating else math_ops.cast(norm, dtype)


def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Any:
    """`tf.scalar_mul` / `tf.math.scalar_mul`: a 0-d `scalar` times a Tensor or
    IndexedSlices `x` (IndexedSlices in, IndexedSlices out: only the values scale).

    Raises:
        ValueError: naming the scalar if it is not 0-d.

    Example:
        >>> tf.scalar_mul(2.0, tf.constant([1.0, 3.0]))   # [2.0, 6.0]
    """
    if not isinstance(x, IndexedSlices):
        x = convert_to_tensor(x, name="x")
    s = convert_to_tensor(scalar, dtype=x.dtype.base_dtype, name="scalar")
    if s.shape.ndims != 0:
        raise ValueError(f"Only scalar multiply works, but {s.name} has shape {s.shape}.")
    if isinstance(x, IndexedSlices):
        return IndexedSlices(math_ops.multiply(s, x.values, name=name), x.indices,
                             x.dense_shape)
    return math_ops.multiply(s, x, name=name)


# ---- monotonicity --------------------------------------------------------------------
def _adjacent_pairs(fn: str, x: Any) -> tuple[Tensor, Tensor]:
    """(flat[:-1], flat[1:]) of x flattened; both empty when x has < 2 elements."""
    t = convert_to_tensor(x, name="x")
    dtype = t.dtype.base_dtype
    if not (dtype.is_floating or dtype.is_integer):
        raise TypeError(f"{fn} expects a real numeric tensor, but {t.name} has dtype "
                        f"{dtype.name}.")
    flat = array_ops.reshape(t, [-1])
    return flat[:-1], flat[1:]


def is_non_decreasing(x: Any, name: str | None = None) -> Tensor:
    """`tf.is_non_decreasing` / `tf.math.is_non_decreasing`: True if x (flattened in
    row-major order) never decreases; True for fewer than two elements.

    Example:
        >>> tf.is_non_decreasing([1, 1, 2])   # True
    """
    with name_scope(name, "is_non_decreasing", [x]):
        left, right = _adjacent_pairs("is_non_decreasing", x)
        # Comparing neighbours (not their difference) cannot overflow unsigned ints.
        return math_ops.reduce_all(math_ops.less_equal(left, right))


def is_strictly_increasing(x: Any, name: str | None = None) -> Tensor:
    """`tf.is_strictly_increasing` / `tf.math.is_strictly_increasing`: True if x
    (flattened in row-major order) always increases; True for fewer than two elements.

    Example:
        >>> tf.is_strictly_increasing([1, 1, 2])   # False
    """
    with name_scope(name, "is_strictly_increasing", [x]):
        left, right = _adjacent_pairs("is_strictly_increasing", x)
        return math_ops.reduce_all(math_ops.less(left, right))


# ---- bincount ------------------------------------------------------------------------
def bincount(arr: Any, weights: Any = None, minlength: Any = None, maxlength: Any = None,
             dtype: Any = _dt.int32, name: str | None = None) -> Tensor:
    """`tf.bincount` / `tf.math.bincount`: how often each value in [0, size) occurs in
    the int32 `arr` (or the sum of `weights` at those positions).

    size is max(arr) + 1 (0 for an empty `arr`), raised to `minlength` and lowered to
    `maxlength`; values >= size are skipped, negative values fail at run time.

    Args:
        arr: a non-negative int32 tensor of any shape.
        weights: None, or a tensor of `arr`'s shape; the output then has its dtype.
        minlength: the smallest output length.
        maxlength: the largest output length.
        dtype: the output dtype when `weights` is None.
        name: a name scope for the ops.

    Returns:
        A vector of length size.

    Example:
        >>> tf.bincount([1, 1, 3], minlength=5)   # [0, 2, 0, 1, 0]
    """
    with name_scope(name, "bincount", [arr, weights]):
        a = convert_to_tensor(arr, name="arr", dtype=_dt.int32)
        flat = array_ops.reshape(a, [-1])
        # max(arr together with -1) + 1: 0 for an empty arr, with no empty reduction.
        padded = array_ops.concat([flat, np.array([-1], np.int32)], 0)
        size = math_ops.add(math_ops.reduce_max(padded), 1)
        if minlength is not None:
            size = math_ops.maximum(
                convert_to_tensor(minlength, name="minlength", dtype=_dt.int32), size)
        if maxlength is not None:
            size = math_ops.minimum(
                convert_to_tensor(maxlength, name="maxlength", dtype=_dt.int32), size)
        if weights is not None:
            w = convert_to_tensor(weights, name="weights")
        else:
            w = convert_to_tensor(np.zeros([0], _dt.as_dtype(dtype).as_numpy_dtype),
                                  name="weights")
        return create_tensor("Bincount", [a, size, w], name="Bincount")


# ---- confusion matrix ----------------------------------------------------------------
def _squeeze_pair(labels: Tensor, predictions: Tensor) -> tuple[Tensor, Tensor]:
    """TF's remove_squeezable_dimensions: drops a trailing size-1 dimension from
    whichever of the two has rank one higher than the other (static ranks)."""
    lr, pr = labels.shape.ndims, predictions.shape.ndims
    if lr is not None and pr is not None:
        if pr - lr == 1 and dimension_value(predictions.shape[-1]) in (1, None):
            predictions = array_ops.squeeze(predictions, [-1])
        elif lr - pr == 1 and dimension_value(labels.shape[-1]) in (1, None):
            labels = array_ops.squeeze(labels, [-1])
    for t in (labels, predictions):
        if t.shape.ndims is not None and t.shape.ndims != 1:
            raise ValueError(f"confusion_matrix needs vectors of labels and predictions, but "
                             f"{t.name} has shape {t.shape}.")
    if not labels.shape.is_compatible_with(predictions.shape):
        raise ValueError(f"confusion_matrix: labels {labels.name} (shape {labels.shape}) and "
                         f"predictions {predictions.name} (shape {predictions.shape}) must "
                         "have the same length.")
    return labels, predictions


def _checked(t: Tensor, checks: list[Any]) -> Tensor:
    with control_dependencies(checks):
        return identity(t)


def confusion_matrix(labels: Any, predictions: Any, num_classes: Any = None,
                     dtype: Any = _dt.int32, name: str | None = None,
                     weights: Any = None) -> Tensor:
    """`tf.confusion_matrix` / `tf.math.confusion_matrix`: a [n, n] matrix whose
    [i, j] entry counts (or sums `weights` of) examples with label i predicted as j.

    Args:
        labels: a vector of true class ids (a trailing size-1 dimension is squeezed).
        predictions: a vector of predicted class ids, as long as `labels`.
        num_classes: n; None means max(labels, predictions) + 1.
        dtype: the output dtype (weights are cast to it).
        name: a name scope for the ops.
        weights: None, or a vector of per-example weights.

    Returns:
        The [n, n] confusion matrix of `dtype`: rows are labels, columns predictions.

    Raises:
        ValueError: naming the tensors if the shapes do not fit.
        InvalidArgumentError: at run time for negative ids or ids >= num_classes.

    Example:
        >>> tf.confusion_matrix([1, 2, 4], [2, 2, 4])   # 5x5, ones at [1,2], [2,2], [4,4]
    """
    dtype = _dt.as_dtype(dtype).base_dtype
    with name_scope(name, "confusion_matrix", [predictions, labels, num_classes, weights]):
        lab, pred = _squeeze_pair(convert_to_tensor(labels, name="labels"),
                                  convert_to_tensor(predictions, name="predictions"))
        lab = math_ops.cast(lab, _dt.int64)
        pred = math_ops.cast(pred, _dt.int64)
        # Out-of-range ids would land in another cell of the flattened matrix: check them.
        lab = _checked(lab, [assert_ops.assert_non_negative(
            lab, message="`labels` contains negative values")])
        pred = _checked(pred, [assert_ops.assert_non_negative(
            pred, message="`predictions` contains negative values")])
        if num_classes is None:
            # max over both (and -1) + 1: a 0 x 0 matrix for empty inputs.
            both = array_ops.concat([lab, pred, np.array([-1], np.int64)], 0)
            n = math_ops.add(math_ops.reduce_max(both), 1)
            shape: Any = array_ops.stack([n, n])
        else:
            n = math_ops.cast(convert_to_tensor(num_classes, name="num_classes"), _dt.int64)
            lab = _checked(lab, [assert_ops.assert_less(
                lab, n, message="`labels` out of bound")])
            pred = _checked(pred, [assert_ops.assert_less(
                pred, n, message="`predictions` out of bound")])
            shape = [int(num_classes)] * 2 if isinstance(num_classes, (int, np.integer)) \
                else array_ops.stack([n, n])
        if weights is None:
            values = array_ops.ones_like(pred, dtype=dtype)
        else:
            w = convert_to_tensor(weights, name="weights")
            if not pred.shape.is_compatible_with(w.shape):
                raise ValueError(f"confusion_matrix: weights {w.name} (shape {w.shape}) must "
                                 f"have the shape of predictions {pred.shape}.")
            values = math_ops.cast(w, dtype)
        cells = math_ops.add(math_ops.multiply(lab, n), pred)
        flat = math_ops.unsorted_segment_sum(values, cells, math_ops.multiply(n, n))
        return array_ops.reshape(flat, shape)
