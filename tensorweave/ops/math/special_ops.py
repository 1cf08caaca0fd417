"""Element-wise special math ops: trigonometric and hyperbolic functions and their
inverses, Erf/Erfc, Expm1, Lgamma/Digamma/Polygamma, Rint, Softsign, and the binary
Atan2, Xdivy, Xlogy, MulNoNan; plus the composites log_sigmoid and reciprocal_no_nan.

Op types and input order follow TF 1.x, so GraphDefs match TF's. Gradients follow
TF's math_grad.py; the binary ones reduce over broadcast dims with `sum_to_shape`.

Example:
    >>> from tensorweave.ops.math import special_ops as S
    >>> S.xlogy([0.0, 2.0], [0.0, 1.0])   # [0.0, 0.0]
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.op_def import get_op_def
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.math.binary_ops import (
    _binary, _define_binary, add, multiply, not_equal, subtract)
from tensorweave.ops.math.cwise_ops import _is_float, _is_real_float, cast, sum_to_shape
from tensorweave.ops.math.div_no_nan_ops import div_no_nan
from tensorweave.ops.math.unary_ops import (
    _define_unary, abs, conj, cos, exp, negative, reciprocal, rsqrt, square)
from tensorweave.ops.op_author import create_tensor


# ---- kernels -------------------------------------------------------------------------
def _in_float64(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A kernel computing fn on float64 copies of its inputs, cast back to the last
    input's dtype: the special functions below are written for float64 only."""
    def kernel(*args: Any) -> Any:
        dtype = np.asarray(args[-1]).dtype
        return np.asarray(fn(*(np.asarray(a, np.float64) for a in args))).astype(dtype)
    return kernel


def _via_math(fn: Callable[[float], float]) -> Callable[..., Any]:
    return _in_float64(np.vectorize(fn, otypes=[np.float64]))


def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # math raises at the poles 0, -1, -2...; TF gives +inf there
        return math.inf


# psi(x) ~ ln x - 1/(2x) - sum B_2k / (2k x^2k): the B_2k / 2k, k = 1..7.
_PSI_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _digamma64(x: Any) -> np.ndarray:
    x = np.array(x, dtype=np.float64)  # a copy: shifted in place below
    pole = (x <= 0) & (x == np.floor(x))  # 0, -1, -2...: nan as TF
    reflect = (x < 0) & ~pole
    # psi(x) = psi(1 - x) - pi cot(pi x); cot has period pi, so reduce to [-1/2, 1/2]
    # first: tan(pi x) of a large x itself would lose every digit.
    cot_term = np.zeros_like(x)
    r = x[reflect] - np.round(x[reflect])
    cot_term[reflect] = np.pi / np.tan(np.pi * r)
    x[reflect] = 1.0 - x[reflect]
    x[pole] = 1.0
    # psi(x) = psi(x + 1) - 1/x until x >= 10, where the 7-term series errs < 1e-20.
    acc = np.zeros_like(x)
    low = x < 10
    while low.any():
        acc[low] -= 1.0 / x[low]
        x[low] += 1.0
        low = x < 10
    z = 1.0 / (x * x)
    series = np.zeros_like(x)
    for c in reversed(_PSI_ASYMPTOTIC):
        series = (series + c) * z
    out = np.asarray(np.log(x) - 0.5 / x - series + acc - cot_term)  # 0-d stays an array
    out[pole] = np.nan
    return out


# (2k)! / B_2k for k = 1..12: the Euler-Maclaurin tail of the Hurwitz zeta sum.
_EM_DIVISORS = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                -4.5979787224074726105e15, 1.8152105401943546773e17,
                -7.1661652561756670113e18)
_ZETA_MAX_SHIFT = 1e6  # below -1e6 the direct sum would take millions of steps


def _hurwitz_zeta64(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) = sum_k (q + k)^-s for s >= 2; +inf at q = 0, -1, -2...

    Sums the first terms until q + k >= 10, then adds the Euler-Maclaurin tail.
    """
    s, q = np.broadcast_arrays(s, q)
    pole = (q <= 0) & (q == np.floor(q))
    bad = ~np.isfinite(q) | (q < -_ZETA_MAX_SHIFT) | pole
    w = np.where(bad, 10.0, q)
    total = np.zeros(w.shape)
    low = w < 10
    while low.any():
        total[low] += w[low] ** -s[low]
        w[low] += 1.0
        low = w < 10
    total += w ** (1.0 - s) / (s - 1.0) + 0.5 * w ** -s
    term = s * w ** (-s - 1.0)  # rising factorial (s)_(2k-1) times w^(-s-2k+1)
    for k, divisor in enumerate(_EM_DIVISORS):
        total += term / divisor
        term = term * (s + 2 * k + 1) * (s + 2 * k + 2) / (w * w)
    total[bad] = np.nan
    total[pole] = np.inf
    total[q == np.inf] = 0.0
    return total


def _polygamma64(n: Any, x: Any) -> np.ndarray:
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    out = np.full(n.shape, np.nan)  # non-integer or negative order: nan as TF
    order0 = n == 0
    out[order0] = _digamma64(x[order0])
    higher = (n >= 1) & (n == np.floor(n))
    m = n[higher]
    # psi^(m)(x) = (-1)^(m+1) m! zeta(m + 1, x)
    sign = np.where(m % 2 == 1, 1.0, -1.0)
    factorial = np.exp(np.vectorize(math.lgamma, otypes=[np.float64])(m + 1.0))
    out[higher] = sign * factorial * _hurwitz_zeta64(m + 1.0, x[higher])
    return out


def _softsign(x: Any) -> Any:
    return np.true_divide(x, np.abs(x) + 1)


def _zero_where_zero(fn: Callable[[Any, Any], Any], arg: int) -> Callable[[Any, Any], Any]:
    """fn(x, y), but 0 wherever input `arg` is 0, whatever the other one is (inf, nan):
    Xlogy and Xdivy mask on x, MulNoNan on y."""
    def kernel(x: Any, y: Any) -> Any:
        x, y = np.asarray(x), np.asarray(y)
        with np.errstate(divide="ignore", invalid="ignore"):  # masked right after
            out = np.asarray(fn(x, y))
        return np.where((x, y)[arg] == 0, np.zeros_like(out), out)
    return kernel


# ---- op definitions ------------------------------------------------------------------
# Complex inputs are allowed where TF's kernels take them (_is_float covers complex).
_UNARY: dict[str, tuple[Callable[..., Any], Callable[[_dt.DType], bool]]] = {
    "Tan": (np.tan, _is_float), "Sinh": (np.sinh, _is_float),
    "Cosh": (np.cosh, _is_float), "Asin": (np.arcsin, _is_float),
    "Acos": (np.arccos, _is_float), "Atan": (np.arctan, _is_float),
    "Asinh": (np.arcsinh, _is_float), "Acosh": (np.arccosh, _is_float),
    "Atanh": (np.arctanh, _is_float), "Expm1": (np.expm1, _is_float),
    "Erf": (_via_math(math.erf), _is_real_float),
    "Erfc": (_via_math(math.erfc), _is_real_float),
    "Lgamma": (_via_math(_lgamma_scalar), _is_real_float),
    "Digamma": (_in_float64(_digamma64), _is_real_float), "Rint": (np.rint, _is_real_float),
    "Softsign": (_softsign, _is_real_float)}
for _type, (_kernel, _allowed) in _UNARY.items():
    _define_unary(_type, _kernel, _allowed)
get_op_def("Rint").no_gradient()  # piecewise constant (TF's gradient is None)

# Atan2's inputs are (y, x) in TF: the first input is y, as here.
atan2_op = _define_binary("Atan2", np.arctan2, _is_real_float)
xdivy_op = _define_binary("Xdivy", _zero_where_zero(np.true_divide, 0), _is_float)
xlogy_op = _define_binary("Xlogy", _zero_where_zero(lambda x, y: x * np.log(y), 0),
                          _is_float)
mul_no_nan_op = _define_binary("MulNoNan", _zero_where_zero(np.multiply, 1), _is_float)
polygamma_op = _define_binary("Polygamma", _in_float64(_polygamma64), _is_real_float)


# ---- gradients -----------------------------------------------------------------------
# dy/dx as a function of (x, y = op output); the gradient is grad * conj(dy/dx), as
# TF takes conj(x) for complex inputs (conj is the identity on real tensors).
_DERIVATIVES: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "Tan": lambda x, y: square(reciprocal(cos(x))),
    "Sinh": lambda x, y: cosh(x),
    "Cosh": lambda x, y: sinh(x),
    "Asin": lambda x, y: rsqrt(subtract(1, square(x))),
    "Acos": lambda x, y: negative(rsqrt(subtract(1, square(x)))),
    "Atan": lambda x, y: reciprocal(add(1, square(x))),
    "Asinh": lambda x, y: reciprocal(cosh(y)),
    "Acosh": lambda x, y: reciprocal(sinh(y)),
    "Atanh": lambda x, y: reciprocal(subtract(1, square(x))),
    "Expm1": lambda x, y: exp(x),
    "Erf": lambda x, y: multiply(2 / math.sqrt(math.pi), exp(negative(square(x)))),
    "Erfc": lambda x, y: multiply(-2 / math.sqrt(math.pi), exp(negative(square(x)))),
    "Lgamma": lambda x, y: digamma(x),
    "Digamma": lambda x, y: polygamma(1, x),
    "Softsign": lambda x, y: reciprocal(square(add(abs(x), 1))),
}


def _chain_rule(derivative: Callable[[Tensor, Tensor], Tensor]
                ) -> Callable[[Operation, Tensor], list[Any]]:
    def grad_fn(op: Operation, grad: Tensor) -> list[Any]:
        return [multiply(grad, conj(derivative(op.inputs[0], op.outputs[0])))]
    return grad_fn


for _type, _derivative in _DERIVATIVES.items():
    get_op_def(_type).gradient(_chain_rule(_derivative))


def _nonzero(x: Tensor) -> Tensor:
    # 1 where x != 0 else 0, in x's dtype: TF's `not_zero_x` in the Xlogy/Xdivy grads.
    return cast(not_equal(x, 0), x.dtype.base_dtype)


@atan2_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    y, x = op.inputs
    grad_inv = create_tensor("RealDiv", [grad, add(square(x), square(y))])
    return [sum_to_shape(multiply(x, grad_inv), y),
            sum_to_shape(multiply(negative(y), grad_inv), x)]


@xlogy_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y = op.inputs
    return [sum_to_shape(multiply(xlogy(_nonzero(x), y), grad), x),
            sum_to_shape(multiply(xdivy(x, y), grad), y)]


@xdivy_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y = op.inputs
    return [sum_to_shape(multiply(xdivy(_nonzero(x), y), grad), x),
            sum_to_shape(multiply(xdivy(negative(x), square(y)), grad), y)]


@mul_no_nan_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y = op.inputs
    return [sum_to_shape(multiply_no_nan(grad, y), x),
            sum_to_shape(multiply_no_nan(x, grad), y)]


@polygamma_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    # d/dx psi^(a)(x) = psi^(a+1)(x); the order a is not differentiable (TF: None).
    a, x = op.inputs
    return [None, sum_to_shape(multiply(grad, polygamma(add(a, 1), x)), x)]


# ---- public wrappers -----------------------------------------------------------------
def _unary(op_type: str, x: Any, name: str | None) -> Tensor:
    return create_tensor(op_type, [convert_to_tensor(x)], name=name)


def tan(x: Any, name: str | None = None) -> Tensor:
    """`tf.tan`: the tangent element-wise (radians).

    Example: `tf.tan([0.0, math.pi / 4])` -> [0.0, 1.0]
    """
    return _unary("Tan", x, name)


def sinh(x: Any, name: str | None = None) -> Tensor:
    """`tf.sinh`: the hyperbolic sine element-wise.

    Example: `tf.sinh([0.0])` -> [0.0]
    """
    return _unary("Sinh", x, name)


def cosh(x: Any, name: str | None = None) -> Tensor:
    """`tf.cosh`: the hyperbolic cosine element-wise.

    Example: `tf.cosh([0.0])` -> [1.0]
    """
    return _unary("Cosh", x, name)


def asin(x: Any, name: str | None = None) -> Tensor:
    """`tf.asin`: the arcsine element-wise, in [-pi/2, pi/2]; nan outside [-1, 1].

    Example: `tf.asin([1.0])` -> [1.5707964]
    """
    return _unary("Asin", x, name)


def acos(x: Any, name: str | None = None) -> Tensor:
    """`tf.acos`: the arccosine element-wise, in [0, pi]; nan outside [-1, 1].

    Example: `tf.acos([1.0])` -> [0.0]
    """
    return _unary("Acos", x, name)


def atan(x: Any, name: str | None = None) -> Tensor:
    """`tf.atan`: the arctangent element-wise, in (-pi/2, pi/2).

    Example: `tf.atan([1.0])` -> [0.7853982]
    """
    return _unary("Atan", x, name)


def asinh(x: Any, name: str | None = None) -> Tensor:
    """`tf.asinh`: the inverse hyperbolic sine element-wise.

    Example: `tf.asinh([0.0])` -> [0.0]
    """
    return _unary("Asinh", x, name)


def acosh(x: Any, name: str | None = None) -> Tensor:
    """`tf.acosh`: the inverse hyperbolic cosine element-wise; nan for x < 1.

    Example: `tf.acosh([1.0, 0.5])` -> [0.0, nan]
    """
    return _unary("Acosh", x, name)


def atanh(x: Any, name: str | None = None) -> Tensor:
    """`tf.atanh`: the inverse hyperbolic tangent element-wise; +-inf at +-1.

    Example: `tf.atanh([0.0])` -> [0.0]
    """
    return _unary("Atanh", x, name)


def erf(x: Any, name: str | None = None) -> Tensor:
    """`tf.erf`: the Gauss error function element-wise (real floats).

    Example: `tf.erf([0.0, 1.0])` -> [0.0, 0.8427008]
    """
    return _unary("Erf", x, name)


def erfc(x: Any, name: str | None = None) -> Tensor:
    """`tf.erfc`: 1 - erf(x), accurate where erf(x) is close to 1.

    Example: `tf.erfc([0.0])` -> [1.0]
    """
    return _unary("Erfc", x, name)


def expm1(x: Any, name: str | None = None) -> Tensor:
    """`tf.expm1`: exp(x) - 1, accurate for small x.

    Example: `tf.expm1([0.0])` -> [0.0]
    """
    return _unary("Expm1", x, name)


def lgamma(x: Any, name: str | None = None) -> Tensor:
    """`tf.lgamma`: log |Gamma(x)| element-wise; +inf at 0, -1, -2...

    Example: `tf.lgamma([1.0, 3.0])` -> [0.0, 0.6931472]
    """
    return _unary("Lgamma", x, name)


def digamma(x: Any, name: str | None = None) -> Tensor:
    """`tf.digamma`: psi(x), the derivative of lgamma; nan at 0, -1, -2...

    Example: `tf.digamma([1.0])` -> [-0.5772157]
    """
    return _unary("Digamma", x, name)


def polygamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """`tf.polygamma`: the a-th derivative of digamma (integer a >= 0, else nan).

    Example: `tf.polygamma(1.0, [1.0])` -> [pi**2 / 6] = [1.644934]
    """
    return _binary("Polygamma", a, x, name)


def rint(x: Any, name: str | None = None) -> Tensor:
    """`tf.rint`: the nearest integer element-wise, halves to even.

    Example: `tf.rint([0.5, 1.5, -1.7])` -> [0.0, 2.0, -2.0]
    """
    return _unary("Rint", x, name)


def softsign(features: Any, name: str | None = None) -> Tensor:
    """`tf.nn.softsign`: features / (1 + |features|) element-wise (TF's argument name).

    Example: `tf.nn.softsign([1.0, -3.0])` -> [0.5, -0.75]
    """
    return _unary("Softsign", features, name)


def atan2(y: Any, x: Any, name: str | None = None) -> Tensor:
    """`tf.atan2`: the angle of the point (x, y) element-wise, in [-pi, pi] (broadcasts).

    Example: `tf.atan2([1.0, -1.0], [0.0, -1.0])` -> [pi/2, -3pi/4]
    """
    return _binary("Atan2", y, x, name)


def xdivy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.math.xdivy`: x / y, and 0 wherever x == 0 (broadcasts).

    Example: `tf.math.xdivy([0.0, 3.0], [0.0, 2.0])` -> [0.0, 1.5]
    """
    return _binary("Xdivy", x, y, name)


def xlogy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.math.xlogy`: x * log(y), and 0 wherever x == 0 (broadcasts).

    Example: `tf.math.xlogy([0.0, 2.0], [0.0, math.e])` -> [0.0, 2.0]
    """
    return _binary("Xlogy", x, y, name)


def multiply_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """`tf.math.multiply_no_nan`: x * y, and 0 wherever y == 0 even if x is inf or nan.

    Example: `tf.math.multiply_no_nan([np.inf, 2.0], [0.0, 3.0])` -> [0.0, 6.0]
    """
    return _binary("MulNoNan", x, y, name)


def reciprocal_no_nan(x: Any, name: str | None = None) -> Tensor:
    """`tf.math.reciprocal_no_nan`: 1 / x, and 0 wherever x == 0.

    Example: `tf.math.reciprocal_no_nan([0.0, 4.0])` -> [0.0, 0.25]
    """
    return div_no_nan(1, convert_to_tensor(x), name=name)
