"""Cross-entropy ops: softmax (dense and sparse labels) and sigmoid, with logits.

The softmax ops return `(loss, backprop)` as TensorFlow's do: the kernel computes
the gradient w.r.t. the logits in the same pass (softmax - labels), so the
backward pass is one multiply. All kernels work from log-sum-exp, so huge or tiny
logits never overflow.

Example:
    >>> loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=z)
    >>> loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=z)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.arg_aliases import one_of
from tensorweave.framework.convert import constant_value, convert_to_tensor
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.nn.nn_ops import check_float, create, norm_axis, same_dtype, same_shape
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops


def _grads(grads: tuple[Any, ...]) -> list[Any]:
    # Accept both grad_fn(op, g0, g1) and grad_fn(op, [g0, g1]).
    if len(grads) == 1 and isinstance(grads[0], (list, tuple)):
        return list(grads[0])
    return list(grads)


def _is_zero(t: Any) -> bool:
    """True for the zeros tf.gradients feeds to an unused output (skip that branch)."""
    if t is None or not isinstance(t, Tensor):
        return t is None
    if t.op.type == "ZerosLike":
        return True
    v = constant_value(t)
    return v is not None and not np.any(v)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    z = x - np.max(x, axis=axis, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


def _scale(grad_loss: Tensor, t: Tensor, axis: int) -> Tensor:
    """grad_loss (shape of t without `axis`) broadcast along `axis` times t."""
    return math_ops.multiply(array_ops.expand_dims(grad_loss, axis), t)


# ---- SoftmaxCrossEntropyWithLogits ----------------------------------------------------
softmax_xent_op = define_op("SoftmaxCrossEntropyWithLogits", inputs=("features", "labels"),
                            attrs={"axis": -1, "backprop_labels": True})


@softmax_xent_op.shape
def _(features: Tensor, labels: Tensor, *, axis: int, backprop_labels: bool) -> Any:
    op_type = "SoftmaxCrossEntropyWithLogits"
    check_float(op_type, features, "logits")
    dtype = same_dtype(op_type, features, labels)
    if not features.shape.is_compatible_with(labels.shape):
        raise ValueError(f"{op_type}: logits and labels must have the same shape, but logits "
                         f"{features.name} has shape {features.shape} and labels {labels.name} "
                         f"has shape {labels.shape}.")
    shape = same_shape(op_type, features, labels)
    a = norm_axis(op_type, shape, axis)
    loss_shape = TensorShape(None) if a is None else TensorShape(
        [d for i, d in enumerate(shape.as_list()) if i != a])
    return [(dtype, loss_shape), (dtype, shape)]


@softmax_xent_op.kernel("CPU")
def _(x: np.ndarray, labels: np.ndarray, *, axis: int, backprop_labels: bool) -> Any:
    if x.shape != labels.shape:
        raise ValueError(f"logits and labels must be same size: logits shape {x.shape}, "
                         f"labels shape {labels.shape}")
    logp = _log_softmax(x, axis)
    loss = -np.sum(labels * logp, axis=axis)
    backprop = np.exp(logp) - labels
    return np.asarray(loss, dtype=x.dtype), backprop.astype(x.dtype, copy=False)


@softmax_xent_op.gradient
def _(op: Operation, *grads: Any) -> list[Any]:
    g_loss, g_backprop = _grads(grads)
    logits, labels = op.inputs
    axis = op.get_attr("axis")
    d_logits = d_labels = None
    if not _is_zero(g_loss):
        d_logits = _scale(g_loss, op.outputs[1], axis)
        if op.get_attr("backprop_labels"):
            neg_logp = math_ops.negative(create("LogSoftmax", [logits], {"axis": axis}).outputs[0])
            d_labels = _scale(g_loss, neg_logp, axis)
    if not _is_zero(g_backprop):
        # backprop = softmax(logits) - labels; its own derivative, for second-order use.
        sm = create("Softmax", [logits], {"axis": axis}).outputs[0]
        second = create("SoftmaxGrad", [g_backprop, sm], {"axis": axis}).outputs[0]
        d_logits = second if d_logits is None else math_ops.add(d_logits, second)
        if op.get_attr("backprop_labels"):
            neg = math_ops.negative(g_backprop)
            d_labels = neg if d_labels is None else math_ops.add(d_labels, neg)
    return [d_logits, d_labels]


def _softmax_xent(labels: Any, logits: Any, dim: int, name: str | None,
                  backprop_labels: bool, who: str) -> Tensor:
    if labels is None or logits is None:
        raise ValueError(f"{who} needs both labels= and logits= (pass them by keyword), got "
                         f"labels={labels!r}, logits={logits!r}.")
    logits = convert_to_tensor(logits, name="logits")
    labels = convert_to_tensor(labels, dtype=logits.dtype.base_dtype, name="labels")
    return create("SoftmaxCrossEntropyWithLogits", [logits, labels],
                  {"axis": int(dim), "backprop_labels": backprop_labels},
                  name=name).outputs[0]


def softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None,
                                      logits: Any = None, dim: int = -1,
                                      name: str | None = None, axis: int | None = None
                                      ) -> Tensor:
    """`tf.nn.softmax_cross_entropy_with_logits` (TF1): -sum(labels * log_softmax(logits)).

    Gradients flow into `logits` only (labels are treated as constants), as in TF1.

    Args:
        labels: a probability distribution along `dim` per example (same shape as logits).
        logits: unscaled log-probabilities.
        dim: the class dimension (`axis` is an alias).

    Returns:
        The per-example loss: logits' shape without `dim`.

    Example:
        >>> tf.nn.softmax_cross_entropy_with_logits(labels=[[0., 1.]], logits=[[0., 0.]])
        ... # -> [0.693]
    """
    _no_positional(_sentinel, "softmax_cross_entropy_with_logits")
    return _softmax_xent(labels, logits, dim if axis is None else axis, name, False,
                         "softmax_cross_entropy_with_logits")


def softmax_cross_entropy_with_logits_v2(labels: Any, logits: Any, axis: int | None = None,
                                         name: str | None = None, dim: int | None = None
                                         ) -> Tensor:
    """`tf.nn.softmax_cross_entropy_with_logits_v2`: as v1, but also backprops into labels.

    Unlike v1 it takes positional arguments, as TF 1.x's does (labels, logits, axis,
    name, dim; `dim` is `axis`'s deprecated name).

    Example:
        >>> loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=soft_y, logits=z)
    """
    axis = one_of("softmax_cross_entropy_with_logits_v2", "axis", axis, "dim", dim,
                  required=False)
    return _softmax_xent(labels, logits, -1 if axis is None else axis, name, True,
                         "softmax_cross_entropy_with_logits_v2")


def _no_positional(sentinel: Any, who: str) -> None:
    if sentinel is not None:
        raise ValueError(f"Only call {who} with named arguments (labels=..., logits=...).")


# ---- SparseSoftmaxCrossEntropyWithLogits ---------------------------------------------
sparse_xent_op = define_op("SparseSoftmaxCrossEntropyWithLogits",
                           inputs=("features", "labels"))


@sparse_xent_op.shape
def _(features: Tensor, labels: Tensor) -> Any:
    op_type = "SparseSoftmaxCrossEntropyWithLogits"
    check_float(op_type, features, "logits")
    if labels.dtype.base_dtype.name not in ("int32", "int64"):
        raise TypeError(f"{op_type}: labels must be int32 or int64 class indices, but "
                        f"{labels.name} has dtype {labels.dtype.base_dtype.name} (for one-hot "
                        "or soft labels use softmax_cross_entropy_with_logits_v2).")
    fs, ls = features.shape, labels.shape
    if fs.ndims is not None and fs.ndims == 0:
        raise ValueError(f"{op_type}: logits must have rank >= 1, got a scalar {features.name}.")
    if fs.ndims is not None and ls.ndims is not None and ls.ndims != fs.ndims - 1:
        raise ValueError(f"{op_type}: rank mismatch: labels must have rank {fs.ndims - 1} "
                         f"(logits' rank minus the class dimension), but labels {labels.name} "
                         f"has shape {ls} and logits {features.name} has shape {fs}.")
    batch = ls
    if fs.ndims is not None:
        if not fs[:-1].is_compatible_with(ls):
            raise ValueError(f"{op_type}: labels shape {ls} must equal logits shape {fs} "
                             "without its last (class) dimension.")
        batch = fs[:-1].merge_with(ls)
    full = batch.concatenate([fs[-1] if fs.ndims else None]) if batch.ndims is not None else fs
    return [(features.dtype.base_dtype, batch), (features.dtype.base_dtype, full)]


@sparse_xent_op.kernel("CPU")
def _(x: np.ndarray, labels: np.ndarray) -> Any:
    n_classes = x.shape[-1]
    if labels.shape != x.shape[:-1]:
        raise ValueError(f"labels shape {labels.shape} must equal logits shape {x.shape} "
                         "without its last dimension.")
    bad = (labels < 0) | (labels >= n_classes)
    if np.any(bad):
        raise errors.InvalidArgumentError(
            None, None, f"Received a label value of {labels[bad].flat[0]} which is outside the "
            f"valid range of [0, {n_classes}).  Label values: "
            f"{' '.join(str(v) for v in labels.reshape(-1)[:20])}")
    logp = _log_softmax(x, -1)
    idx = labels[..., None].astype(np.intp)
    loss = -np.take_along_axis(logp, idx, axis=-1)[..., 0]
    backprop = np.exp(logp)
    np.put_along_axis(backprop, idx, np.take_along_axis(backprop, idx, axis=-1) - 1, axis=-1)
    return np.asarray(loss, dtype=x.dtype), backprop.astype(x.dtype, copy=False)


@sparse_xent_op.gradient
def _(op: Operation, *grads: Any) -> list[Any]:
    g_loss, g_backprop = _grads(grads)
    logits = op.inputs[0]
    d_logits = None if _is_zero(g_loss) else _scale(g_loss, op.outputs[1], -1)
    if not _is_zero(g_backprop):
        sm = create("Softmax", [logits], {"axis": -1}).outputs[0]
        second = create("SoftmaxGrad", [g_backprop, sm], {"axis": -1}).outputs[0]
        d_logits = second if d_logits is None else math_ops.add(d_logits, second)
    return [d_logits, None]


def sparse_softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None,
                                             logits: Any = None, name: str | None = None
                                             ) -> Tensor:
    """`tf.nn.sparse_softmax_cross_entropy_with_logits`: -log_softmax(logits)[label].

    Args:
        labels: int32/int64 class indices in [0, num_classes), shape logits.shape[:-1].
        logits: unscaled log-probabilities, classes along the last dimension.

    Raises:
        tf.errors.InvalidArgumentError: at run time, for a label outside [0, num_classes).

    Example:
        >>> tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1], logits=[[0., 0.]])
        ... # -> [0.693]
    """
    _no_positional(_sentinel, "sparse_softmax_cross_entropy_with_logits")
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy_with_logits needs both labels= and "
                         f"logits=, got labels={labels!r}, logits={logits!r}.")
    # TF 1.x's names: the scope (the given name, else the op type) holds the labels'
    # Shape and the op, itself named `name` or its type: "xentropy/xentropy" for
    # name="xentropy", else "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmax...".
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        array_ops.shape(labels)  # TF keeps the labels' shape for its reshaping paths
        return create("SparseSoftmaxCrossEntropyWithLogits", [logits, labels],
                      name=name).outputs[0]


# ---- SigmoidCrossEntropyWithLogits ---------------------------------------------------
sigmoid_xent_op = define_op("SigmoidCrossEntropyWithLogits", inputs=("labels", "logits"))
sigmoid_xent_grad_op = define_op("SigmoidCrossEntropyWithLogitsGrad",
                                 inputs=("gradients", "labels", "logits"))


@sigmoid_xent_op.shape
def _(labels: Tensor, logits: Tensor) -> Any:
    op_type = "sigmoid_cross_entropy_with_logits"
    check_float(op_type, logits, "logits")
    dtype = same_dtype(op_type, logits, labels)
    if not logits.shape.is_compatible_with(labels.shape):
        raise ValueError(f"logits and labels must have the same shape ({logits.shape} vs "
                         f"{labels.shape}) for {op_type} (logits {logits.name}, labels "
                         f"{labels.name}).")
    return dtype, same_shape(op_type, logits, labels)


@sigmoid_xent_op.kernel("CPU")
def _(z: np.ndarray, x: np.ndarray) -> np.ndarray:
    # max(x, 0) - x z + log(1 + exp(-|x|)): exact and overflow-free for any x.
    return (np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))).astype(x.dtype, copy=False)


@sigmoid_xent_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    d_labels, d_logits = create("SigmoidCrossEntropyWithLogitsGrad",
                                [grad, op.inputs[0], op.inputs[1]]).outputs
    return [d_labels, d_logits]


@sigmoid_xent_grad_op.shape
def _(g: Tensor, labels: Tensor, logits: Tensor) -> Any:
    op_type = "SigmoidCrossEntropyWithLogitsGrad"
    dtype = same_dtype(op_type, g, logits)
    shape = same_shape(op_type, g, logits).merge_with(same_shape(op_type, labels, logits))
    return [(dtype, shape), (dtype, shape)]


@sigmoid_xent_grad_op.kernel("CPU")
def _(g: np.ndarray, z: np.ndarray, x: np.ndarray) -> Any:
    sig = _sigmoid(x)
    return (-g * x).astype(x.dtype, copy=False), (g * (sig - z)).astype(x.dtype, copy=False)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


@sigmoid_xent_grad_op.gradient
def _(op: Operation, *grads: Any) -> list[Any]:
    # outputs: a = -g x, b = g (s - z) with s = sigmoid(x); upstream h_a, h_b.
    h_a, h_b = _grads(grads)
    g, z, x = op.inputs
    d_g = d_z = d_x = None
    parts_g, parts_x = [], []
    if not _is_zero(h_a):
        parts_g.append(math_ops.negative(math_ops.multiply(h_a, x)))
        parts_x.append(math_ops.negative(math_ops.multiply(h_a, g)))
    if not _is_zero(h_b):
        s = math_ops.sigmoid(x)
        parts_g.append(math_ops.multiply(h_b, math_ops.subtract(s, z)))
        d_z = math_ops.negative(math_ops.multiply(h_b, g))
        ds = math_ops.multiply(s, math_ops.subtract(1.0, s))
        parts_x.append(math_ops.multiply(math_ops.multiply(h_b, g), ds))
    if parts_g:
        # one part per upstream gradient (h_a, h_b): at most two
        d_g = parts_g[0] if len(parts_g) == 1 else math_ops.add(parts_g[0], parts_g[1])
        d_x = parts_x[0] if len(parts_x) == 1 else math_ops.add(parts_x[0], parts_x[1])
    return [d_g, d_z, d_x]


def sigmoid_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None,
                                      logits: Any = None, name: str | None = None) -> Tensor:
    """`tf.nn.sigmoid_cross_entropy_with_logits`: elementwise logistic loss.

    Computes labels * -log(sigmoid(logits)) + (1 - labels) * -log(1 - sigmoid(logits))
    in the stable form max(x, 0) - x * z + log(1 + exp(-|x|)).

    Example:
        >>> tf.nn.sigmoid_cross_entropy_with_logits(labels=[1.], logits=[0.])  # -> [0.693]
    """
    _no_positional(_sentinel, "sigmoid_cross_entropy_with_logits")
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits needs both labels= and logits=, "
                         f"got labels={labels!r}, logits={logits!r}.")
    logits = convert_to_tensor(logits, name="logits")
    labels = convert_to_tensor(labels, dtype=logits.dtype.base_dtype, name="labels")
    return create("SigmoidCrossEntropyWithLogits", [labels, logits],
                  name=name or "logistic_loss").outputs[0]
