"""Fused updates of the parameter-server optimizers: FTRL (ApplyFtrl, ApplyFtrlV2),
ProximalAdagrad, ProximalGradientDescent, Adadelta, each with its Sparse* variant,
and LazyAdam's sparse update.

Rules follow TF1's training_ops kernels exactly (see the formulas in each rule);
sparse variants apply the same rule to the touched rows only, duplicate indices
summed first (`define_apply`). `SparseApplyLazyAdam` is tensorweave's own op (TF
builds LazyAdam from gathers and scatters): Adam's rule on the touched rows of
var, m and v, leaving every other row's moments alone.

Example:
    >>> apply_op("ApplyFtrl", v, [accum, linear, grad, lr, l1, l2, lr_power], False)
"""
from __future__ import annotations

import numpy as np

from tensorweave.ops.training.training_ops import _adam, _both, define_apply


def _ftrl_update(a: dict, g: np.ndarray, g_shrunk: np.ndarray, h: dict) -> None:
    """TF's FTRL-proximal step; `g_shrunk` is the gradient that feeds `linear`."""
    var, accum, linear = a["var"], a["accum"], a["linear"]
    lr, l1, l2, power = h["lr"], h["l1"], h["l2"], h["lr_power"]
    new_accum = accum + g * g
    if power == -0.5:
        root = np.sqrt(new_accum)   # once: sigma and quadratic both use it
        sigma = (root - np.sqrt(accum)) / lr
        quadratic = root / lr + 2 * l2
    else:
        sigma = (np.power(new_accum, -power) - np.power(accum, -power)) / lr
        quadratic = np.power(new_accum, -power) / lr + 2 * l2
    linear += g_shrunk - sigma * var
    pre_shrink = (np.sign(linear) * l1 - linear) / quadratic
    var[...] = np.where(np.abs(linear) > l1, pre_shrink, 0).astype(var.dtype, copy=False)
    accum[...] = new_accum


def _ftrl(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    _ftrl_update(a, g, g, h)


def _ftrl_v2(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    # The shrinkage term joins the gradient that feeds `linear`, not the accumulator.
    _ftrl_update(a, g, g + 2 * h["l2_shrinkage"] * a["var"], h)


def _proximal(var: np.ndarray, prox: np.ndarray, step: np.ndarray, l1: float,
              l2: float) -> None:
    """var = soft-threshold(prox, step * l1) / (1 + step * l2)."""
    if l1 > 0:
        shrunk = np.sign(prox) * np.maximum(np.abs(prox) - step * l1, 0)
    else:
        shrunk = prox
    var[...] = shrunk / (1 + step * l2)


def _proximal_adagrad(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    a["accum"] += g * g
    step = h["lr"] / np.sqrt(a["accum"])
    _proximal(a["var"], a["var"] - step * g, step, h["l1"], h["l2"])


def _proximal_gd(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    alpha = h["alpha"]
    _proximal(a["var"], a["var"] - alpha * g, alpha, h["l1"], h["l2"])


def _adadelta(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    rho, eps = h["rho"], h["epsilon"]
    accum, accum_update = a["accum"], a["accum_update"]
    accum *= rho
    accum += g * g * (1 - rho)
    update = np.sqrt(accum_update + eps) / np.sqrt(accum + eps) * g
    a["var"] -= update * h["lr"]
    accum_update *= rho
    accum_update += update * update * (1 - rho)


_both("ApplyFtrl", ("&var", "&accum", "&linear", "grad", "lr", "l1", "l2", "lr_power"), _ftrl)
_both("ApplyFtrlV2", ("&var", "&accum", "&linear", "grad", "lr", "l1", "l2", "l2_shrinkage",
                      "lr_power"), _ftrl_v2)
_both("ApplyProximalAdagrad", ("&var", "&accum", "lr", "l1", "l2", "grad"), _proximal_adagrad)
# TF calls the dense op's gradient input "delta"; NodeDefs carry inputs by position.
_both("ApplyProximalGradientDescent", ("&var", "alpha", "l1", "l2", "grad"), _proximal_gd)
_both("ApplyAdadelta", ("&var", "&accum", "&accum_update", "lr", "rho", "epsilon", "grad"),
      _adadelta)
define_apply("SparseApplyLazyAdam", ("&var", "&m", "&v", "beta1_power", "beta2_power", "lr",
                                     "beta1", "beta2", "epsilon", "grad", "indices"), _adam,
             sparse=True, extra_attrs={"use_nesterov": False})
