"""Random ops: random_normal, truncated_normal, random_uniform, random_shuffle, and
TF 1.x seeding (`set_random_seed`, `get_seed`).

Each random op keeps a NumPy Generator in its kernel context (`ctx.state`),
created on the op's first run in a session from its (graph seed, op seed) pair:
consecutive runs draw new numbers, and a fresh session on the same graph
replays the same sequence. With no seed at all the generator is seeded from
OS entropy.

Example:
    >>> tf.set_random_seed(1234)
    >>> x = tf.random_normal([2, 3], stddev=0.1)
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.graph_defaults import name_scope
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.array.core_ops import _int_tensor, shape_from_tensor
from tensorweave.ops.math import math_ops

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def _truncate_seed(seed: int) -> int:
    return int(seed) % _MAXINT32  # seeds are stored as int32-range attrs


def set_random_seed(seed: int | None) -> None:
    """`tf.set_random_seed`: sets the graph-level seed of the default graph.

    Ops created afterwards without their own seed get a deterministic op seed
    derived from the graph, so a new session replays the same random sequence.

    Example:
        >>> tf.set_random_seed(42)
        >>> a = tf.random_uniform([1])  # same values in every fresh session
    """
    get_default_graph().seed = seed


def get_seed(op_seed: int | None) -> tuple[int | None, int | None]:
    """The (graph seed, op seed) pair an op should use, with TF 1.x rules.

    - graph seed and op seed set: both are used;
    - only the graph seed: the op seed is derived from the number of ops already
      in the graph (so it is deterministic for a deterministic graph build);
    - only the op seed: the graph seed defaults to 87654321;
    - neither: (None, None), meaning nondeterministic.

    Example:
        >>> tf.set_random_seed(1); tf.get_seed(7)
        (1, 7)
    """
    g = get_default_graph()
    graph_seed = g.seed
    if graph_seed is not None:
        if op_seed is None:
            op_seed = len(g.get_operations())
        seeds: tuple[Any, Any] = (_truncate_seed(graph_seed), _truncate_seed(op_seed))
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, _truncate_seed(op_seed))
    else:
        return None, None
    # (0, 0) would read as "unseeded" in TF's kernels; keep it distinct.
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


def _rng(ctx: Any, seed: int | None, seed2: int | None) -> tuple[np.random.Generator, Any]:
    st = ctx.state
    if "rng" not in st:
        st["rng"] = np.random.default_rng(None if seed is None and seed2 is None
                                          else [seed or 0, seed2 or 0])
        st["lock"] = threading.Lock()
    return st["rng"], st["lock"]


def _shape_list(shape: Any, what: str) -> list[int]:
    dims = [int(d) for d in np.asarray(shape).reshape(-1)]
    if any(d < 0 for d in dims):
        raise errors.InvalidArgumentError(None, None, f"{what}: shape {dims} must be >= 0")
    return dims


def _check_shape_input(shp: Tensor, what: str) -> TensorShape:
    if shp.shape.ndims not in (None, 1):
        raise ValueError(f"{what}: shape must be a 1-D integer tensor, got shape {shp.shape}")
    return shape_from_tensor(shp)


def _define_float_random(op_type: str, sample: Any) -> Any:
    d = define_op(op_type, inputs=("shape",),
                  attrs={"dtype": _dt.float32, "seed": None, "seed2": None}, stateful=True)

    @d.shape
    def _(shp: Tensor, *, dtype: _dt.DType, seed: Any, seed2: Any) -> Any:
        if not dtype.is_floating:
            raise TypeError(f"{op_type}: dtype must be a float type, got {dtype.name}")
        return dtype, _check_shape_input(shp, op_type)

    @d.kernel("CPU", kind="context")
    def _(ctx: Any, step: Any, shp: Any, *, dtype: _dt.DType, seed: Any, seed2: Any) -> Any:
        rng, lock = _rng(ctx, seed, seed2)
        dims = _shape_list(shp, op_type)
        with lock:
            return sample(rng, dims, dtype.as_numpy_dtype)

    d.no_gradient()
    return d


_CHUNK = 1 << 20   # values drawn (as float64) at a time


def _chunked(draw: Any, dims: list[int], out_dtype: Any,
             bad: np.ndarray | None = None) -> np.ndarray:
    """`draw(n)`'s float64 values, in order, written into a new `out_dtype` array chunk by
    chunk: the same values a single draw gives (the generator's stream is sequential),
    without a whole float64 temporary, which doubled an initializer's memory for float32
    and which the allocator then kept (a 400 MiB model's ps held 2 GiB). With `bad`, its
    flat entries are set where the float64 value lies outside 2 standard deviations."""
    out = np.empty(dims, out_dtype)
    flat = out.reshape(-1)
    flat_bad = bad.reshape(-1) if bad is not None else None
    for start in range(0, flat.size, _CHUNK):
        values = draw(min(_CHUNK, flat.size - start))
        flat[start:start + len(values)] = values
        if flat_bad is not None:
            flat_bad[start:start + len(values)] = np.abs(values) > 2.0
    return out


def _truncated(rng: np.random.Generator, dims: list[int], out_dtype: Any) -> np.ndarray:
    # Resample every value outside 2 standard deviations until none is left (judged on
    # the float64 values, as drawn).
    bad = np.empty(dims, bool)
    out = _chunked(rng.standard_normal, dims, out_dtype, bad)
    while bad.any():
        idx = np.flatnonzero(bad)
        again = rng.standard_normal(len(idx))
        out.reshape(-1)[idx] = again
        bad.reshape(-1)[idx] = np.abs(again) > 2.0
    return out


normal_op = _define_float_random(
    "RandomStandardNormal", lambda rng, dims, dt: _chunked(rng.standard_normal, dims, dt))
truncated_op = _define_float_random("TruncatedNormal", _truncated)
uniform_op = _define_float_random(
    "RandomUniform", lambda rng, dims, dt: _chunked(rng.random, dims, dt))

uniform_int_op = define_op("RandomUniformInt", inputs=("shape", "minval", "maxval"),
                           attrs={"seed": None, "seed2": None}, stateful=True)


@uniform_int_op.shape
def _(shp: Tensor, lo: Tensor, hi: Tensor, *, seed: Any, seed2: Any) -> Any:
    if lo.dtype.base_dtype != hi.dtype.base_dtype:
        raise TypeError(f"random_uniform: minval ({lo.dtype.name}) and maxval "
                        f"({hi.dtype.name}) must have the same dtype")
    for nm, t in (("minval", lo), ("maxval", hi)):
        if t.shape.ndims not in (None, 0):
            raise ValueError(f"random_uniform: {nm} must be a scalar, got shape {t.shape}")
    return lo.dtype.base_dtype, _check_shape_input(shp, "random_uniform")


@uniform_int_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, shp: Any, lo: Any, hi: Any, *, seed: Any, seed2: Any) -> Any:
    rng, lock = _rng(ctx, seed, seed2)
    lo_v, hi_v = int(lo), int(hi)
    if lo_v >= hi_v:
        raise errors.InvalidArgumentError(None, None, f"random_uniform: need minval < maxval, "
                                          f"got minval={lo_v}, maxval={hi_v}")
    with lock:
        out = rng.integers(lo_v, hi_v, size=_shape_list(shp, "random_uniform"))
    return out.astype(np.asarray(lo).dtype)


uniform_int_op.no_gradient()

shuffle_op = define_op("RandomShuffle", inputs=("value",), attrs={"seed": None, "seed2": None},
                       stateful=True)


@shuffle_op.shape
def _(value: Tensor, *, seed: Any, seed2: Any) -> Any:
    return value.dtype.base_dtype, value.shape


@shuffle_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, value: Any, *, seed: Any, seed2: Any) -> Any:
    rng, lock = _rng(ctx, seed, seed2)
    value = np.asarray(value)
    if value.ndim == 0:
        return value
    with lock:
        perm = rng.permutation(value.shape[0])
    return value[perm]


shuffle_op.no_gradient()


def _seed_attrs(seed: int | None) -> dict[str, Any]:
    s1, s2 = get_seed(seed)
    return {"seed": s1, "seed2": s2}


def _float_random(op_type: str, shape: Tensor, dtype: _dt.DType, seed: int | None) -> Tensor:
    attrs = {"dtype": dtype, **_seed_attrs(seed)}
    return create_op(op_type, [shape], attrs, None).outputs[0]


def _normal(op_type: str, default_name: str, shape: Any, mean: Any, stddev: Any, dtype: Any,
            seed: int | None, name: str | None) -> Tensor:
    # TF 1.x's layout, which users see in graphs: <scope>/shape, /mean, /stddev, the
    # sampling op, /mul, and the final add named after the scope itself.
    dt = _dt.as_dtype(dtype).base_dtype
    with name_scope(name, default_name, [shape, mean, stddev]) as scope:
        shp = _int_tensor(shape, name="shape")
        mean_t = convert_to_tensor(mean, dtype=dt, name="mean")
        stddev_t = convert_to_tensor(stddev, dtype=dt, name="stddev")
        sample = _float_random(op_type, shp, dt, seed)
        return math_ops.add(sample * stddev_t, mean_t, name=scope)


def random_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
                  seed: int | None = None, name: str | None = None) -> Tensor:
    """`tf.random_normal`: samples from N(mean, stddev^2).

    Args:
        shape: a list/tuple of ints or a 1-D int32 tensor.
        mean, stddev: Python numbers or scalar tensors.
        dtype: a float dtype.
        seed: the op seed (see `get_seed`).

    Example:
        >>> w = tf.random_normal([784, 10], stddev=0.01, seed=1)
    """
    return _normal("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype, seed,
                   name)


def truncated_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
                     seed: int | None = None, name: str | None = None) -> Tensor:
    """`tf.truncated_normal`: N(mean, stddev^2) with values beyond 2 stddev resampled.

    Example:
        >>> w = tf.truncated_normal([3, 3], stddev=0.1)  # all |w| <= 0.2
    """
    return _normal("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype, seed,
                   name)


def random_uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = _dt.float32,
                   seed: int | None = None, name: str | None = None) -> Tensor:
    """`tf.random_uniform`: samples uniformly from [minval, maxval).

    Float dtypes default to maxval=1; integer dtypes need an explicit maxval.

    Raises:
        ValueError: for an integer dtype without maxval.

    Example:
        >>> tf.random_uniform([5], 0, 10, dtype=tf.int32, seed=3)
    """
    dt = _dt.as_dtype(dtype).base_dtype
    if dt.is_integer and maxval is None:
        raise ValueError(f"random_uniform with integer dtype {dt.name} needs an explicit "
                         "maxval (values are drawn from [minval, maxval)).")
    if not dt.is_integer and not dt.is_floating:
        raise TypeError(f"random_uniform: dtype must be a float or integer type, got {dt.name}")
    if maxval is None:
        maxval = 1
    # TF 1.x's layout: random_uniform/shape, /min, /max, the sampling op, /sub, /mul and
    # the final add (or the RandomUniformInt op) named after the scope itself.
    with name_scope(name, "random_uniform", [shape, minval, maxval]) as scope:
        shp = _int_tensor(shape, name="shape")
        lo = convert_to_tensor(minval, dtype=dt, name="min")
        hi = convert_to_tensor(maxval, dtype=dt, name="max")
        if dt.is_integer:
            return create_op("RandomUniformInt", [shp, lo, hi], _seed_attrs(seed),
                           scope).outputs[0]
        sample = _float_random("RandomUniform", shp, dt, seed)
        return math_ops.add(sample * (hi - lo), lo, name=scope)


def random_shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """`tf.random_shuffle`: a random permutation of `value` along its first dimension.

    Example:
        >>> tf.random_shuffle(tf.range(5), seed=1)
    """
    with name_scope(name, "RandomShuffle", [value]) as scope:
        value = convert_to_tensor(value, name="value")
        return create_op("RandomShuffle", [value], _seed_attrs(seed), scope).outputs[0]


__all__ = ["random_normal", "truncated_normal", "random_uniform", "random_shuffle",
           "set_random_seed", "get_seed", "DEFAULT_GRAPH_SEED"]
