"""Fused optimizer update ops: one op per variable update, run where the variable lives.

Each op takes the variable and its slots by reference (`&`), updates them in
place with NumPy, and outputs the variable's reference (as TF1's Apply* ops).
Hyperparameters may be any float dtype; kernels cast them to the variable's.
Sparse variants take `grad` rows plus `indices`, sum duplicate indices first
(as TF1's optimizers do), and touch only those rows.

Example:
    >>> tf.get_default_graph().create_op(
    ...     "ApplyGradientDescent", [v._ref(), lr, grad], name="update")
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable

import numpy as np

from tensorweave.framework import errors
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.runtime import intra_op
from tensorweave.runtime.resource_mgr import VariableResource
from tensorweave.runtime.update_gate import gated_update

Rule = Callable[[dict[str, np.ndarray], np.ndarray, dict[str, Any], dict[str, Any]], None]


def _dedup(indices: np.ndarray, grad: np.ndarray, nrows: int,
           var_name: str) -> tuple[np.ndarray, np.ndarray]:
    """Unique row indices and their summed gradient rows; checks the range."""
    idx = np.asarray(indices).astype(np.int64, copy=False).reshape(-1)
    if idx.size:
        # One sort gives the range check and, for the usual already-unique ids (the
        # optimizer's graph sums duplicates first), the answer: np.unique's inverse
        # (an argsort more) only when some repeat.
        ordered = np.sort(idx)
        if ordered[0] >= 0 and ordered[-1] < nrows and (ordered[1:] != ordered[:-1]).all():
            return idx, np.asarray(grad).reshape((idx.size,) + np.shape(grad)[1:])
    bad = idx[(idx < 0) | (idx >= nrows)]
    if bad.size:
        raise errors.InvalidArgumentError(
            None, None, f"Index {int(bad[0])} is not in [0, {nrows}) for variable {var_name}")
    grad = np.asarray(grad).reshape((idx.size,) + np.shape(grad)[1:])
    uniq, inverse = np.unique(idx, return_inverse=True)
    if uniq.size == idx.size:
        return idx, grad
    summed = np.zeros((uniq.size,) + grad.shape[1:], dtype=grad.dtype)
    np.add.at(summed, inverse.reshape(-1), grad)
    return uniq, summed


_NO_LOCK = contextlib.nullcontext()
# Elements per slice of a big dense update: a slice of the variable, its slots, the
# gradient and the rule's temporaries (~6 x 128 KiB in float32) stay in the core's L2
# through the rule's 4-8 NumPy passes, which otherwise each stream the whole arrays
# through memory (784x2048 Adagrad: 4.3 ms -> see the commit).
_SLICE = 1 << 15
# Elements from which a dense update is split over the task's update threads
# (runtime/intra_op.py): below, waking a helper (~0.1 ms here) costs about what it saves.
_PARALLEL_MIN = 1 << 18


def _as_scalar(value: Any) -> Any:
    if type(value) is np.ndarray and value.ndim == 0:
        return value
    return np.asarray(value).reshape(())


def _apply_dense(rule: Rule, arrays: dict[str, np.ndarray], grad: np.ndarray, hyper: dict,
                 kw: dict) -> None:
    """Runs an element-wise dense update rule, slice by slice when the arrays are big.

    Every dense rule is element-wise (each element of var and slots depends only on the
    same element of grad and on scalars), so applying it to matching slices is the same
    update; in-place writes to the slices land in the variables (C-contiguous arrays,
    whose flat views are views)."""
    n = grad.size
    if n < 4 * _SLICE or not all(a.flags.c_contiguous for a in arrays.values()):
        rule(arrays, grad, hyper, kw)
        return
    flat = {r: a.reshape(-1) for r, a in arrays.items()}
    g = grad.reshape(-1)

    def run(lo: int, hi: int) -> None:
        for start in range(lo, hi, _SLICE):
            end = min(start + _SLICE, hi)
            rule({r: a[start:end] for r, a in flat.items()}, g[start:end], hyper, kw)
    threads = intra_op.update_threads()
    if threads < 2 or n < _PARALLEL_MIN:
        run(0, n)
        return
    # Disjoint runs of whole slices, one per thread (NumPy lets go of the GIL in each
    # pass): the same element-wise values, computed at once.
    per = -(-n // (threads * _SLICE)) * _SLICE
    intra_op.run_parallel([functools.partial(run, lo, min(lo + per, n))
                           for lo in range(0, n, per)])


def _apply_shape_fn(op_type: str, names: list[str], refs: list[str], hypers: list[str],
                    sparse: bool) -> Callable[..., Any]:
    """define_apply's shape function: slots shaped like the variable, scalar
    hyperparameters, a gradient of the variable's dtype and (rows of its) shape."""
    def shape(*args: Tensor, **kw: Any) -> Any:
        d = dict(zip(names, args))
        var = d["var"]
        if not var.dtype.is_ref_dtype:
            raise TypeError(f"{op_type} needs variable references, got {var.name} of dtype "
                            f"{var.dtype.name}")
        for r in refs[1:]:
            if not d[r].shape.is_compatible_with(var.shape):
                raise ValueError(f"{op_type}: slot {d[r].name} has shape {d[r].shape} but "
                                 f"variable {var.name} has shape {var.shape}")
        for h in hypers:
            if d[h].shape.ndims not in (None, 0):
                raise ValueError(f"{op_type}: {h} must be a scalar, got {d[h].name} with "
                                 f"shape {d[h].shape}")
        g = d["grad"]
        if not g.dtype.base_dtype.is_compatible_with(var.dtype.base_dtype):
            raise TypeError(f"{op_type}: gradient {g.name} has dtype {g.dtype.name} but "
                            f"variable {var.name} is {var.dtype.base_dtype.name}")
        want = var.shape
        if sparse and var.shape.ndims is not None:
            want = d["indices"].shape.concatenate(var.shape[1:])
        if not g.shape.is_compatible_with(want):
            raise ValueError(f"{op_type}: gradient {g.name} has shape {g.shape}, expected "
                             f"{want} for variable {var.name} of shape {var.shape}")
        return var.dtype, var.shape
    return shape


def _apply_kernel(op_type: str, names: list[str], refs: list[str], hypers: list[str],
                  sparse: bool, rule: Rule, full_rule: Callable[..., None] | None
                  ) -> Callable[..., VariableResource]:
    """define_apply's kernel: `rule` on the variable and slot buffers, under the update
    gate (and the variable's lock with use_locking); sparse ops see deduplicated rows."""
    # Positions, not a dict per call: a ps applies dozens of these a step.
    ref_pos = [(r, names.index(r)) for r in refs]
    hyper_pos = [(h, names.index(h)) for h in hypers]
    grad_pos = names.index("grad")

    def kernel(*args: Any, **kw: Any) -> VariableResource:
        var: VariableResource = args[0]
        lock = var.lock if kw["use_locking"] or var.always_lock else _NO_LOCK
        with gated_update(var), lock:  # a checkpoint sees var and slots from one moment
            arrays = {r: args[i].read() for r, i in ref_pos}
            v = arrays["var"]
            scalar = v.dtype.type
            hyper = {h: scalar(_as_scalar(args[i])) for h, i in hyper_pos}
            grad = np.asarray(args[grad_pos]).astype(v.dtype, copy=False)
            if not sparse:
                for r, a in arrays.items():
                    if a.shape != v.shape or grad.shape != v.shape:
                        raise errors.InvalidArgumentError(
                            None, None, f"{op_type}: shapes differ: var {var.name} "
                            f"{list(v.shape)}, {r} {list(a.shape)}, grad {list(grad.shape)}")
                _apply_dense(rule, arrays, grad, hyper, kw)
                return var
            idx, grad = _dedup(args[names.index("indices")], grad, v.shape[0], var.name)
            if full_rule is not None:
                full_rule(arrays, idx, grad, hyper, kw)
            elif idx.size:
                rows = {r: a[idx] for r, a in arrays.items()}  # copies of the rows
                rule(rows, grad, hyper, kw)
                for r, a in arrays.items():
                    a[idx] = rows[r]
        return var
    return kernel


def define_apply(op_type: str, inputs: tuple[str, ...], rule: Rule,
                 sparse: bool = False, extra_attrs: dict[str, Any] | None = None,
                 full_rule: Callable[..., None] | None = None) -> Any:
    """Registers an Apply*/SparseApply* op from a NumPy update `rule`.

    `inputs` lists "&var", the slots ("&m"), the hyperparameters and "grad"
    (and "indices" when `sparse`). `rule(arrays, grad, hyper, attrs)` updates
    the arrays in place; for sparse ops it sees only the touched rows, unless
    `full_rule(arrays, idx, grad, hyper, attrs)` is given (rules that touch
    every row, like TF1's sparse Adam).
    """
    names = [i.lstrip("&") for i in inputs]
    refs = [i.lstrip("&") for i in inputs if i.startswith("&")]
    hypers = [n for n in names if n not in refs and n not in ("grad", "indices")]
    attrs = {"use_locking": False, **(extra_attrs or {})}
    op = define_op(op_type, inputs=inputs, attrs=attrs, stateful=True)

    op.shape(_apply_shape_fn(op_type, names, refs, hypers, sparse))
    op.kernel("CPU")(_apply_kernel(op_type, names, refs, hypers, sparse, rule, full_rule))
    op.no_gradient()
    return op


def _both(op_type: str, inputs: tuple[str, ...], rule: Rule,
          extra_attrs: dict[str, Any] | None = None) -> None:
    """Registers the dense op and its Sparse variant (indices right after grad)."""
    define_apply(op_type, inputs, rule, extra_attrs=extra_attrs)
    pos = inputs.index("grad") + 1
    sparse_inputs = inputs[:pos] + ("indices",) + inputs[pos:]
    define_apply("Sparse" + op_type, sparse_inputs, rule, sparse=True,
                 extra_attrs=extra_attrs)


# ---- update rules (TF1 training_ops semantics) ----------------------------------------
def _gd(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    a["var"] -= h["alpha"] * g


def _momentum(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    accum = a["accum"]
    accum *= h["momentum"]
    accum += g
    if kw["use_nesterov"]:
        a["var"] -= g * h["lr"] + accum * h["momentum"] * h["lr"]
    else:
        a["var"] -= accum * h["lr"]


def _adagrad(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    # One temporary, reused (4 before: g*g, lr*g, the sqrt, the quotient): ~10% of the
    # update of a 784x512 / 784x2048 weight, which a ps runs on every step.
    accum = a["accum"]
    t = np.multiply(g, g, out=np.empty_like(g))   # an array even for a scalar variable
    accum += t
    np.sqrt(accum, out=t)
    np.divide(g, t, out=t)
    t *= h["lr"]
    a["var"] -= t


def _adam_alpha(h: dict) -> Any:
    return h["lr"] * np.sqrt(1 - h["beta2_power"]) / (1 - h["beta1_power"])


def _adam(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    m, v = a["m"], a["v"]
    m += (g - m) * (1 - h["beta1"])
    v += (g * g - v) * (1 - h["beta2"])
    if kw["use_nesterov"]:
        a["var"] -= _adam_alpha(h) * (m * h["beta1"] + (1 - h["beta1"]) * g) / \
            (np.sqrt(v) + h["epsilon"])
    else:
        a["var"] -= _adam_alpha(h) * m / (np.sqrt(v) + h["epsilon"])


def _adam_sparse(a: dict, idx: np.ndarray, g: np.ndarray, h: dict, kw: dict) -> None:
    # TF1's AdamOptimizer decays every row of m and v, adds the sparse gradient to
    # its rows, then updates every row of var.
    m, v = a["m"], a["v"]
    m *= h["beta1"]
    v *= h["beta2"]
    if idx.size:
        m[idx] += g * (1 - h["beta1"])
        v[idx] += g * g * (1 - h["beta2"])
    a["var"] -= _adam_alpha(h) * m / (np.sqrt(v) + h["epsilon"])


def _rmsprop(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    ms, mom = a["ms"], a["mom"]
    ms += (g * g - ms) * (1 - h["rho"])
    mom *= h["momentum"]
    mom += g * h["lr"] / np.sqrt(ms + h["epsilon"])
    a["var"] -= mom


def _centered_rmsprop(a: dict, g: np.ndarray, h: dict, kw: dict) -> None:
    ms, mg, mom = a["ms"], a["mg"], a["mom"]
    ms += (g * g - ms) * (1 - h["rho"])
    mg += (g - mg) * (1 - h["rho"])
    denom = ms - mg * mg + h["epsilon"]
    mom *= h["momentum"]
    mom += g * h["lr"] / np.sqrt(denom)
    a["var"] -= mom


_both("ApplyGradientDescent", ("&var", "alpha", "grad"), _gd)
_both("ApplyMomentum", ("&var", "&accum", "lr", "grad", "momentum"), _momentum,
      {"use_nesterov": False})
_both("ApplyAdagrad", ("&var", "&accum", "lr", "grad"), _adagrad)
define_apply("ApplyAdam", ("&var", "&m", "&v", "beta1_power", "beta2_power", "lr", "beta1",
                           "beta2", "epsilon", "grad"), _adam, extra_attrs={"use_nesterov": False})
define_apply("SparseApplyAdam", ("&var", "&m", "&v", "beta1_power", "beta2_power", "lr",
                                 "beta1", "beta2", "epsilon", "grad", "indices"), _adam,
             sparse=True, full_rule=_adam_sparse)
_both("ApplyRMSProp", ("&var", "&ms", "&mom", "lr", "rho", "momentum", "epsilon", "grad"),
      _rmsprop)
_both("ApplyCenteredRMSProp", ("&var", "&mg", "&ms", "&mom", "lr", "rho", "momentum",
                               "epsilon", "grad"), _centered_rmsprop)


def apply_op(op_type: str, var: Any, inputs: list[Any], use_locking: bool,
             name: str | None = None, **attrs: Any) -> Tensor:
    """Creates one update op colocated with `var`; returns the variable's reference.

    Example:
        >>> apply_op("ApplyGradientDescent", v, [lr, grad], use_locking=False)
    """
    ref = var._ref() if hasattr(var, "_ref") else var
    g = ref.graph
    with g.colocate_with(ref.op):
        return g.create_op(op_type, [ref] + list(inputs),
                           {"use_locking": use_locking, **attrs},
                           name=name or op_type).outputs[0]
