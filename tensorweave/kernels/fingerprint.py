"""TF's string fingerprints: farmhash Fingerprint64 and FingerprintCat64.

Real TF hashes feature strings with farmhash's Fingerprint64 (stable across releases
and platforms), so ids computed here equal the ids TF computes for the same strings.
"""
from __future__ import annotations

from typing import Any

import farmhash
import numpy as np

_MASK = (1 << 64) - 1
_KMUL = 0xC6A4A7935BD1E995


def fingerprint64(value: Any) -> int:
    """farmhash Fingerprint64 of a str/bytes value, as an unsigned 64-bit int."""
    data = value if isinstance(value, bytes) else str(value).encode("utf-8")
    return int(farmhash.fingerprint64(data))


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def fingerprint_cat64(fp1: int, fp2: int) -> int:
    """TF's FingerprintCat64 (tensorflow/core/lib/hash): combines two fingerprints."""
    result = fp1 ^ _KMUL
    result ^= (_shift_mix((fp2 * _KMUL) & _MASK) * _KMUL) & _MASK
    result = (result * _KMUL) & _MASK
    result = (_shift_mix(result) * _KMUL) & _MASK
    return _shift_mix(result)


# Feature values repeat (users, items, words): their fingerprints are remembered, up to
# a bound, so that a stream of ever-new ids cannot grow the table without end.
_CACHE: dict[Any, int] = {}
_CACHE_LIMIT = 1 << 18


def _miss(value: Any) -> int:
    fp = fingerprint64(value)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[value] = fp
    return fp


# Each value's bucket, per bucket count (StringToHashBucketFast): a batch of known
# values becomes its int64 buckets in one C-level pass (no uint64 conversion, no mod).
_BUCKETS: dict[int, dict[Any, int]] = {}


def hash_buckets(values: np.ndarray, num_buckets: int) -> np.ndarray:
    """Fingerprint64 of every string in `values` mod `num_buckets`, as int64."""
    table = _BUCKETS.setdefault(int(num_buckets), {})
    arr = np.asarray(values, dtype=object)
    flat = arr.reshape(-1).tolist()
    try:
        return np.fromiter(map(table.__getitem__, flat), np.int64, len(flat)).reshape(
            arr.shape)
    except KeyError:
        if len(table) >= _CACHE_LIMIT:
            table.clear()
        out = (fingerprints(arr) % np.uint64(num_buckets)).astype(np.int64)
        table.update(zip(flat, out.reshape(-1).tolist()))
        return out


def fingerprints(values: np.ndarray) -> np.ndarray:
    """Fingerprint64 of every string in `values`, as uint64, in the same shape."""
    flat = np.asarray(values, dtype=object).reshape(-1).tolist()
    try:  # every value known (the usual batch): one C-level pass
        out = np.fromiter(map(_CACHE.__getitem__, flat), np.uint64, len(flat))
    except KeyError:
        get = _CACHE.get
        out = np.asarray([get(v) or _miss(v) for v in flat], dtype=np.uint64)
    return out.reshape(np.shape(values))
