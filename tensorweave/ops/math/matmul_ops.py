"""Matrix products: MatMul and BatchMatMulV2 (`tf.matmul`), with their gradients.

The public wrapper is re-exported by `tensorweave.ops.math.math_ops`.

Example:
    >>> x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> tf.matmul(x, x, transpose_b=True)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, broadcast_shapes
from tensorweave.ops.math.cwise_ops import _is_numeric, check_dtype, check_same_dtype, sum_to_shape
from tensorweave.runtime import intra_op


# ---- MatMul / BatchMatMulV2 ----------------------------------------------------------
def _matmul_shape(op_type: str, a: Tensor, b: Tensor, ta: bool, tb: bool) -> Any:
    check_same_dtype(op_type, a, b)
    check_dtype(op_type, a, _is_numeric)
    ra, rb = a.shape.ndims, b.shape.ndims
    if op_type == "MatMul" and ((ra is not None and ra != 2) or (rb is not None and rb != 2)):
        raise ValueError(f"MatMul needs rank-2 inputs, but {a.name} has shape {a.shape} and "
                         f"{b.name} has shape {b.shape}; use tf.matmul for batches.")
    if (ra is not None and ra < 2) or (rb is not None and rb < 2):
        raise ValueError(f"{op_type} needs inputs of rank >= 2, but {a.name} has shape "
                         f"{a.shape} and {b.name} has shape {b.shape}.")
    if ra is None or rb is None:
        return a.dtype.base_dtype, TensorShape(None)
    da, db = a.shape.as_list(), b.shape.as_list()
    m, ka = (da[-1], da[-2]) if ta else (da[-2], da[-1])
    kb, n = (db[-1], db[-2]) if tb else (db[-2], db[-1])
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(f"Dimensions must be equal, but are {ka} and {kb} for {op_type} "
                         f"with input shapes {a.shape}, {b.shape} ({a.name}, {b.name}, "
                         f"transpose_a={ta}, transpose_b={tb}).")
    try:
        batch = broadcast_shapes(TensorShape(da[:-2]), TensorShape(db[:-2]))
    except ValueError:
        raise ValueError(f"Batch dimensions of {op_type} do not broadcast: input shapes "
                         f"{a.shape} ({a.name}) and {b.shape} ({b.name}).") from None
    return a.dtype.base_dtype, batch.concatenate([m, n])


matmul_op = define_op("MatMul", inputs=("a", "b"),
                      attrs={"transpose_a": False, "transpose_b": False})
batch_matmul_op = define_op("BatchMatMulV2", inputs=("x", "y"),
                            attrs={"adj_x": False, "adj_y": False})


@matmul_op.shape
def _(a: Tensor, b: Tensor, *, transpose_a: bool, transpose_b: bool) -> Any:
    return _matmul_shape("MatMul", a, b, transpose_a, transpose_b)


def _dims(x: Any) -> str:
    """A shape as TF prints it: [3,5]."""
    return "[" + ",".join(str(d) for d in np.shape(x)) + "]"


def _size_error(op_type: str, a: Any, b: Any) -> errors.InvalidArgumentError:
    """TF's words for inputs that do not multiply (the shapes as fed, untransposed)."""
    for i, x in enumerate((a, b)):
        if np.ndim(x) < 2 or (op_type == "MatMul" and np.ndim(x) != 2):
            return errors.InvalidArgumentError(
                None, None, f"In[{i}] is not a matrix. Instead it has shape {_dims(x)}")
    if np.shape(a)[:-2] != np.shape(b)[:-2]:
        try:
            np.broadcast_shapes(np.shape(a)[:-2], np.shape(b)[:-2])
        except ValueError:
            return errors.InvalidArgumentError(
                None, None, "In[0] and In[1] must have compatible batch dimensions: "
                f"{_dims(a)} vs. {_dims(b)}")
    return errors.InvalidArgumentError(
        None, None, f"Matrix size-incompatible: In[0]: {_dims(a)}, In[1]: {_dims(b)}")


@matmul_op.kernel("CPU")
def _(a: Any, b: Any, *, transpose_a: bool, transpose_b: bool) -> Any:
    try:
        # Split over the task's intra-op threads when big (runtime/intra_op.py).
        return intra_op.matmul(a.T if transpose_a else a, b.T if transpose_b else b)
    except ValueError:  # numpy's gufunc text; TF's is what users search for
        raise _size_error("MatMul", a, b) from None


@batch_matmul_op.shape
def _(x: Tensor, y: Tensor, *, adj_x: bool, adj_y: bool) -> Any:
    return _matmul_shape("BatchMatMulV2", x, y, adj_x, adj_y)


@batch_matmul_op.kernel("CPU")
def _(x: Any, y: Any, *, adj_x: bool, adj_y: bool) -> Any:
    if adj_x:
        x = np.conj(np.swapaxes(x, -1, -2))
    if adj_y:
        y = np.conj(np.swapaxes(y, -1, -2))
    try:
        return np.matmul(x, y)
    except ValueError:
        raise _size_error("BatchMatMulV2", x, y) from None


def _mm(a: Tensor, b: Tensor, ta: bool = False, tb: bool = False) -> Tensor:
    if a.shape.ndims == 2 and b.shape.ndims == 2:
        return create_tensor("MatMul", [a, b], {"transpose_a": ta, "transpose_b": tb})
    return create_tensor("BatchMatMulV2", [a, b], {"adj_x": ta, "adj_y": tb})


def _matmul_grads(a: Tensor, b: Tensor, g: Tensor, ta: bool, tb: bool) -> list[Any]:
    # C = op(A) op(B); dA and dB written so no explicit transpose op is needed.
    if not ta and not tb:
        ga, gb = _mm(g, b, False, True), _mm(a, g, True, False)
    elif not ta and tb:
        ga, gb = _mm(g, b), _mm(g, a, True, False)
    elif ta and not tb:
        ga, gb = _mm(b, g, False, True), _mm(a, g)
    else:
        ga, gb = _mm(b, g, True, True), _mm(g, a, True, True)
    return [sum_to_shape(ga, a), sum_to_shape(gb, b)]


@matmul_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    a, b = op.inputs
    return _matmul_grads(a, b, grad, op.get_attr("transpose_a"), op.get_attr("transpose_b"))


@batch_matmul_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    a, b = op.inputs
    return _matmul_grads(a, b, grad, op.get_attr("adj_x"), op.get_attr("adj_y"))


def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, name: str | None = None) -> Tensor:
    """`tf.matmul`: matrix product of the last two dims; leading dims broadcast.

    Rank-2 inputs make a MatMul op, higher ranks a BatchMatMulV2 op.

    Example:
        >>> a = tf.ones([5, 2, 3]); b = tf.ones([3, 4])
        >>> tf.matmul(a, b).shape.as_list()
        [5, 2, 4]
    """
    if transpose_a and adjoint_a or transpose_b and adjoint_b:
        raise ValueError("matmul: transpose_a/adjoint_a (and _b) are mutually exclusive.")
    a = convert_to_tensor(a)
    b = convert_to_tensor(b, dtype=a.dtype.base_dtype) if not isinstance(b, Tensor) else b
    ta, tb = transpose_a or adjoint_a, transpose_b or adjoint_b
    ra, rb = a.shape.ndims, b.shape.ndims
    if (ra is None or ra == 2) and (rb is None or rb == 2):
        return create_tensor("MatMul", [a, b], {"transpose_a": ta, "transpose_b": tb},
                       name=name or "MatMul")
    return create_tensor("BatchMatMulV2", [a, b], {"adj_x": ta, "adj_y": tb}, name=name or "MatMul")
