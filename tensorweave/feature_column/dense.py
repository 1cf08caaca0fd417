"""Dense columns: numeric, bucketized (also categorical), indicator, embedding.

Each yields a float tensor [batch, ...] that `input_layer` flattens and concatenates.

Example:
    >>> emb = embedding_column(categorical_column_with_identity("id", 100), dimension=8)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.gather_nd_ops import scatter_nd
from tensorweave.ops.array.index_ops import boolean_mask
from tensorweave.ops.lookup.bucketize_ops import bucketize
from tensorweave.ops.math import math_ops
from tensorweave.nn_impl.embedding_sparse import safe_embedding_lookup_sparse
from tensorweave.ops.parsing.parsing_ops import FixedLenFeature
from tensorweave.ops.sparse.conversion_ops import sparse_tensor_to_dense
from tensorweave.state.init_ops import truncated_normal_initializer
from tensorweave.state.variable_scope import get_variable
from tensorweave.framework.graph_defaults import GraphKeys
from tensorweave.train.checkpoint_utils import init_from_checkpoint
from tensorweave.feature_column.builder import FeatureBuilder, as_tensor
from tensorweave.feature_column.categorical import CategoricalColumn, IdWeightPair, check_key


class DenseColumn:
    """Base of columns `input_layer` accepts (TF's _DenseColumn)."""

    name: str

    @property
    def _variable_shape(self) -> TensorShape:
        raise NotImplementedError(type(self).__name__)

    @property
    def variable_shape(self) -> TensorShape:
        """The shape of one example's output (TF's public `variable_shape`)."""
        return self._variable_shape

    @property
    def parse_example_spec(self) -> dict[str, Any]:
        """What `tf.parse_example` must parse for this column (TF's public name)."""
        return self._parse_example_spec  # type: ignore[attr-defined]

    def _get_dense_tensor(self, builder: FeatureBuilder, weight_collections: Any = None,
                          trainable: bool = True) -> Tensor:
        return builder.get(self)


@dataclass(frozen=True)
class NumericColumn(DenseColumn):
    key: str
    shape: tuple[int, ...]
    default_value: Any
    dtype: Any
    normalizer_fn: Callable[[Tensor], Tensor] | None

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.key

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape(list(self.shape))

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        return {self.key: FixedLenFeature(self.shape, self.dtype, self.default_value)}

    def _transform_feature(self, builder: FeatureBuilder) -> Tensor:
        t = as_tensor(builder.get(self.key), self.key)
        if self.normalizer_fn is not None:
            t = self.normalizer_fn(t)
        return math_ops.cast(t, _dt.float32)


def numeric_column(key: str, shape: Any = (1,), default_value: Any = None,
                   dtype: Any = _dt.float32,
                   normalizer_fn: Callable[[Tensor], Tensor] | None = None) -> NumericColumn:
    """A real-valued feature of `shape` per example.

    Example:
        >>> numeric_column("price", normalizer_fn=lambda x: (x - 3.) / 4.2)
    """
    check_key(key, "numeric_column")
    shape = (shape,) if not isinstance(shape, (list, tuple)) else tuple(shape)
    for d in shape:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise TypeError(f"shape dimensions must be integer. shape: {shape}, key: {key}")
        if d < 1:
            raise ValueError(f"shape dimensions must be greater than 0. shape: {shape}, "
                             f"key: {key}")
    shape = tuple(int(d) for d in shape)
    dt = _dt.as_dtype(dtype)
    if not (dt.is_integer or dt.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dt.name}, key: {key}")
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    return NumericColumn(key, shape, _default_tuple(shape, default_value, dt, key), dt,
                         normalizer_fn)


def _default_tuple(shape: tuple[int, ...], value: Any, dt: _dt.DType, key: str) -> Any:
    """`value` as TF stores a numeric column's default: a tuple nested to `shape` (a
    scalar repeated), of ints, or of floats for a floating dtype.

    Raises:
        ValueError: a nested value whose shape is not `shape`.
        TypeError: values the dtype cannot hold (floats for an integer dtype, strings).
    """
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    scalar = not isinstance(value, (list, tuple))
    if scalar and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return _filled(shape, int(value))
    if scalar and isinstance(value, (float, np.floating)) and dt.is_floating:
        return _filled(shape, float(value))
    if not scalar:
        if not _fits(value, shape):
            raise ValueError(f"The shape of default_value must be equal to given shape. "
                             f"default_value: {value}, shape: {shape}, key: {key}")
        flat = _flatten_values(value)
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in flat) \
                or (dt.is_floating and all(isinstance(v, (int, float, np.number))
                                           and not isinstance(v, bool) for v in flat)):
            return _as_tuple(value)
    raise TypeError(f"default_value must be compatible with dtype. default_value: {value}, "
                    f"dtype: {dt.name}, key: {key}")


def _filled(shape: tuple[int, ...], value: Any) -> Any:
    return tuple(_filled(shape[1:], value) for _ in range(shape[0])) if shape else value


def _fits(value: Any, shape: tuple[int, ...]) -> bool:
    if isinstance(value, (list, tuple)) != bool(shape):
        return False
    return not shape or (len(value) == shape[0] and all(_fits(v, shape[1:]) for v in value))


def _flatten_values(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten_values(v)]
    return [value]


def _as_tuple(value: Any) -> Any:
    return tuple(_as_tuple(v) for v in value) if isinstance(value, (list, tuple)) else value


@dataclass(frozen=True)
class BucketizedColumn(DenseColumn, CategoricalColumn):
    source_column: NumericColumn
    boundaries: tuple[float, ...]

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.source_column.name}_bucketized"

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        return self.source_column._parse_example_spec

    @property
    def _dims(self) -> int:
        return int(np.prod(self.source_column.shape))

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape(list(self.source_column.shape) + [len(self.boundaries) + 1])

    @property
    def _num_buckets(self) -> int:
        return self._dims * (len(self.boundaries) + 1)

    @property
    def num_buckets(self) -> int:
        """The number of ids this column gives (TF's public `num_buckets`)."""
        return self._num_buckets

    def _transform_feature(self, builder: FeatureBuilder) -> Tensor:
        return bucketize(builder.get(self.source_column), list(self.boundaries))

    def _get_dense_tensor(self, builder: FeatureBuilder, weight_collections: Any = None,
                          trainable: bool = True) -> Tensor:
        return array_ops.one_hot(builder.get(self), len(self.boundaries) + 1,
                                 on_value=1., off_value=0.)

    def _get_sparse_tensors(self, builder: FeatureBuilder, weight_collections: Any = None,
                            trainable: Any = None) -> tuple[SparseTensor, Any]:
        # Example b, element i, bucket k -> id k + i * (len(boundaries) + 1), as TF.
        bucket = builder.get(self)
        buckets = math_ops.cast(array_ops.reshape(bucket, [-1]), _dt.int64)
        batch = array_ops.shape(bucket)[0]
        dims = self._dims
        rows = math_ops.cast(array_ops.reshape(array_ops.tile(array_ops.expand_dims(
            array_ops.range(batch), 1), [1, dims]), [-1]), _dt.int64)
        cols = math_ops.cast(array_ops.tile(array_ops.range(dims), array_ops.stack([batch])),
                             _dt.int64)
        ids = buckets + (len(self.boundaries) + 1) * cols
        indices = array_ops.transpose(array_ops.stack([rows, cols]))
        shape = math_ops.cast(array_ops.stack([batch, dims]), _dt.int64)
        return IdWeightPair(SparseTensor(indices, ids, shape), None)


def bucketized_column(source_column: NumericColumn, boundaries: Any) -> BucketizedColumn:
    """Discretizes a numeric column: bucket i holds boundaries[i-1] <= x < boundaries[i].

    Example:
        >>> bucketized_column(numeric_column("age"), [18, 25, 30, 35, 40, 50])
    """
    if not isinstance(source_column, NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(). "
                         f"Given: {source_column}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: "
                         f"{source_column}")
    if boundaries is None or (isinstance(boundaries, (list, tuple)) and not boundaries):
        raise ValueError(f"boundaries must not be empty: boundaries must be a sorted list. "
                         f"boundaries: {boundaries!r}")
    if not isinstance(boundaries, (list, tuple)):
        raise ValueError(f"boundaries must be a sorted list. boundaries: {boundaries!r}")
    b = tuple(float(x) for x in boundaries)
    if any(x >= y for x, y in zip(b, b[1:])):
        raise ValueError(f"boundaries must be a sorted list. boundaries: {boundaries}")
    return BucketizedColumn(source_column, b)


@dataclass(frozen=True)
class IndicatorColumn(DenseColumn):
    categorical_column: CategoricalColumn

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.categorical_column.name}_indicator"

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        return self.categorical_column._parse_example_spec  # type: ignore[attr-defined]

    @property
    def _variable_shape(self) -> TensorShape:
        # [1, buckets], as TF's indicator column (input_layer flattens it to buckets).
        return TensorShape([1, self.categorical_column._num_buckets])

    def _transform_feature(self, builder: FeatureBuilder) -> Tensor:
        # Multi-hot: one count per bucket (an id seen twice counts 2), as TF; a weighted
        # column sums its weights per bucket instead (missing ids, -1, drop out).
        ids, weights = self.categorical_column._get_sparse_tensors(builder)
        if weights is not None:
            return _weighted_multi_hot(ids, weights, self.categorical_column._num_buckets)
        dense = sparse_tensor_to_dense(ids, default_value=-1)
        one_hot = array_ops.one_hot(dense, self.categorical_column._num_buckets,
                                    on_value=1., off_value=0.)
        return math_ops.reduce_sum(one_hot, axis=-2)


def _weighted_multi_hot(ids: SparseTensor, weights: SparseTensor, buckets: int) -> Tensor:
    keep = math_ops.greater_equal(ids.values, 0)
    rows = boolean_mask(array_ops.reshape(array_ops.slice(ids.indices, [0, 0], [-1, 1]),
                                          [-1]), keep)
    cols = boolean_mask(math_ops.cast(ids.values, _dt.int64), keep)
    values = boolean_mask(weights.values, keep)
    shape = array_ops.stack([ids.dense_shape[0], math_ops.cast(buckets, _dt.int64)])
    return scatter_nd(array_ops.stack([rows, cols], axis=1), values, shape)


def indicator_column(categorical_column: CategoricalColumn) -> IndicatorColumn:
    """Multi-hot representation of a categorical column, for input_layer.

    Example:
        >>> indicator_column(categorical_column_with_vocabulary_list("c", ["a", "b"]))
    """
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError(f"categorical_column must be a categorical column, got "
                         f"{categorical_column}")
    return IndicatorColumn(categorical_column)


@dataclass(frozen=True)
class EmbeddingColumn(DenseColumn):
    categorical_column: CategoricalColumn
    dimension: int
    combiner: str
    initializer: Any
    max_norm: float | None
    trainable: bool
    ckpt_to_load_from: str | None = None
    tensor_name_in_ckpt: str | None = None

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.categorical_column.name}_embedding"

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        return self.categorical_column._parse_example_spec  # type: ignore[attr-defined]

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape([self.dimension])

    def _transform_feature(self, builder: FeatureBuilder) -> Any:
        # As TF: the categorical column's own output; the lookup reads its ids/weights.
        return builder.get(self.categorical_column)

    def _embedding_weights(self, weight_collections: Any, trainable: bool) -> Any:
        """The embedding variable, in the current variable scope (its partitioner
        splits it over the ps tasks); of categorical_column_with_embedding, an
        EmbeddingVariable."""
        table = getattr(self.categorical_column, "_embedding_table", None)
        if table is not None:
            return table(self.dimension, self.initializer, self.trainable and trainable)
        return get_variable("embedding_weights",
                            shape=[self.categorical_column._num_buckets, self.dimension],
                            dtype=_dt.float32, initializer=self.initializer,
                            trainable=self.trainable and trainable,
                            collections=with_global_variables(weight_collections))

    def _get_dense_tensor(self, builder: FeatureBuilder, weight_collections: Any = None,
                          trainable: bool = True) -> Tensor:
        ids, weights = self.categorical_column._get_sparse_tensors(builder)
        table = self._embedding_weights(weight_collections, trainable)
        if self.ckpt_to_load_from is not None:
            # As TF: the variable's initializer loads the checkpoint's tensor.
            init_from_checkpoint(self.ckpt_to_load_from, {str(self.tensor_name_in_ckpt): table})
        return safe_embedding_lookup_sparse(table, ids, weights, combiner=self.combiner,
                                            max_norm=self.max_norm)


def check_embedding_args(column_name: str, initializer: Any, ckpt_to_load_from: Any,
                         tensor_name_in_ckpt: Any) -> None:
    """TF's checks of an embedding column's initializer and checkpoint arguments (core's
    and contrib's embedding_column).

    Raises:
        ValueError: a non-callable initializer; only one of the two checkpoint arguments.
    """
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable if specified. Embedding of column_name:"
                         f" {column_name}")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` "
                         "or none of them.")


def embedding_column(categorical_column: CategoricalColumn, dimension: int,
                     combiner: str = "mean", initializer: Any = None,
                     ckpt_to_load_from: str | None = None,
                     tensor_name_in_ckpt: str | None = None, max_norm: float | None = None,
                     trainable: bool = True, do_fusion: Any = None) -> EmbeddingColumn:
    """Dense embedding of a categorical column (variable `<col>_embedding/embedding_weights`).

    `do_fusion` is DeepRec's embedding-subgraph fusion switch: it fuses the lookup's
    kernels in DeepRec and changes no value, so it is accepted here and the lookup runs as
    it always does.

    Example:
        >>> embedding_column(categorical_column_with_hash_bucket("q", 10000), dimension=16)
    """
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    check_embedding_args(categorical_column.name, initializer, ckpt_to_load_from,
                         tensor_name_in_ckpt)
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError(f"categorical_column must be a categorical column, got "
                         f"{categorical_column}")
    init = initializer or truncated_normal_initializer(mean=0.0,
                                                       stddev=1 / math.sqrt(dimension))
    return EmbeddingColumn(categorical_column, int(dimension), combiner, init, max_norm,
                           trainable, ckpt_to_load_from, tensor_name_in_ckpt)


def with_global_variables(weight_collections: Any) -> list[str] | None:
    """The collections of a column's variable: `weight_collections` plus the global
    variables (as TF's layers add every variable there); None for the default."""
    if weight_collections is None:
        return None
    names = list(weight_collections)
    return names if GraphKeys.GLOBAL_VARIABLES in names else \
        names + [GraphKeys.GLOBAL_VARIABLES]
