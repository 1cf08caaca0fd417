"""MaxPoolWithArgmax and its gradient ops (NHWC only, as in TF).

`argmax` holds, per output element, the flattened index of the input element that
won its window, in TF's layout: ((b * height + y) * width + x) * channels + c with
`include_batch_in_index`, else (y * width + x) * channels + c (the batch is
implied by the output's position). Among equal values the first in row-major
window order wins, like TF's CPU kernel. The gradient ops scatter/gather through
argmax, so they never recompute the windows.

Example:
    >>> pooled, argmax = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import define_op
from tensorweave.framework.op_outputs import op_result
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.array.fill_ops import zeros_like
from tensorweave.ops.nn.nn_ops import create, same_dtype
from tensorweave.ops.nn.pool_ops import PoolGeom, pool_out_shape
from tensorweave.kernels.window_geometry import spatial

_ARGMAX_ATTRS = {"ksize": [1, 1, 1, 1], "strides": [1, 1, 1, 1], "Targmax": _dt.int64,
                 "padding": "VALID", "include_batch_in_index": False}
_GRAD_ATTRS = {k: v for k, v in _ARGMAX_ATTRS.items() if k != "Targmax"}

max_pool_argmax_op = define_op("MaxPoolWithArgmax", inputs=("input",),
                               attrs=dict(_ARGMAX_ATTRS))
grad_op = define_op("MaxPoolGradWithArgmax", inputs=("input", "grad", "argmax"),
                    attrs=dict(_GRAD_ATTRS))
grad_grad_op = define_op("MaxPoolGradGradWithArgmax", inputs=("input", "grad", "argmax"),
                         attrs=dict(_GRAD_ATTRS))


def _geom(op_type: str, shape: tuple[int, ...], a: dict[str, Any]) -> PoolGeom:
    return PoolGeom(op_type, shape, a["ksize"], a["strides"], a["padding"], "NHWC")


def _flat_index(argmax: np.ndarray, x_shape: tuple[int, ...], with_batch: bool
                ) -> np.ndarray:
    """argmax as indices into x.ravel(): adds the batch offset when it is implied."""
    idx = argmax.astype(np.int64)
    if not with_batch:
        per_batch = int(np.prod(x_shape[1:]))
        idx = idx + (np.arange(x_shape[0], dtype=np.int64) * per_batch)[:, None, None, None]
    if idx.size and (idx.min() < 0 or idx.max() >= int(np.prod(x_shape))):
        raise ValueError(f"argmax holds an index outside the input of shape {x_shape}: "
                         f"range [{idx.min()}, {idx.max()}]; pass the argmax that "
                         "max_pool_with_argmax produced for this input.")
    return idx


@max_pool_argmax_op.shape
def _(x: Tensor, **a: Any) -> Any:
    shape = pool_out_shape("MaxPoolWithArgmax", x, a["ksize"], a["strides"], a["padding"],
                           "NHWC")
    t = a["Targmax"]
    if t not in (_dt.int32, _dt.int64):
        raise TypeError(f"MaxPoolWithArgmax: Targmax must be int32 or int64, got {t}.")
    return [(x.dtype.base_dtype, shape), (t, shape)]


@max_pool_argmax_op.kernel("CPU")
def _(x: np.ndarray, **a: Any) -> Any:
    g = _geom("MaxPoolWithArgmax", x.shape, a)
    win = g.windows(x, -np.inf)                    # [N, OH, OW, KH*KW, C]
    tap = win.argmax(axis=3)                       # the first maximum, as TF's kernel
    out = np.take_along_axis(win, tap[:, :, :, None], axis=3)[:, :, :, 0]
    row = (np.arange(g.oh) * g.sh - g.pt)[None, :, None, None] + tap // g.kw
    col = (np.arange(g.ow) * g.sw - g.pl)[None, None, :, None] + tap % g.kw
    idx = (row * g.w + col) * g.c + np.arange(g.c)
    if a["include_batch_in_index"]:
        idx = idx + (np.arange(g.n) * (g.h * g.w * g.c))[:, None, None, None]
    return out.astype(x.dtype, copy=False), idx.astype(a["Targmax"].as_numpy_dtype)


@max_pool_argmax_op.gradient
def _(op: Operation, grad: Tensor, unused_argmax_grad: Any) -> list[Any]:
    a = {k: op.get_attr(k) for k in _GRAD_ATTRS}
    return [create("MaxPoolGradWithArgmax", [op.inputs[0], grad, op.outputs[1]], a
                   ).outputs[0]]


@grad_op.shape
def _(x: Tensor, dy: Tensor, argmax: Tensor, **a: Any) -> Any:
    same_dtype("MaxPoolGradWithArgmax", x, dy)
    out = pool_out_shape("MaxPoolGradWithArgmax", x, a["ksize"], a["strides"], a["padding"],
                         "NHWC")
    for t in (dy, argmax):
        if not out.is_compatible_with(t.shape):
            raise ValueError(f"MaxPoolGradWithArgmax: {t.name} has shape {t.shape}, but "
                             f"pooling an input of {x.shape} gives {out}.")
    return x.dtype.base_dtype, x.shape


@grad_op.kernel("CPU")
def _(x: np.ndarray, dy: np.ndarray, argmax: np.ndarray, **a: Any) -> np.ndarray:
    idx = _flat_index(argmax, x.shape, a["include_batch_in_index"])
    dx = np.bincount(idx.ravel(), weights=dy.ravel(), minlength=x.size)
    return dx.reshape(x.shape).astype(dy.dtype, copy=False)


@grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, _, argmax = op.inputs
    a = {k: op.get_attr(k) for k in _GRAD_ATTRS}
    return [zeros_like(x), create("MaxPoolGradGradWithArgmax", [x, grad, argmax], a
                                  ).outputs[0], None]


@grad_grad_op.shape
def _(x: Tensor, ddx: Tensor, argmax: Tensor, **a: Any) -> Any:
    same_dtype("MaxPoolGradGradWithArgmax", x, ddx)
    return x.dtype.base_dtype, pool_out_shape("MaxPoolGradGradWithArgmax", x, a["ksize"],
                                              a["strides"], a["padding"], "NHWC")


@grad_grad_op.kernel("CPU")
def _(x: np.ndarray, ddx: np.ndarray, argmax: np.ndarray, **a: Any) -> np.ndarray:
    idx = _flat_index(argmax, x.shape, a["include_batch_in_index"])
    return ddx.ravel()[idx].astype(ddx.dtype, copy=False)


@grad_grad_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, _, argmax = op.inputs
    a = {k: op.get_attr(k) for k in _GRAD_ATTRS}
    return [zeros_like(x), create("MaxPoolGradWithArgmax", [x, grad, argmax], a).outputs[0],
            None]


def max_pool_with_argmax(input: Any, ksize: Any, strides: Any, padding: str,
                         data_format: str = "NHWC", Targmax: Any = None,
                         name: str | None = None, output_dtype: Any = None,
                         include_batch_in_index: bool = False) -> tuple[Tensor, Tensor]:
    """`tf.nn.max_pool_with_argmax`: max pooling that also returns where each max was.

    Args:
        input: [batch, height, width, channels] (NHWC only, as in TF).
        ksize, strides: 4 ints (1 in batch and channels), or an int / [h, w].
        Targmax / output_dtype: tf.int64 (default) or tf.int32.
        include_batch_in_index: whether argmax counts whole batches too.

    Returns:
        (output, argmax); argmax is (y * width + x) * channels + c, plus
        b * height * width * channels when include_batch_in_index.

    Raises:
        ValueError: for a data_format other than NHWC.

    Example:
        >>> out, idx = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    """
    if data_format != "NHWC":
        raise ValueError(f"max_pool_with_argmax: data formats other than 'NHWC' are not "
                         f"supported (got {data_format!r}); transpose the input with "
                         "tf.transpose(x, [0, 2, 3, 1]).")
    targ = Targmax if Targmax is not None else output_dtype
    x = convert_to_tensor(input, name="input")

    def four(v: Any, what: str) -> list[int]:
        h, w = spatial("max_pool_with_argmax", what, v, "NHWC")
        return [1, h, w, 1]
    attrs = {"ksize": four(ksize, "ksize"), "strides": four(strides, "strides"),
             "Targmax": _dt.as_dtype(targ or _dt.int64).base_dtype,
             "padding": str(padding).upper(),
             "include_batch_in_index": bool(include_batch_in_index)}
    return op_result(create("MaxPoolWithArgmax", [x], attrs, name=name))

