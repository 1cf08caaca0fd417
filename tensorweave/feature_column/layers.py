"""input_layer, linear_model and make_parse_example_spec (TF 1.x feature_column v1).

Example:
    >>> net = tf.feature_column.input_layer(features, [age, emb_city])   # [batch, 1 + 8]
    >>> logits = tf.feature_column.linear_model(features, [age_buckets, city_x_age])
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph import get_collection
from tensorweave.framework.graph_defaults import GraphKeys
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Tensor
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.nn_impl.embedding_sparse import safe_embedding_lookup_sparse
from tensorweave.ops.nn.layer_ops import bias_add
from tensorweave.ops.sparse.conversion_ops import sparse_reshape
from tensorweave.state.init_ops import zeros_initializer
from tensorweave.state.variable_scope import (
    get_variable, get_variable_scope, variable_scope)
from tensorweave.feature_column.builder import FeatureBuilder
from tensorweave.feature_column.categorical import CategoricalColumn
from tensorweave.feature_column.dense import DenseColumn


def _columns(feature_columns: Any, kind: tuple[type, ...], why: str) -> list[Any]:
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict. Pass a list "
                         "of columns, e.g. list(columns.values()).")
    cols = [feature_columns] if isinstance(feature_columns, (DenseColumn, CategoricalColumn)) \
        else list(feature_columns or [])
    if not cols:
        raise ValueError("feature_columns must not be empty.")
    for c in cols:
        if not isinstance(c, kind):
            raise ValueError(f"Items of feature_columns must be a {why}. Given (type "
                             f"{type(c).__name__}): {c}.")
    names = [c.name for c in cols]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"Duplicate feature column name found for columns: {dup}")
    return sorted(cols, key=lambda c: c.name)  # TF orders the output by column name


def _collections(weight_collections: Any) -> list[str]:
    # As TF: a column's variables are global and model variables, plus those given.
    names = list(weight_collections or [])
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES):
        if key not in names:
            names.append(key)
    return names


def _var_scope_name(col: Any) -> str:
    # As TF's `_var_scope_name`: a shared embedding column scopes its variable by the
    # shared name, so all its columns name (and reuse) one variable.
    return str(getattr(col, "_var_scope_name", col.name))


def _check_static_batch_size(tensors: list[Tensor], cols: list[Any]) -> None:
    """ValueError (TF's wording) when two columns' outputs have known, different batch
    sizes; caught while building instead of as a shape error deep in concat/add_n."""
    first: tuple[Any, int] | None = None
    for col, t in zip(cols, tensors):
        dims = t.shape.as_list() if t.shape.ndims else None
        if not dims or dims[0] is None:
            continue
        if first is None:
            first = (col, dims[0])
        elif dims[0] != first[1]:
            raise ValueError(
                f"Batch size (first dimension) of each feature must be same. Batch size of "
                f"columns ({first[0].name}, {col.name}): ({first[1]}, {dims[0]}); feed every "
                "feature with the same number of examples.")


def _flatten(t: Tensor, col: Any) -> Tensor:
    n = col._variable_shape.num_elements()
    batch = array_ops.shape(t)[0]
    return array_ops.reshape(t, array_ops.stack([batch, n]))


def input_layer(features: dict[str, Any], feature_columns: Any, weight_collections: Any = None,
                trainable: bool = True, cols_to_vars: dict[Any, list[Any]] | None = None,
                cols_to_output_tensors: dict[Any, Tensor] | None = None) -> Tensor:
    """Dense [batch, sum of column widths] input from dense columns, in name order.

    `cols_to_vars` (a dict) receives each column's variables, `cols_to_output_tensors`
    each column's [batch, width] part of the output, as TF.

    Example:
        >>> tf.feature_column.input_layer({"x": x}, [tf.feature_column.numeric_column("x")])
    """
    cols = _columns(feature_columns, (DenseColumn,), "_DenseColumn. You can wrap a "
                    "categorical column with an embedding_column or indicator_column")
    builder = FeatureBuilder(features)
    weight_collections = _collections(weight_collections)
    outputs = []
    with variable_scope(None, default_name="input_layer"):
        for col in cols:
            with variable_scope(None, default_name=_var_scope_name(col)):
                t = col._get_dense_tensor(builder, weight_collections=weight_collections,
                                          trainable=trainable)
                outputs.append(_flatten(t, col))
                if cols_to_output_tensors is not None:
                    cols_to_output_tensors[col] = outputs[-1]
                if cols_to_vars is not None:
                    cols_to_vars[col] = get_collection(
                        GraphKeys.GLOBAL_VARIABLES, scope=get_variable_scope().name + "/")
        _check_static_batch_size(outputs, cols)
        return array_ops.concat(outputs, 1)


def _weighted_sum(col: Any, builder: FeatureBuilder, units: int, combiner: str,
                  weight_collections: Any, trainable: bool) -> Tensor:
    if not isinstance(col, CategoricalColumn):  # bucketized columns go the sparse way
        x = _flatten(col._get_dense_tensor(builder, weight_collections, trainable), col)
        w = get_variable("weights", shape=[col._variable_shape.num_elements(), units],
                         dtype=_dt.float32, initializer=zeros_initializer(),
                         trainable=trainable, collections=weight_collections)
        return math_ops.matmul(x, w, name="weighted_sum")
    ids, weights = col._get_sparse_tensors(builder)
    # As TF: ids of any rank count per example, [batch, -1], before the lookup.
    ids = _per_example(ids)
    weights = None if weights is None else _per_example(weights)
    table = getattr(col, "_embedding_table", None)
    if table is not None:
        # DeepRec: over open-ended ids the weights are an EmbeddingVariable of
        # dimension `units` (`linear_model/<col>/weights`), a row per id seen, from 0.
        w = table(units, zeros_initializer(), trainable, name="weights")
    else:
        w = get_variable("weights", shape=[col._num_buckets, units], dtype=_dt.float32,
                         initializer=zeros_initializer(), trainable=trainable,
                         collections=weight_collections)
    return safe_embedding_lookup_sparse(w, ids, weights, combiner=combiner,
                                        name="weighted_sum")


def _per_example(sp: SparseTensor) -> SparseTensor:
    if sp.get_shape().ndims == 2:
        return sp
    batch = sp.dense_shape[0]
    return sparse_reshape(sp, array_ops.stack([batch, convert_to_tensor(-1, _dt.int64)]))


def linear_model(features: dict[str, Any], feature_columns: Any, units: int = 1,
                 sparse_combiner: str = "sum", weight_collections: Any = None,
                 trainable: bool = True, cols_to_vars: dict[Any, Any] | None = None
                 ) -> Tensor:
    """Sum of per-column weighted features plus a bias: [batch, units] predictions.

    Categorical columns look up rows of `linear_model/<col>/weights` [num_buckets, units]
    (combined with `sparse_combiner`), dense ones multiply [width, units]; all start at 0.
    Over DeepRec's `categorical_column_with_embedding` (weighted or not) the weights are
    an EmbeddingVariable of dimension `units`, a row per id seen, as DeepRec's.

    Example:
        >>> tf.feature_column.linear_model(features, [age, city], units=1)
    """
    if sparse_combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"sparse_combiner must be 'sum', 'mean' or 'sqrtn', got "
                         f"{sparse_combiner!r}")
    cols = _columns(feature_columns, (DenseColumn, CategoricalColumn),
                    "_FeatureColumn (dense or categorical)")
    builder = FeatureBuilder(features)
    weight_collections = _collections(weight_collections)
    sums = []
    with variable_scope(None, default_name="linear_model"):
        for col in cols:
            with variable_scope(None, default_name=_var_scope_name(col)):
                sums.append(_weighted_sum(col, builder, units, sparse_combiner,
                                          weight_collections, trainable))
                if cols_to_vars is not None:
                    cols_to_vars[col] = get_collection(
                        GraphKeys.GLOBAL_VARIABLES, scope=get_variable_scope().name + "/")
        bias = get_variable("bias_weights", shape=[units], dtype=_dt.float32,
                            initializer=zeros_initializer(), trainable=trainable,
                            collections=weight_collections)
        if cols_to_vars is not None:
            cols_to_vars["bias"] = [bias]
        _check_static_batch_size(sums, cols)
        total = math_ops.add_n(sums) if len(sums) > 1 else sums[0]
        return bias_add(total, bias, name="weighted_sum")


def make_parse_example_spec(feature_columns: Any) -> dict[str, Any]:
    """The tf.parse_example features dict (FixedLenFeature/VarLenFeature) the columns read.

    Example:
        >>> tf.parse_example(serialized, tf.feature_column.make_parse_example_spec(cols))
    """
    spec: dict[str, Any] = {}
    for col in feature_columns:
        if not hasattr(col, "_parse_example_spec"):
            raise ValueError(f"All feature_columns must be _FeatureColumn instances. "
                             f"Given: {col}")
        for key, value in col._parse_example_spec.items():
            if key in spec and spec[key] != value:
                raise ValueError(f"feature_columns contain different parse_spec for key "
                                 f"{key}. Given {value} and {spec[key]}")
            spec[key] = value
    return spec
