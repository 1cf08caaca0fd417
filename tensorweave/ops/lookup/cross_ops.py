"""SparseFeatureCross stanza: TF's SparseCross with hashed_output=True, as one op.

Each row's output holds one id per combination of that row's features (the last input
varying fastest). An id starts from `hash_key` and folds in each feature with
FingerprintCat64, where a string feature contributes its Fingerprint64 and an int64
feature itself; the result is taken mod `num_buckets` (or mod int64 max when 0). These
are TF's SparseCross ids (tensorflow/core/kernels/sparse_cross_op.cc), so crossed
columns hash to the same buckets as in TF. Named apart from TF's op because TF's takes
its inputs as typed lists plus dense inputs; feature columns pass only sparse ones.

Example:
    >>> sparse_feature_cross([sp_a, sp_b], num_buckets=1000)   # SparseTensor of ids
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.kernels.fingerprint import fingerprints

DEFAULT_HASH_KEY = 0xDECAFCAFFE  # TF's default for sparse_cross_hashed / crossed_column
_INT64_MAX = (1 << 63) - 1
_KMUL = np.uint64(0xC6A4A7935BD1E995)  # FingerprintCat64's multiplier

cross_op = define_op("SparseFeatureCross", inputs=("indices*", "values*", "shapes*"),
                     attrs={"num_buckets": REQUIRED, "hash_key": DEFAULT_HASH_KEY})


@cross_op.shape
def _(indices: list[Tensor], values: list[Tensor], shapes: list[Tensor], *,
      num_buckets: int, hash_key: int) -> Any:
    if not (len(indices) == len(values) == len(shapes)) or not indices:
        raise ValueError(f"SparseFeatureCross needs as many indices, values and shapes (at "
                         f"least 1), got {len(indices)}, {len(values)}, {len(shapes)}")
    for v in values:
        if v.dtype.base_dtype not in (_dt.string, _dt.int64, _dt.int32):
            raise TypeError(f"SparseFeatureCross: values {v.name} must be string or int64, "
                            f"got {v.dtype.name}")
    if int(num_buckets) < 0:
        raise ValueError(f"SparseFeatureCross: num_buckets must be >= 0, got {num_buckets}")
    return [(_dt.int64, TensorShape([None, 2])), (_dt.int64, TensorShape([None])),
            (_dt.int64, TensorShape([2]))]


def _features(idx: Any, vals: Any, batch: int, which: int) -> tuple[Any, Any, Any]:
    """One input's features as uint64, grouped by row (stable: a row keeps its order),
    with each row's count and the offset of its first feature."""
    idx = np.asarray(idx).astype(np.int64).reshape(-1, 2) if np.size(idx) else \
        np.zeros((0, 2), np.int64)
    vals = np.asarray(vals).reshape(-1)
    rows = idx[:, 0]
    bad = (rows < 0) | (rows >= batch)
    if bad.any():
        raise errors.InvalidArgumentError(None, None, f"SparseFeatureCross: input {which} "
                                          f"has row {int(rows[bad][0])} outside batch {batch}")
    if vals.dtype.kind in "OSU":
        feats = fingerprints(vals)
    else:
        feats = vals.astype(np.int64).view(np.uint64)
    order = rows.argsort(kind="stable")
    counts = np.bincount(rows, minlength=batch).astype(np.int64)
    return feats[order], counts, np.cumsum(counts) - counts


def _cat64(h: Any, feat: Any) -> Any:
    """FingerprintCat64 of arrays (uint64 arithmetic wraps mod 2**64 as TF's does)."""
    def shift_mix(v: Any) -> Any:
        return v ^ (v >> np.uint64(47))
    result = h ^ _KMUL
    result ^= shift_mix(feat * _KMUL) * _KMUL
    result = shift_mix(result * _KMUL) * _KMUL
    return shift_mix(result)


@cross_op.kernel("CPU")
def _(indices: list[Any], values: list[Any], shapes: list[Any], *, num_buckets: int,
      hash_key: int) -> Any:
    batches = {int(np.asarray(s).reshape(-1)[0]) for s in shapes}
    if len(batches) != 1:
        raise errors.InvalidArgumentError(None, None, f"SparseFeatureCross: inputs have "
                                          f"different batch sizes {sorted(batches)}")
    batch = batches.pop()
    inputs = [_features(i, v, batch, k) for k, (i, v) in enumerate(zip(indices, values))]
    mod = np.uint64(int(num_buckets) if num_buckets > 0 else _INT64_MAX)
    if batch and all((c == 1).all() for _, c, _ in inputs):
        return _one_each(inputs, batch, hash_key, mod)
    # Row r has prod_k counts_k[r] combinations; combination n picks, from input k, the
    # digit (n // stride_k[r]) % counts_k[r], the last input varying fastest.
    totals = np.prod([c for _, c, _ in inputs], axis=0) if batch else np.zeros(0, np.int64)
    rows = np.repeat(np.arange(batch, dtype=np.int64), totals)
    n = np.arange(len(rows), dtype=np.int64) - np.repeat(np.cumsum(totals) - totals, totals)
    h = np.full(len(rows), int(hash_key) & ((1 << 64) - 1), dtype=np.uint64)
    stride = np.ones(len(rows), dtype=np.int64)
    picks = []
    for feats, counts, starts in reversed(inputs):
        c = counts[rows]
        picks.append(feats[starts[rows] + (n // stride) % np.maximum(c, 1)])
        stride = stride * c
    with np.errstate(over="ignore"):
        for feat in reversed(picks):
            h = _cat64(h, feat)
    width = int(totals.max()) if len(rows) else 0
    return (np.stack([rows, n], axis=1), (h % mod).astype(np.int64),
            np.asarray([batch, width], np.int64))


def _one_each(inputs: list[tuple[Any, Any, Any]], batch: int, hash_key: int, mod: Any
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cross when every row has one feature per input (single-valued columns, the
    usual case): one combination per row, no index arithmetic."""
    h = np.full(batch, int(hash_key) & ((1 << 64) - 1), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for feats, _, _ in inputs:
            h = _cat64(h, feats)
    rows = np.arange(batch, dtype=np.int64)
    return (np.stack([rows, np.zeros(batch, np.int64)], axis=1), (h % mod).astype(np.int64),
            np.asarray([batch, 1], np.int64))


cross_op.no_gradient()


def sparse_feature_cross(inputs: list[SparseTensor], num_buckets: int = 0,
                         hash_key: int | None = None, name: str | None = None) -> SparseTensor:
    """Hashed cross of 2-D SparseTensors (TF's `sparse_cross_hashed` ids).

    Example:
        >>> sparse_feature_cross([sp_words, sp_ids], num_buckets=100)
    """
    op = create_op(
        "SparseFeatureCross", [[s.indices for s in inputs], [s.values for s in inputs],
           [s.dense_shape for s in inputs]],
        {"num_buckets": int(num_buckets),
         "hash_key": DEFAULT_HASH_KEY if hash_key is None else int(hash_key)},
        name=name or "SparseFeatureCross")
    return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])
