"""`tf.math`: the TF 1.13+ home of the element-wise, reduction and segment math.

TF1 programs written after 1.13 spell these `tf.math.log`, `tf.math.cumsum`,
`tf.math.segment_mean`, ...; older ones use the top-level names (`tf.log`,
`tf.cumsum`), which exist too and are the same functions.

Example:
    >>> tf.math.log_sigmoid(logits)
    >>> tf.math.unsorted_segment_mean(rows, ids, num_segments=10)
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.ops.control_flow.numerics_ops import (
    is_finite as is_finite, is_inf as is_inf, is_nan as is_nan)
from tensorweave.ops.math.binary_ops import (
    add as add, divide as divide, equal as equal, floordiv as floordiv,
    greater as greater, greater_equal as greater_equal, less as less,
    less_equal as less_equal, logical_and as logical_and, logical_or as logical_or,
    logical_xor as logical_xor, maximum as maximum, minimum as minimum, mod as mod,
    multiply as multiply, not_equal as not_equal, pow as pow,
    squared_difference as squared_difference, subtract as subtract, truediv as truediv)
from tensorweave.ops.math.binary_ops import mod as floormod
from tensorweave.ops.math.div_no_nan_ops import div_no_nan as divide_no_nan
from tensorweave.ops.math.complex_ops import (
    complex as complex, imag as imag, real as real)
from tensorweave.ops.math.math_ops import (
    add_n as add_n, reduce_logsumexp as reduce_logsumexp,
    unsorted_segment_sum as unsorted_segment_sum)
from tensorweave.ops.math.reduce_ops import (
    argmax as argmax, argmin as argmin, reduce_all as reduce_all, reduce_any as reduce_any,
    reduce_max as reduce_max, reduce_mean as reduce_mean, reduce_min as reduce_min,
    reduce_prod as reduce_prod, reduce_sum as reduce_sum)
from tensorweave.ops.math.unary_ops import (
    abs as abs, ceil as ceil, conj as conj, cos as cos, exp as exp, floor as floor,
    log as log, log1p as log1p, logical_not as logical_not, negative as negative,
    reciprocal as reciprocal, round as round, rsqrt as rsqrt, sigmoid as sigmoid,
    sign as sign, sin as sin, sqrt as sqrt, square as square, tanh as tanh)
from tensorweave.ops.nn.layer_ops import l2_normalize as l2_normalize
from tensorweave.ops.nn.nn_ops import (
    log_sigmoid as log_sigmoid, log_softmax as log_softmax, softmax as softmax,
    softplus as softplus)
from tensorweave.ops.nn.topk_ops import in_top_k as in_top_k, top_k as top_k
from tensorweave.ops.sparse.segment_ops import segment_sum as segment_sum

# Added with the namespace: TF1 math the package lacked.
from tensorweave.ops.stats.count_ops import invert_permutation as invert_permutation
from tensorweave.ops.math.scan_ops import cumprod as cumprod, cumsum as cumsum
from tensorweave.ops.math.special_ops import (
    acos as acos, acosh as acosh, asin as asin, asinh as asinh, atan as atan, atan2 as atan2,
    atanh as atanh, cosh as cosh, digamma as digamma, erf as erf, erfc as erfc,
    expm1 as expm1, lgamma as lgamma,
    multiply_no_nan as multiply_no_nan, polygamma as polygamma,
    reciprocal_no_nan as reciprocal_no_nan, rint as rint, sinh as sinh, softsign as softsign,
    tan as tan, xdivy as xdivy, xlogy as xlogy)
from tensorweave.ops.stats.set_sort_ops import (
    setdiff1d as setdiff1d, unique_with_counts as unique_with_counts)
from tensorweave.math_impl.stats_ops import (
    bincount as bincount, confusion_matrix as confusion_matrix,
    count_nonzero as count_nonzero, is_non_decreasing as is_non_decreasing,
    is_strictly_increasing as is_strictly_increasing,
    reduce_euclidean_norm as reduce_euclidean_norm, reduce_std as reduce_std,
    reduce_variance as reduce_variance, scalar_mul as scalar_mul,
    zero_fraction as zero_fraction)
from tensorweave.ops.sparse.segment_reduce_ops import (
    segment_max as segment_max, segment_mean as segment_mean, segment_min as segment_min,
    segment_prod as segment_prod, unsorted_segment_max as unsorted_segment_max,
    unsorted_segment_mean as unsorted_segment_mean,
    unsorted_segment_min as unsorted_segment_min,
    unsorted_segment_prod as unsorted_segment_prod,
    unsorted_segment_sqrt_n as unsorted_segment_sqrt_n)
