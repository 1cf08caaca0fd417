"""`tf.keras.initializers`: the TF initializers plus Keras's names and defaults.

Keras's RandomUniform/RandomNormal/TruncatedNormal default to +-0.05 / stddev 0.05
(TF's to [0, 1) / stddev 1); He and LeCun initializers are VarianceScaling presets.

Example:
    >>> tf.keras.layers.Dense(4, kernel_initializer="he_normal")
    >>> tf.keras.initializers.get("zeros")
"""
from __future__ import annotations

from typing import Any


from tensorweave.framework import dtypes as _dt
from tensorweave.state import init_ops
from tensorweave.state.init_ops import (
    Constant as Constant, GlorotNormal as GlorotNormal, GlorotUniform as GlorotUniform,
    Identity as Identity, Initializer as Initializer, Ones as Ones, Orthogonal as Orthogonal,
    VarianceScaling as VarianceScaling, Zeros as Zeros, he_normal as he_normal,
    he_uniform as he_uniform, identity as identity, lecun_normal as lecun_normal,
    lecun_uniform as lecun_uniform)


class RandomUniform(init_ops.RandomUniform):
    """Uniform in [minval, maxval), by default [-0.05, 0.05)."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: Any = None,
                 dtype: Any = _dt.float32) -> None:
        super().__init__(minval, maxval, seed, dtype)


class RandomNormal(init_ops.RandomNormal):
    """Normal(mean, stddev), by default stddev 0.05."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: Any = None,
                 dtype: Any = _dt.float32) -> None:
        super().__init__(mean, stddev, seed, dtype)


class TruncatedNormal(init_ops.TruncatedNormal):
    """Truncated Normal(mean, stddev), by default stddev 0.05."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: Any = None,
                 dtype: Any = _dt.float32) -> None:
        super().__init__(mean, stddev, seed, dtype)


zeros, ones, constant = Zeros, Ones, Constant
glorot_uniform, glorot_normal = GlorotUniform, GlorotNormal
random_uniform, uniform = RandomUniform, RandomUniform
random_normal, normal = RandomNormal, RandomNormal
truncated_normal = TruncatedNormal
variance_scaling = VarianceScaling
orthogonal = Orthogonal

_BY_NAME: dict[str, Any] = {
    "zeros": Zeros, "zero": Zeros, "ones": Ones, "one": Ones, "constant": Constant,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
    "uniform": RandomUniform, "random_uniform": RandomUniform,
    "normal": RandomNormal, "random_normal": RandomNormal,
    "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
    "orthogonal": Orthogonal,
    "he_normal": he_normal, "he_uniform": he_uniform,
    "lecun_normal": lecun_normal, "lecun_uniform": lecun_uniform}


def get(identifier: Any) -> Any:
    """An initializer from a name ("glorot_uniform"), a config dict, an instance or None.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        cls = _BY_NAME.get(str(identifier.get("class_name", "")).lower())
        if cls is None:
            raise ValueError(f"Unknown initializer config {identifier!r}.")
        return cls(**identifier.get("config", {}))
    if isinstance(identifier, str):
        make = _BY_NAME.get(identifier) or _BY_NAME.get(identifier.lower())
        if make is None:
            raise ValueError(f"Unknown initializer: {identifier!r}; use one of "
                             f"{sorted(_BY_NAME)} or an initializer object.")
        return make()
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")
