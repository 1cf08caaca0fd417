"""StringToHashBucketFast, StringToHashBucketStrong, StringToHashBucket and AsString stanzas.

Example:
    >>> tf.strings.to_hash_bucket_fast(["hello"], 10)   # Fingerprint64("hello") % 10
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import REQUIRED, create_tensor, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.kernels.fingerprint import hash_buckets
from tensorweave.kernels.siphash import legacy_hash_buckets, strong_hash_buckets

# ---- StringToHashBucketFast -------------------------------------------------------------
hash_bucket_op = define_op("StringToHashBucketFast", inputs=("input",),
                           attrs={"num_buckets": REQUIRED})


@hash_bucket_op.shape
def _(x: Tensor, *, num_buckets: int) -> Any:
    if x.dtype.base_dtype != _dt.string:
        raise TypeError(f"StringToHashBucketFast: input {x.name} must be string, got "
                        f"{x.dtype.name}; convert numbers with tf.as_string first")
    if int(num_buckets) < 1:
        raise ValueError(f"StringToHashBucketFast: num_buckets must be >= 1, got {num_buckets}")
    return _dt.int64, x.shape


@hash_bucket_op.kernel("CPU")
def _(x: Any, *, num_buckets: int) -> Any:
    return hash_buckets(x, num_buckets)


hash_bucket_op.no_gradient()


def string_to_hash_bucket_fast(input: Any, num_buckets: int,  # noqa: A002 (TF's name)
                               name: str | None = None) -> Tensor:
    """Hashes strings into `num_buckets` buckets with farmhash Fingerprint64 (as TF).

    Example:
        >>> tf.string_to_hash_bucket_fast(tf.constant(["a", "b"]), 100)
    """
    x = input if isinstance(input, Tensor) else convert_to_tensor(input, dtype=_dt.string)
    return create_tensor(
        "StringToHashBucketFast", [x], {"num_buckets": int(num_buckets)},
        name=name or "StringToHashBucketFast")


# ---- StringToHashBucketStrong ------------------------------------------------------------
strong_bucket_op = define_op("StringToHashBucketStrong", inputs=("input",),
                             attrs={"num_buckets": REQUIRED, "key": REQUIRED})


@strong_bucket_op.shape
def _(x: Tensor, *, num_buckets: int, key: Any) -> Any:
    if x.dtype.base_dtype != _dt.string:
        raise TypeError(f"StringToHashBucketStrong: input {x.name} must be string, got "
                        f"{x.dtype.name}; convert numbers with tf.as_string first")
    if int(num_buckets) < 1:
        raise ValueError(f"StringToHashBucketStrong: num_buckets must be >= 1, got "
                         f"{num_buckets}")
    if len(key) != 2:
        raise ValueError(f"StringToHashBucketStrong: key must have size 2, got {len(key)}")
    return _dt.int64, x.shape


@strong_bucket_op.kernel("CPU")
def _(x: Any, *, num_buckets: int, key: Any) -> Any:
    return strong_hash_buckets(x, num_buckets, (int(key[0]), int(key[1])))


strong_bucket_op.no_gradient()


def string_to_hash_bucket_strong(input: Any, num_buckets: int, key: Any,  # noqa: A002
                                 name: str | None = None) -> Tensor:
    """Hashes strings into `num_buckets` buckets with SipHash-2-4 keyed by the two ints of
    `key` (TF's StringToHashBucketStrong: slower than the fast hash, but hard to collide
    on purpose without the key).

    Example:
        >>> tf.string_to_hash_bucket_strong(tf.constant(["hello"]), 1000003, [1, 2])
        ...                                                          # [430577]
    Raises:
        ValueError: a key that is not two integers.
    """
    key = list(key)
    if len(key) != 2 or not all(isinstance(k, (int, np.integer)) for k in key):
        raise ValueError(f"key must be a list of two integers, got {key!r}")
    x = input if isinstance(input, Tensor) else convert_to_tensor(input, dtype=_dt.string)
    return create_tensor(
        "StringToHashBucketStrong", [x], {"num_buckets": int(num_buckets),
                          "key": [int(k) for k in key]},
        name=name or "StringToHashBucketStrong")


# ---- StringToHashBucket (TF's legacy hash) ----------------------------------------------
legacy_bucket_op = define_op("StringToHashBucket", inputs=("string_tensor",),
                             attrs={"num_buckets": REQUIRED})


@legacy_bucket_op.shape
def _(x: Tensor, *, num_buckets: int) -> Any:
    if x.dtype.base_dtype != _dt.string:
        raise TypeError(f"StringToHashBucket: input {x.name} must be string, got "
                        f"{x.dtype.name}; convert numbers with tf.as_string first")
    if int(num_buckets) < 1:
        raise ValueError(f"StringToHashBucket: num_buckets must be >= 1, got {num_buckets}")
    return _dt.int64, x.shape


@legacy_bucket_op.kernel("CPU")
def _(x: Any, *, num_buckets: int) -> Any:
    return legacy_hash_buckets(x, num_buckets)


legacy_bucket_op.no_gradient()


def string_to_hash_bucket(string_tensor: Any = None, num_buckets: int | None = None,
                          name: str | None = None, input: Any = None  # noqa: A002
                          ) -> Tensor:
    """Hashes strings into `num_buckets` buckets with TF's legacy Hash64 (TF 1.x's
    `tf.string_to_hash_bucket`; prefer the faster `string_to_hash_bucket_fast`).
    `input` is TF's other name for `string_tensor`.

    Example:
        >>> tf.string_to_hash_bucket(tf.constant(["hello"]), 1000003)   # [546981]

    Raises:
        ValueError: no strings, both spellings of them, or no num_buckets.
    """
    if (string_tensor is None) == (input is None):
        raise ValueError("Give the strings once: string_tensor (or its other name input).")
    if num_buckets is None:
        raise ValueError("string_to_hash_bucket needs num_buckets.")
    string_tensor = input if string_tensor is None else string_tensor
    x = string_tensor if isinstance(string_tensor, Tensor) else \
        convert_to_tensor(string_tensor, dtype=_dt.string)
    return create_tensor(
        "StringToHashBucket", [x], {"num_buckets": int(num_buckets)},
        name=name or "StringToHashBucket")


# ---- AsString ---------------------------------------------------------------------------
as_string_op = define_op("AsString", inputs=("input",),
                         attrs={"precision": -1, "scientific": False, "shortest": False,
                                "width": -1, "fill": ""})


@as_string_op.shape
def _(x: Tensor, **_attrs: Any) -> Any:
    dt = x.dtype.base_dtype
    if not (dt.is_integer or dt.is_floating or dt == _dt.bool):
        raise TypeError(f"AsString: input {x.name} has unsupported dtype {dt.name}")
    return _dt.string, x.shape


def _format(v: Any, precision: int, scientific: bool, shortest: bool, width: int,
            fill: str) -> bytes:
    if isinstance(v, (bool, np.bool_)):
        text = "true" if v else "false"
    elif isinstance(v, (int, np.integer)):
        text = str(int(v))
    else:
        kind = "e" if scientific else ("g" if shortest else "f")
        text = f"{float(v):.{precision if precision >= 0 else 6}{kind}}"
    if width > 0:
        text = text.rjust(width, fill or " ")
    return text.encode("utf-8")


@as_string_op.kernel("CPU")
def _(x: Any, *, precision: int, scientific: bool, shortest: bool, width: int,
      fill: str) -> Any:
    arr = np.asarray(x)
    if arr.dtype.kind in "iu" and width <= 0:  # the common case (ids): plain decimals
        out = [b"%d" % v for v in arr.reshape(-1).tolist()]
    else:
        out = [_format(v, precision, scientific, shortest, width, fill)
               for v in arr.reshape(-1)]
    return np.asarray(out, dtype=object).reshape(arr.shape)


as_string_op.no_gradient()


def as_string(input: Any, precision: int = -1, scientific: bool = False,  # noqa: A002
              shortest: bool = False, width: int = -1, fill: str = "",
              name: str | None = None) -> Tensor:
    """Converts each number to its decimal string (ints as `str(int)`, as TF).

    Example:
        >>> tf.as_string(tf.constant([1, 22]))   # [b"1", b"22"]
    """
    x = convert_to_tensor(input)
    attrs = {"precision": precision, "scientific": scientific, "shortest": shortest,
             "width": width, "fill": fill}
    return create_tensor("AsString", [x], attrs,
                         name=name or "AsString")
