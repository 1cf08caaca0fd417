"""DeepRec's two extra optimizers' fused updates: AdamAsync and AdagradDecay.

Semantics (DeepRec's tensorflow/core/kernels/training_ali_ops.cc, its docs
AdamAsync-Optimizer.md and AdagradDecay-Optimizer.md):

- ApplyAdamAsync: Adam whose bias-correction powers are the variable's own slots
  (`beta1_power`, `beta2_power`, one element each) instead of one pair shared by all
  variables; the update multiplies them by beta1/beta2 after using them, so no op
  outside the variable's task is needed. `m = beta1*m + (1-beta1)*g`,
  `v = beta2*v + (1-beta2)*g*g`, `var -= alpha*m / (sqrt(v) + eps)` with
  `alpha = lr*sqrt(1-beta2_power) / (1-beta1_power)`.
- SparseApplyAdamAsync: the same on the touched rows only (rows not in the gradient
  keep their moments, unlike TF1's sparse Adam), powers advanced once per update that
  touched a row. With `apply_sparse_rmsprop` the rows take an RMSProp step instead
  (`v = beta2*v + (1-beta2)*g*g`, `m = beta1*m + lr*g/sqrt(v + eps)`, `var -= m`)
  and the powers stay as they are.
- ApplyAdagradDecay: Adagrad whose accumulator is discounted once per period of
  `decay_step` global steps: when `global_step // decay_step` exceeds the decays done
  so far (`accum_decay_power`), `accum = max(accum*decay_rate, baseline)` and the count
  goes up by one; then `accum += g*g`, `var -= lr*g/sqrt(accum)`. A dense update keeps
  one count (the slot's first element).
- SparseApplyAdagradDecay: a count per row: element r of the flattened slot (DeepRec's
  layout for a slot shaped like its variable) or, with `row_counters` (an
  EmbeddingVariable's slot, whose rows follow their ids), the first element of row r.

Sparse updates sum duplicate indices first, as DeepRec's optimizers do before calling
these kernels (repeated rows and their sum give the same update).

Example:
    >>> apply_op("ApplyAdamAsync", v, [m, v_, b1p, b2p, lr, b1, b2, eps, grad], False)
"""
from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.op_author import define_op
from tensorweave.ops.training.training_ops import _adagrad, _apply_dense, _as_scalar, _dedup
from tensorweave.runtime.resource_mgr import VariableResource
from tensorweave.runtime.update_gate import gated_update

_ADAM_SLOTS = ("&var", "&m", "&v", "&beta1_power", "&beta2_power", "lr", "beta1", "beta2",
               "epsilon", "grad")
_DECAY_SLOTS = ("&var", "&accum", "&accum_decay_power", "lr", "decay_step", "decay_rate",
                "decay_baseline", "global_step", "grad")


# ---- shapes ---------------------------------------------------------------------------
def _check_shapes(op_type: str, var: Tensor, like_var: list[Tensor], one_element: list[Tensor],
                  scalars: list[Tensor], grad: Tensor, indices: Tensor | None) -> Any:
    """The shape function of every op here: slots shaped like `var`, one-element powers,
    scalar hyperparameters, a gradient of var's dtype and (rows of its) shape."""
    if not var.dtype.is_ref_dtype:
        raise TypeError(f"{op_type} needs variable references, got {var.name} of dtype "
                        f"{var.dtype.name}")
    for s in like_var:
        if not s.shape.is_compatible_with(var.shape):
            raise ValueError(f"{op_type}: slot {s.name} has shape {s.shape} but variable "
                             f"{var.name} has shape {var.shape}")
    for p in one_element:
        if p.shape.num_elements() not in (None, 1):
            raise ValueError(f"{op_type}: {p.name} must hold one element, got shape {p.shape}")
    for h in scalars:
        if h.shape.ndims not in (None, 0):
            raise ValueError(f"{op_type}: {h.name} must be a scalar, got shape {h.shape}")
    if not grad.dtype.base_dtype.is_compatible_with(var.dtype.base_dtype):
        raise TypeError(f"{op_type}: gradient {grad.name} has dtype {grad.dtype.name} but "
                        f"variable {var.name} is {var.dtype.base_dtype.name}")
    want = var.shape
    if indices is not None and var.shape.ndims is not None:
        want = indices.shape.concatenate(var.shape[1:])
    if not grad.shape.is_compatible_with(want):
        raise ValueError(f"{op_type}: gradient {grad.name} has shape {grad.shape}, expected "
                         f"{want} for variable {var.name} of shape {var.shape}")
    return var.dtype, var.shape


# ---- kernel helpers -------------------------------------------------------------------
def _updating(var: VariableResource, use_locking: bool) -> contextlib.ExitStack:
    """The update gate (a checkpoint sees var and slots from one moment), then the
    variable's lock with use_locking (or always, for an EmbeddingVariable's rows)."""
    stack = contextlib.ExitStack()
    stack.enter_context(gated_update(var))
    if use_locking or var.always_lock:
        stack.enter_context(var.lock)
    return stack


def _same_shapes(op_type: str, var: VariableResource, arrays: dict[str, np.ndarray],
                 sparse: bool) -> None:
    v = arrays["var"]
    for name, a in arrays.items():
        if a.shape != v.shape:
            raise errors.InvalidArgumentError(
                None, None, f"{op_type}: var {var.name} has shape {list(v.shape)} but {name} "
                f"has {list(a.shape)}")
    if sparse and v.ndim == 0:
        raise errors.InvalidArgumentError(
            None, None, f"{op_type}: var {var.name} must be at least 1-D for a sparse update")


def _dense_grad(op_type: str, var: VariableResource, v: np.ndarray, grad: Any) -> np.ndarray:
    g = np.asarray(grad).astype(v.dtype, copy=False)
    if g.shape != v.shape:
        raise errors.InvalidArgumentError(
            None, None, f"{op_type}: var {var.name} has shape {list(v.shape)} but its "
            f"gradient has {list(g.shape)}")
    return g


def _sparse_grad(op_type: str, var: VariableResource, v: np.ndarray, grad: Any,
                 indices: Any) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows, their summed gradient rows), after checking the shapes."""
    g = np.asarray(grad).astype(v.dtype, copy=False)
    idx = np.asarray(indices)
    if idx.ndim != 1 or g.ndim < 1 or g.shape[0] != idx.size or g.shape[1:] != v.shape[1:]:
        raise errors.InvalidArgumentError(
            None, None, f"{op_type}: for var {var.name} of shape {list(v.shape)} the gradient "
            f"must be [len(indices)] + {list(v.shape[1:])} with 1-D indices, got gradient "
            f"{list(g.shape)} and indices {list(idx.shape)}")
    return _dedup(idx, g, v.shape[0], var.name)


def _power(op_type: str, res: VariableResource, dtype: Any) -> np.ndarray:
    p = res.read()
    if p.size != 1 or p.dtype != dtype:
        raise errors.InvalidArgumentError(
            None, None, f"{op_type}: {res.name} must hold one {np.dtype(dtype).name}, got "
            f"shape {list(p.shape)} of {p.dtype.name}")
    return p


def _hyper(dtype: Any, **values: Any) -> dict[str, Any]:
    scalar = np.dtype(dtype).type
    return {k: scalar(_as_scalar(x)) for k, x in values.items()}


# ---- AdamAsync ------------------------------------------------------------------------
def _adam_async_rule(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    """DeepRec's Adam step on matching slices of var, m and v (one temporary)."""
    m, v = a["m"], a["v"]
    t = np.multiply(g, 1 - h["beta1"], out=np.empty_like(g))   # an array even for a scalar
    m *= h["beta1"]
    m += t
    np.multiply(g, g, out=t)
    t *= 1 - h["beta2"]
    v *= h["beta2"]
    v += t
    np.sqrt(v, out=t)
    t += h["epsilon"]
    if kw.get("use_nesterov"):
        np.divide(g * (1 - h["beta1"]) + m * h["beta1"], t, out=t)
    else:
        np.divide(m, t, out=t)
    t *= h["alpha"]
    a["var"] -= t


def _sparse_rmsprop_rule(a: dict, g: np.ndarray, h: dict) -> None:
    """AdamAsync's `apply_sparse_rmsprop` step on gathered rows."""
    m, v = a["m"], a["v"]
    t = g * g
    t *= 1 - h["beta2"]
    v *= h["beta2"]
    v += t
    np.add(v, h["epsilon"], out=t)
    np.sqrt(t, out=t)
    np.divide(g, t, out=t)
    t *= h["lr"]
    m *= h["beta1"]
    m += t
    a["var"] -= m


def _adam_hypers(dtype: Any, b1p: np.ndarray, b2p: np.ndarray, **values: Any) -> dict:
    h = _hyper(dtype, **values)
    p1, p2 = b1p.flat[0], b2p.flat[0]
    h["alpha"] = h["lr"] * np.sqrt(1 - p2) / (1 - p1)
    return h


def _advance_powers(b1p: np.ndarray, b2p: np.ndarray, h: dict) -> None:
    np.multiply(b1p, h["beta1"], out=b1p)
    np.multiply(b2p, h["beta2"], out=b2p)


apply_adam_async_op = define_op("ApplyAdamAsync", inputs=_ADAM_SLOTS,
                                attrs={"use_locking": False, "use_nesterov": False},
                                stateful=True)


@apply_adam_async_op.shape
def _(var: Tensor, m: Tensor, v: Tensor, beta1_power: Tensor, beta2_power: Tensor, lr: Tensor,
      beta1: Tensor, beta2: Tensor, epsilon: Tensor, grad: Tensor, **_attrs: Any) -> Any:
    return _check_shapes("ApplyAdamAsync", var, [m, v], [beta1_power, beta2_power],
                         [lr, beta1, beta2, epsilon], grad, None)


@apply_adam_async_op.kernel("CPU")
def _(var: VariableResource, m: VariableResource, v: VariableResource,
      beta1_power: VariableResource, beta2_power: VariableResource, lr: Any, beta1: Any,
      beta2: Any, epsilon: Any, grad: Any, *, use_locking: bool,
      use_nesterov: bool) -> VariableResource:
    with _updating(var, use_locking):
        arrays = {"var": var.read(), "m": m.read(), "v": v.read()}
        dtype = arrays["var"].dtype
        _same_shapes("ApplyAdamAsync", var, arrays, sparse=False)
        g = _dense_grad("ApplyAdamAsync", var, arrays["var"], grad)
        b1p = _power("ApplyAdamAsync", beta1_power, dtype)
        b2p = _power("ApplyAdamAsync", beta2_power, dtype)
        h = _adam_hypers(dtype, b1p, b2p, lr=lr, beta1=beta1, beta2=beta2, epsilon=epsilon)
        _apply_dense(_adam_async_rule, arrays, g, h, {"use_nesterov": use_nesterov})
        _advance_powers(b1p, b2p, h)
    return var


apply_adam_async_op.no_gradient()

sparse_adam_async_op = define_op("SparseApplyAdamAsync", inputs=_ADAM_SLOTS + ("indices",),
                                 attrs={"use_locking": False, "apply_sparse_rmsprop": False},
                                 stateful=True)


@sparse_adam_async_op.shape
def _(var: Tensor, m: Tensor, v: Tensor, beta1_power: Tensor, beta2_power: Tensor, lr: Tensor,
      beta1: Tensor, beta2: Tensor, epsilon: Tensor, grad: Tensor, indices: Tensor,
      **_attrs: Any) -> Any:
    return _check_shapes("SparseApplyAdamAsync", var, [m, v], [beta1_power, beta2_power],
                         [lr, beta1, beta2, epsilon], grad, indices)


@sparse_adam_async_op.kernel("CPU")
def _(var: VariableResource, m: VariableResource, v: VariableResource,
      beta1_power: VariableResource, beta2_power: VariableResource, lr: Any, beta1: Any,
      beta2: Any, epsilon: Any, grad: Any, indices: Any, *, use_locking: bool,
      apply_sparse_rmsprop: bool) -> VariableResource:
    op = "SparseApplyAdamAsync"
    with _updating(var, use_locking):
        arrays = {"var": var.read(), "m": m.read(), "v": v.read()}
        dtype = arrays["var"].dtype
        _same_shapes(op, var, arrays, sparse=True)
        idx, g = _sparse_grad(op, var, arrays["var"], grad, indices)
        b1p, b2p = _power(op, beta1_power, dtype), _power(op, beta2_power, dtype)
        if not idx.size:   # DeepRec: no row, no step (the powers stay)
            return var
        h = _adam_hypers(dtype, b1p, b2p, lr=lr, beta1=beta1, beta2=beta2, epsilon=epsilon)
        rows = {k: a[idx] for k, a in arrays.items()}   # copies of the touched rows
        if apply_sparse_rmsprop:
            _sparse_rmsprop_rule(rows, g, h)
        else:
            _adam_async_rule(rows, g, h, {})
            _advance_powers(b1p, b2p, h)
        for k, a in arrays.items():
            a[idx] = rows[k]
    return var


sparse_adam_async_op.no_gradient()


# ---- AdagradDecay ---------------------------------------------------------------------
def _decay_period(op_type: str, decay_step: Any, global_step: Any) -> int:
    """`global_step // decay_step`: how many decays the accumulators are due by now."""
    step = int(_as_scalar(decay_step))
    if step <= 0:
        raise errors.InvalidArgumentError(
            None, None, f"{op_type}: decay_step must be positive, got {step}")
    return int(_as_scalar(global_step)) // step


def _decay_hypers(dtype: Any, lr: Any, decay_rate: Any, decay_baseline: Any) -> dict:
    return _hyper(dtype, lr=lr, decay_rate=decay_rate, decay_baseline=decay_baseline)


def _decayed(accum: np.ndarray, h: dict) -> None:
    accum *= h["decay_rate"]
    np.maximum(accum, h["decay_baseline"], out=accum)


def _adagrad_decay_rule(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    if kw["decay"]:
        _decayed(a["accum"], h)
    _adagrad(a, g, h, kw)


apply_adagrad_decay_op = define_op("ApplyAdagradDecay", inputs=_DECAY_SLOTS,
                                   attrs={"use_locking": False}, stateful=True)


@apply_adagrad_decay_op.shape
def _(var: Tensor, accum: Tensor, accum_decay_power: Tensor, lr: Tensor, decay_step: Tensor,
      decay_rate: Tensor, decay_baseline: Tensor, global_step: Tensor, grad: Tensor,
      **_attrs: Any) -> Any:
    return _check_shapes("ApplyAdagradDecay", var, [accum], [],
                         [lr, decay_step, decay_rate, decay_baseline, global_step], grad, None)


@apply_adagrad_decay_op.kernel("CPU")
def _(var: VariableResource, accum: VariableResource, accum_decay_power: VariableResource,
      lr: Any, decay_step: Any, decay_rate: Any, decay_baseline: Any, global_step: Any,
      grad: Any, *, use_locking: bool) -> VariableResource:
    op = "ApplyAdagradDecay"
    with _updating(var, use_locking):
        arrays = {"var": var.read(), "accum": accum.read()}
        _same_shapes(op, var, arrays, sparse=False)
        g = _dense_grad(op, var, arrays["var"], grad)
        counts = accum_decay_power.read()
        if not counts.size:
            raise errors.InvalidArgumentError(
                None, None, f"{op}: {accum_decay_power.name} holds no count (it is empty)")
        decay = _decay_period(op, decay_step, global_step) > counts.flat[0]
        if decay:
            counts.flat[0] += 1
        h = _decay_hypers(arrays["var"].dtype, lr, decay_rate, decay_baseline)
        _apply_dense(_adagrad_decay_rule, arrays, g, h, {"decay": decay})
    return var


apply_adagrad_decay_op.no_gradient()

sparse_adagrad_decay_op = define_op(
    "SparseApplyAdagradDecay", inputs=_DECAY_SLOTS + ("indices",),
    attrs={"use_locking": False, "row_counters": False}, stateful=True)


@sparse_adagrad_decay_op.shape
def _(var: Tensor, accum: Tensor, accum_decay_power: Tensor, lr: Tensor, decay_step: Tensor,
      decay_rate: Tensor, decay_baseline: Tensor, global_step: Tensor, grad: Tensor,
      indices: Tensor, **_attrs: Any) -> Any:
    return _check_shapes("SparseApplyAdagradDecay", var, [accum], [],
                         [lr, decay_step, decay_rate, decay_baseline, global_step], grad,
                         indices)


def _due_rows(op_type: str, counts: VariableResource, idx: np.ndarray, period: int,
              row_counters: bool) -> np.ndarray:
    """Which of the rows `idx` are due a decay; counts those decays."""
    c = counts.read()
    if row_counters:
        if c.ndim != 2 or c.shape[0] <= (idx.max() if idx.size else -1):
            raise errors.InvalidArgumentError(
                None, None, f"{op_type}: {counts.name} of shape {list(c.shape)} has no count "
                "for every row")
        due = c[idx, 0] < period
        c[idx[due], 0] += 1
        return due
    if idx.size and c.size <= idx.max():
        raise errors.InvalidArgumentError(
            None, None, f"{op_type}: {counts.name} holds {c.size} counts, too few for row "
            f"{int(idx.max())}")
    due = c.flat[idx] < period
    c.flat[idx[due]] += 1
    return due


@sparse_adagrad_decay_op.kernel("CPU")
def _(var: VariableResource, accum: VariableResource, accum_decay_power: VariableResource,
      lr: Any, decay_step: Any, decay_rate: Any, decay_baseline: Any, global_step: Any,
      grad: Any, indices: Any, *, use_locking: bool, row_counters: bool) -> VariableResource:
    op = "SparseApplyAdagradDecay"
    with _updating(var, use_locking):
        arrays = {"var": var.read(), "accum": accum.read()}
        _same_shapes(op, var, arrays, sparse=True)
        idx, g = _sparse_grad(op, var, arrays["var"], grad, indices)
        period = _decay_period(op, decay_step, global_step)
        if not idx.size:
            return var
        h = _decay_hypers(arrays["var"].dtype, lr, decay_rate, decay_baseline)
        due = _due_rows(op, accum_decay_power, idx, period, row_counters)
        rows = {k: a[idx] for k, a in arrays.items()}   # copies of the touched rows
        if due.any():
            decayed = rows["accum"][due]
            _decayed(decayed, h)
            rows["accum"][due] = decayed
        _adagrad(rows, g, h, {})
        for k, a in arrays.items():
            a[idx] = rows[k]
    return var


sparse_adagrad_decay_op.no_gradient()
