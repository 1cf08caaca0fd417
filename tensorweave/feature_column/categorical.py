"""Categorical columns: hash bucket, vocabulary list, identity, crossed; DeepRec's
categorical_column_with_embedding (open-ended ids, for an EmbeddingVariable).

Each yields sparse int64 ids in [0, num_buckets) per example, with the ids TF 1.x
computes (farmhash Fingerprint64 hashing, TF's cross hashing).

Example:
    >>> col = categorical_column_with_hash_bucket("city", 1000)
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.ops.lookup.cross_ops import sparse_feature_cross
from tensorweave.ops.lookup.hash_ops import as_string, string_to_hash_bucket_fast
from tensorweave.ops.lookup.vocab_ops import vocabulary_lookup
from tensorweave.ops.math import math_ops
from tensorweave.ops.parsing.parsing_ops import VarLenFeature
from tensorweave.framework.graph_defaults import control_dependencies
from tensorweave.ops import array as array_ops
from tensorweave.ops.array import core_ops
from tensorweave.ops.control_flow.assert_ops import Assert
from tensorweave.feature_column.builder import FeatureBuilder, map_values, to_sparse_ids
from tensorweave.state.partitioned_variables import fixed_size_partitioner
from tensorweave.state.variable_scope import get_variable_scope
from tensorweave.train.embedding_variable import EmbeddingVariableOption, get_embedding_variable


IdWeightPair = collections.namedtuple("IdWeightPair", ("id_tensor", "weight_tensor"))
IdWeightPair.__doc__ = ("What a categorical column gives its consumers (TF's "
                        "_CategoricalColumn.IdWeightPair): sparse ids and their weights "
                        "(None when unweighted).")


class CategoricalColumn:
    """Base of columns whose output is sparse ids (TF's _CategoricalColumn)."""

    IdWeightPair = IdWeightPair
    name: str

    @property
    def _num_buckets(self) -> int:
        raise NotImplementedError(type(self).__name__)

    @property
    def parse_example_spec(self) -> dict[str, Any]:
        """What `tf.parse_example` must parse for this column (TF's public name)."""
        return self._parse_example_spec  # type: ignore[attr-defined]

    def _get_sparse_tensors(self, builder: FeatureBuilder, weight_collections: Any = None,
                            trainable: Any = None) -> tuple[SparseTensor, Any]:
        # weight_collections/trainable: TF's signature, for columns that own variables.
        return IdWeightPair(builder.get(self), None)


def check_key(key: Any, what: str = "column") -> str:
    """`key` if it names a feature (a non-empty string), else TF's ValueError."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a string. Got {key!r} for a {what}: a column's key "
                         "is the name of the feature it reads, e.g. 'age'.")
    return key


_check_key = check_key


def _check_dtype(dtype: Any, key: str) -> Any:
    dt = _dt.as_dtype(dtype)
    if dt != _dt.string and not dt.is_integer:
        raise ValueError(f"dtype must be string or integer for column '{key}', got "
                         f"{dt.name}")
    return dt


def _ids_input(builder: FeatureBuilder, key: str, dtype: Any) -> SparseTensor:
    sp = to_sparse_ids(builder.get(key))
    got = sp.values.dtype.base_dtype
    if got != _dt.string and not got.is_integer:
        raise ValueError(f"column_name: {key} input_tensor dtype must be string or integer. "
                         f"dtype: {got.name}. Feed ids or strings for a categorical column.")
    is_string = got == _dt.string
    if is_string != (dtype == _dt.string):
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: "
                         f"{key}, column dtype: {dtype.name}, tensor dtype: "
                         f"{sp.values.dtype.name}")
    return sp


@dataclass(frozen=True)
class HashedCategoricalColumn(CategoricalColumn):
    key: str
    hash_bucket_size: int
    dtype: Any

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.key

    @property
    def _num_buckets(self) -> int:
        return self.hash_bucket_size

    @property
    def num_buckets(self) -> int:
        """The number of ids this column gives (TF's public `num_buckets`)."""
        return self._num_buckets

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, builder: FeatureBuilder) -> SparseTensor:
        sp = _ids_input(builder, self.key, self.dtype)
        values = sp.values if self.dtype == _dt.string else as_string(sp.values)
        return map_values(sp, string_to_hash_bucket_fast(values, self.hash_bucket_size,
                                                         name="lookup"))


_STRING_ID_SPACE = 2**63 - 1   # a string id: Fingerprint64 % this (non-negative int64)


@dataclass(frozen=True)
class EmbeddingCategoricalColumn(CategoricalColumn):
    """DeepRec's column over an EmbeddingVariable: its ids are the values themselves
    (any int64), or a string's 63-bit Fingerprint64 (as DeepRec's column hashes strings
    to int64 ids: two strings share a row only on a 64-bit fingerprint collision); no
    vocabulary and no buckets; an `embedding_column` of it looks them up in a table that
    grows with them (`tf.get_embedding_variable`, int64 keys)."""
    key: str
    dtype: Any
    partition_num: int | None
    ev_option: Any

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.key

    @property
    def _num_buckets(self) -> int:
        raise ValueError(f"Column {self.key!r} is categorical_column_with_embedding: it has "
                         "no number of buckets (its ids are open-ended); use it through "
                         "embedding_column.")

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, builder: FeatureBuilder) -> SparseTensor:
        sp = _ids_input(builder, self.key, self.dtype)
        if self.dtype == _dt.string:
            # int64 ids: the table's vectorized id index, not a dict of Python strings
            return map_values(sp, string_to_hash_bucket_fast(sp.values, _STRING_ID_SPACE))
        if sp.values.dtype.base_dtype != _dt.int64:
            sp = map_values(sp, math_ops.cast(sp.values, _dt.int64))
        return sp

    def _embedding_table(self, dimension: int, initializer: Any, trainable: bool,
                         name: str = "embedding_weights", steps_to_live: int | None = None
                         ) -> Any:
        """The EmbeddingVariable (a list of parts with partition_num) `name` in the current
        variable scope: an embedding_column's rows, or (`dimension` = units, zeros) the
        weights of linear_model, as DeepRec makes both. Without partition_num the
        scope's partitioner splits it, as DeepRec's (an estimator's
        input_layer_partitioner)."""
        partitioner = fixed_size_partitioner(self.partition_num) if self.partition_num \
            else get_variable_scope().partitioner
        return get_embedding_variable(
            name, dimension, key_dtype=_dt.int64, initializer=initializer,
            trainable=trainable, partitioner=partitioner, steps_to_live=steps_to_live,
            ev_option=self.ev_option)


def categorical_column_with_embedding(key: str, dtype: Any = _dt.string,
                                      partition_num: int | None = None,
                                      ev_option: Any = None) -> EmbeddingCategoricalColumn:
    """DeepRec's `tf.feature_column.categorical_column_with_embedding`: ids used as they
    are, embedded by an EmbeddingVariable (`partition_num` parts over the ps tasks,
    `ev_option` its filter, eviction and initializer options).

    Example:
        >>> col = tf.feature_column.categorical_column_with_embedding("user", tf.int64)
        >>> emb = tf.feature_column.embedding_column(col, dimension=8)
    """
    _check_key(key)
    return EmbeddingCategoricalColumn(key, _check_dtype(dtype, key),
                                      int(partition_num) if partition_num else None,
                                      ev_option or EmbeddingVariableOption())


def categorical_column_with_hash_bucket(key: str, hash_bucket_size: int,
                                        dtype: Any = _dt.string) -> HashedCategoricalColumn:
    """Ids = Fingerprint64(value) % hash_bucket_size (ints hashed as decimal strings).

    Example:
        >>> tf.feature_column.categorical_column_with_hash_bucket("city", 1000)
    """
    _check_key(key)
    if hash_bucket_size is None:
        raise ValueError(f"hash_bucket_size must be set. key: {key}")
    if int(hash_bucket_size) < 1:
        raise ValueError(f"hash_bucket_size must be at least 1. hash_bucket_size: "
                         f"{hash_bucket_size}, key: {key}")
    return HashedCategoricalColumn(key, int(hash_bucket_size), _check_dtype(dtype, key))


@dataclass(frozen=True)
class VocabularyListCategoricalColumn(CategoricalColumn):
    key: str
    vocabulary_list: tuple[Any, ...]
    dtype: Any
    default_value: int
    num_oov_buckets: int

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.key

    @property
    def _num_buckets(self) -> int:
        return len(self.vocabulary_list) + self.num_oov_buckets

    @property
    def num_buckets(self) -> int:
        """The number of ids this column gives (TF's public `num_buckets`)."""
        return self._num_buckets

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, builder: FeatureBuilder) -> SparseTensor:
        sp = _ids_input(builder, self.key, self.dtype)
        keys = sp.values if self.dtype == _dt.string else math_ops.cast(sp.values, _dt.int64)
        return map_values(sp, vocabulary_lookup(keys, list(self.vocabulary_list),
                                                self.default_value, self.num_oov_buckets,
                                                name=f"{self.key}_lookup"))


def categorical_column_with_vocabulary_list(key: str, vocabulary_list: Any, dtype: Any = None,
                                            default_value: int = -1, num_oov_buckets: int = 0
                                            ) -> VocabularyListCategoricalColumn:
    """Ids = position in `vocabulary_list`; others hashed into OOV buckets or default.

    Example:
        >>> categorical_column_with_vocabulary_list("color", ["red", "blue"], num_oov_buckets=2)
    """
    _check_key(key)
    if vocabulary_list is None or len(vocabulary_list) < 1:
        raise ValueError(f"vocabulary_list {vocabulary_list!r} must be non-empty, column_name: "
                         f"{key}")
    as_array = np.asarray(vocabulary_list)
    vocab = tuple(as_array.tolist())
    if len(set(vocab)) != len(vocab):
        raise ValueError(f"Duplicate keys in vocabulary_list {list(vocab)}, column_name: {key}")
    # As TF: the vocabulary's own dtype (int32 for an int32 array), string or integer.
    inferred = _dt.string if as_array.dtype.kind in "USO" else \
        _dt.as_dtype(as_array.dtype) if as_array.dtype.kind in "iu" else None
    if inferred is None:
        raise ValueError(f"column_name: {key} vocabulary dtype must be string or integer. "
                         f"dtype: {as_array.dtype}.")
    dt = _check_dtype(dtype if dtype is not None else inferred, key)
    if (dt == _dt.string) != (inferred == _dt.string):
        raise ValueError(f"dtype {dt.name} and vocabulary dtype {inferred.name} do not "
                         f"match, column_name: {key}")
    if num_oov_buckets < 0:
        raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    if default_value != -1 and num_oov_buckets:
        raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
    return VocabularyListCategoricalColumn(key, vocab, dt, int(default_value),
                                           int(num_oov_buckets))


@dataclass(frozen=True)
class IdentityCategoricalColumn(CategoricalColumn):
    key: str
    num_buckets: int
    default_value: int | None

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.key

    @property
    def _num_buckets(self) -> int:
        return self.num_buckets

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        return {self.key: VarLenFeature(_dt.int64)}

    def _transform_feature(self, builder: FeatureBuilder) -> SparseTensor:
        raw = to_sparse_ids(builder.get(self.key))
        if not raw.values.dtype.is_integer:
            raise ValueError(f"Invalid input, not integer. key: {self.key} dtype: "
                             f"{raw.values.dtype.name}; categorical_column_with_identity "
                             "takes integer ids.")
        sp = _ids_input(builder, self.key, _dt.int64)
        ids = math_ops.cast(sp.values, _dt.int64)
        in_range = math_ops.logical_and(math_ops.greater_equal(ids, 0),
                                        math_ops.less(ids, self.num_buckets))
        if self.default_value is None:
            # TF asserts the range; out-of-range ids fail the run naming the column.
            return map_values(sp, _assert_in_range(ids, in_range, self))
        default = array_ops.fill(array_ops.shape(ids), self.default_value)
        return map_values(sp, math_ops.where(in_range, ids,
                                             math_ops.cast(default, _dt.int64)))


def _assert_in_range(ids: Any, in_range: Any, col: IdentityCategoricalColumn) -> Any:
    check = Assert(math_ops.reduce_all(in_range),
                   [f"categorical_column_with_identity '{col.key}': ids must be in "
                    f"[0, {col.num_buckets}); give default_value to map others. ids:", ids])
    with control_dependencies([check]):
        return core_ops.identity(ids)


def categorical_column_with_identity(key: str, num_buckets: int,
                                     default_value: int | None = None
                                     ) -> IdentityCategoricalColumn:
    """Ids are the integer values themselves, in [0, num_buckets).

    Example:
        >>> categorical_column_with_identity("video_id", num_buckets=1000, default_value=0)
    """
    _check_key(key)
    if num_buckets < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and not 0 <= default_value < num_buckets:
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), "
                         f"column_name {key}")
    return IdentityCategoricalColumn(key, int(num_buckets), default_value)


@dataclass(frozen=True)
class CrossedColumn(CategoricalColumn):
    keys: tuple[Any, ...]
    hash_bucket_size: int
    hash_key: int | None

    @property
    def leaf_keys(self) -> list[Any]:
        """The crossed features with nested crosses flattened (TF crosses a cross's own
        inputs, not its hashed ids)."""
        out: list[Any] = []
        for k in self.keys:
            out.extend(k.leaf_keys if isinstance(k, CrossedColumn) else [k])
        return out

    @property
    def name(self) -> str:  # type: ignore[override]
        return "_X_".join(sorted(k if isinstance(k, str) else k.name for k in self.leaf_keys))

    @property
    def _num_buckets(self) -> int:
        return self.hash_bucket_size

    @property
    def num_buckets(self) -> int:
        """The number of ids this column gives (TF's public `num_buckets`)."""
        return self._num_buckets

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        for k in self.keys:
            spec.update({k: VarLenFeature(_dt.string)} if isinstance(k, str)
                        else k._parse_example_spec)
        return spec

    def _transform_feature(self, builder: FeatureBuilder) -> SparseTensor:
        inputs = []
        for k in self.leaf_keys:
            if isinstance(k, str):
                inputs.append(to_sparse_ids(builder.get(k)))
                continue
            ids, weights = k._get_sparse_tensors(builder)
            if weights is not None:
                raise ValueError(f"crossed_column does not support weight_tensor, but the "
                                 f"given column populates weight_tensor. Given column: "
                                 f"{k.name} (cross its unweighted categorical column)")
            inputs.append(ids)
        return sparse_feature_cross(inputs, self.hash_bucket_size, self.hash_key)


def crossed_column(keys: Any, hash_bucket_size: int, hash_key: int | None = None
                   ) -> CrossedColumn:
    """Hashed cross of string features and categorical columns (TF's cross ids).

    Example:
        >>> crossed_column(["country", bucketized_age], hash_bucket_size=1000)
    """
    keys = tuple(keys or ())
    if len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {list(keys)}")
    if hash_bucket_size is None or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: {hash_bucket_size}")
    for k in keys:
        if not isinstance(k, (str, CategoricalColumn)):
            raise ValueError(f"Unsupported key type. All keys must be either string, or "
                             f"categorical column except HashedCategoricalColumn. Given: {k}")
        if isinstance(k, HashedCategoricalColumn):
            raise ValueError(f"categorical_column_with_hash_bucket is not supported for "
                             f"crossing. Hashing before crossing will increase probability "
                             f"of collision. Instead, use the feature name as a string. "
                             f"Given: {k}")
    return CrossedColumn(keys, int(hash_bucket_size), hash_key)
