"""VocabularyLookup stanza: ids of keys in an in-graph vocabulary list.

One op for what TF builds with `index_table_from_tensor` (a HashTable plus, with
`num_oov_buckets`, a Fingerprint64 hash bucket): a key's id is its position in the
vocabulary; a key not in it gets `vocab_size + Fingerprint64(key) % num_oov_buckets`
when num_oov_buckets > 0 (integer keys hashed as their decimal string, as TF), else
`default_value`. The ids equal TF's.

Example:
    >>> vocabulary_lookup(tf.constant(["b", "z"]), ["a", "b"], default_value=-1)  # [1, -1]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import REQUIRED, create_tensor, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.kernels.fingerprint import fingerprint64

lookup_op = define_op("VocabularyLookup", inputs=("keys",),
                      attrs={"vocabulary": REQUIRED, "default_value": -1,
                             "num_oov_buckets": 0})


def _key(v: Any) -> Any:
    if isinstance(v, str):
        return v.encode("utf-8")
    return v if isinstance(v, bytes) else int(v)


@lookup_op.shape
def _(keys: Tensor, *, vocabulary: list[Any], default_value: int,
      num_oov_buckets: int) -> Any:
    dt = keys.dtype.base_dtype
    if dt != _dt.string and not dt.is_integer:
        raise TypeError(f"VocabularyLookup: keys {keys.name} must be string or integer, "
                        f"got {dt.name}")
    seen = [_key(v) for v in vocabulary]
    if len(set(seen)) != len(seen):
        dup = sorted({str(v) for v in seen if seen.count(v) > 1})
        raise ValueError(f"VocabularyLookup: vocabulary has duplicate keys {dup}")
    if int(num_oov_buckets) < 0:
        raise ValueError(f"VocabularyLookup: num_oov_buckets must be >= 0, got "
                         f"{num_oov_buckets}")
    return _dt.int64, keys.shape


@lookup_op.kernel("CPU")
def _(keys: Any, *, vocabulary: list[Any], default_value: int, num_oov_buckets: int) -> Any:
    table = _table(vocabulary)
    arr = np.asarray(keys)
    flat = arr.reshape(-1).tolist()
    try:  # every key in the vocabulary (the usual batch): one C-level pass
        return np.fromiter(map(table.__getitem__, flat), np.int64, len(flat)).reshape(
            arr.shape)
    except KeyError:
        pass
    get = table.get
    found = [get(k) for k in flat]  # bytes and ints hash as their own keys
    if None in found:
        found = [hit if hit is not None else _miss(table, _key(k), default_value,
                                                   num_oov_buckets)
                 for k, hit in zip(flat, found)]
    return np.asarray(found, dtype=np.int64).reshape(arr.shape)


# The vocabulary attr is one list per op, kept as long as the op: its table is built
# once (a step used to rebuild it per call), keyed by the list's identity.
_TABLES: dict[int, tuple[list[Any], dict[Any, int]]] = {}


def _table(vocabulary: list[Any]) -> dict[Any, int]:
    got = _TABLES.get(id(vocabulary))
    if got is None or got[0] is not vocabulary:
        if len(_TABLES) > 1024:
            _TABLES.clear()
        got = _TABLES[id(vocabulary)] = (vocabulary,
                                         {_key(v): i for i, v in enumerate(vocabulary)})
    return got[1]


def _miss(table: dict[Any, int], key: Any, default_value: int, num_oov_buckets: int) -> int:
    hit = table.get(key)  # a str key or a numpy integer, under its plain form
    if hit is not None:
        return hit
    if num_oov_buckets > 0:
        text = key if isinstance(key, bytes) else str(key).encode("utf-8")
        return len(table) + fingerprint64(text) % num_oov_buckets
    return int(default_value)


lookup_op.no_gradient()


def vocabulary_lookup(keys: Any, vocabulary: list[Any], default_value: int = -1,
                      num_oov_buckets: int = 0, name: str | None = None) -> Tensor:
    """Maps keys to their index in `vocabulary` (TF's index_table_from_tensor ids).

    Example:
        >>> vocabulary_lookup(tf.constant(["a"]), ["a", "b"])   # [0]
    """
    k = convert_to_tensor(keys)
    vocab = [v.decode("utf-8") if isinstance(v, bytes) else v for v in vocabulary]
    return create_tensor(
        "VocabularyLookup", [k], {"vocabulary": vocab, "default_value": int(default_value),
                  "num_oov_buckets": int(num_oov_buckets)},
        name=name or "VocabularyLookup")
