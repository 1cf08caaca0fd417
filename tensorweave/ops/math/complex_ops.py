"""Complex numbers from parts and back: `tf.complex`, `tf.real`, `tf.imag` (TF's ops).

As TF: `Complex` takes float32 parts to complex64 and float64 parts to
complex128, broadcasting; `Real`/`Imag` return the parts (a real tensor is its
own real part and has a zero imaginary part). The ops carry TF's attrs `T`
(the input type) and `Tout` (the output type), whose defaults (float32,
complex64) `strip_default_attrs` leaves out of exported graphs, as TF.

Example:
    >>> z = tf.complex(tf.constant([1.0]), tf.constant([2.0]))
    >>> sess.run([tf.real(z), tf.imag(z)])
    [array([1.], dtype=float32), array([2.], dtype=float32)]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.math.cwise_ops import broadcast_shape, sum_to_shape

_PARTS = {_dt.float32: _dt.complex64, _dt.float64: _dt.complex128}
_OF_COMPLEX = {c: f for f, c in _PARTS.items()}

complex_op = define_op("Complex", inputs=("real", "imag"),
                       attrs={"T": _dt.float32, "Tout": _dt.complex64})
real_op = define_op("Real", inputs=("input",), attrs={"T": _dt.complex64, "Tout": _dt.float32})
imag_op = define_op("Imag", inputs=("input",), attrs={"T": _dt.complex64, "Tout": _dt.float32})


@complex_op.shape
def _(real: Tensor, imag: Tensor, *, T: _dt.DType, Tout: _dt.DType) -> Any:  # noqa: N803
    return Tout, broadcast_shape("Complex", real, imag)


@complex_op.kernel("CPU")
def _(real: Any, imag: Any, *, T: _dt.DType, Tout: _dt.DType) -> Any:  # noqa: N803
    return (np.asarray(real) + 1j * np.asarray(imag)).astype(Tout.as_numpy_dtype)


@complex_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    x, y = op.inputs
    return [sum_to_shape(real(grad), x), sum_to_shape(imag(grad), y)]


for _op, _part in ((real_op, np.real), (imag_op, np.imag)):
    @_op.shape
    def _(input: Tensor, *, T: _dt.DType, Tout: _dt.DType) -> Any:  # noqa: A002, N803
        return Tout, input.shape

    def _kernel(input: Any, *, T: _dt.DType, Tout: _dt.DType,  # noqa: A002, N803
                _part: Any = _part) -> Any:
        return np.asarray(_part(np.asarray(input))).astype(Tout.as_numpy_dtype)
    _op.kernel("CPU")(_kernel)


@real_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [complex(grad, create_tensor("ZerosLike", [grad]))]


@imag_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    return [complex(create_tensor("ZerosLike", [grad]), grad)]


def complex(real: Any, imag: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """`tf.complex`: `real + imag * 1j`, complex64 from float32 parts, complex128 from float64.

    Raises:
        TypeError: if the parts are not both float32 or both float64 (naming them).

    Example:
        >>> tf.complex(tf.constant([1.0]), tf.constant([2.0])).dtype
        tf.complex64
    """
    real, imag = convert_to_tensor(real, name="real"), convert_to_tensor(imag, name="imag")
    t = real.dtype.base_dtype
    if t != imag.dtype.base_dtype or t not in _PARTS:
        raise TypeError(f"tf.complex needs two float32 or two float64 parts; got "
                        f"{real.name} ({t.name}) and {imag.name} "
                        f"({imag.dtype.base_dtype.name}).")
    return create_tensor("Complex", [real, imag], {"T": t, "Tout": _PARTS[t]}, name=name)


def _part_of(op_type: str, x: Any, name: str | None) -> Tensor:
    x = convert_to_tensor(x, name="input")
    t = x.dtype.base_dtype
    if t not in _OF_COMPLEX:
        if op_type == "Real":
            return x   # a real tensor is its own real part (as TF)
        return create_tensor("ZerosLike", [x], name=name)
    return create_tensor(op_type, [x], {"T": t, "Tout": _OF_COMPLEX[t]}, name=name)


def real(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.real` / `tf.math.real`: the real part (a real tensor is returned as it is).

    Example:
        >>> tf.real(tf.complex(1.0, 2.0))   # 1.0
    """
    return _part_of("Real", input, name)


def imag(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.imag` / `tf.math.imag`: the imaginary part (zeros for a real tensor).

    Example:
        >>> tf.imag(tf.complex(1.0, 2.0))   # 2.0
    """
    return _part_of("Imag", input, name)


__all__ = ["complex", "imag", "real"]
