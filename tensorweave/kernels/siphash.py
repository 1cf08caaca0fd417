"""TF's other string hashes: SipHash-2-4 with a 128-bit key (`StrongKeyedHash`, behind
`StringToHashBucketStrong` and `StrongHashSpec`) and TF's legacy `Hash64` (MurmurHash64A
with TF's seed, behind `StringToHashBucket`); ids equal TF's.

Example:
    >>> siphash24(1, 2, b"hello") % 1000003   # 430577, as tf.strings.to_hash_bucket_strong
    >>> hash64(b"hello") % 1000003            # 546981, as tf.strings.to_hash_bucket
"""
from __future__ import annotations

from typing import Any

import numpy as np

_M = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _M


def siphash24(k0: int, k1: int, data: bytes) -> int:
    """The 64-bit SipHash-2-4 of `data` under the key (k0, k1)."""
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n: int) -> None:
        for _ in range(n):
            v[0] = (v[0] + v[1]) & _M
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & _M
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & _M
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & _M
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[2] = _rotl(v[2], 32)

    n = len(data)
    end = n - n % 8
    for i in range(0, end, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    last = ((n & 0xFF) << 56) | int.from_bytes(data[end:], "little")
    v[3] ^= last
    rounds(2)
    v[0] ^= last
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def strong_hash_buckets(x: Any, num_buckets: int, key: tuple[int, int]) -> np.ndarray:
    """int64 bucket ids SipHash(key, s) % num_buckets for every string of `x`."""
    arr = np.asarray(x, dtype=object)
    k0, k1 = int(key[0]) & _M, int(key[1]) & _M
    flat = [siphash24(k0, k1, s if isinstance(s, bytes) else str(s).encode("utf-8"))
            % int(num_buckets) for s in arr.reshape(-1).tolist()]
    return np.asarray(flat, dtype=np.int64).reshape(arr.shape)


def hash64(data: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TF's legacy `Hash64` (MurmurHash64A; TF's default seed)."""
    m, r = 0xC6A4A7935BD1E995, 47
    n = len(data)
    h = (seed ^ (n * m)) & _M
    end = n - n % 8
    for i in range(0, end, 8):
        k = (int.from_bytes(data[i:i + 8], "little") * m) & _M
        k = ((k ^ (k >> r)) * m) & _M
        h = ((h ^ k) * m) & _M
    tail = data[end:]
    if tail:
        for j in range(len(tail) - 1, -1, -1):
            h ^= tail[j] << (8 * j)
        h = (h * m) & _M
    h = ((h ^ (h >> r)) * m) & _M
    return h ^ (h >> r)


def legacy_hash_buckets(x: Any, num_buckets: int) -> np.ndarray:
    """int64 bucket ids Hash64(s) % num_buckets for every string of `x`."""
    arr = np.asarray(x, dtype=object)
    flat = [hash64(s if isinstance(s, bytes) else str(s).encode("utf-8")) % int(num_buckets)
            for s in arr.reshape(-1).tolist()]
    return np.asarray(flat, dtype=np.int64).reshape(arr.shape)
