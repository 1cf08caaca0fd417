"""Initializers: callables `init(shape, dtype=None, partition_info=None) -> Tensor`.

`tf.get_variable` calls one inside the variable's "Initializer" scope, so the
ops it builds are colocated with the variable. Also exposed as
`tf.initializers.*` (e.g. `tf.initializers.glorot_uniform()`).

He and LeCun initializers are VarianceScaling presets (as TF 1.15's
`tf.initializers.he_normal`, ...).

Example:
    >>> w = tf.get_variable("w", [784, 10], initializer=tf.zeros_initializer())
    >>> b = tf.get_variable("b", [10], initializer=tf.constant_initializer(0.1))
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant as _constant
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import as_shape
from tensorweave.ops.random import random_ops
from tensorweave.state.variable_initializers import global_variables_initializer
from tensorweave.state.variable_initializers import local_variables_initializer
from tensorweave.state.variable_initializers import tables_initializer as tables_initializer
from tensorweave.state.variable_initializers import variables_initializer
from tensorweave.ops import array as array_ops
from tensorweave.ops.linalg.linalg_ops import qr
from tensorweave.ops.math import math_ops


def _dims(shape: Any) -> list[int]:
    dims = as_shape(shape).as_list()
    if any(d is None for d in dims):
        raise ValueError(f"Initializers need a fully defined shape, got {shape}")
    return [int(d) for d in dims if d is not None]


def _filled(value: Any, shape: Any, dtype: _dt.DType) -> Tensor:
    # Prefer a Fill op so a big variable's initializer does not embed its whole value.
    try:
        return array_ops.fill(_dims(shape), _constant(value, dtype=dtype))
    except (ImportError, AttributeError):
        return _constant(value, dtype=dtype, shape=_dims(shape))


def _random(kind: str, shape: Any, dtype: _dt.DType, seed: Any, **kw: Any) -> Tensor:
    return getattr(random_ops, kind)(_dims(shape), dtype=dtype, seed=seed, **kw)


def _float_dtype(dtype: Any, what: str) -> _dt.DType:
    dt = _dt.as_dtype(dtype).base_dtype
    if not dt.is_floating:
        raise ValueError(f"{what} expects a floating point dtype, got {dt.name}")
    return dt


class Initializer:
    """Base class: subclasses build a Tensor of `shape` and `dtype`."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "Initializer":
        return cls(**config)


class Zeros(Initializer):
    """All zeros. Example: `tf.get_variable("b", [10], initializer=tf.zeros_initializer())`."""

    def __init__(self, dtype: Any = _dt.float32) -> None:
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _dt.as_dtype(dtype or self.dtype).base_dtype
        # As TF: tf.zeros (one Const "zeros" when small, a Fill when large); a string's
        # zero is the empty string (a string variable's default).
        return array_ops.zeros(_dims(shape), dt)

    def get_config(self) -> dict[str, Any]:
        return {"dtype": self.dtype.name}


class Ones(Zeros):
    """All ones. Example: `tf.ones_initializer()([2, 2])`."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return array_ops.ones(_dims(shape), _dt.as_dtype(dtype or self.dtype).base_dtype)


class Constant(Initializer):
    """A scalar (broadcast) or a list/array of exactly `shape`'s size.

    Example:
        >>> tf.constant_initializer([1, 2, 3, 4])([2, 2])
    """

    def __init__(self, value: Any = 0, dtype: Any = _dt.float32,
                 verify_shape: bool = False) -> None:
        if isinstance(value, Tensor):
            raise TypeError(f"constant_initializer needs a Python/NumPy value, got Tensor "
                            f"{value.name}; pass it to tf.get_variable as initializer instead.")
        self.value = value
        self.dtype = _dt.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _dt.as_dtype(dtype or self.dtype).base_dtype
        if np.size(self.value) == 1:
            return _filled(np.asarray(self.value).reshape(()), shape, dt)
        return _constant(self.value, dtype=dt, shape=_dims(shape),
                        verify_shape=self._verify_shape)

    def get_config(self) -> dict[str, Any]:
        return {"value": self.value, "dtype": self.dtype.name,
                "verify_shape": self._verify_shape}


class RandomNormal(Initializer):
    """Normal samples. Example: `tf.random_normal_initializer(stddev=0.1)`."""

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, seed: Any = None,
                 dtype: Any = _dt.float32) -> None:
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _float_dtype(dtype, "random_normal_initializer")

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _float_dtype(dtype or self.dtype, "random_normal_initializer")
        return _random("random_normal", shape, dt, self.seed, mean=self.mean,
                       stddev=self.stddev)

    def get_config(self) -> dict[str, Any]:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed,
                "dtype": self.dtype.name}


class TruncatedNormal(RandomNormal):
    """Normal samples redrawn beyond two stddevs.

    Example:
        >>> tf.truncated_normal_initializer(stddev=0.1)
    """

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _float_dtype(dtype or self.dtype, "truncated_normal_initializer")
        return _random("truncated_normal", shape, dt, self.seed, mean=self.mean,
                       stddev=self.stddev)


class RandomUniform(Initializer):
    """Uniform samples in [minval, maxval). Example: `tf.random_uniform_initializer(-1, 1)`."""

    def __init__(self, minval: Any = 0, maxval: Any = None, seed: Any = None,
                 dtype: Any = _dt.float32) -> None:
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _dt.as_dtype(dtype or self.dtype).base_dtype
        maxval = self.maxval
        if maxval is None:
            maxval = 1 if dt.is_floating else None
        return _random("random_uniform", shape, dt, self.seed, minval=self.minval,
                       maxval=maxval)

    def get_config(self) -> dict[str, Any]:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed,
                "dtype": self.dtype.name}


def _compute_fans(shape: list[int]) -> tuple[float, float]:
    if not shape:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = float(np.prod(shape[:-2]))  # conv kernels: [h, w, in, out]
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """Samples scaled by fan-in/fan-out (He, LeCun, Glorot are special cases).

    Args:
        scale: positive scale factor.
        mode: "fan_in", "fan_out" or "fan_avg".
        distribution: "truncated_normal" (alias "normal"), "untruncated_normal"
            or "uniform".

    Example:
        >>> he = tf.variance_scaling_initializer(scale=2.0)
    """

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: Any = None,
                 dtype: Any = _dt.float32) -> None:
        if scale <= 0.0:
            raise ValueError(f"`scale` must be a positive float, got {scale!r}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument {mode!r}: expected fan_in, fan_out "
                             "or fan_avg")
        distribution = distribution.lower()
        if distribution not in ("normal", "uniform", "truncated_normal",
                                "untruncated_normal"):
            raise ValueError(f"Invalid `distribution` argument {distribution!r}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _float_dtype(dtype, "variance_scaling_initializer")

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _float_dtype(dtype or self.dtype, "variance_scaling_initializer")
        dims = _dims(shape)
        fan_in, fan_out = _compute_fans(dims)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        scale = self.scale / max(1.0, fan[self.mode])
        if self.distribution in ("normal", "truncated_normal"):
            # Std of a unit normal truncated to [-2, 2] is ~0.8796; undo that shrinkage.
            stddev = math.sqrt(scale) / 0.87962566103423978
            return _random("truncated_normal", dims, dt, self.seed, mean=0.0, stddev=stddev)
        if self.distribution == "untruncated_normal":
            return _random("random_normal", dims, dt, self.seed, mean=0.0,
                           stddev=math.sqrt(scale))
        limit = math.sqrt(3.0 * scale)
        return _random("random_uniform", dims, dt, self.seed, minval=-limit, maxval=limit)

    def get_config(self) -> dict[str, Any]:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Uniform in +-sqrt(6 / (fan_in + fan_out)); get_variable's default for floats.

    Example:
        >>> tf.glorot_uniform_initializer(seed=1)
    """

    def __init__(self, seed: Any = None, dtype: Any = _dt.float32) -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Truncated normal with stddev sqrt(2 / (fan_in + fan_out)).

    Example:
        >>> tf.glorot_normal_initializer()
    """

    def __init__(self, seed: Any = None, dtype: Any = _dt.float32) -> None:
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


# TF1 spellings.
class Orthogonal(Initializer):
    """A random orthogonal matrix (scaled by `gain`), from the QR decomposition of a
    normal matrix; more than 2 dimensions are flattened to [prod(shape[:-1]), shape[-1]].

    Example:
        >>> tf.keras.layers.LSTM(8, recurrent_initializer="orthogonal")
    """

    def __init__(self, gain: float = 1.0, seed: Any = None, dtype: Any = _dt.float32) -> None:
        self.gain, self.seed = float(gain), seed
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dims = [int(d) for d in shape]
        if len(dims) < 2:
            raise ValueError(f"The tensor to initialize must be at least two-dimensional, "
                             f"got shape {dims}.")
        dt = _dt.as_dtype(dtype or self.dtype).base_dtype
        rows, cols = int(np.prod(dims[:-1])), dims[-1]
        flat = (max(rows, cols), min(rows, cols))
        q, r = qr(random_ops.random_normal(list(flat), dtype=dt, seed=self.seed))
        # Signs of r's diagonal make the distribution uniform over orthogonal matrices.
        eye = _constant(np.eye(flat[1]), dtype=dt)
        q = math_ops.multiply(q, math_ops.sign(math_ops.reduce_sum(
            math_ops.multiply(r, eye), axis=0)))
        if rows < cols:
            q = array_ops.transpose(q)
        return math_ops.multiply(array_ops.reshape(q, dims), self.gain)

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "seed": self.seed}


def he_normal(seed: Any = None) -> VarianceScaling:
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: Any = None) -> VarianceScaling:
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed: Any = None) -> VarianceScaling:
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed: Any = None) -> VarianceScaling:
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


class Identity(Initializer):
    """The identity matrix times `gain` (2-D shapes only; a non-square one gets ones on
    its leading diagonal).

    Example:
        >>> w = tf.get_variable("w", [8, 8], initializer=tf.initializers.identity())
    """

    def __init__(self, gain: float = 1.0, dtype: Any = _dt.float32) -> None:
        self.gain = float(gain)
        self.dtype = _dt.as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dims = _dims(shape)
        if len(dims) != 2:
            raise ValueError(f"The identity initializer can only make 2-D matrices, got "
                             f"shape {dims}.")
        dt = _float_dtype(dtype or self.dtype, "Identity initializer")
        return _constant(np.eye(dims[0], dims[1]) * self.gain, dtype=dt)

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "dtype": self.dtype.name}


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
random_uniform_initializer = RandomUniform
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
orthogonal_initializer = Orthogonal
identity_initializer = Identity

# `tf.initializers.*` spellings.
zeros = Zeros
ones = Ones
constant = Constant
random_normal = RandomNormal
truncated_normal = TruncatedNormal
random_uniform = RandomUniform
variance_scaling = VarianceScaling
glorot_uniform = GlorotUniform
glorot_normal = GlorotNormal
orthogonal = Orthogonal
identity = Identity


def global_variables() -> Any:
    """`tf.initializers.global_variables()`: same as tf.global_variables_initializer()."""
    return global_variables_initializer()


def local_variables() -> Any:
    """`tf.initializers.local_variables()`: same as tf.local_variables_initializer()."""
    return local_variables_initializer()


def variables(var_list: Any, name: str = "init") -> Any:
    """`tf.initializers.variables(var_list)`: same as tf.variables_initializer."""
    return variables_initializer(var_list, name)
