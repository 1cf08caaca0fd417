"""`tf.contrib.layers`' feature columns over DeepRec's EmbeddingVariable:
`sparse_column_with_embedding`, `embedding_column`, and `real_valued_column` beside them.

DeepRec's contrib column reads ids as they are (any int64, or strings) and embeds them
in an EmbeddingVariable (`tf.get_embedding_variable`) instead of a [buckets, dim]
matrix; `input_from_feature_columns` and `weighted_sum_from_feature_columns`
(`feature_column_ops.py`) build a DNN's input and a linear model from these columns.
The classes speak `tf.feature_column`'s protocol, so core columns mix with them.

Variables are named as DeepRec names them: the embedding is
`input_from_feature_columns/<col>_embedding/weights`, the linear weights
`weighted_sum_from_feature_columns/<col>/weights` (an EmbeddingVariable of dimension
`num_outputs`), each split in `partition_num` parts `.../part_<i>` when given.

Example:
    >>> ids = tf.contrib.layers.sparse_column_with_embedding("user", dtype=tf.int64)
    >>> emb = tf.contrib.layers.embedding_column(ids, dimension=8)
    >>> net = tf.contrib.layers.input_from_feature_columns(features, [emb])
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from tensorweave.feature_column.categorical import EmbeddingCategoricalColumn, check_key
from tensorweave.feature_column.dense import (EmbeddingColumn, NumericColumn, check_embedding_args,
                                           numeric_column)
from tensorweave.framework import dtypes as _dt
from tensorweave.framework.tensor import Tensor
from tensorweave.state.init_ops import truncated_normal_initializer
from tensorweave.train.embedding_variable import EmbeddingVariableOption

__all__ = ["SparseColumnWithEmbedding", "ContribEmbeddingColumn", "embedding_column",
           "real_valued_column", "sort_key", "sparse_column_with_embedding"]

_COMBINERS = ("mean", "sqrtn", "sum")


@dataclass(frozen=True)
class SparseColumnWithEmbedding(EmbeddingCategoricalColumn):
    """DeepRec's `_SparseColumnEmbedding`: ids used as they are, for an EmbeddingVariable.

    `combiner` is how `weighted_sum_from_feature_columns` combines an example's several
    ids ("sum", as contrib's sparse columns); `steps_to_live` evicts, at each save, the
    ids not looked up for that many global steps (a `GlobalStepEvict` in `ev_option`
    wins, as DeepRec's).
    """

    steps_to_live: int | None = None
    combiner: str = "sum"

    @property
    def column_name(self) -> str:
        """The feature this column reads (contrib's name for `key`)."""
        return self.key

    @property
    def length(self) -> int:
        """Contrib's vocabulary size: 1, as DeepRec (the ids are open-ended, unused)."""
        return 1

    @property
    def config(self) -> dict[str, Any]:
        """What `tf.parse_example` must parse for this column (contrib's name)."""
        return self._parse_example_spec

    def _embedding_table(self, dimension: int, initializer: Any, trainable: bool,
                         name: str = "weights", steps_to_live: int | None = None) -> Any:
        # Contrib names the table `weights` (core: `embedding_weights`).
        return super()._embedding_table(dimension, initializer, trainable, name=name,
                                        steps_to_live=steps_to_live or self.steps_to_live)


def sparse_column_with_embedding(column_name: str, dtype: Any = _dt.string,
                                 partition_num: int | None = None,
                                 steps_to_live: int | None = None,
                                 init_data_source: Any = None,
                                 ev_option: EmbeddingVariableOption | None = None
                                 ) -> SparseColumnWithEmbedding:
    """DeepRec's `tf.contrib.layers.sparse_column_with_embedding`: a sparse column whose
    ids (int64 values or strings) are embedded by an EmbeddingVariable.

    Args:
        column_name: the feature name.
        dtype: tf.string or an integer dtype of the feature values.
        partition_num: parts of the table (ids spread by `id % parts`, each part on a
            ps task); None: one table.
        steps_to_live: evict ids not looked up for this many global steps (at saves).
        init_data_source: DeepRec's initialization from a data source; not offered.
        ev_option: the table's filter, eviction and initializer options.

    Returns:
        A SparseColumnWithEmbedding for `embedding_column` or a weighted sum.

    Raises:
        ValueError: an empty name, a dtype neither string nor integer, or an
            `init_data_source`.

    Example:
        >>> ids = tf.contrib.layers.sparse_column_with_embedding(
        ...     "user", dtype=tf.int64, partition_num=2,
        ...     ev_option=tf.EmbeddingVariableOption(filter_option=tf.CounterFilter(3)))
    """
    check_key(column_name, "sparse_column_with_embedding")
    if init_data_source is not None:
        raise ValueError(f"sparse_column_with_embedding({column_name!r}): init_data_source "
                         "is not offered; start the table from an initializer (ev_option's "
                         "InitializerOption) or restore a checkpoint.")
    dt = _dt.as_dtype(dtype)
    if dt != _dt.string and not dt.is_integer:
        raise ValueError(f"dtype must be string or integer for column '{column_name}', "
                         f"got {dt.name}")
    return SparseColumnWithEmbedding(column_name, dt,
                                     int(partition_num) if partition_num else None,
                                     ev_option or EmbeddingVariableOption(),
                                     int(steps_to_live) if steps_to_live else None)


@dataclass(frozen=True)
class ContribEmbeddingColumn(EmbeddingColumn):
    """Contrib's `_EmbeddingColumn` over a `sparse_column_with_embedding` column."""

    @property
    def sparse_id_column(self) -> Any:
        """The sparse column embedded (contrib's name for `categorical_column`)."""
        return self.categorical_column

    @property
    def length(self) -> int:
        """Contrib's vocabulary size of the sparse column."""
        return int(self.categorical_column.length)  # type: ignore[attr-defined]

    def _embedding_weights(self, weight_collections: Any, trainable: bool) -> Any:
        return self.categorical_column._embedding_table(  # type: ignore[attr-defined]
            self.dimension, self.initializer, self.trainable and trainable, name="weights")


def embedding_column(sparse_id_column: SparseColumnWithEmbedding, dimension: int,
                     combiner: str = "mean", initializer: Callable[..., Any] | None = None,
                     ckpt_to_load_from: str | None = None,
                     tensor_name_in_ckpt: str | None = None, max_norm: float | None = None,
                     trainable: bool = True) -> ContribEmbeddingColumn:
    """Contrib's `embedding_column`: a DNN input of `dimension` per example, the rows of a
    `sparse_column_with_embedding` column's ids combined by `combiner`.

    The default initializer is contrib's: a truncated normal of stddev
    1/sqrt(`sparse_id_column.length`), i.e. 1 for DeepRec's open-ended ids.

    Raises:
        ValueError: a column not made by `sparse_column_with_embedding`, a dimension
            below 1, an unknown combiner, a non-callable initializer, or only one of
            `ckpt_to_load_from` / `tensor_name_in_ckpt`.

    Example:
        >>> emb = tf.contrib.layers.embedding_column(
        ...     tf.contrib.layers.sparse_column_with_embedding("item", tf.int64), 16)
    """
    if not isinstance(sparse_id_column, SparseColumnWithEmbedding):
        raise ValueError(f"embedding_column takes a sparse_column_with_embedding column "
                         f"here (tensorweave's tf.contrib.layers offers only DeepRec's "
                         f"sparse column; use tf.feature_column for others). Given: "
                         f"{sparse_id_column!r}")
    if dimension is None or int(dimension) < 1:
        raise ValueError(f"Invalid dimension {dimension} for column "
                         f"{sparse_id_column.name}: give a width of at least 1.")
    if combiner not in _COMBINERS:
        raise ValueError(f"Combiner must be one of {_COMBINERS}, got {combiner!r}")
    check_embedding_args(sparse_id_column.name, initializer, ckpt_to_load_from,
                         tensor_name_in_ckpt)
    init = initializer or truncated_normal_initializer(
        mean=0.0, stddev=1 / math.sqrt(sparse_id_column.length))
    return ContribEmbeddingColumn(sparse_id_column, int(dimension), combiner, init, max_norm,
                                  trainable, ckpt_to_load_from, tensor_name_in_ckpt)


def real_valued_column(column_name: str, dimension: int = 1, default_value: Any = None,
                       dtype: Any = _dt.float32,
                       normalizer: Callable[[Tensor], Tensor] | None = None
                       ) -> NumericColumn:
    """Contrib's `real_valued_column`: `dimension` floats per example (a dense input of
    `input_from_feature_columns`, a matmul in `weighted_sum_from_feature_columns`).

    Raises:
        ValueError: a dimension below 1 or a dtype not convertible to float.

    Example:
        >>> age = tf.contrib.layers.real_valued_column("age")
    """
    if dimension is None or int(dimension) < 1:
        raise ValueError(f"dimension must be greater than 0. dimension: {dimension}, "
                         f"column_name: {column_name}")
    return numeric_column(column_name, shape=(int(dimension),), default_value=default_value,
                          dtype=dtype, normalizer_fn=normalizer)


def sort_key(column: Any) -> str:
    """The order contrib's layers visit columns in: TF's `column.key` (the column's class
    name, then its fields), here its class name and name, which sort alike."""
    if isinstance(column, ContribEmbeddingColumn):
        return f"_EmbeddingColumn({column.categorical_column.name})"
    if isinstance(column, NumericColumn):
        return f"_RealValuedColumn({column.name})"
    if isinstance(column, SparseColumnWithEmbedding):
        return f"_SparseColumnEmbedding({column.name})"
    return f"{type(column).__name__}({column.name})"
