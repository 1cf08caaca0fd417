"""More TF 1.x feature columns: weighted categorical, shared embeddings (and, re-exported
from `vocabulary_file`, `categorical_column_with_vocabulary_file`).

- `weighted_categorical_column`: a categorical column's ids paired with per-id weights
  from a parallel sparse feature; `linear_model` and `embedding_column` use them.
- `shared_embedding_columns`: one embedding variable for several categorical columns
  (query and doc ids), created by the first column and reused by the others; over
  DeepRec's `categorical_column_with_embedding` columns, one EmbeddingVariable.

Example:
    >>> q = categorical_column_with_vocabulary_file("query", "vocab.txt", num_oov_buckets=5)
    >>> d = categorical_column_with_vocabulary_file("doc", "vocab.txt", num_oov_buckets=5)
    >>> q_emb, d_emb = shared_embedding_columns([q, d], dimension=16)
    >>> net = tf.feature_column.input_layer(features, [q_emb, d_emb])
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import get_collection
from tensorweave.framework.graph_defaults import add_to_collection, control_dependencies
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.array import core_ops
from tensorweave.ops.array.gather_nd_ops import gather_nd
from tensorweave.ops.control_flow.assert_ops import Assert
from tensorweave.ops.math import math_ops
from tensorweave.ops.parsing.parsing_ops import VarLenFeature
from tensorweave.state.init_ops import truncated_normal_initializer
from tensorweave.state.variable_scope import get_variable
from tensorweave.feature_column.builder import FeatureBuilder, map_values
from tensorweave.feature_column.categorical import (
    CategoricalColumn, IdWeightPair, _check_key)
from tensorweave.feature_column.dense import EmbeddingColumn, with_global_variables
from tensorweave.feature_column.vocabulary_file import (
    VocabularyFileCategoricalColumn as VocabularyFileCategoricalColumn,
    categorical_column_with_vocabulary_file as categorical_column_with_vocabulary_file)

__all__ = ["SharedEmbeddingColumn", "VocabularyFileCategoricalColumn",
           "WeightedCategoricalColumn", "categorical_column_with_vocabulary_file",
           "shared_embedding_columns", "weighted_categorical_column"]


# ---- weighted categorical -------------------------------------------------------------
@dataclass(frozen=True)
class WeightedCategoricalColumn(CategoricalColumn):
    """Ids of `categorical_column` with weights from feature `weight_feature_key`."""

    categorical_column: CategoricalColumn
    weight_feature_key: str
    dtype: Any

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.categorical_column.name}_weighted_by_{self.weight_feature_key}"

    @property
    def _num_buckets(self) -> int:
        return self.categorical_column._num_buckets

    @property
    def num_buckets(self) -> int:
        """The number of ids this column gives (TF's public `num_buckets`)."""
        return self._num_buckets

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        spec = dict(self.categorical_column._parse_example_spec)  # type: ignore[attr-defined]
        if self.weight_feature_key in spec:
            raise ValueError(f"Parse config {spec[self.weight_feature_key]} already exists "
                             f"for {self.weight_feature_key}.")
        spec[self.weight_feature_key] = VarLenFeature(self.dtype)
        return spec

    def _transform_feature(self, builder: FeatureBuilder) -> tuple[SparseTensor, SparseTensor]:
        # As TF: the weights are checked before the ids are transformed.
        raw = builder.get(self.weight_feature_key)
        dt = raw.values.dtype if isinstance(raw, SparseTensor) else \
            convert_to_tensor(raw).dtype
        if dt.base_dtype != self.dtype:
            raise ValueError(f"Bad dtype, expected {self.dtype.name}, but got {dt.name}. "
                             f"weight feature: {self.weight_feature_key}")
        weights = raw if isinstance(raw, SparseTensor) else _dense_weights_to_sparse(raw)
        # Our tables are float32; TF would instead cast the embeddings to the weights'.
        weights = map_values(weights, math_ops.cast(weights.values, _dt.float32))
        ids, _ = self.categorical_column._get_sparse_tensors(builder)
        return self._check_same_count(ids, weights)

    def _check_same_count(self, ids: SparseTensor, weights: SparseTensor
                          ) -> tuple[SparseTensor, SparseTensor]:
        # As TF, the lookups pair weight k with id k (the weights' own indices are not
        # read), so only the counts must agree; TF fails on the product's shapes.
        key = getattr(self.categorical_column, "key", self.categorical_column.name)
        what = (f"Incompatible shapes: weighted_categorical_column {self.name} has a "
                f"different number of ids '{key}' and weights '{self.weight_feature_key}'")
        n_ids, n_w = ids.indices.shape[:1], weights.indices.shape[:1]
        if not n_ids.is_compatible_with(n_w):  # known now: fail now
            raise ValueError(f"{what}: Dimensions {n_ids} and {n_w} are not compatible.")
        same = math_ops.equal(array_ops.shape(ids.values)[0],
                              array_ops.shape(weights.values)[0])
        check = Assert(same, [f"{what}. ids:", array_ops.shape(ids.values), "weights:",
                              array_ops.shape(weights.values)])
        with control_dependencies([check]):
            ids = map_values(ids, core_ops.identity(ids.values))
            weights = map_values(weights, core_ops.identity(weights.values))
        return ids, weights

    def _get_sparse_tensors(self, builder: FeatureBuilder, weight_collections: Any = None,
                            trainable: Any = None) -> tuple[SparseTensor, Any]:
        ids, weights = builder.get(self)
        return IdWeightPair(ids, weights)

    @property
    def _embedding_table(self) -> Any:
        # Weights over categorical_column_with_embedding ids: embedding_column and
        # linear_model look them up in the inner column's EmbeddingVariable.
        return getattr(self.categorical_column, "_embedding_table", None)


def _dense_weights_to_sparse(value: Any) -> SparseTensor:
    # As TF: a dense weight tensor drops 0.0 entries (the float "missing" value).
    t = convert_to_tensor(value)
    keep = math_ops.not_equal(t, math_ops.cast(0, t.dtype))
    indices = math_ops.where(keep)
    return SparseTensor(indices, gather_nd(t, indices),
                        array_ops.shape(t, out_type=_dt.int64))


def weighted_categorical_column(categorical_column: CategoricalColumn, weight_feature_key: str,
                                dtype: Any = _dt.float32) -> WeightedCategoricalColumn:
    """Pairs each id of `categorical_column` with a weight from `weight_feature_key`.

    The weight feature is a SparseTensor with the same indices as the ids (a dense
    tensor is made sparse dropping 0.0, as TF). `linear_model` then sums
    weight[id] * w_i, and `embedding_column` combines embeddings with these weights,
    as `tf.nn.embedding_lookup_sparse(..., sp_weights)`. Different indices fail the run
    with InvalidArgumentError naming both features.

    Args:
        categorical_column: the ids.
        weight_feature_key: the feature holding one weight per id.
        dtype: the weight feature's dtype (integer or floating).

    Returns:
        A WeightedCategoricalColumn named `<cat>_weighted_by_<weight_feature_key>`.

    Raises:
        ValueError: a non-categorical column, an empty key or a non-numeric dtype.

    Example:
        >>> terms = categorical_column_with_identity("terms", 1000)
        >>> weighted = weighted_categorical_column(terms, "frequencies")
        >>> tf.feature_column.linear_model(features, [weighted])
    """
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError(f"categorical_column must be a categorical column, got "
                         f"{categorical_column}")
    _check_key(weight_feature_key)
    dt = _dt.as_dtype(dtype) if dtype is not None else None
    if dt is None or not (dt.is_integer or dt.is_floating):
        raise ValueError(f"dtype {dtype} is not convertible to float.")
    return WeightedCategoricalColumn(categorical_column, weight_feature_key, dt)


# ---- shared embeddings ----------------------------------------------------------------
@dataclass(frozen=True)
class SharedEmbeddingColumn(EmbeddingColumn):
    """One of `shared_embedding_columns`' columns (TF's _SharedEmbeddingColumn): an
    embedding column whose variable the other columns of its group share."""

    shared_embedding_collection_name: str = ""

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.categorical_column.name}_shared_embedding"

    @property
    def _var_scope_name(self) -> str:
        # input_layer scopes the variable by the shared name, so the one variable is
        # `input_layer/<a>_<b>_shared_embedding/embedding_weights`, as TF.
        return self.shared_embedding_collection_name

    def _embedding_weights(self, weight_collections: Any, trainable: bool) -> Any:
        # The graph collection named after the shared name holds the variable: the
        # first column (of any input_layer call) creates it, the others reuse it.
        shared = get_collection(self.shared_embedding_collection_name)
        if shared:
            if len(shared) > 1:
                raise ValueError(f"Collection {self.shared_embedding_collection_name} can "
                                 f"only contain one variable. Suggested fix A: Choose a "
                                 f"unique name for this collection. Suggested fix B: "
                                 f"Do not add any variables to this collection. Got: "
                                 f"{shared}")
            self._check_shared(shared[0])
            return shared[0]
        make_ev = getattr(self.categorical_column, "_embedding_table", None)
        if make_ev is not None:
            # DeepRec: one EmbeddingVariable `<scope>/<shared name>/embedding_weights`,
            # its parts and options those of the column that makes it.
            table = make_ev(self.dimension, self.initializer, self.trainable and trainable)
        else:
            table = get_variable("embedding_weights",
                                 shape=[self.categorical_column._num_buckets,
                                        self.dimension], dtype=_dt.float32,
                                 initializer=self.initializer,
                                 trainable=self.trainable and trainable,
                                 collections=with_global_variables(weight_collections))
        add_to_collection(self.shared_embedding_collection_name, table)
        return table

    def _check_shared(self, table: Any) -> None:
        """ValueError unless `table` (found in the shared collection) fits this column:
        an EmbeddingVariable of its dimension, or a [num_buckets, dimension] variable."""
        if getattr(self.categorical_column, "_embedding_table", None) is not None:
            first = table[0] if isinstance(table, list) else table
            have: Any = getattr(first, "_embedding_dim", None)
            need: Any = self.dimension
        else:
            have = list(table.get_shape().as_list())
            need = [self.categorical_column._num_buckets, self.dimension]
        if have != need:
            raise ValueError(f"Shared embedding {self.shared_embedding_collection_name} "
                             f"holds {table} (width {have}), column {self.name} needs "
                             f"{need}; give each group its own shared name.")


def _unweighted(col: CategoricalColumn) -> CategoricalColumn:
    return col.categorical_column if isinstance(col, WeightedCategoricalColumn) else col


def _check_same_ids(first: CategoricalColumn, other: CategoricalColumn) -> None:
    """ValueError unless two columns can share one table: the same number of buckets,
    or (categorical_column_with_embedding, open-ended ids) the same id dtype."""
    a, b = _unweighted(first), _unweighted(other)
    if getattr(a, "_embedding_table", None) is not None:
        if a.dtype != b.dtype:  # type: ignore[attr-defined]
            raise ValueError(f"To use shared_embedding_column over "
                             f"categorical_column_with_embedding, all columns must have "
                             f"the same dtype (one EmbeddingVariable holds their ids). "
                             f"Given column: {first.name} of dtype "
                             f"{a.dtype.name} does not match column: "  # type: ignore[attr-defined]
                             f"{other.name} of dtype {b.dtype.name}")  # type: ignore[attr-defined]
        return
    if other._num_buckets != first._num_buckets:
        raise ValueError(f"To use shared_embedding_column, all categorical_columns must "
                         f"have the same number of buckets. Given column: "
                         f"{first.name} with buckets: {first._num_buckets} "
                         f"does not match column: {other.name} with buckets: "
                         f"{other._num_buckets}")


def shared_embedding_columns(categorical_columns: Any, dimension: int, combiner: str = "mean",
                             initializer: Any = None,
                             shared_embedding_collection_name: str | None = None,
                             ckpt_to_load_from: str | None = None,
                             tensor_name_in_ckpt: str | None = None,
                             max_norm: float | None = None, trainable: bool = True
                             ) -> list[SharedEmbeddingColumn]:
    """Embedding columns of several categorical columns that share one variable.

    The variable, [num_buckets, dimension], is `<scope>/<name>/embedding_weights` where
    name defaults to the sorted column names joined by '_' plus '_shared_embedding'
    (`input_layer/aaa_bbb_shared_embedding/embedding_weights`). It is created once per
    graph, under the enclosing variable scope (so its partitioner splits it across ps
    tasks), and reused by every column, also across input_layer calls. Over DeepRec's
    `categorical_column_with_embedding` columns it is one EmbeddingVariable of that
    name, its parts and options those of the column that creates it (DeepRec's).

    Args:
        categorical_columns: columns of one type (weighted ones allowed) with the same
            number of buckets (categorical_column_with_embedding: the same dtype).
        dimension: embedding width.
        combiner: "mean", "sqrtn" or "sum": how a row's several ids combine.
        initializer: variable initializer; default truncated normal, stddev
            1/sqrt(dimension).
        shared_embedding_collection_name: the graph collection (and variable scope) name.
        ckpt_to_load_from: unsupported (use tf.train.init_from_checkpoint).
        tensor_name_in_ckpt: unsupported, as ckpt_to_load_from.
        max_norm: clip embeddings to this L2 norm, if given.
        trainable: whether the variable is trainable.

    Returns:
        One SharedEmbeddingColumn per input column, in the given order.

    Raises:
        ValueError: a bad dimension, combiner or initializer, a non-categorical column,
            columns of different types, numbers of buckets or (embedding) id dtypes,
            or a checkpoint given.

    Example:
        >>> q, d = shared_embedding_columns([query_ids, doc_ids], dimension=16)
        >>> net = tf.feature_column.input_layer(features, [q, d])
    """
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` "
                         "or none of them.")
    if initializer is not None and not callable(initializer):
        raise ValueError("initializer must be callable if specified.")
    cols = list(categorical_columns or [])
    if not cols:
        raise ValueError("categorical_columns must not be empty.")
    for c in cols:
        if not isinstance(c, CategoricalColumn):
            raise ValueError(f"All categorical_columns must be subclasses of "
                             f"_CategoricalColumn. Given: {c}, of type: {type(c).__name__}")
    # Sorted so the default name does not depend on the order (e.g. dict.values()).
    ordered = sorted(cols, key=lambda c: c.name)
    first = _unweighted(ordered[0])
    for c in ordered[1:]:
        base = _unweighted(c)
        if type(base) is not type(first):
            raise ValueError(f"To use shared_embedding_column, all categorical_columns must "
                             f"have the same type, or be weighted_categorical_column of the "
                             f"same type. Given column: {first.name} of type: "
                             f"{type(first).__name__} does not match given column: "
                             f"{base.name} of type: {type(base).__name__}")
        _check_same_ids(ordered[0], c)
    name = shared_embedding_collection_name or \
        "_".join(c.name for c in ordered) + "_shared_embedding"
    init = initializer or truncated_normal_initializer(mean=0.0,
                                                       stddev=1 / math.sqrt(dimension))
    return [SharedEmbeddingColumn(c, int(dimension), combiner, init, max_norm, trainable,
                                  ckpt_to_load_from, tensor_name_in_ckpt,
                                  shared_embedding_collection_name=name) for c in cols]
